#include "core/dependencies.hpp"

namespace readpast::detail {

Result<DependentPlan> plan_dependent(std::span<const JobId> after,
                                     std::span<const std::optional<JobState>> states,
                                     std::optional<GroupWait> group) {
  DependentPlan plan;
  if (group) {
    plan.edges.emplace_back(-group->group_id, !group->live);
    if (group->live) ++plan.waiting_for;
  }
  for (std::size_t i = 0; i < after.size(); ++i) {
    if (!states[i]) {
      return fail_with(Error::invalid_argument("job " + std::to_string(after[i]) +
                                               " to wait for does not exist"));
    }
    const JobState state = *states[i];
    const bool met = state == JobState::kSucceeded;
    plan.edges.emplace_back(after[i], met);
    if (met) continue;
    ++plan.waiting_for;
    if (state == JobState::kDead || state == JobState::kCancelled) {
      // The first dependency that already failed decides; later ones keep their edges, so
      // that a retry of the job waits for them all again.
      if (!plan.last_error) plan.last_error = dependency_failed_error(after[i], state);
    } else {
      plan.to_notify.push_back(after[i]);
    }
  }
  if (plan.last_error) {
    plan.state = JobState::kCancelled;
  } else {
    plan.state = plan.waiting_for > 0 ? JobState::kWaiting : JobState::kAvailable;
  }
  return plan;
}

Error no_such_group_error(std::string_view group) {
  return Error::invalid_argument("no job was ever enqueued in group '" + std::string(group) +
                                 "' to wait for; nothing enqueued");
}

Error unique_key_held_by_error(JobId holder) {
  return Error::invalid_argument("the unique key is held by job " + std::to_string(holder) +
                                 ", which was not enqueued after these jobs; nothing enqueued");
}

std::string dependency_failed_error(JobId dependency, JobState state) {
  return "cancelled: dependency " + std::to_string(dependency) + " is " +
         std::string(to_string(state));
}

}  // namespace readpast::detail
