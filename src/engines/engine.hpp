// engines/engine.hpp — the seam between the engine-independent Queue and one database.
//
// Internal and unstable by design (after River's driver interface): one virtual call per
// operation, batch-shaped, each taking plain values already validated by Queue. An engine
// never validates queue names or payload sizes and never computes backoff randomness itself;
// it runs its SQL and maps database errors onto readpast::Error.
//
// Thread-safety: every method may be called from many threads at once; an engine keeps
// its own pool of connections.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/dependencies.hpp"
#include "core/limits.hpp"
#include "core/schedule_spec.hpp"
#include "readpast/error.hpp"
#include "readpast/job.hpp"
#include "readpast/options.hpp"
#include "readpast/queue.hpp"

namespace readpast::detail {

// One failed attempt to settle, with the backoff already resolved by Queue.
struct FailItem {
  LeasedRef ref;
  std::string error;
  // Used when retry_after is empty: delay = min(cap, base * 2^(attempts-1)) * factor,
  // with attempts read from the row under the same statement.
  std::optional<Duration> retry_after;
  Duration backoff_base{0};
  Duration backoff_cap{0};
  double backoff_factor = 1.0;  // in [1 - jitter, 1], drawn by Queue
  bool no_retry = false;        // dead now, whatever attempts are left
};

// The counter of QueueStats that holds jobs in `state`: how engines fill in stats rows.
inline std::int64_t& count_of(QueueStats& stats, JobState state) {
  switch (state) {
    case JobState::kAvailable:
      return stats.available;
    case JobState::kRunning:
      return stats.running;
    case JobState::kSucceeded:
      return stats.succeeded;
    case JobState::kDead:
      return stats.dead;
    case JobState::kCancelled:
      return stats.cancelled;
    case JobState::kWaiting:
      return stats.waiting;
  }
  return stats.available;
}

// Fills in one (queue, state) row of an engine's stats: the count of jobs in the state and
// the one sub-count that state has, `scheduled` (run_at in the future) of available jobs or
// `expired` (lease passed, not yet rescued) of running ones. Every engine's stats rows carry
// them in the same column, so that this choice is made here once.
inline void set_state_counts(QueueStats& stats, JobState state, std::int64_t count,
                             std::int64_t sub_count) {
  count_of(stats, state) = count;
  if (state == JobState::kAvailable) stats.scheduled = sub_count;
  if (state == JobState::kRunning) stats.expired = sub_count;
}

// Adds one (state, count) row of a group's members to its stats.
inline void add_group_count(GroupStats& stats, std::string_view state, std::int64_t count) {
  switch (parse_job_state(state).value_or(JobState::kAvailable)) {
    case JobState::kWaiting:
      stats.waiting += count;
      break;
    case JobState::kAvailable:
      stats.available += count;
      break;
    case JobState::kRunning:
      stats.running += count;
      break;
    case JobState::kSucceeded:
      stats.succeeded += count;
      break;
    case JobState::kDead:
      stats.dead += count;
      break;
    case JobState::kCancelled:
      stats.cancelled += count;
      break;
  }
}

// What a lease under limits took (Engine::lease_limited).
struct LimitedLease {
  std::vector<Job> jobs;
  // The limit that made the lease take fewer jobs than asked while a due job was left
  // behind (readpast_lease_throttled_total, docs/metrics.md).
  std::optional<LimitKind> throttled;
  // False when the queue turned out to have no limits (the lease then took jobs as lease()
  // does), so that Queue stops taking this path for it.
  bool limited = true;
};

// Fills in a queue's limits from its stats row of state 'limits' (running_limit, rate_count,
// rate_window in microseconds), the same on every engine.
inline void set_limits_row(QueueStats& stats, std::optional<std::int64_t> running_limit,
                           std::optional<std::int64_t> rate_count,
                           std::optional<std::int64_t> rate_window) {
  stats.limits.running = running_limit;
  if (rate_count) stats.limits.rate = RateLimit{*rate_count, Duration(rate_window.value_or(1))};
}

// nullopt = lease lost for that item.
using FailResult = std::optional<FailOutcome>;

class Engine {
 public:
  virtual ~Engine() = default;

