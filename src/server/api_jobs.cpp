// Looking at jobs and acting on them: list (keyset paging by id, both ways), get, retry,
// cancel, and retry, cancel or delete many at once.
#include <algorithm>
#include <vector>

#include "json/job_json.hpp"
#include "server/api.hpp"
#include "server/api_bodies.hpp"
#include "server/api_support.hpp"
#include "server/job_pages.hpp"
#include "server/responses.hpp"

namespace readpast::server {
namespace {

using Json = nlohmann::ordered_json;

// Cuts a payload to at most `limit` bytes without splitting a UTF-8 character.
bool truncate_payload(std::string& payload, std::size_t limit) {
  if (payload.size() <= limit) return false;
  std::size_t end = limit;
  while (end > 0 && (static_cast<unsigned char>(payload[end]) & 0xC0) == 0x80) --end;
  payload.resize(end);
  return true;
}

// GET /api/jobs?queue=Q&state=S&view=V&q=TEXT&order=newest|oldest&before=ID|after=ID
//              &limit=N&payload_max=BYTES
// One page of jobs in the order (newest first by default). "next" and "prev" are the query
// parameters of the pages on either side ({"before": ID} or {"after": ID}), null where there is
// none. A cursor that points backwards (?after= in newest-first order, ?before= in oldest-first)
// reads that way and turns the page round, so both directions are keyset range scans, however
// deep (job_pages.hpp). With a view, a search or a state without a queue a request looks at no
// more than kListScanIds (api_bodies.hpp) consecutive ids; a page that stopped there may be short,
// or empty, with a "next" to go on.
Result<HttpResponse> list(Queue& queue, const HttpRequest& request) {
  auto query = read_list_query(request);
  if (!query) return fail_with(query.error());
  const bool newest = query->newest;
  const bool backwards = query->backwards;
  const std::int64_t before = query->before;
  const std::int64_t after = query->after;
  const std::int64_t limit = query->limit;
  const std::int64_t payload_max = query->payload_max;
  ListRequest& list = query->list;

  auto page = list_page(queue, list);
  if (!page) return fail_with(page.error());
  auto& jobs = page->jobs;
  std::optional<JobId> resume = page->resume_id;
  if (jobs.size() > static_cast<std::size_t>(limit)) {
    jobs.resize(static_cast<std::size_t>(limit));
    resume = jobs.back().id;
  }  // else resume_id, if any, is where the scan window stopped (ListRequest::scan_limit)
  if (backwards) std::reverse(jobs.begin(), jobs.end());

  // A cursor object: {"before": id} towards older jobs, {"after": id} towards newer.
  auto older = [](JobId id) { return Json{{"before", id}}; };
  auto newer = [](JobId id) { return Json{{"after", id}}; };
  // Ahead: the side the order goes to (older when newest first); behind: the other.
  auto ahead = [&](JobId id) { return newest ? older(id) : newer(id); };
  auto behind = [&](JobId id) { return newest ? newer(id) : older(id); };
  const std::int64_t given = before > 0 ? before : after;
  // The bound just past the given cursor on the other side (a page with no job in it).
  const std::int64_t mirror = before > 0 ? before - 1 : after + 1;
  Json next = nullptr;
  Json prev = nullptr;
  if (!backwards) {
    if (resume) next = ahead(*resume);
    if (given > 0) {
      if (!jobs.empty()) {
        prev = behind(jobs.front().id);
      } else {
        prev = behind(mirror);
      }
    }
  } else {
    if (resume) prev = behind(*resume);
    next = jobs.empty() ? ahead(mirror) : ahead(jobs.back().id);
  }

  Json out = Json::array();
  for (auto& job : jobs) {
    bool truncated = truncate_payload(job.payload, static_cast<std::size_t>(payload_max));
    Json item = json::job_to_json(job);
    if (truncated) item["payload_truncated"] = true;
    out.push_back(std::move(item));
  }
  return json_response(
      200,
      {{"jobs", out}, {"order", newest ? "newest" : "oldest"}, {"next", next}, {"prev", prev}});
}

Result<HttpResponse> get(Queue& queue, const HttpRequest& request) {
  auto id = job_id_param(request);
  if (!id) return fail_with(id.error());
  auto job = queue.get(*id);
  if (!job) return fail_with(job.error());
  auto dependencies = queue.dependencies(*id);
  if (!dependencies) return fail_with(dependencies.error());
  auto object = json::job_details_to_json(*job);
  object.update(json::dependencies_to_json(*dependencies));
  return json_response(200, object);
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

enum class Bulk { kRetry, kCancel, kDelete };

// POST /api/jobs/retry, /api/jobs/cancel and /api/jobs/delete with {"ids": [...]}: the ids
// that changed, and those that did not ("unchanged": no such job, or one in a state the
// action refuses), each id once, in the order given.
Result<HttpResponse> many(Queue& queue, const HttpRequest& request, Bulk action) {
  auto body = JsonBody::parse(request.body);
  if (!body) return fail_with(body.error());
  auto ids = read_job_ids(*body);
  if (!ids) return fail_with(ids.error());
  std::vector<JobId> unique;
  unique.reserve(ids->size());
  for (JobId id : *ids) {
    if (std::find(unique.begin(), unique.end(), id) == unique.end()) unique.push_back(id);
  }
  auto changed = action == Bulk::kRetry    ? queue.retry(unique)
                 : action == Bulk::kCancel ? queue.cancel(unique)
                                           : queue.remove(unique);
  if (!changed) return fail_with(changed.error());
  std::vector<JobId> sorted = *changed;
  std::sort(sorted.begin(), sorted.end());
  std::vector<JobId> unchanged;
  for (JobId id : unique) {
    if (!std::binary_search(sorted.begin(), sorted.end(), id)) unchanged.push_back(id);
  }
  const char* key = action == Bulk::kRetry    ? "retried"
                    : action == Bulk::kCancel ? "cancelled"
                                              : "deleted";
  return json_response(200, {{key, *changed}, {"unchanged", unchanged}});
}

// GET /api/groups/NAME: the group's members by state, the jobs waiting for it, and its first
// members (up to 100, in id order).
Result<HttpResponse> group(Queue& queue, const HttpRequest& request) {
  const std::string name(request.param("name"));
  auto stats = queue.group_stats(name);
  if (!stats) return fail_with(stats.error());
  auto members = queue.list_group(name, 0, 100);
  if (!members) return fail_with(members.error());
  auto object = json::group_stats_to_json(*stats)["groups"][name];
  nlohmann::ordered_json jobs = nlohmann::ordered_json::array();
  for (const Job& job : *members) jobs.push_back(json::job_to_json(job));
  nlohmann::ordered_json out = {{"group", name}};
  out.update(object);
  out["members"] = std::move(jobs);
  return json_response(200, out);
}

}  // namespace

void add_job_routes(Router& router, Queue& queue) {
  auto bind = [&queue](Result<HttpResponse> (*handler)(Queue&, const HttpRequest&)) {
    return api_route([&queue, handler](const HttpRequest& r) { return handler(queue, r); });
  };
  router.add("GET", "/api/jobs", bind(list));
  router.add("GET", "/api/jobs/{id}", bind(get));
  router.add("GET", "/api/groups/{name}", bind(group));
  router.add("POST", "/api/jobs/{id}/retry", bind(retry));
  router.add("POST", "/api/jobs/{id}/cancel", bind(cancel));
  router.add("POST", "/api/jobs/retry",
             api_route([&queue](const HttpRequest& r) { return many(queue, r, Bulk::kRetry); }));
  router.add("POST", "/api/jobs/cancel",
             api_route([&queue](const HttpRequest& r) { return many(queue, r, Bulk::kCancel); }));
  router.add("POST", "/api/jobs/delete",
             api_route([&queue](const HttpRequest& r) { return many(queue, r, Bulk::kDelete); }));
}

}  // namespace readpast::server
