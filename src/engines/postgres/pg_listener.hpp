// engines/postgres/pg_listener.hpp — wakes waiting workers when jobs become available.
//
// The schema's triggers NOTIFY one channel per schema ("<schema>.jobs") with the queue's
// name as payload whenever a job becomes available to run now (enqueue, retry, release,
// rescue, a retried failure without delay). One Listener per engine owns one dedicated
// connection that LISTENs on that channel, on a background thread started by the first
// wait(); it reconnects with backoff on its own and logs an outage once.
//
// A notification is a hint, never a promise: wait() may return true and lease() still
// find nothing (another worker was faster). Missing one costs at most the caller's
// timeout, because callers poll with a timeout anyway.
//
// Behind a pooler in transaction mode LISTEN does not work (the session is not ours past
// one transaction): the listener then LISTENs through a direct URL (listen_url), or, given
// none, does not listen at all (polls() is true) and wait_for_work looks at the table every
// poll interval instead; wake_one still wakes this process's own waiters.
//
// No notification is lost in the gaps: subscribe() returns once the listener is LISTENing,
// and wait_for_work looks at the table only after that, so a job that became available
// is either visible to that look or announced afterwards.
//
// One notification wakes one waiter of its queue, not all of them: when many threads of
// one process wait on a queue (the bench's workers, a program's own loops), waking all for
// one job made them all race for it, and the lease of the one that won waited behind the
// others' on the database's CPU. Each queue counts the wake-ups announced and not yet
// taken; wait() takes one. A lease covers every announcement received before it started
// (its snapshot sees those jobs), so lease_started() drops the count; a notification that
// arrives during a lease stays counted, so the next wait() returns at once. A lease that
// comes back full may have left jobs behind that one notification announced, so its caller
// hands the wake-up on (wake_one) and the next waiter leases too: a batch enqueue draws in
// waiters one full lease at a time. After a reconnect every waiter is woken, since
// notifications sent while disconnected are lost.
//
// Cancellations ride on the same channel, with the payload "!cancel" (a queue name cannot
// start with "!"): on_cancel's callbacks are called for each, and once after every
// reconnect (what was sent meanwhile is lost), from the listener's thread.
//
// Thread-safety: all methods may be called from any thread; queues_ and the thread's
// start are guarded by mu_. The connection is touched by the background thread only.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>

#include "engines/postgres/pg_connection.hpp"
#include "readpast/options.hpp"
#include "readpast/time.hpp"

namespace readpast::detail::pg {

class Listener {
 public:
  // listen: the script that LISTENs on the schema's channel (Sql::listen); config: where,
  // or nullopt for a listener that never listens (see polls()).
  Listener(std::optional<ConnectionConfig> config, std::string listen, Logger logger);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // Called when a lease of the queue starts: it covers every wake-up announced so far
  // (cheap; does nothing for a queue that no one has waited on yet).
  void lease_started(std::string_view queue);
  // Wakes one waiter of the queue, or lets the next wait() return at once: called when a
  // lease came back full, so that another waiter leases what it may have left.
  void wake_one(std::string_view queue);
  // Starts listening for the queue's notifications (the first call starts the listener's
  // thread) and waits until the listener is LISTENing, at most `patience`.
  void subscribe(std::string_view queue, Duration patience);
  // Blocks until it takes a wake-up of the queue (true; at once when one is waiting: a
  // notification received since the last lease_started, or a wake_one) or the timeout
  // passes (false).
  bool wait(std::string_view queue, Duration timeout);
  // True when no notification can come: callers must look at the table themselves.
  bool polls() const noexcept { return !config_; }
  // Calls `notify` after each cancellation announced, until the returned id is removed;
  // starts the listener's thread if need be and waits (a second at most) until it LISTENs.
  // REQUIRES: !polls().
  std::uint64_t add_cancel_callback(std::function<void()> notify);
  // After it returns, that callback is not running and will not be called again.
  void remove_cancel_callback(std::uint64_t id);

 private:
  struct QueueState {
    std::uint64_t wakeups = 0;     // announced, and neither taken by a waiter nor leased
    std::uint64_t broadcasts = 0;  // bumped to wake every waiter at once (a reconnect)
  };

  void run(std::stop_token stop);
  // Sleeps until the timeout passes or the destructor asks the thread to stop.
  void sleep_for(Duration timeout, const std::stop_token& stop);
  // Waits until the listening socket is readable (true) or a stop is requested (false).
  bool wait_readable(int socket, const std::stop_token& stop);
  // Records whether LISTEN is in force; optionally wakes every queue's waiters.
  void set_listening(bool listening, bool wake_everyone);
  void start_thread();  // REQUIRES: mu_ held
  void call_cancel_callbacks();

  // Constant after construction.
  const std::optional<ConnectionConfig> config_;
  const std::string listen_;
  const Logger logger_;
  const int wake_fd_;  // an eventfd: written by the destructor to interrupt poll()

  std::mutex mu_;
  std::condition_variable notified_;
  std::map<std::string, QueueState, std::less<>> queues_;  // guarded by mu_
  bool started_ = false;                                   // guarded by mu_
  bool listening_ = false;                                 // guarded by mu_
  // Held while callbacks run, so that removing one waits for a call in progress.
  std::mutex callbacks_mu_;
  std::map<std::uint64_t, std::function<void()>> cancel_callbacks_;  // guarded by callbacks_mu_
  std::uint64_t next_callback_id_ = 1;                               // guarded by callbacks_mu_
  std::jthread thread_;  // last member: joined by ~Listener before the rest goes away
};

}  // namespace readpast::detail::pg