  // Creates or upgrades the schema; returns the version now in force.
  virtual Result<int> migrate() = 0;
  // kSchema when the schema is missing or newer than this build.
  virtual Status check_schema() = 0;

  virtual Result<std::vector<Enqueued>> enqueue(std::span<const NewJob> jobs) = 0;
  // Hands out nothing of a queue that is paused or has limits (lease_limited serves those):
  // its test reads the same row of the queues table as the pause test did.
  virtual Result<std::vector<Job>> lease(const LeaseRequest& request) = 0;
  // The lease of a queue with limits, in one short transaction: takes the queue's row of
  // the queues table without waiting (another lease holding it: nothing this time), counts
  // its running jobs (up to the running limit, along an index) and its free rate slots (up
  // to max_jobs), leases what lease_allowance allows and stamps that many rate slots with
  // the lease's time. Never reads more available jobs than it takes, plus one to tell
  // whether the limit left a due job behind.
  virtual Result<LimitedLease> lease_limited(const LeaseRequest& request) = 0;
  virtual Result<QueueLimits> limits(std::string_view queue) = 0;
  // Sets the limits given (a rate's slots resized by resized_rate_slots), keeps the other.
  virtual Status set_limits(std::string_view queue, const QueueLimits& limits) = 0;
  virtual Status clear_limits(std::string_view queue) = 0;
  // delete_row: retention is zero, so the row is deleted instead of kept as succeeded.
  virtual Result<std::vector<bool>> complete(std::span<const LeasedRef> refs, bool delete_row) = 0;
  virtual Result<std::vector<FailResult>> fail(std::span<const FailItem> items) = 0;
  virtual Result<std::vector<bool>> extend(std::span<const LeasedRef> refs,
                                           Duration lease_duration) = 0;
  virtual Result<std::vector<bool>> release(std::span<const LeasedRef> refs, Duration delay) = 0;
  // Sets the job's progress column (JSON text Queue validated) while it runs under the
  // token; false: lease lost, nothing changed.
  virtual Result<bool> progress(const LeasedRef& ref, std::string_view json) = 0;
  // Which leases are still held (the job running under that token): reads only, so that a
  // worker can ask often (Queue::leases_held).
  virtual Result<std::vector<bool>> held(std::span<const LeasedRef> refs) = 0;
  // See Queue::on_cancel. Default: this engine does not push cancellations.
  virtual Subscription on_cancel(std::function<void()> /*notify*/) { return {}; }
  // See Queue::wait_for_work.
  virtual Result<bool> wait_for_work(std::string_view queue, Duration timeout) = 0;
  virtual Result<std::int64_t> rescue_expired(std::string_view queue) = 0;

  virtual Result<std::vector<JobId>> cancel(std::span<const JobId> ids) = 0;
  virtual Result<std::vector<JobId>> retry(std::span<const JobId> ids) = 0;
  virtual Result<std::int64_t> retry_all(std::string_view queue, JobState state) = 0;
  virtual Result<std::int64_t> purge(const PurgeRequest& request) = 0;

