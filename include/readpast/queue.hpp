// readpast/queue.hpp — the handle on one readpast database.
//
// Thread-safety: a Queue may be used from many threads at once; it keeps a small pool of
// connections and every call takes one for its duration. Queue is movable, not copyable.
//
// Every settling call (complete, fail, extend, release, progress) is fenced by the lease token: it
// changes the job only if the token is the job's current one and the job is running;
// otherwise it reports ErrorCode::kLeaseLost and changes nothing.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "readpast/error.hpp"
#include "readpast/job.hpp"
#include "readpast/options.hpp"

namespace readpast {

namespace detail {
class Engine;
}

// Ends what it stands for (a subscription) when destroyed or reset; empty when there was
// nothing to subscribe to. Movable, not copyable.
class Subscription {
 public:
  Subscription() = default;
  explicit Subscription(std::function<void()> end) : end_(std::move(end)) {}
  Subscription(Subscription&& other) noexcept : end_(std::exchange(other.end_, nullptr)) {}
  Subscription& operator=(Subscription&& other) noexcept {
    if (this != &other) {
      reset();
      end_ = std::exchange(other.end_, nullptr);
    }
    return *this;
  }
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;
  ~Subscription() { reset(); }

  explicit operator bool() const noexcept { return static_cast<bool>(end_); }
  void reset() {
    if (auto end = std::exchange(end_, nullptr)) end();
  }

 private:
  std::function<void()> end_;
};

// What one rotation of an engine's storage did (Queue::rotate_storage).
struct StorageRotation {
  // False when the engine's storage does not rotate, or the segment to empty was in use by a
  // long transaction (then a later turn tries again).
  bool rotated = false;
  // Jobs still running in the emptied segment, moved to the current one.
  std::int64_t moved = 0;
  // When it did not rotate: the session whose transaction, open for over a second, holds a
  // lock on the segment to empty (described as StorageHealth describes a snapshot's holder);
  // nullopt when only short transactions were in the way, or the engine cannot tell.
  std::optional<SnapshotHolder> blocked_by;
};

class Queue {
 public:
  // URL: "sqlite:PATH" (PATH may be relative; "?synchronous=normal", "?busy_timeout=MS",
  // "?cache_mib=N" and, for a new file, "?page_size=N" may follow; docs/sqlite.md) or
  // "postgresql://..." / libpq keywords. The database file must exist unless
  // options.init_schema is set.
  static Result<Queue> open(std::string_view url, QueueOptions options = {});

  Queue(Queue&&) noexcept;
  Queue& operator=(Queue&&) noexcept;
  ~Queue();

  // Creates the schema or upgrades it in place; a no-op when it is current.
  // Returns the schema version now in force.
  Result<int> init();

  Result<Enqueued> enqueue(const NewJob& job);
  // One round trip (one transaction) for all of them; all or nothing.
  Result<std::vector<Enqueued>> enqueue_batch(std::span<const NewJob> jobs);

  // Up to request.max_jobs jobs of the queue, in (priority, run_at, id) order, each now
  // running with attempts + 1 and a fresh token. Never waits on rows other workers take.
  Result<std::vector<Job>> lease(const LeaseRequest& request);

  Status complete(JobId id, const LeaseToken& token);
  Result<FailOutcome> fail(JobId id, const LeaseToken& token, std::string_view error,
                           const FailOptions& options = {});
  Status extend(JobId id, const LeaseToken& token, Duration lease_duration);
  Status release(JobId id, const LeaseToken& token, Duration delay = Duration::zero());
  // Records the running job's progress: JSON text (any value) of at most kMaxProgressBytes,
  // replacing what was recorded before; get() returns it. kInvalidArgument for text that is
  // not JSON or is too long (nothing changed). The job keeps it after it finishes, and a new
  // attempt replaces it when it records its own.
  Status progress(JobId id, const LeaseToken& token, std::string_view json);

  // Batch forms: one statement; result[i] tells whether refs[i] still held its lease.
  Result<std::vector<bool>> complete_batch(std::span<const LeasedRef> refs);
  Result<std::vector<bool>> extend_batch(std::span<const LeasedRef> refs, Duration lease_duration);
  // result[i] tells whether refs[i] still holds its lease (its job is running under that
  // token): a read that changes nothing, so a worker can ask every fraction of a second and
  // stop a job that was cancelled (or taken over) without waiting for its next extend.
  Result<std::vector<bool>> leases_held(std::span<const LeasedRef> refs);
  // result[i] is where items[i]'s job went, or nullopt when it no longer held its lease.
  Result<std::vector<std::optional<FailOutcome>>> fail_batch(std::span<const FailRequest> items);

  // Blocks until jobs may have become available in the queue (a NOTIFY on PostgreSQL, a
  // commit by any connection on SQLite) or the timeout passes. Returns true when woken
  // early. A worker calls it when lease() returned nothing, instead of sleeping blindly;
  // it never replaces lease(): a true result is a hint, not a promise. On PostgreSQL, of
  // the threads waiting on one Queue for the queue, a notification wakes one; a lease()
  // that comes back with max_jobs jobs wakes the next (docs/postgres.md).
  Result<bool> wait_for_work(std::string_view queue, Duration timeout);

