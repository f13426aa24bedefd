#include "cli/job_changes.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace readpast::cli {

std::vector<JobId> unique_ids(std::vector<JobId> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

CliStatus report_changes(Session& session, Queue& queue, std::string_view verb,
                         const std::vector<JobId>& requested, const std::vector<JobId>& changed,
                         std::string_view rule,
                         const std::function<std::optional<std::string>(const Job&)>& explain) {
  std::vector<JobId> done = unique_ids(changed);
  if (!done.empty()) {
    session.console().write_stdout(
        fmt::format("{} {} job(s): {}\n", verb, done.size(), fmt::join(done, ", ")));
  }
  std::vector<std::string> reasons;
  for (JobId id : requested) {
    if (std::binary_search(done.begin(), done.end(), id)) continue;
    auto job = queue.get(id);
    if (!job && job.error().code == ErrorCode::kNotFound) {
      reasons.push_back(fmt::format("no job with id {}", id));
    } else if (!job) {
      return fail_cli(failure(job.error()));
    } else if (auto why = explain ? explain(*job) : std::nullopt) {
      reasons.push_back(fmt::format("job {} not {}: {}", id, verb, *why));
    } else {
      reasons.push_back(
          fmt::format("job {} not {}: it is {} ({})", id, verb, to_string(job->state), rule));
    }
  }
  if (reasons.empty()) return {};
  return fail_cli(failure(fmt::format("{}", fmt::join(reasons, "; "))));
}

}  // namespace readpast::cli
