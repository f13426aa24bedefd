#include "server/job_pages.hpp"

#include <algorithm>

namespace readpast::server {
namespace {

constexpr JobState kStates[] = {JobState::kAvailable, JobState::kRunning,   JobState::kSucceeded,
                                JobState::kDead,      JobState::kCancelled, JobState::kWaiting};

// Is id `a` before id `b` in the order?
bool comes_before(ListOrder order, JobId a, JobId b) {
  return order == ListOrder::kNewestFirst ? a > b : a < b;
}

// The first request.limit jobs, in order, of the union of the ranges' pages, cut where the
// range that covered least stopped.
Result<JobPage> merge(Queue& queue, const std::vector<ListRequest>& ranges, ListOrder order,
                      int limit) {
  JobPage merged;
  std::optional<JobId> stop;  // the earliest resume_id (in the order) of any range
  for (const auto& range : ranges) {
    auto page = queue.list_page(range);
    if (!page) return fail_with(page.error());
    if (page->resume_id && (!stop || comes_before(order, *page->resume_id, *stop))) {
      stop = page->resume_id;
    }
    for (auto& job : page->jobs) merged.jobs.push_back(std::move(job));
  }
  std::sort(merged.jobs.begin(), merged.jobs.end(),
            [order](const Job& a, const Job& b) { return comes_before(order, a.id, b.id); });
  if (stop) {
    std::erase_if(merged.jobs, [&](const Job& job) { return comes_before(order, *stop, job.id); });
  }
  if (merged.jobs.size() >= static_cast<std::size_t>(limit)) {
    merged.jobs.resize(static_cast<std::size_t>(limit));
    merged.resume_id = merged.jobs.back().id;
  } else {
    merged.resume_id = stop;
  }
  return merged;
}

}  // namespace

Result<JobPage> list_page(Queue& queue, const ListRequest& request) {
  // A view fixes the state (ListRequest::view): one range per queue at most.
  // A queue without a state or a view: one range of (queue, state, id) per state, merged.
  // Everything else is one request: no filter or a queue and a state are one index range;
  // a state alone, a view or a search read a window of ids (ListRequest::scan_limit), as
  // cheap as merged ranges and without finding the queues first (stats(), a count over the
  // whole table: seconds at 10M jobs).
  if (!request.queue || request.state || request.view || request.search) {
    return queue.list_page(request);
  }
  std::vector<ListRequest> ranges;
  for (JobState state : kStates) {
    ListRequest range = request;
    range.state = state;
    ranges.push_back(std::move(range));
  }
  return merge(queue, ranges, request.order, request.limit);
}

}  // namespace readpast::server
