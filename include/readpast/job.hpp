// readpast/job.hpp — a job, its states, and the requests that create and settle jobs.
//
// Thread-safety: plain values; distinct objects may be used from different threads freely.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "readpast/time.hpp"

namespace readpast {

using JobId = std::int64_t;

// Stored states. "scheduled" (available, run_at in the future) and "retrying" (available,
// attempts > 0) are derived for display only. kWaiting: the job waits for the jobs it was
// enqueued after (NewJob::after; docs/workflows.md). See docs/state_machine.md.
enum class JobState { kAvailable, kRunning, kSucceeded, kDead, kCancelled, kWaiting };

std::string_view to_string(JobState state) noexcept;
std::optional<JobState> parse_job_state(std::string_view text) noexcept;
// succeeded, dead, cancelled
bool is_finished(JobState state) noexcept;

// The fencing token of one lease: 128 random bits, written as 32 lower-case hex digits.
class LeaseToken {
 public:
  LeaseToken() = default;
  // Accepts exactly 32 hex digits (either case); anything else is kInvalidArgument.
  static Result<LeaseToken> from_hex(std::string_view hex);
  // 128 bits from the operating system's random source.
  static LeaseToken random();

  const std::string& hex() const noexcept { return hex_; }
  bool empty() const noexcept { return hex_.empty(); }
  friend bool operator==(const LeaseToken&, const LeaseToken&) = default;

 private:
  explicit LeaseToken(std::string hex) : hex_(std::move(hex)) {}
  std::string hex_;  // invariant: empty, or 32 lower-case hex digits
};

// One failed attempt of a job (docs/workflows.md, "Error history"): what fail() or the
// rescue of an expired lease recorded, in a table of its own (readpast_job_errors), deleted
// with its job.
struct JobError {
  int attempt = 0;  // the attempt that failed, counted from 1 (retry() starts again at 1)
  TimePoint at{};
  std::optional<std::string> worker;  // leased_by of that attempt
  std::string error;
};

// The most progress a running job may record: JSON text of at most 64 KiB.
inline constexpr std::size_t kMaxProgressBytes = 64 * 1024;

inline constexpr int kDefaultPriority = 100;
inline constexpr int kDefaultMaxAttempts = 25;

// Every column of docs/design.md ("The job"; types in docs/schema.md), as stored.
struct Job {
  JobId id = 0;
  std::string queue;
  JobState state = JobState::kAvailable;
  int priority = kDefaultPriority;  // smaller runs sooner
  TimePoint run_at{};
  int attempts = 0;
  int max_attempts = kDefaultMaxAttempts;
  std::optional<LeaseToken> lease_token;
  std::optional<std::string> leased_by;
  std::optional<TimePoint> lease_expires_at;
  TimePoint enqueued_at{};
  std::optional<TimePoint> started_at;
  std::optional<TimePoint> finished_at;
  std::optional<std::string> unique_key;
  std::optional<std::string> last_error;
  std::string payload;  // bytes, never interpreted by readpast
  // Filled in by Queue::get only (list and lease leave them empty): the JSON text the job's
  // workers last recorded with Queue::progress, and every failed attempt, oldest first.
  std::optional<std::string> progress;
  std::vector<JobError> errors;
};

// What enqueue takes. Default: priority 100, run now, 25 attempts, no unique key.
struct NewJob {
  std::string queue;
  std::string payload;
  int priority = kDefaultPriority;
  // At most one of delay and run_at. delay is added to the database's clock.
  std::optional<Duration> delay;
  std::optional<TimePoint> run_at;
  int max_attempts = kDefaultMaxAttempts;
  std::optional<std::string> unique_key;
  // Dependencies: the job waits (JobState::kWaiting) until every listed job has succeeded,
  // then becomes available, its delay counted from then; it is cancelled when one of them
  // ends dead or cancelled. Each id must name an existing job (kInvalidArgument otherwise);
  // one that already succeeded counts as met. At most kMaxDependencies.
  std::vector<JobId> after;
  // Groups (batches with a callback): the job is a member of `group`; a job enqueued with
  // after_group waits until no member of that group is waiting, available or running (every
  // member finished, whatever its outcome), then becomes available. The group must exist (a
  // member enqueued before); a job cannot wait for its own group. Names follow the queue
  // name rule.
  std::optional<std::string> group;
  std::optional<std::string> after_group;
  // With unique_key only: the key refuses every other job of the queue for this long after
  // this one was enqueued, whatever its state since (a "unique window"; docs/workflows.md).
  // Without it the key refuses others only while its job is available or running.
  std::optional<Duration> unique_for;
};

inline constexpr std::size_t kMaxDependencies = 1000;

// One edge of the dependency graph as Queue::dependencies reports it: the job at the other
// end, its state, and whether the edge is met (that job succeeded while the dependent
// waited).
struct Dependency {
  JobId id = 0;                   // 0 for a group (then `group` names it)
  std::optional<JobState> state;  // nullopt: the job no longer exists (purged), or a group
  bool met = false;
  std::optional<std::string> group;  // the group the job waits for (NewJob::after_group)
};

// The members of a group by state, and the jobs that still wait for it (after_group).
struct GroupStats {
  std::string name;
  std::int64_t waiting = 0;
  std::int64_t available = 0;
  std::int64_t running = 0;
  std::int64_t succeeded = 0;
  std::int64_t dead = 0;
  std::int64_t cancelled = 0;
  std::int64_t live = 0;     // members not yet finished (as the group counts them)
  std::int64_t waiters = 0;  // jobs enqueued after the group that still wait for it
};

// What a job waits for and what waits for it, each by id. dependents holds at most
// kMaxListedDependents; dependent_count is the full number.
struct Dependencies {
  std::vector<Dependency> after;
  std::vector<Dependency> dependents;
  std::int64_t dependent_count = 0;
  std::optional<std::string> group;  // the group the job is a member of (NewJob::group)
};

inline constexpr int kMaxListedDependents = 1000;

struct Enqueued {
  JobId id = 0;
  // false when an available or running job of the queue already held the unique key, or
  // the key's unique window was open; id is then that job's id.
  bool inserted = true;
};

// A job as a worker holds it: the pair every settling call is fenced by.
struct LeasedRef {
  JobId id = 0;
  LeaseToken token;
};

}  // namespace readpast
