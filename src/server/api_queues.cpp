// Queues as a whole: counts and rates, pause/resume, global limits, retry every dead job, purge,
// and the throughput history behind the dashboard's chart.
#include <chrono>

#include "json/job_json.hpp"
#include "server/api.hpp"
#include "server/api_bodies.hpp"
#include "server/api_support.hpp"
#include "server/responses.hpp"

namespace readpast::server {
namespace {

using Json = nlohmann::ordered_json;

// Rates are averaged over this window of samples.
constexpr Duration kRateWindow = std::chrono::seconds(10);

double seconds(Duration d) {
  return std::chrono::duration<double>(d).count();
}

Json queue_json(const QueueStats& s, const Throughput& throughput) {
  auto rate = throughput.rate(s.queue, kRateWindow);
  Json j = {{"queue", s.queue}};
  j.update(json::queue_stats_to_json(s));
  j["succeeded_per_s"] = rate.succeeded_per_s;
  j["dead_per_s"] = rate.dead_per_s;
  return j;
}

Result<HttpResponse> queues(Queue& queue, const Throughput& throughput) {
  auto stats = queue.stats();
  if (!stats) return fail_with(stats.error());
  Json out = Json::array();
  for (const auto& s : *stats) out.push_back(queue_json(s, throughput));
  return json_response(200, {{"queues", out}});
}

Result<HttpResponse> one_queue(Queue& queue, const Throughput& throughput,
                               const HttpRequest& request) {
  auto name = queue_param(request);
  if (!name) return fail_with(name.error());
  auto stats = queue.stats(std::string_view(*name));
  if (!stats) return fail_with(stats.error());
  // A queue without jobs is all zeros, not "not found": any valid name is a queue.
  QueueStats s = stats->empty() ? QueueStats{.queue = *name} : stats->front();
  return json_response(200, queue_json(s, throughput));
}

Result<HttpResponse> pause_or_resume(Queue& queue, const HttpRequest& request, bool pause) {
  auto name = queue_param(request);
  if (!name) return fail_with(name.error());
  auto body = JsonBody::parse(request.body);
  if (!body) return fail_with(body.error());
  if (auto ok = read_empty(*body); !ok) return fail_with(ok.error());
  auto done = pause ? queue.pause(*name) : queue.resume(*name);
  if (!done) return fail_with(done.error());
  return json_response(200, {{"queue", *name}, {"paused", pause}});
}

// GET, PUT (read_limits), DELETE /api/queues/Q/limits → {"queue": Q, "running": n|null,
// "rate": "N/DUR"|null}: the limits in force after the call.
Result<HttpResponse> limits(Queue& queue, const HttpRequest& request) {
  auto name = queue_param(request);
  if (!name) return fail_with(name.error());
  if (request.method != "GET") {
    auto body = JsonBody::parse(request.body);
    if (!body) return fail_with(body.error());
    if (request.method == "PUT") {
      auto wanted = read_limits(*body);
      if (!wanted) return fail_with(wanted.error());
      if (auto done = queue.set_limits(*name, *wanted); !done) return fail_with(done.error());
    } else {
      if (auto ok = read_empty(*body); !ok) return fail_with(ok.error());
      if (auto done = queue.clear_limits(*name); !done) return fail_with(done.error());
    }
  }
  auto now = queue.limits(*name);
  if (!now) return fail_with(now.error());
  Json out = {{"queue", *name}};
  out.update(json::limits_to_json(*now));
  return json_response(200, out);
}

// {"state": "dead"|"cancelled"} (default dead) → {"retried": n}
Result<HttpResponse> retry_all(Queue& queue, const HttpRequest& request) {
  auto name = queue_param(request);
  if (!name) return fail_with(name.error());
  auto body = JsonBody::parse(request.body);
  if (!body) return fail_with(body.error());
  auto which = read_retry_all(*body);
  if (!which) return fail_with(which.error());
  auto count = queue.retry_all(*name, *which);
  if (!count) return fail_with(count.error());
  return json_response(200, {{"queue", *name}, {"retried", *count}});
}

// {"state": "succeeded"|"dead"|"cancelled", "older_than": DUR} → {"purged": n}
Result<HttpResponse> purge(Queue& queue, const HttpRequest& request) {
  auto name = queue_param(request);
  if (!name) return fail_with(name.error());
  auto body = JsonBody::parse(request.body);
  if (!body) return fail_with(body.error());
  auto purge = read_purge(*body, *name);
  if (!purge) return fail_with(purge.error());
  auto count = queue.purge(*purge);
  if (!count) return fail_with(count.error());
  return json_response(200, {{"queue", *name}, {"purged", *count}});
}

// GET /api/throughput?queue=Q → {"interval_s": x, "points": [{"t", "length_s",
// "succeeded_per_s", "dead_per_s"}]}, oldest first, for one queue or all of them; t is the end
// of the sample and length_s its actual length.
Result<HttpResponse> throughput_history(const Throughput& throughput, const HttpRequest& request) {
  std::optional<std::string_view> name;
  if (auto q = request.query_value("queue"); q && !q->empty()) {
    if (auto ok = validate_queue_name(*q); !ok) return fail_with(ok.error());
    name = *q;
  }
  Json points = Json::array();
  for (const auto& p : throughput.points(name)) {
    double length = seconds(p.length);
    if (length <= 0) continue;
    points.push_back({{"t", format_time(p.end)},
                      {"length_s", length},
                      {"succeeded_per_s", static_cast<double>(p.succeeded) / length},
                      {"dead_per_s", static_cast<double>(p.dead) / length}});
  }
  return json_response(200, {{"interval_s", seconds(throughput.interval())}, {"points", points}});
}

}  // namespace

void add_queue_routes(Router& router, Queue& queue, const Throughput& throughput) {
  router.add("GET", "/api/queues", api_route([&queue, &throughput](const HttpRequest&) {
               return queues(queue, throughput);
             }));
  router.add("GET", "/api/queues/{queue}", api_route([&queue, &throughput](const HttpRequest& r) {
               return one_queue(queue, throughput, r);
             }));
  router.add("POST", "/api/queues/{queue}/pause",
             api_route([&queue](const HttpRequest& r) { return pause_or_resume(queue, r, true); }));
  router.add("POST", "/api/queues/{queue}/resume", api_route([&queue](const HttpRequest& r) {
               return pause_or_resume(queue, r, false);
             }));
  for (const char* method : {"GET", "PUT", "DELETE"}) {
    router.add(method, "/api/queues/{queue}/limits",
               api_route([&queue](const HttpRequest& r) { return limits(queue, r); }));
  }
  router.add("POST", "/api/queues/{queue}/retry",
             api_route([&queue](const HttpRequest& r) { return retry_all(queue, r); }));
  router.add("POST", "/api/queues/{queue}/purge",
             api_route([&queue](const HttpRequest& r) { return purge(queue, r); }));
  router.add("GET", "/api/throughput", api_route([&throughput](const HttpRequest& r) {
               return throughput_history(throughput, r);
             }));
}

}  // namespace readpast::server
