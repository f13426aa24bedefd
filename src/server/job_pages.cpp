#include "server/job_pages.hpp"

#include <algorithm>

namespace readpast::server {
namespace {

constexpr JobState kStates[] = {JobState::kAvailable, JobState::kRunning, JobState::kSucceeded,
                                JobState::kDead, JobState::kCancelled};

// The first request.limit jobs by id of the union of the ranges.
Result<std::vector<Job>> merge(Queue& queue, const std::vector<ListRequest>& ranges, int limit) {
  std::vector<Job> jobs;
  for (const auto& range : ranges) {
    auto page = queue.list(range);
    if (!page) return fail_with(page.error());
    for (auto& job : *page) jobs.push_back(std::move(job));
  }
  std::sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) { return a.id < b.id; });
  if (jobs.size() > static_cast<std::size_t>(limit)) jobs.resize(static_cast<std::size_t>(limit));
  return jobs;
}

}  // namespace

Result<std::vector<Job>> list_page(Queue& queue, const ListRequest& request) {
  if (request.queue.has_value() == request.state.has_value()) return queue.list(request);
  std::vector<ListRequest> ranges;
  if (request.queue) {
    for (JobState state : kStates) {
      ListRequest range = request;
      range.state = state;
      ranges.push_back(std::move(range));
    }
  } else {
    auto stats = queue.stats();
    if (!stats) return fail_with(stats.error());
    for (const auto& s : *stats) {
      ListRequest range = request;
      range.queue = s.queue;
      ranges.push_back(std::move(range));
    }
  }
  return merge(queue, ranges, request.limit);
}

}  // namespace readpast::server