  // Calls `notify` soon after any job is cancelled, from another thread, on engines that
  // push cancellations (PostgreSQL: a NOTIFY on the wake-up channel, when it can LISTEN);
  // a worker then asks leases_held at once instead of at its next poll. Empty when the
  // engine does not push (SQLite, MariaDB, PostgreSQL behind a transaction pooler without a
  // direct listen URL): poll leases_held. A notification can be lost (a reconnect calls
  // `notify` once to make up for it), so a worker keeps polling too. `notify` must be
  // cheap and must not call this Queue; it is not called once the Subscription is gone,
  // which must be before the Queue is.
  Subscription on_cancel(std::function<void()> notify);

  // Moves running jobs of the queue whose lease expired back to available (or to dead
  // when their attempts are spent). lease() does this by itself at most once per
  // options.rescue_interval; returns how many jobs moved.
  Result<std::int64_t> rescue_expired(std::string_view queue);
  // rescue_expired of every queue that stats() finds with expired leases. It costs one
  // stats() (a count over every job) besides the rescues: for an operator's command, not
  // for a loop.
  Result<std::int64_t> rescue_expired_all();

  // waiting, available or running → cancelled; then the jobs that waited for them are
  // cancelled too, down the chain (resolve_dependencies). Returns the ids that were cancelled.
  Result<std::vector<JobId>> cancel(std::span<const JobId> ids);
  // dead or cancelled → available now, attempts reset to 0; a job enqueued after others goes
  // back to waiting for those that have not succeeded (docs/workflows.md). Returns the ids
  // retried.
  Result<std::vector<JobId>> retry(std::span<const JobId> ids);
  // Deletes the jobs among ids that are succeeded, dead or cancelled (never a live job: cancel
  // it first). Returns the ids deleted.
  Result<std::vector<JobId>> remove(std::span<const JobId> ids);
  // Every job of the queue in the state (dead or cancelled); returns how many.
  Result<std::int64_t> retry_all(std::string_view queue, JobState state);
  // Deletes succeeded, dead or cancelled jobs (and their error history); returns how many.
  Result<std::int64_t> purge(const PurgeRequest& request);
  // One round of retention for the queue: deletes at most `limit` jobs of each finished
  // state that are older than the queue's Retention (options.queue_retention, else
  // options.retention), each state in its own short statement. Returns how many it deleted:
  // call again while that is more than zero. Each round also forgets up to `limit` unique
  // windows (NewJob::unique_for) of any queue that have closed (not counted).
  Result<std::int64_t> apply_retention(std::string_view queue, int limit = 1000);

  // Pausing a queue stops lease() from handing out its jobs (for every client: workers,
  // the SQL functions, other hosts); running jobs finish normally. Both are idempotent.
  Status pause(std::string_view queue);
  Status resume(std::string_view queue);

  // Global limits of a queue, over every worker on every host (docs/workflows.md "Global
  // limits"). set_limits sets the limits given and keeps the queue's other one; clear_limits
  // removes both. Once set, a lease of the queue takes at most running-limit minus running
  // jobs and at most as many as leave the rate held in every window; it never waits for
  // another worker's lease (it returns fewer jobs, or none). Jobs running when a limit is
  // set keep running. limits() is empty for a queue without limits.
  Status set_limits(std::string_view queue, const QueueLimits& limits);
  Status clear_limits(std::string_view queue);
  Result<QueueLimits> limits(std::string_view queue);

  // Periodic jobs (see Schedule). add_schedule creates a schedule, or replaces the one of
  // that name (keeping its last tick, so no tick is enqueued twice); returns true when it
  // created one.
  Result<bool> add_schedule(const Schedule& schedule);
  Result<std::vector<Schedule>> list_schedules();
  Status remove_schedule(std::string_view name);  // kNotFound when there is none
  // "Run now": enqueues one job from the schedule's queue, payload, priority and
  // max_attempts, due at once and without a unique key, in one transaction. The schedule's
  // ticks are not touched: its next tick still comes when it would have. Returns the job's
  // id; kNotFound when there is no schedule of that name (then nothing changed).
  Result<JobId> run_schedule(std::string_view name);
  // For each schedule whose latest tick at or before `now` has not been enqueued yet,
  // enqueues one job for that tick (run_at = the tick) and records the tick, atomically:
  // of any number of callers racing, on any hosts, exactly one enqueues each tick. Ticks
  // missed while nobody called are not made up: only the latest one is enqueued. `now`
  // defaults to the database's clock (tests pass their own).
  Result<std::vector<ScheduledJob>> enqueue_due(std::optional<TimePoint> now = std::nullopt);

  // Claims a shared maintenance task (e.g. a retention pass) for `interval`: of workers
  // racing, on any hosts, one gets true per interval, so that they take turns instead of
  // all doing the same work. `by` names the claimant (e.g. the worker id).
  Result<bool> claim_task(std::string_view task, Duration interval, std::string_view by);

