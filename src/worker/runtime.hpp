// worker/runtime.hpp — the engine of readpast::Worker (and so of `readpast work`): leases
// jobs of its queues, runs them on handler threads, keeps their leases alive, records
// their results, and shuts down gracefully.
//
// Threads (all started and joined by run()):
//   - per queue (a Lane), one fetcher: leases up to the lane's free capacity
//     (concurrency + prefetch - the jobs that wait or run - the jobs asked for by a lease
//     in flight) in one call, and when the queue is empty waits in Queue::wait_for_work
//     with a timeout that doubles from idle_wait_min to idle_wait_max; it never spins.
//     With prefetch, it leases again only once half the capacity is free or fewer jobs
//     wait than there are handler threads (refill.hpp), so that short jobs come in large
//     batches rather than one lease per finished job. When it stops, it releases the
//     lane's jobs that no handler has started.
//   - per queue with prefetch, a second fetcher that only overlaps: while leases come back
//     full (more jobs are likely due), each asks for at most half the capacity, and while
//     the fetcher's lease is in flight the second fetcher leases the other half, on
//     another connection (refill.hpp: lease_size, should_overlap). A lease is a round
//     trip and a statement whose cost grows with its rows; one at a time, the handlers of
//     short jobs wait for it. It never waits for work, never decides that the queue is
//     drained, and ends with the fetcher.
//   - per queue, `concurrency` handler threads: each takes the next leased job of its lane,
//     runs the handler, then fails or releases the job, or hands it to the completer.
//   - the completer: records completions in batches (complete_batch); the completions
//     that arrive while a batch is being recorded go together in the next one.
//   - the heartbeat: every lease_duration / 3, extends every held lease in one
//     extend_batch; a lease found lost stops that job's handler and discards its result.
//   - the timer: stops handlers whose timeout or shutdown grace has run out. It never
//     touches the database, so a slow database cannot delay a timeout.
//   - the maintenance thread (when there is maintenance to do): enqueues the ticks of
//     periodic schedules, and takes turns with other workers at retention.
// Database calls that fail with kUnavailable are retried with backoff and logged once per
// outage (OutageLog). Any other error of a fetcher ends run() with that error, after the
// held jobs were handled as in a shutdown.
//
// Waking: every thread waits on a condition variable of its own role, so that a finished
// job wakes the one thread that has something to do about it, not all of them (with 8
// handler threads and a timer that looks at every held job, waking all per job cost more
// than the jobs). A change every role cares about (a stop, the end) goes through
// wake_everyone().
//
// Invariants (under mu_):
//   - every job this worker holds a lease on is in held_ from the moment its lease call
//     returned until its settlement (complete, fail, release) returned or gave up;
//   - lane.held counts the lane's jobs in held_; lane.ready holds those no handler took yet;
//     lane.settling counts those of the lane's jobs whose phase is kSettling;
//   - lane.asking is the sum of max_jobs of the lane's lease calls in flight: the held jobs
//     plus lane.asking never exceed what the lane's capacity allowed when each call began.
//
// Thread-safety: request_stop() and counters() may be called from any thread at any
// time. run() is called once, from one thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/log.hpp"
#include "readpast/queue.hpp"
#include "readpast/worker.hpp"
#include "worker/outage_log.hpp"
#include "worker/snapshot_watch.hpp"

namespace readpast::worker {

// One queue the runtime works on.
struct LaneSetup {
  std::string queue;
  JobHandler handler;
  QueueConfig config;
};

class Runtime {
 public:
  // REQUIRES: options validated (worker id set, positive lease), lanes not empty and
  // validated. `queue` must outlive the Runtime.
  Runtime(Queue& queue, WorkerOptions options, std::vector<LaneSetup> lanes);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  Status run();
  void request_stop();
  WorkerCounters counters() const;

 private:
  using Clock = std::chrono::steady_clock;
  enum class StopPhase { kRunning, kGraceful, kForced };
  enum class Abort { kNone, kTimedOut, kLeaseLost, kShutdown };
  enum class JobPhase { kWaiting, kRunning, kSettling };

  // A job this worker holds a lease on.
  struct Held {
    // Constant while held.
    Job job;
    std::size_t lane = 0;
    std::stop_source stop;  // thread-safe by itself
    // Guarded by mu_.
    JobPhase phase = JobPhase::kWaiting;
    Abort abort = Abort::kNone;
    Clock::time_point started{};
    std::optional<Clock::time_point> timeout_at;
    Duration timeout{0};              // the one that applies, for the message
    Clock::time_point lease_expires;  // a conservative local estimate
  };

  struct Lane {
    explicit Lane(LaneSetup s) : setup(std::move(s)) {}
    // Constant after construction.
    LaneSetup setup;
    // Guarded by mu_.
    std::deque<Held*> ready;     // leased, not yet taken by a handler thread
    int held = 0;                // the lane's jobs in held_
    int settling = 0;            // of those, the ones in JobPhase::kSettling (mark_settling)
    int asking = 0;              // jobs asked for by the lane's lease calls in flight
    bool full = false;           // the lane's last lease returned all it asked for
    int fetch_threads = 0;       // the lane's fetch threads that have not ended (0: done)
    bool fetcher_ended = false;  // the (first) fetcher has ended: the second one ends too
    // Used with mu_. The handler threads wait on work_cv for ready jobs; the fetchers on
    // fetch_cv for needs_jobs() (notify_all: two fetchers wait on it for different
    // conditions).
    std::condition_variable work_cv;
    std::condition_variable fetch_cv;
  };

