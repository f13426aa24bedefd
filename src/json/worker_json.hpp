// json/worker_json.hpp — the worker processes that reported themselves, with the jobs each
// runs: `readpast workers --json` and GET /api/workers (docs/http.md), one rendering.
//
// Thread-safety: calls the thread-safe Queue only.
#pragma once

#include <nlohmann/json.hpp>

#include "readpast/queue.hpp"

namespace readpast::json {

// At most this many running jobs are read to attribute them to their workers.
inline constexpr int kMaxRunningJobsShown = 10000;

// {"database_time": T, "workers": [{"name", "host", "pid", "queues": [...], "threads",
//   "started_at", "heartbeat_at", "heartbeat_age_s", "running": n,
//   "jobs": [{"id", "queue", "started_at", "running_for_s"}]}]}
// Ages are measured on the database's clock, as the heartbeats are written.
Result<nlohmann::ordered_json> workers_report(Queue& queue);

}  // namespace readpast::json
