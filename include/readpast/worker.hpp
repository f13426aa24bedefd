// readpast/worker.hpp — runs the jobs of one or more queues with C++ handlers.
//
//   readpast::Worker worker(queue, {.worker_id = "mailer-1"});
//   worker.handle("emails", [](const readpast::Job& job, std::stop_token cancel) {
//     if (!send(job.payload, cancel)) return readpast::JobResult::failure("smtp timeout");
//     return readpast::JobResult::success();
//   }, {.concurrency = 8, .timeout = std::chrono::seconds(30)});
//   signals.on_signal([&](int) { worker.stop(); });  // a ShutdownSignals made first in main()
//   worker.run();   // until SIGINT/SIGTERM
//
// What a Worker does:
//   - leases jobs of each queue in batches no larger than that queue's free handler
//     threads (plus its prefetch), waits for work with LISTEN/NOTIFY where the engine has
//     it, and backs off (10ms doubling to 1s by default) while a queue is empty: it never
//     spins;
//   - runs each job on one of the queue's `concurrency` threads; a handler's result
//     completes the job, fails it (retried with backoff, or dead once its attempts are
//     spent), schedules a retry, or gives up on it; an exception thrown by a handler is a
//     failure with its message;
//   - extends the leases of the jobs it holds every third of the lease, in one call; if an
//     extension finds a lease lost (the job was cancelled, or its lease expired and another
//     worker took it), that handler's stop token fires and its result is discarded;
//   - stops a handler whose timeout passed (its stop token fires) and fails the attempt;
//   - completes jobs in batches: completions that arrive while one batch is being
//     recorded go together in the next (no added delay);
//   - enqueues the ticks of periodic schedules (Queue::enqueue_due) and, taking turns with
//     the other workers of each queue, deletes finished jobs past their retention;
//   - shuts down gracefully: stop() stops leasing and releases leased jobs not yet
//     started; running handlers get `grace` to finish; then their stop tokens fire and
//     their jobs are released without spending an attempt. A second stop() ends the grace
//     period at once.
// A job is completed exactly once (fenced by its lease token) and executed at least once:
// a handler that must not repeat a side effect uses the job id or lease token as an
// idempotency key.
//
// Thread-safety: handle() is called before run(), from one thread. run() is called once.
// stop() and counters() may be called from any thread at any time (stop() is not
// async-signal-safe: use ShutdownSignals, or call it from an ordinary thread). Handlers
// are called from several threads at once and must be safe to call concurrently.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "readpast/error.hpp"
#include "readpast/job.hpp"
#include "readpast/options.hpp"
#include "readpast/queue.hpp"

namespace readpast {

// What a handler reports about one job.
class JobResult {
 public:
  enum class Kind {
    kSuccess,  // complete the job
    kFailure,  // record the error; retry with backoff, or dead once attempts are spent
    kDiscard,  // record the error; dead now, whatever attempts are left
  };

  static JobResult success() { return JobResult(Kind::kSuccess, {}, std::nullopt); }
  static JobResult failure(std::string error) {
    return JobResult(Kind::kFailure, std::move(error), std::nullopt);
  }
  // A failure retried after `delay` instead of the backoff (still spends the attempt).
  static JobResult retry_after(Duration delay, std::string error = "retry requested") {
    return JobResult(Kind::kFailure, std::move(error), delay);
  }
  static JobResult discard(std::string error) {
    return JobResult(Kind::kDiscard, std::move(error), std::nullopt);
  }

  Kind kind() const noexcept { return kind_; }
  const std::string& error() const noexcept { return error_; }
  const std::optional<Duration>& retry_delay() const noexcept { return retry_delay_; }

