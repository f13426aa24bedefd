// server/api_bodies.hpp — every JSON body the API accepts, read into the values the Queue
// takes, before anything is changed. Pure functions: the routes (api_*.cpp) call them and
// then act, and the fuzz target tests/fuzz/fuzz_api_bodies.cpp feeds each of them any bytes.
// Every failure is kInvalidArgument naming the field (json_body.hpp).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "readpast/job.hpp"
#include "readpast/options.hpp"
#include "server/http.hpp"
#include "server/json_body.hpp"

namespace readpast::server {

inline constexpr std::size_t kMaxBatch = 10000;
inline constexpr Duration kDefaultLease = std::chrono::seconds(30);

// POST /api/queues/Q/jobs: {"payload" | "payload_base64", "priority", "delay" | "run_at",
// "max_attempts", "unique_key", "unique_for" (a duration, with "unique_key" only)}
Result<NewJob> read_new_job(const JsonBody& body, const std::string& queue);
// POST /api/queues/Q/jobs/batch: {"jobs": [1 to kMaxBatch of read_new_job's bodies]}
Result<std::vector<NewJob>> read_job_batch(const JsonBody& body, const std::string& queue);
// POST /api/queues/Q/lease: {"worker_id", "max_jobs", "lease"}
Result<LeaseRequest> read_lease(const JsonBody& body, const std::string& queue);

// The settling calls, each fenced by "lease_token".
struct FailBody {
  LeaseToken token;
  std::string error;
  FailOptions options;
};
struct ExtendBody {
  LeaseToken token;
  Duration lease = kDefaultLease;
};
struct ReleaseBody {
  LeaseToken token;
  Duration delay = Duration::zero();
};
Result<LeaseToken> read_complete(const JsonBody& body);  // {"lease_token"}
Result<FailBody> read_fail(const JsonBody& body);        // + "error", "retry_after", "no_retry"
Result<ExtendBody> read_extend(const JsonBody& body);    // + "lease"
Result<ReleaseBody> read_release(const JsonBody& body);  // + "delay"
struct ProgressBody {
  LeaseToken token;
  std::string json;  // the "progress" value as JSON text, at most kMaxProgressBytes
};
Result<ProgressBody> read_progress(const JsonBody& body);  // + "progress" (any JSON value)

// Bodies that must be {} (retry, cancel, pause, resume).
Status read_empty(const JsonBody& body);
// POST /api/jobs/retry and /cancel: {"ids": [at most 10000 positive integers]}
Result<std::vector<JobId>> read_job_ids(const JsonBody& body);
// POST /api/queues/Q/retry: {"state": "dead" (default) | "cancelled"}
Result<JobState> read_retry_all(const JsonBody& body);

// GET /api/jobs?queue=Q&state=S&view=V&q=TEXT&order=newest|oldest&before=ID|after=ID
//              &limit=N&payload_max=BYTES, checked (docs/http.md "Look at jobs").
inline constexpr std::int64_t kDefaultListPage = 50;
inline constexpr std::int64_t kMaxListPage = 1000;
// How many consecutive ids one list request with a view, a search or a state without a queue
// looks at, at most (ListRequest::scan_limit; docs/benchmarks.md for its cost).
inline constexpr std::int64_t kListScanIds = 20000;
struct ListQuery {
  // queue, state, view, search and scan_limit as asked; order, cursors and limit as the
  // engine is to read them: one job more than the page (whether it comes tells whether
  // there is a page beyond), against the asked order when the cursor points backwards.
  ListRequest list;
  bool newest = true;       // the order asked for
  bool backwards = false;   // the cursor reads against that order
  std::int64_t before = 0;  // > 0 when given
  std::int64_t after = -1;  // >= 0 when given; never both
  std::int64_t limit = kDefaultListPage;
  std::int64_t payload_max = INT64_MAX;
};
Result<ListQuery> read_list_query(const HttpRequest& request);
// POST /api/queues/Q/purge: {"state", "older_than"}
Result<PurgeRequest> read_purge(const JsonBody& body, const std::string& queue);
// PUT /api/queues/Q/limits: {"running": 1..kMaxRunningLimit, "rate": "N/DUR"}, at least one;
// a limit left out is kept (docs/http.md "Global limits").
Result<QueueLimits> read_limits(const JsonBody& body);

}  // namespace readpast::server
