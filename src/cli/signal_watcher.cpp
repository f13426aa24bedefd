#include "cli/signal_watcher.hpp"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace readpast::cli {
namespace {

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

}  // namespace

SignalWatcher::SignalWatcher() {
  sigset_t set = stop_signals();
  if (int rc = ::pthread_sigmask(SIG_BLOCK, &set, nullptr); rc != 0) {
    setup_errno_ = rc;
    return;
  }
  signal_fd_.reset(::signalfd(-1, &set, SFD_CLOEXEC));
  stop_fd_.reset(::eventfd(0, EFD_CLOEXEC));
  if (!signal_fd_ || !stop_fd_) setup_errno_ = errno;
}

SignalWatcher::~SignalWatcher() {
  stop();
}

void SignalWatcher::stop() {
  if (!thread_.joinable()) return;
  std::uint64_t one = 1;
  (void)::write(stop_fd_.get(), &one, sizeof one);
  thread_.join();
}

CliStatus SignalWatcher::status() const {
  if (setup_errno_ != 0) {
    return fail_cli(failure(worker::errno_message("cannot watch signals", setup_errno_)));
  }
  return {};
}

void SignalWatcher::start(std::function<void(int)> on_signal) {
  on_signal_ = std::move(on_signal);
  thread_ = std::thread([this] { loop(); });
}

void SignalWatcher::loop() {
  for (;;) {
    pollfd fds[2] = {{signal_fd_.get(), POLLIN, 0}, {stop_fd_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    if (fds[0].revents != 0) {
      signalfd_siginfo info{};
      ssize_t n = ::read(signal_fd_.get(), &info, sizeof info);
      if (n == static_cast<ssize_t>(sizeof info)) on_signal_(static_cast<int>(info.ssi_signo));
    }
  }
}

}  // namespace readpast::cli