  virtual Result<std::vector<QueueStats>> stats(std::optional<std::string_view> queue) = 0;
  // REQUIRES: request.view, when set, agrees with request.state (Queue::list_page sets the
  // state a view implies); request.scan_limit is Queue's business and ignored here.
  virtual Result<std::vector<Job>> list(const ListRequest& request) = 0;
  // The smallest and largest job id, nullopt when there is no job.
  virtual Result<std::optional<std::pair<JobId, JobId>>> id_bounds() = 0;
  // Deletes the jobs among ids that are succeeded, dead or cancelled; returns those ids.
  virtual Result<std::vector<JobId>> remove(std::span<const JobId> ids) = 0;
  // The job with its progress and its error history (Job::errors, oldest first).
  virtual Result<std::optional<Job>> get(JobId id) = 0;
  // What the job waits for and what waits for it (at most kMaxListedDependents of those).
  virtual Result<Dependencies> dependencies(JobId id) = 0;
  // One round, one short transaction (docs/workflows.md): takes up to kResolveJobs finished
  // jobs that still have dependents to tell and tells up to kResolveChunk dependents of them
  // in all; a success meets the edge (the last one makes the dependent available), a death
  // or cancellation cancels the waiting dependents. Returns how many jobs and edges it went
  // through: 0 when nothing was left to tell, or when the round was skipped: another session
  // held the resolver's lock or a row the round would take (SKIP LOCKED). The Queue asks
  // has_untold() first and runs a round only when it says yes: mostly nothing is left, and
  // the read takes no lock.
  virtual Result<std::int64_t> resolve_dependencies() = 0;
  // Whether anything is left for resolve_dependencies: a finished job with dependents still
  // to tell, or a group whose waiting jobs are still to be let go. A plain read, no lock.
  virtual Result<bool> has_untold() = 0;
  // nullopt when the group does not exist.
  virtual Result<std::optional<GroupStats>> group_stats(std::string_view group) = 0;
  virtual Result<std::vector<Job>> list_group(std::string_view group, JobId after_id,
                                              int limit) = 0;
  // Deletes at most `limit` unique windows that closed; returns how many.
  virtual Result<std::int64_t> forget_closed_windows(int limit) = 0;
  virtual Result<std::vector<FinishedCounts>> finished_since(
      TimePoint since, std::optional<std::string_view> queue) = 0;

  // Pausing is idempotent; resuming a paused queue wakes its waiting workers.
  virtual Status set_paused(std::string_view queue, bool paused) = 0;

  // Creates the schedule (created_at = now, no tick yet) or replaces the definition of the
  // one of that name, keeping its created_at and last tick; true when it created one.
  virtual Result<bool> upsert_schedule(const Schedule& schedule) = 0;
  virtual Result<std::vector<Schedule>> list_schedules() = 0;
  virtual Result<bool> delete_schedule(std::string_view name) = 0;  // false: no such schedule
  // Atomically: if the schedule's latest recorded tick (or, before its first, its
  // created_at) is earlier than `tick`, records `tick` and enqueues its job with run_at =
  // tick; returns the job's id. nullopt when the tick was already taken (or the schedule is
  // gone).
  virtual Result<std::optional<JobId>> enqueue_tick(std::string_view name, TimePoint tick) = 0;
  // Enqueues one job from the schedule's queue, payload, priority and max_attempts, due now
  // and without a unique key, in one transaction; its ticks are left as they are. nullopt
  // when there is no such schedule (then nothing changed).
  virtual Result<std::optional<JobId>> enqueue_schedule_now(std::string_view name) = 0;

  // See Queue::claim_task.
  virtual Result<bool> claim_task(std::string_view task, Duration interval,
                                  std::string_view by) = 0;
  // Whether the engine's storage rotates (Queue::rotate_storage); only then is
  // rotate_storage() called.
  virtual bool storage_rotates() const { return false; }
  virtual Result<StorageRotation> rotate_storage() { return StorageRotation{}; }
  virtual Result<StorageHealth> storage_health() = 0;
  virtual Result<TimePoint> now() = 0;

  // Adds each row's value to its series' stored total (creating it at the value); rows come
  // sorted by series and each series once, so concurrent flushes lock in one order.
  virtual Status add_metrics(std::span<const MetricSample> rows) = 0;
  virtual Result<std::vector<MetricSample>> metrics() = 0;
  // Records the worker (heartbeat_at = now; started_at = now unless the same host and pid
  // reported before) and deletes the workers whose heartbeat is older than forget_after.
  virtual Status upsert_worker(const WorkerProcess& worker, Duration forget_after) = 0;
  virtual Status delete_worker(std::string_view name) = 0;
  virtual Result<std::vector<WorkerProcess>> list_workers() = 0;
};

}  // namespace readpast::detail