  // A completion waiting for the completer.
  struct Completion {
    Held* held = nullptr;
  };

  void fetch_loop(std::size_t lane);
  // The lane's second fetcher (see "Threads" above).
  void overlap_loop(std::size_t lane);
  // A fetch thread of the lane has ended; the last one marks the lane's fetching done.
  void fetch_thread_ended(std::size_t lane);
  // Whether the lane's fetcher should lease now. REQUIRES: mu_ held.
  bool needs_jobs(const Lane& lane) const;
  // The lane's jobs that wait or run, and those asked for by its leases in flight: what
  // takes its capacity (refill.hpp). REQUIRES: mu_ held.
  static int unfinished(const Lane& lane);
  // The job is finished or handed back: its settling call is all that is left. REQUIRES: mu_
  // held, the job not yet settling.
  void mark_settling(Held& held);
  // Leases up to the lane's free capacity; what came of it.
  enum class Fetched { kSome, kNone, kUnavailable, kEnd };
  Fetched fetch_once(std::size_t lane);
  bool drained(std::size_t lane);
  void release_waiting(std::size_t lane);

  void handler_loop(std::size_t lane);
  // Whether a handler thread of the lane may start a job now. REQUIRES: mu_ held.
  bool may_start(const Lane& lane) const;
  // Takes the lane's next ready job and marks it running. REQUIRES: mu_ held, may_start.
  Held* start_next(Lane& lane);
  JobResult call_handler(const LaneSetup& setup, const Held& held);
  void settle(Held& held, const JobResult& result, Abort abort);
  void record_failure(Held& held, std::string error, std::optional<Duration> retry_after,
                      bool no_retry);
  void release(Held& held, std::string_view why);
  // Forgets a settled job: erases it from held_ and wakes whoever waits for capacity.
  void forget(Held& held);
  // forget() for each job of a completed batch, in one turn of the lock.
  void forget_all(std::span<const Completion> batch);

  void complete_loop();
  void heartbeat_loop();
  void timer_loop();
  void maintenance_loop();
  // Reports this process (Queue::report_worker) and flushes the Queue's metrics every few
  // seconds; at the end, flushes them once more and forgets the process.
  void report_loop();
  WorkerProcess describe_process() const;
  // Takes the retention turn of each lane whose next try has come; sets its next try.
  void run_retention(std::vector<Clock::time_point>& next_retention);
  // One turn at SnapshotWatch; returns when to take the next. REQUIRES warn_snapshot_after.
  Clock::time_point watch_snapshots(SnapshotWatch& watch);
  Duration snapshot_watch_interval() const;

  // Sleeps for `duration` or until a stop is requested. REQUIRES: mu_ not held.
  void sleep_unless_stopping(Duration duration);
  // Retries `call` while it fails with kUnavailable, until `give_up` (a steady time)
  // passes or the worker is forced to stop.
  template <class Call>
  auto retry_unavailable(std::string_view what, Call&& call, Clock::time_point give_up,
                         bool* was_unavailable = nullptr);
  // A fatal error of a fetcher: remember the first, stop gracefully.
  void fail_fatally(const Error& error);
  // Notifies every condition variable. REQUIRES: mu_ not held.
  void wake_everyone();
  // Whether an event of `level` is logged at all: when not, its text is not even built.
  bool logs(LogLevel level) const;
  void log(LogLevel level, std::string message,
           std::vector<std::pair<std::string, std::string>> fields = {}) const;
  std::vector<std::pair<std::string, std::string>> job_fields(const Held& held,
                                                              std::string_view event) const;
  std::string describe(const Held& held) const;

  // Constant after construction.
  Queue& queue_;
  const WorkerOptions options_;
  const detail::LevelledLogger logger_;  // options_.logger at options_.log_level
  OutageLog outage_;
  std::deque<Lane> lanes_;  // the deque itself is constant; Lane's guarded fields are not

  mutable std::mutex mu_;
  // Used with mu_ (see "Waking" above). cv_: a stop, the end, every fetcher done, the last
  // held job gone (run(), the heartbeat, maintenance and the backoff sleeps wait on it).
  std::condition_variable cv_;
  std::condition_variable complete_cv_;  // the completer: to_complete_ or the end
  std::condition_variable timer_cv_;     // the timer: a deadline earlier than timer_next_
  // Guarded by mu_.
  // Keyed by address, not job id: a job whose lease this worker lost (expired while its
  // handler still ran) may be leased by this same worker again while the first Held is
  // still being settled.
  std::unordered_map<const Held*, std::unique_ptr<Held>> held_;
  std::vector<Completion> to_complete_;
  StopPhase stop_phase_ = StopPhase::kRunning;
  Clock::time_point grace_deadline_{};  // meaningful once stop_phase_ != kRunning
  bool fetchers_done_ = false;          // every fetcher has ended
  bool threads_exit_ = false;           // tells the other threads to end
  bool check_leases_now_ = false;       // a job was cancelled somewhere (Queue::on_cancel)
  std::optional<Error> fatal_error_;
  // When the timer wakes next (max: only when notified). A job whose timeout falls
  // earlier notifies it.
  Clock::time_point timer_next_ = Clock::time_point::max();

  // Lock-free counters, read by counters().
  std::atomic<std::int64_t> succeeded_{0};
  std::atomic<std::int64_t> failed_{0};
  std::atomic<std::int64_t> dead_{0};
  std::atomic<std::int64_t> released_{0};
  std::atomic<std::int64_t> lost_{0};
  std::atomic<std::int64_t> running_{0};
};

}  // namespace readpast::worker
