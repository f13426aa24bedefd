// core/dependencies.hpp — the rules of dependencies that every engine shares: what a job
// enqueued after others becomes, and what a dependent is told when a dependency finishes
// badly (docs/workflows.md). Engines read the states and write the outcome in their own SQL.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "readpast/error.hpp"
#include "readpast/job.hpp"

namespace readpast::detail {

// One round of Engine::resolve_dependencies, one transaction: at most kResolveJobs finished
// jobs, and at most kResolveChunk of their dependents in all. Short transactions however many
// jobs wait for one (10,000 dependents are 20 rounds), and many finished jobs told at once
// when each has few (a drain of dependent jobs must not wait for its bookkeeping).
inline constexpr int kResolveJobs = 100;
inline constexpr int kResolveChunk = 500;

struct DependentPlan {
  JobState state = JobState::kAvailable;      // waiting, available or cancelled
  int waiting_for = 0;                        // dependencies not yet succeeded
  std::vector<std::pair<JobId, bool>> edges;  // (depends_on, met)
  std::vector<JobId> to_notify;  // live dependencies, which must tell the job when they finish
  std::optional<std::string> last_error;  // why it was cancelled at once
};

// The group a job is enqueued after, as the enqueue's transaction read (and locked) it.
struct GroupWait {
  JobId group_id = 0;  // its edge is (-group_id, job)
  bool live = false;   // some member is not finished: the job waits
};

// Whether the job needs the dependent path of an engine's enqueue (edges, a group).
inline bool takes_part_in_a_workflow(const NewJob& job) {
  return !job.after.empty() || job.group || job.after_group;
}

// states[i] is the state of after[i] as the enqueue's transaction read it (and locked it,
// where an engine locks), nullopt when there is no such job: kInvalidArgument then.
Result<DependentPlan> plan_dependent(std::span<const JobId> after,
                                     std::span<const std::optional<JobState>> states,
                                     std::optional<GroupWait> group = std::nullopt);

// The error for an after_group that names no group.
Error no_such_group_error(std::string_view group);

// A job enqueued after others whose unique key a live job already holds: an error, since
// the job it would hand back was not enqueued after those dependencies.
Error unique_key_held_by_error(JobId holder);

// last_error of a dependent cancelled because `dependency` ended in `state`.
std::string dependency_failed_error(JobId dependency, JobState state);

}  // namespace readpast::detail