  // PostgreSQL keeps running jobs in a ring of segments (docs/postgres.md, "Running jobs: a
  // ring of three segments"): one rotation empties the oldest with TRUNCATE, which gives back
  // the space of every job settled in it without vacuum, even while another session holds an
  // old snapshot. lease() takes turns at it by itself: of every process, on any hosts, one
  // rotates per kRotationInterval (claim_task "ring"), so nobody else needs to; this rotates
  // now. On an engine whose storage does not rotate, it does nothing (rotated = false).
  static constexpr Duration kRotationInterval = std::chrono::seconds(10);
  Result<StorageRotation> rotate_storage();

  // What keeps the database from reclaiming the space jobs leave behind, and how much each
  // table of the storage takes now (StorageHealth): for `readpast metrics`, the worker's
  // warning about a snapshot held for long (WorkerOptions::warn_snapshot_after) and
  // `readpast stats`. A few catalog reads; allowed on a read-only Queue.
  Result<StorageHealth> storage_health();

  // The database's clock.
  Result<TimePoint> now();

  // How many jobs of each queue (or of the named one) reached succeeded or dead since
  // `since`: for rates per second in `readpast stats --watch` and metrics.
  Result<std::vector<FinishedCounts>> finished_since(
      TimePoint since, std::optional<std::string_view> queue = std::nullopt);

  // One entry per queue that has jobs or is paused, ordered by name; or just the named
  // queue.
  Result<std::vector<QueueStats>> stats(std::optional<std::string_view> queue = std::nullopt);
  // The jobs of ListRequest, in its order; list_page also says where the next page starts,
  // and bounds its reading by request.scan_limit (see ListRequest). list is list_page's jobs.
  Result<std::vector<Job>> list(const ListRequest& request);
  Result<JobPage> list_page(const ListRequest& request);
  Result<Job> get(JobId id);  // kNotFound when there is no such job
  // What the job waits for (NewJob::after) and what waits for it; empty lists for a job
  // without dependencies, kNotFound when there is no such job.
  Result<Dependencies> dependencies(JobId id);
  // A group's members by state (kNotFound when no job was ever enqueued in it), and its
  // members in id order, a page at a time (after `after_id`).
  Result<GroupStats> group_stats(std::string_view group);
  Result<std::vector<Job>> list_group(std::string_view group, JobId after_id = 0, int limit = 100);
  // Tells the dependents of jobs that finished (docs/workflows.md): a waiting job whose last
  // dependency succeeded becomes available; one whose dependency ended dead or cancelled is
  // cancelled, and so on down the chain. Every step is a short transaction of its own; this
  // goes on until nothing is left and returns how many jobs and edges it went through. While
  // another session holds what a step needs (the resolver's lock, a finished job's row), it
  // waits and tries again, for up to two seconds.
  // lease() calls it by itself at most every kResolveInterval and cancel() at once,
  // so that nobody else needs to; a crash in between only delays it.
  static constexpr Duration kResolveInterval = std::chrono::milliseconds(100);
  Result<std::int64_t> resolve_dependencies();

  // Metrics (docs/metrics.md). A Queue counts the jobs it leased as they settle (completed,
  // failed, dead, lease lost), rescues, database errors, and times runs, queue waits and
  // lease round trips; it adds them to the database's totals (readpast_metrics) every
  // options.metrics_interval, so that they outlive the jobs they count. flush_metrics adds
  // what is pending now (a worker calls it before it exits).
  Status flush_metrics();
  // The totals every process has flushed, one entry per series.
  Result<std::vector<MetricSample>> metrics();

  // Worker processes (the dashboard's workers page): report_worker records one with the
  // database's clock as its heartbeat (and forgets every process whose last report is
  // older than kForgetWorkerAfter); a worker reports every few seconds and forgets itself
  // when it stops.
  static constexpr Duration kForgetWorkerAfter = std::chrono::hours(1);
  Status report_worker(const WorkerProcess& worker);
  Status forget_worker(std::string_view name);
  Result<std::vector<WorkerProcess>> workers();  // by name

  const QueueOptions& options() const noexcept;

 private:
  struct State;
  explicit Queue(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// Validation shared by the API and the command line.
// Queue names match [A-Za-z0-9][A-Za-z0-9_.-]{0,127}.
Status validate_queue_name(std::string_view name);
// Schedule names follow the same rule.
Status validate_schedule_name(std::string_view name);
// Group names (NewJob::group) too.
Status validate_group_name(std::string_view name);

// Rates are written "N/DUR" (N from 1 to kMaxRateCount, DUR a positive duration as
// parse_duration reads it): "100/1s", "5000/1m". format_rate writes what parse_rate reads.
Result<RateLimit> parse_rate(std::string_view text);
std::string format_rate(const RateLimit& rate);
Status validate_rate(const RateLimit& rate);
// A running limit from 1 to kMaxRunningLimit, a valid rate.
Status validate_limits(const QueueLimits& limits);

}  // namespace readpast
