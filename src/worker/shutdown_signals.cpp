// shutdown_signals.cpp — readpast::ShutdownSignals: SIGTERM and SIGINT read from a
// signalfd on an ordinary thread (see readpast/worker.hpp).
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <mutex>
#include <thread>
#include <utility>

#include "readpast/worker.hpp"
#include "worker/unique_fd.hpp"

namespace readpast {
namespace {

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

}  // namespace

struct ShutdownSignals::Watcher {
  // Constant after construction.
  worker::UniqueFd signal_fd;
  worker::UniqueFd stop_fd;  // an eventfd: written by the destructor to end the thread
  int setup_errno = 0;
  std::mutex mu;
  std::function<void(int)> on_signal;  // guarded by mu
  // A signal that arrived while no callback was set (guarded by mu): a SIGTERM during
  // start-up, before the program has anything to stop, must not be lost.
  int pending_signal = 0;
  std::thread thread;

  void loop() {
    for (;;) {
      pollfd fds[2] = {{signal_fd.get(), POLLIN, 0}, {stop_fd.get(), POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[1].revents != 0) return;
      if (fds[0].revents != 0) {
        signalfd_siginfo info{};
        ssize_t n = ::read(signal_fd.get(), &info, sizeof info);
        if (n != static_cast<ssize_t>(sizeof info)) continue;
        const int signal = static_cast<int>(info.ssi_signo);
        std::function<void(int)> callback;
        {
          std::lock_guard lock(mu);
          callback = on_signal;
          if (!callback && pending_signal == 0) pending_signal = signal;
        }
        if (callback) callback(signal);
      }
    }
  }
};

ShutdownSignals::ShutdownSignals(std::function<void(int)> on_signal)
    : watcher_(std::make_unique<Watcher>()) {
  watcher_->on_signal = std::move(on_signal);
  sigset_t set = stop_signals();
  if (int rc = ::pthread_sigmask(SIG_BLOCK, &set, nullptr); rc != 0) {
    watcher_->setup_errno = rc;
    return;
  }
  watcher_->signal_fd.reset(::signalfd(-1, &set, SFD_CLOEXEC));
  watcher_->stop_fd.reset(::eventfd(0, EFD_CLOEXEC));
  if (!watcher_->signal_fd || !watcher_->stop_fd) {
    watcher_->setup_errno = errno;
    return;
  }
  watcher_->thread = std::thread([watcher = watcher_.get()] { watcher->loop(); });
}

ShutdownSignals::~ShutdownSignals() {
  if (!watcher_->thread.joinable()) return;
  std::uint64_t one = 1;
  (void)::write(watcher_->stop_fd.get(), &one, sizeof one);
  watcher_->thread.join();
}

void ShutdownSignals::on_signal(std::function<void(int)> callback) {
  int pending = 0;
  std::function<void(int)> deliver;
  {
    std::lock_guard lock(watcher_->mu);
    watcher_->on_signal = std::move(callback);
    if (watcher_->on_signal && watcher_->pending_signal != 0) {
      pending = std::exchange(watcher_->pending_signal, 0);
      deliver = watcher_->on_signal;
    }
  }
  if (deliver) deliver(pending);
}

Status ShutdownSignals::status() const {
  if (watcher_->setup_errno != 0) {
    return fail_with(Error::internal(
        worker::errno_message("cannot watch SIGINT and SIGTERM", watcher_->setup_errno)));
  }
  return {};
}

}  // namespace readpast
