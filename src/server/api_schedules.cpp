// Schedules: the list with each one's next and last tick (for the dashboard's schedules
// page), and "run now", which enqueues one job of a schedule at once without moving its
// ticks.
#include <string>

#include "core/schedule_spec.hpp"
#include "core/utf8.hpp"
#include "json/job_json.hpp"
#include "server/api.hpp"
#include "server/api_bodies.hpp"
#include "server/api_support.hpp"
#include "server/responses.hpp"

namespace readpast::server {
namespace {

using Json = nlohmann::ordered_json;

Json time_or_null(const std::optional<TimePoint>& t) {
  return t ? Json(format_time(*t)) : Json(nullptr);
}

// The job the schedule's last tick enqueued: {"id", "state"}, "state" null when retention or
// purge deleted it since; null before the first tick.
Result<Json> last_job_json(Queue& queue, const Schedule& s) {
  if (!s.last_job) return Json(nullptr);
  auto job = queue.get(*s.last_job);
  if (!job && job.error().code != ErrorCode::kNotFound) return fail_with(job.error());
  return Json{{"id", *s.last_job},
              {"state", job ? Json(std::string(to_string(job->state))) : Json(nullptr)}};
}

// One schedule; next_tick is the first tick after the database's `now` (null when the
// spec cannot be read, e.g. one written by a newer readpast).
Json schedule_json(const Schedule& s, TimePoint now, Json last_job) {
  const std::string_view zone = detail::split_time_zone(s.spec).zone;
  Json j = {{"name", s.name},
            {"queue", s.queue},
            {"spec", s.spec},
            {"time_zone", zone.empty() ? std::string("UTC") : std::string(zone)}};
  if (detail::is_valid_utf8(s.payload)) {
    j["payload"] = s.payload;
    j["payload_encoding"] = "utf8";
  } else {
    j["payload"] = json::base64_encode(s.payload);
    j["payload_encoding"] = "base64";
  }
  j["priority"] = s.priority;
  j["max_attempts"] = s.max_attempts;
  j["created_at"] = format_time(s.created_at);
  j["last_tick"] = time_or_null(s.last_tick);
  std::optional<TimePoint> next;
  if (auto spec = detail::ScheduleSpec::parse(s.spec)) next = spec->next_after(now);
  j["next_tick"] = time_or_null(next);
  j["last_job"] = std::move(last_job);
  return j;
}

// GET /api/schedules → {"now": TIME, "schedules": [...]}, ordered by name. One get() per
// schedule that has ticked, for its last job's state: schedules are few.
Result<HttpResponse> schedules(Queue& queue) {
  auto now = queue.now();
  if (!now) return fail_with(now.error());
  auto list = queue.list_schedules();
  if (!list) return fail_with(list.error());
  Json out = Json::array();
  for (const Schedule& s : *list) {
    auto last_job = last_job_json(queue, s);
    if (!last_job) return fail_with(last_job.error());
    out.push_back(schedule_json(s, *now, std::move(*last_job)));
  }
  return json_response(200, {{"now", format_time(*now)}, {"schedules", out}});
}

// POST /api/schedules/{name}/run with {} → 201 {"schedule": NAME, "id": ID}
Result<HttpResponse> run_now(Queue& queue, const HttpRequest& request) {
  const std::string name(request.param("name"));
  if (auto ok = validate_schedule_name(name); !ok) return fail_with(ok.error());
  auto body = JsonBody::parse(request.body);
  if (!body) return fail_with(body.error());
  if (auto ok = read_empty(*body); !ok) return fail_with(ok.error());
  auto id = queue.run_schedule(name);
  if (!id) return fail_with(id.error());
  return json_response(201, {{"schedule", name}, {"id", *id}});
}

}  // namespace

void add_schedule_routes(Router& router, Queue& queue) {
  router.add("GET", "/api/schedules",
             api_route([&queue](const HttpRequest&) { return schedules(queue); }));
  router.add("POST", "/api/schedules/{name}/run",
             api_route([&queue](const HttpRequest& r) { return run_now(queue, r); }));
}

}  // namespace readpast::server