 private:
  JobResult(Kind kind, std::string error, std::optional<Duration> delay)
      : kind_(kind), error_(std::move(error)), retry_delay_(delay) {}
  Kind kind_;
  std::string error_;
  std::optional<Duration> retry_delay_;
};

// Runs one job. `cancel` fires when the job must stop now: its timeout passed, its lease
// was lost, or the worker is shutting down past its grace period; the worker then decides
// what is recorded, whatever the handler returns. A handler may throw: the exception's
// message becomes the failure.
using JobHandler = std::function<JobResult(const Job& job, std::stop_token cancel)>;

// How one queue's jobs are run.
struct QueueConfig {
  int concurrency = 1;  // handler threads for this queue, 1 to 1024. Default: 1
  // Jobs leased ahead of free threads (held, their leases extended, until a thread is
  // free): fewer round trips for short jobs, at the cost of holding jobs other workers
  // could run. With a prefetch, a finished job frees its slot before its result is
  // recorded, and while leases come back full, two of half the capacity each may be in
  // flight at once (docs/worker.md). Default: 0
  int prefetch = 0;
  // Per attempt; past it the stop token fires and the attempt fails. Default: none.
  std::optional<Duration> timeout{};
  // A timeout per job (e.g. read from its payload); nullopt falls back to `timeout`.
  std::function<std::optional<Duration>(const Job&)> timeout_for{};
  // At most this many attempts, whatever the job's own max_attempts. Default: the job's.
  std::optional<int> max_attempts{};
  // The backoff of failed attempts. Default: the Queue's for this queue name.
  std::optional<Backoff> backoff{};
  // A backoff of your own: the delay before the next attempt of a job whose attempt just
  // failed (job.attempts counts it). Overrides `backoff`; a handler's retry_after wins.
  std::function<Duration(const Job&)> retry_delay{};
};

struct WorkerOptions {
  // Written to leased_by. Default: "HOST/PID".
  std::string worker_id{};
  Duration lease_duration = std::chrono::seconds(30);  // Default: 30s, 1s at least
  Duration grace = std::chrono::seconds(30);           // Default: 30s
  // Return from run() once every handled queue holds no available (not even scheduled or
  // retrying) and no running job. Default: false (run until stopped).
  bool drain = false;
  // The wait between lease calls that find nothing grows from min to max. Defaults:
  // 10ms, 1s. (On PostgreSQL an enqueue wakes the worker at once anyway.)
  Duration idle_wait_min = std::chrono::milliseconds(10);
  Duration idle_wait_max = std::chrono::seconds(1);
  // Enqueue the ticks of the database's periodic schedules. Default: true.
  bool run_schedules = true;
  // Take turns with other workers at deleting finished jobs of the handled queues past
  // their retention (QueueOptions::retention), this often. nullopt: never. Default: 1 min.
  std::optional<Duration> retention_interval = std::chrono::minutes(1);
  // Take turns with other workers (one of all per turn, claim_task "snapshot_watch") at
  // looking for a transaction that has held the oldest snapshot this long, and warn about it
  // (event "snapshot_held", naming it) once per turn while it lasts: such a snapshot keeps
  // the database from reclaiming what leased and finished jobs leave behind
  // (Queue::storage_health, docs/metrics.md). The first look comes one interval after the
  // start. nullopt: never. Default: 1 min.
  std::optional<Duration> warn_snapshot_after = std::chrono::minutes(1);
  // Where log events go. Default: the Queue's logger (QueueOptions::logger).
  Logger logger{};
  // Events below this level are not even built: a job's start and its success are kDebug,
  // two events per job, and with short jobs building them costs more than the job.
  // Default: kDebug (every event reaches the logger, which may filter them itself).
  LogLevel log_level = LogLevel::kDebug;
};

// Totals since run() started.
struct WorkerCounters {
  std::int64_t succeeded = 0;
  std::int64_t failed = 0;    // failed attempts (timeouts included), retried or not
  std::int64_t dead = 0;      // of those, the ones that ended the job as dead
  std::int64_t released = 0;  // handed back at shutdown, no attempt spent
  std::int64_t lost = 0;      // lease lost: cancelled or taken over; result discarded
  std::int64_t running = 0;   // handlers running now
};

// "HOST/PID": the worker id of a Worker whose options give none.
std::string default_worker_id();

class Worker {
 public:
  // `queue` must outlive the Worker.
  explicit Worker(Queue& queue, WorkerOptions options = {});
  ~Worker();  // stops (without grace) and waits, if run() is still going on another thread
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Registers the handler of a queue. kInvalidArgument for a bad queue name or config, a
  // queue registered twice, or a call after run() started.
  Status handle(std::string queue, JobHandler handler, QueueConfig config = {});

  // Works until stopped (or drained). Returns an error when no queue was registered, or
  // when the database reported an error other than being unavailable (kUnavailable is
  // waited out with backoff, and logged once per outage); the jobs held then are
  // handled as in a shutdown first.
  Status run();

  void stop();
  WorkerCounters counters() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// SIGINT and SIGTERM, received on a thread of its own, for a clean shutdown: the
// constructor blocks both signals in the calling thread, so construct it in main()
// before any other thread starts (threads inherit the mask, and the signals then reach
// only this watcher). No signal handler runs: the callback is called on the watcher's
// ordinary thread, where calling Worker::stop() is fine. The mask stays in place after
// destruction (the process is about to exit; unblocking would let a late signal kill it).
//
//   int main() {
//     readpast::ShutdownSignals signals;             // first, before any thread
//     ... open the Queue, build the Worker ...
//     signals.on_signal([&](int) { worker.stop(); });
//     return worker.run() ? 0 : 1;
//   }
//
// Thread-safety: constructed and destroyed by one thread; on_signal() may be called from
// any thread; the callback runs on the watcher's thread.
class ShutdownSignals {
 public:
  explicit ShutdownSignals(std::function<void(int signal)> on_signal = {});
  ~ShutdownSignals();
  ShutdownSignals(const ShutdownSignals&) = delete;
  ShutdownSignals& operator=(const ShutdownSignals&) = delete;

  // Replaces the callback. A signal that arrives while no callback is set (before the
  // first, or after an empty one) is kept, and the next callback set is called with it at
  // once, on the calling thread: a SIGTERM during start-up is not lost.
  void on_signal(std::function<void(int signal)> callback);
  // Whether the signals could be blocked and watched; when not, says why.
  Status status() const;

 private:
  struct Watcher;
  std::unique_ptr<Watcher> watcher_;
};

}  // namespace readpast
