// readpast/queue.hpp — the handle on one readpast database.
//
// Thread-safety: a Queue may be used from many threads at once; it keeps a small pool of
// connections and every call takes one for its duration. Queue is movable, not copyable.
//
// Every settling call (complete, fail, extend, release) is fenced by the lease token: it
// changes the job only if the token is the job's current one and the job is running;
// otherwise it reports ErrorCode::kLeaseLost and changes nothing.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "readpast/error.hpp"
#include "readpast/job.hpp"
#include "readpast/options.hpp"

namespace readpast {

namespace detail {
class Engine;
}

class Queue {
 public:
  // URL: "sqlite:PATH" (PATH may be relative; "?synchronous=normal" and "?busy_timeout=MS"
  // may follow) or "postgresql://..." / libpq keywords. The database file must exist unless
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

  // Batch forms: one statement; result[i] tells whether refs[i] still held its lease.
  Result<std::vector<bool>> complete_batch(std::span<const LeasedRef> refs);
  Result<std::vector<bool>> extend_batch(std::span<const LeasedRef> refs, Duration lease_duration);

  // Blocks until jobs may have become available in the queue (a NOTIFY on PostgreSQL, a
  // commit by any connection on SQLite) or the timeout passes. Returns true when woken
  // early. A worker calls it when lease() returned nothing, instead of sleeping blindly;
  // it never replaces lease(): a true result is a hint, not a promise.
  Result<bool> wait_for_work(std::string_view queue, Duration timeout);

  // Moves running jobs of the queue whose lease expired back to available (or to dead
  // when their attempts are spent). lease() does this by itself at most once per
  // options.rescue_interval; returns how many jobs moved.
  Result<std::int64_t> rescue_expired(std::string_view queue);

  // available or running → cancelled. Returns the ids that were cancelled.
  Result<std::vector<JobId>> cancel(std::span<const JobId> ids);
  // dead or cancelled → available now, attempts reset to 0. Returns the ids retried.
  Result<std::vector<JobId>> retry(std::span<const JobId> ids);
  // Every job of the queue in the state (dead or cancelled); returns how many.
  Result<std::int64_t> retry_all(std::string_view queue, JobState state);
  // Deletes succeeded, dead or cancelled jobs; returns how many.
  Result<std::int64_t> purge(const PurgeRequest& request);
  // Deletes succeeded jobs older than options.succeeded_retention, at most `limit`.
  Result<std::int64_t> remove_expired_succeeded(std::string_view queue, int limit = 1000);

  // One entry per queue that has jobs, ordered by name; or just the named queue.
  Result<std::vector<QueueStats>> stats(std::optional<std::string_view> queue = std::nullopt);
  Result<std::vector<Job>> list(const ListRequest& request);
  Result<Job> get(JobId id);  // kNotFound when there is no such job

  const QueueOptions& options() const noexcept;

 private:
  struct State;
  explicit Queue(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// Validation shared by the API and the command line.
// Queue names match [A-Za-z0-9][A-Za-z0-9_.-]{0,127}.
Status validate_queue_name(std::string_view name);

}  // namespace readpast
