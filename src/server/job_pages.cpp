#include "server/job_pages.hpp"

#include <algorithm>

namespace readpast::server {
namespace {

constexpr JobState kStates[] = {JobState::kAvailable, JobState::kRunning, JobState::kSucceeded,
                                JobState::kDead, JobState::kCancelled};

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
  const bool has_state = request.state.has_value() || request.view.has_value();
  if (request.queue.has_value() == has_state) return queue.list_page(request);
  // A view or a search reads a window of ids (ListRequest::scan_limit): one range of the
  // primary key, as cheap as the ranges merged below and without the stats() that finds the
  // queues (a count over the whole table).
  const bool windowed = request.scan_limit && (request.view || request.search);
  if (windowed) return queue.list_page(request);
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
  return merge(queue, ranges, request.order, request.limit);
}

}  // namespace readpast::server
