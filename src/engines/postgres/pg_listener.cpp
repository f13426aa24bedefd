#include "engines/postgres/pg_listener.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>

#include "core/log.hpp"

namespace readpast::detail::pg {
namespace {

constexpr auto kRelistenFirstBackoff = std::chrono::milliseconds(100);
constexpr auto kRelistenMaxBackoff = std::chrono::seconds(5);
// The cancel statement's payload (sql/statements.sql); no queue name starts with "!".
constexpr std::string_view kCancelPayload = "!cancel";
// How long add_cancel_callback waits for LISTEN to be in force (a database that is down must
// not hold a worker's start up longer).
constexpr auto kCallbackPatience = std::chrono::seconds(1);

struct NotifyDeleter {
  void operator()(PGnotify* n) const noexcept { PQfreemem(n); }
};

}  // namespace

Listener::Listener(std::optional<ConnectionConfig> config, std::string listen, Logger logger)
    : config_(std::move(config)),
      listen_(std::move(listen)),
      logger_(std::move(logger)),
      wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

Listener::~Listener() {
  if (thread_.joinable()) {
    thread_.request_stop();
    const std::uint64_t one = 1;
    (void)::write(wake_fd_, &one, sizeof one);
    thread_.join();
  }
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void Listener::lease_started(std::string_view queue) {
  std::lock_guard lock(mu_);
  if (auto it = queues_.find(queue); it != queues_.end()) it->second.wakeups = 0;
}

void Listener::wake_one(std::string_view queue) {
  {
    std::lock_guard lock(mu_);
    auto it = queues_.find(queue);
    if (it == queues_.end()) return;
    ++it->second.wakeups;
  }
  // One condition variable serves every queue, so all waiters look; one of this queue's
  // takes the wake-up and the rest sleep on.
  notified_.notify_all();
}

void Listener::subscribe(std::string_view queue, Duration patience) {
  std::unique_lock lock(mu_);
  if (!config_) {
    queues_.try_emplace(std::string(queue));
    return;  // nothing to wait for: no notification will come
  }
  start_thread();
  if (queues_.find(queue) == queues_.end()) queues_.emplace(std::string(queue), QueueState{});
  notified_.wait_for(lock, patience, [&] { return listening_; });
}

void Listener::start_thread() {
  if (started_) return;
  started_ = true;
  thread_ = std::jthread([this](std::stop_token stop) { run(std::move(stop)); });
}

std::uint64_t Listener::add_cancel_callback(std::function<void()> notify) {
  std::uint64_t id = 0;
  {
    std::lock_guard lock(callbacks_mu_);
    id = next_callback_id_++;
    cancel_callbacks_.emplace(id, std::move(notify));
  }
  std::unique_lock lock(mu_);
  start_thread();
  // As subscribe(): a cancellation after this returns is announced to it.
  notified_.wait_for(lock, kCallbackPatience, [&] { return listening_; });
  return id;
}

void Listener::remove_cancel_callback(std::uint64_t id) {
  std::lock_guard lock(callbacks_mu_);
  cancel_callbacks_.erase(id);
}

void Listener::call_cancel_callbacks() {
  std::lock_guard lock(callbacks_mu_);
  for (auto& [id, notify] : cancel_callbacks_) notify();
}

bool Listener::wait(std::string_view queue, Duration timeout) {
  std::unique_lock lock(mu_);
  auto it = queues_.find(queue);
  if (it == queues_.end()) it = queues_.emplace(std::string(queue), QueueState{}).first;
  QueueState& state = it->second;  // map nodes are stable
  const std::uint64_t since = state.broadcasts;
  const bool woken = notified_.wait_for(
      lock, timeout, [&] { return state.wakeups > 0 || state.broadcasts != since; });
  if (state.wakeups > 0) --state.wakeups;
  return woken;
}

void Listener::set_listening(bool listening, bool wake_everyone) {
  {
    std::lock_guard lock(mu_);
    listening_ = listening;
    if (wake_everyone) {
      for (auto& [name, state] : queues_) ++state.broadcasts;
    }
  }
  notified_.notify_all();
}

void Listener::sleep_for(Duration timeout, const std::stop_token& stop) {
  if (stop.stop_requested()) return;
  pollfd fd{wake_fd_, POLLIN, 0};
  (void)::poll(
      &fd, 1,
      static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()));
}

bool Listener::wait_readable(int socket, const std::stop_token& stop) {
  std::array<pollfd, 2> fds{pollfd{socket, POLLIN, 0}, pollfd{wake_fd_, POLLIN, 0}};
  while (!stop.stop_requested()) {
    // A timeout only to re-check the stop flag; the eventfd normally interrupts sooner.
    int ready = ::poll(fds.data(), fds.size(), 1000);
    if (ready < 0 && errno != EINTR) return false;
    if (fds[1].revents != 0) return false;
    if (ready > 0 && fds[0].revents != 0) return true;
  }
  return false;
}

void Listener::run(std::stop_token stop) {
  auto log = [&](LogLevel level, const std::string& line) { detail::emit(logger_, level, line); };
  std::unique_ptr<Connection> connection;
  auto backoff = std::chrono::duration_cast<Duration>(kRelistenFirstBackoff);
  bool outage_logged = false;
  bool ever_connected = false;
  while (!stop.stop_requested()) {
    if (!connection) {
      auto opened = Connection::open(*config_);
      Status listening =
          opened ? (*opened)->exec_script(listen_) : Status(fail_with(opened.error()));
      if (!listening) {
        if (!outage_logged) {
          log(LogLevel::kWarn, "wake-up listener cannot reach PostgreSQL (" +
                                   listening.error().message + "); workers poll until it is back");
          outage_logged = true;
        }
        sleep_for(backoff, stop);
        backoff = std::min<Duration>(backoff * 2, kRelistenMaxBackoff);
        continue;
      }
      connection = std::move(*opened);
      backoff = kRelistenFirstBackoff;
      if (outage_logged) {
        log(LogLevel::kInfo, "wake-up listener reconnected to PostgreSQL");
        outage_logged = false;
      }
      // After a reconnect, whatever was announced while we were not listening is lost:
      // wake everyone once. (The first connect loses nothing: see subscribe().)
      set_listening(true, /*wake_everyone=*/ever_connected);
      if (ever_connected) call_cancel_callbacks();
      ever_connected = true;
    }
    PGconn* conn = connection->raw();
    if (!wait_readable(PQsocket(conn), stop)) continue;
    if (PQconsumeInput(conn) == 0 || PQstatus(conn) != CONNECTION_OK) {
      log(LogLevel::kWarn, "wake-up listener lost its PostgreSQL connection (" +
                               clean_message(PQerrorMessage(conn), config_->secrets) +
                               "); reconnecting");
      outage_logged = true;
      connection.reset();
      set_listening(false, false);
      continue;
    }
    bool any = false;
    bool cancelled = false;
    {
      std::lock_guard lock(mu_);
      while (auto n = std::unique_ptr<PGnotify, NotifyDeleter>(PQnotifies(conn))) {
        const std::string_view payload(n->extra);
        if (payload == kCancelPayload) {
          cancelled = true;
        } else if (auto it = queues_.find(payload); it != queues_.end()) {
          ++it->second.wakeups;
          any = true;
        }
      }
    }
    if (any) notified_.notify_all();
    if (cancelled) call_cancel_callbacks();
  }
}

}  // namespace readpast::detail::pg
