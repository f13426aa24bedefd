// worker/runtime.hpp — the worker runtime: leases jobs of one queue, runs each with a
// Handler on one of N slot threads, keeps their leases alive and records their results.
//
// Threads (all started and joined by run()):
//   - the caller of run(): the leasing loop. It asks for jobs only for free slots (one
//     lease call per free slot, so that leased_by names the slot: "WORKER_ID/slotK"),
//     and when the queue is empty waits in Queue::wait_for_work with a timeout that grows
//     up to idle_wait_max; it never spins.
//   - one thread per slot: runs the handler, then completes, fails or releases the job.
//   - the heartbeat thread: every lease_duration / 3 extends every held lease in one
//     extend_batch; a lease found lost (the job was cancelled or taken over) stops that
//     job's handler and its result is discarded. About once a minute it also removes
//     succeeded jobs past their retention.
//   - the timer thread: stops handlers whose timeout or shutdown grace has run out. It
//     never touches the database, so a slow database cannot delay a timeout.
// Database calls that fail with kUnavailable are retried with backoff, logged once per
// outage (OutageLog). Any other error of the leasing loop ends run() with that error,
// after the running jobs were handled as in a shutdown.
//
// Shutdown: the first request_stop() stops leasing; running handlers get `grace` to
// finish, and their results are recorded normally; past it they are stopped and their
// jobs released (no attempt spent). A second request_stop() ends the grace period now.
//
// Thread-safety: request_stop() and counters() may be called from any thread at any
// time (request_stop is not async-signal-safe: call it from a signal-handling thread).
// run() is called once, from one thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "readpast/queue.hpp"
#include "worker/handler.hpp"
#include "worker/outage_log.hpp"

namespace readpast::worker {

struct RuntimeOptions {
  std::string queue;      // REQUIRES: a valid queue name
  std::string worker_id;  // REQUIRES: not empty. Default in the CLI: "HOST/PID"
  int concurrency = 1;    // slots. Default: 1
  Duration lease_duration = std::chrono::seconds(30);  // Default: 30s
  // Per attempt; past it the handler is stopped and the job fails. Default: none.
  std::optional<Duration> timeout;
  Duration grace = std::chrono::seconds(30);  // Default: 30s
  // Return once the queue holds no available (even scheduled) and no running job.
  bool drain = false;  // Default: false
  // Overrides the queue's backoff for failed attempts. Default: the queue's.
  std::optional<Backoff> backoff;
  // Bounds of the wait between lease calls that find nothing. Default: 10ms .. 1s.
  Duration idle_wait_min = std::chrono::milliseconds(10);
  Duration idle_wait_max = std::chrono::seconds(1);
  // How often expired succeeded jobs are removed. Default: 1 min.
  Duration cleanup_interval = std::chrono::minutes(1);
  Logger logger;  // Default: silent
};

// Totals since run() started; a consistent-enough snapshot for a progress display.
struct RuntimeCounters {
  std::int64_t succeeded = 0;
  std::int64_t failed = 0;    // failed attempts (timeouts included), retried or not
  std::int64_t dead = 0;      // of those, the ones that used the last attempt
  std::int64_t released = 0;  // handed back at shutdown
  std::int64_t lost = 0;      // lease lost: cancelled or taken over; result discarded
  std::int64_t running = 0;   // now
};

class Runtime {
 public:
  // `queue` must outlive the Runtime.
  Runtime(Queue& queue, RuntimeOptions options, Handler handler);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Works until stopped (request_stop) or, with drain, until the queue is drained. Returns
  // an error only when the leasing loop met a database error other than kUnavailable.
  Status run();

  void request_stop();
  RuntimeCounters counters() const;

 private:
  using Clock = std::chrono::steady_clock;
  enum class StopPhase { kRunning, kGraceful, kForced };
  enum class Abort { kNone, kTimedOut, kLeaseLost, kShutdown };
  enum class JobPhase { kRunning, kSettling };

  // A job held by a slot.
  struct ActiveJob {
    // Constant while the job is held.
    Job job;
    std::stop_source stop;  // thread-safe by itself
    Clock::time_point started;
    std::optional<Clock::time_point> timeout_at;
    // Guarded by Runtime::mu_.
    JobPhase phase = JobPhase::kRunning;
    Abort abort = Abort::kNone;
    Clock::time_point lease_expires;  // a conservative local estimate
  };

  struct Slot {
    // Constant after construction.
    int number = 0;  // from 1
    std::string worker_id;
    // Guarded by mu_: the job the slot holds; set by the leasing loop, cleared by the slot.
    std::unique_ptr<ActiveJob> active;
  };

  void leasing_loop();
  // What one round of leasing came to.
  struct LeaseRound {
    int leased = 0;
    bool unavailable = false;  // the database was unavailable: back off, then try again
    bool end = false;          // stopping, or a fatal error (recorded in fatal_error_)
  };
  // Leases up to one job per free slot.
  LeaseRound lease_for_free_slots();
  // True when the drain condition holds (checked only when no slot holds a job).
  bool drained();
  void slot_loop(Slot& slot);
  void settle(const ActiveJob& active, const HandlerOutcome& outcome, Abort abort);
  void heartbeat_loop();
  void timer_loop();

  // Sleeps for `duration` or until a stop is requested. REQUIRES: mu_ not held.
  void sleep_unless_stopping(Duration duration);
  // Retries `call` while it fails with kUnavailable, until `give_up` passes.
  template <class Call>
  auto retry_unavailable(std::string_view what, Call&& call, const ActiveJob* active);
  // A fatal error of the leasing loop: remember the first, stop gracefully.
  void fail_fatally(const Error& error);
  void log(LogLevel level, const std::string& message) const;
  std::string slot_summary(const ActiveJob& active) const;

  // Constant after construction.
  Queue& queue_;
  const RuntimeOptions options_;
  const Handler handler_;
  OutageLog outage_;

  mutable std::mutex mu_;
  std::condition_variable cv_;  // any change of the state below
  // Guarded by mu_.
  std::vector<Slot> slots_;  // sized once in the constructor; Slot::active guarded
  StopPhase stop_phase_ = StopPhase::kRunning;
  Clock::time_point grace_deadline_{};  // meaningful once stop_phase_ != kRunning
  bool threads_exit_ = false;           // tells slot, heartbeat and timer threads to end
  std::optional<Error> fatal_error_;

  // Lock-free counters, read by counters().
  std::atomic<std::int64_t> succeeded_{0};
  std::atomic<std::int64_t> failed_{0};
  std::atomic<std::int64_t> dead_{0};
  std::atomic<std::int64_t> released_{0};
  std::atomic<std::int64_t> lost_{0};
  std::atomic<std::int64_t> running_{0};
};

}  // namespace readpast::worker
