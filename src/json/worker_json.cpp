#include "json/worker_json.hpp"

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace readpast::json {

namespace {

using Json = nlohmann::ordered_json;

double seconds_between(TimePoint from, TimePoint to) {
  return std::chrono::duration<double>(to - from).count();
}

// Running jobs by the worker id that leased them, oldest lease first within each.
Result<std::map<std::string, std::vector<Job>, std::less<>>> running_by_worker(Queue& queue) {
  std::map<std::string, std::vector<Job>, std::less<>> by_worker;
  ListRequest request;
  request.state = JobState::kRunning;
  request.limit = 1000;
  for (int read = 0; read < kMaxRunningJobsShown; read += request.limit) {
    auto page = queue.list(request);
    if (!page) return fail_with(page.error());
    for (auto& job : *page) {
      if (job.leased_by) by_worker[*job.leased_by].push_back(std::move(job));
    }
    if (page->size() < static_cast<std::size_t>(request.limit)) break;
    request.after_id = page->back().id;
  }
  return by_worker;
}

}  // namespace

Result<Json> workers_report(Queue& queue) {
  auto now = queue.now();
  if (!now) return fail_with(now.error());
  auto workers = queue.workers();
  if (!workers) return fail_with(workers.error());
  auto running = running_by_worker(queue);
  if (!running) return fail_with(running.error());
  Json list = Json::array();
  for (const WorkerProcess& worker : *workers) {
    Json jobs = Json::array();
    if (auto it = running->find(worker.name); it != running->end()) {
      for (const Job& job : it->second) {
        const TimePoint started = job.started_at.value_or(*now);
        jobs.push_back({{"id", job.id},
                        {"queue", job.queue},
                        {"started_at", format_time(started)},
                        {"running_for_s", seconds_between(started, *now)}});
      }
    }
    list.push_back({{"name", worker.name},
                    {"host", worker.host},
                    {"pid", worker.pid},
                    {"queues", worker.queues},
                    {"threads", worker.threads},
                    {"started_at", format_time(worker.started_at)},
                    {"heartbeat_at", format_time(worker.heartbeat_at)},
                    {"heartbeat_age_s", seconds_between(worker.heartbeat_at, *now)},
                    {"running", jobs.size()},
                    {"jobs", std::move(jobs)}});
  }
  return Json{{"database_time", format_time(*now)}, {"workers", std::move(list)}};
}

}  // namespace readpast::json
