// Looking at jobs and acting on them one by one: list (keyset paging by id), get, retry,
// cancel.
#include "json/job_json.hpp"
#include "server/api.hpp"
#include "server/api_bodies.hpp"
#include "server/api_support.hpp"
#include "server/job_pages.hpp"
#include "server/responses.hpp"

namespace readpast::server {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::int64_t kDefaultPage = 50;
constexpr std::int64_t kMaxPage = 1000;

// Cuts a payload to at most `limit` bytes without splitting a UTF-8 character.
bool truncate_payload(std::string& payload, std::size_t limit) {
  if (payload.size() <= limit) return false;
  std::size_t end = limit;
  while (end > 0 && (static_cast<unsigned char>(payload[end]) & 0xC0) == 0x80) --end;
  payload.resize(end);
  return true;
}

// GET /api/jobs?queue=Q&state=S&after=ID&limit=N&payload_max=BYTES
// Jobs in id order, after the id given; "next_after" is the value of ?after= for the next
// page, or null on the last one. Each page is a few short index range scans, however deep
// (job_pages.hpp).
Result<HttpResponse> list(Queue& queue, const HttpRequest& request) {
  ListRequest list;
  if (auto name = request.query_value("queue"); name && !name->empty()) {
    if (auto ok = validate_queue_name(*name); !ok) return fail_with(ok.error());
    list.queue = std::string(*name);
  }
  if (auto state = request.query_value("state"); state && !state->empty()) {
    auto parsed = parse_job_state(*state);
    if (!parsed) {
      return fail_with(Error::invalid_argument(
          "?state= must be one of available, running, succeeded, dead, cancelled"));
    }
    list.state = *parsed;
  }
  auto after = query_integer(request, "after", 0, INT64_MAX, 0);
  if (!after) return fail_with(after.error());
  if (*after > 0) list.after_id = *after;
  auto limit = query_integer(request, "limit", 1, kMaxPage, kDefaultPage);
  if (!limit) return fail_with(limit.error());
  list.limit = static_cast<int>(*limit);
  auto payload_max = query_integer(request, "payload_max", 0, INT64_MAX, INT64_MAX);
  if (!payload_max) return fail_with(payload_max.error());

  auto jobs = list_page(queue, list);
  if (!jobs) return fail_with(jobs.error());
  Json out = Json::array();
  for (auto& job : *jobs) {
    bool truncated = truncate_payload(job.payload, static_cast<std::size_t>(*payload_max));
    Json item = json::job_to_json(job);
    if (truncated) item["payload_truncated"] = true;
    out.push_back(std::move(item));
  }
  Json next = nullptr;
  if (static_cast<std::int64_t>(jobs->size()) == *limit) next = jobs->back().id;
  return json_response(200, {{"jobs", out}, {"next_after", next}});
}

Result<HttpResponse> get(Queue& queue, const HttpRequest& request) {
  auto id = job_id_param(request);
  if (!id) return fail_with(id.error());
  auto job = queue.get(*id);
  if (!job) return fail_with(job.error());
  return json_response(200, json::job_to_json(*job));
}

// Why `id` was not changed by an action that applies to jobs in `allowed` states only.
Error not_changed(Queue& queue, JobId id, std::string_view action, std::string_view allowed) {
  auto job = queue.get(id);
  if (!job) return job.error();
  return Error::conflict("job " + std::to_string(id) + " is " + std::string(to_string(job->state)) +
                         ": only " + std::string(allowed) + " jobs can be " + std::string(action));
}

Result<HttpResponse> retry(Queue& queue, const HttpRequest& request) {
  auto id = job_id_param(request);
  if (!id) return fail_with(id.error());
  auto body = JsonBody::parse(request.body);
  if (!body) return fail_with(body.error());
  if (auto ok = read_empty(*body); !ok) return fail_with(ok.error());
  auto retried = queue.retry(std::span<const JobId>(&*id, 1));
  if (!retried) return fail_with(retried.error());
  if (retried->empty()) return fail_with(not_changed(queue, *id, "retried", "dead or cancelled"));
  return json_response(200, {{"id", *id}, {"state", "available"}});
}

Result<HttpResponse> cancel(Queue& queue, const HttpRequest& request) {
  auto id = job_id_param(request);
  if (!id) return fail_with(id.error());
  auto body = JsonBody::parse(request.body);
  if (!body) return fail_with(body.error());
  if (auto ok = read_empty(*body); !ok) return fail_with(ok.error());
  auto cancelled = queue.cancel(std::span<const JobId>(&*id, 1));
  if (!cancelled) return fail_with(cancelled.error());
  if (cancelled->empty()) {
    return fail_with(not_changed(queue, *id, "cancelled", "available or running"));
  }
  return json_response(200, {{"id", *id}, {"state", "cancelled"}});
}

// POST /api/jobs/retry and /api/jobs/cancel with {"ids": [...]}: the ids that changed.
Result<HttpResponse> many(Queue& queue, const HttpRequest& request, bool retry) {
  auto body = JsonBody::parse(request.body);
  if (!body) return fail_with(body.error());
  auto ids = read_job_ids(*body);
  if (!ids) return fail_with(ids.error());
  auto changed = retry ? queue.retry(*ids) : queue.cancel(*ids);
  if (!changed) return fail_with(changed.error());
  return json_response(200, {{retry ? "retried" : "cancelled", *changed}});
}

}  // namespace

void add_job_routes(Router& router, Queue& queue) {
  auto bind = [&queue](Result<HttpResponse> (*handler)(Queue&, const HttpRequest&)) {
    return api_route([&queue, handler](const HttpRequest& r) { return handler(queue, r); });
  };
  router.add("GET", "/api/jobs", bind(list));
  router.add("GET", "/api/jobs/{id}", bind(get));
  router.add("POST", "/api/jobs/{id}/retry", bind(retry));
  router.add("POST", "/api/jobs/{id}/cancel", bind(cancel));
  router.add("POST", "/api/jobs/retry",
             api_route([&queue](const HttpRequest& r) { return many(queue, r, true); }));
  router.add("POST", "/api/jobs/cancel",
             api_route([&queue](const HttpRequest& r) { return many(queue, r, false); }));
}

}  // namespace readpast::server
