// The worker's side of the API: enqueue, lease, and the calls fenced by the lease token.
#include <chrono>

#include "json/job_json.hpp"
#include "server/api.hpp"
#include "server/api_bodies.hpp"
#include "server/api_support.hpp"
#include "server/responses.hpp"

namespace readpast::server {
namespace {

using Json = nlohmann::ordered_json;

Json enqueued_json(const Enqueued& enqueued) {
  return {{"id", enqueued.id}, {"inserted", enqueued.inserted}};
}

Result<HttpResponse> enqueue(Queue& queue, const HttpRequest& request) {
  auto name = queue_param(request);
  if (!name) return fail_with(name.error());
  auto body = JsonBody::parse(request.body);
  if (!body) return fail_with(body.error());
  auto job = read_new_job(*body, *name);
  if (!job) return fail_with(job.error());
  auto enqueued = queue.enqueue(*job);
  if (!enqueued) return fail_with(enqueued.error());
  return json_response(enqueued->inserted ? 201 : 200, enqueued_json(*enqueued));
}

Result<HttpResponse> enqueue_batch(Queue& queue, const HttpRequest& request) {
  auto name = queue_param(request);
  if (!name) return fail_with(name.error());
  auto body = JsonBody::parse(request.body);
  if (!body) return fail_with(body.error());
  auto jobs = read_job_batch(*body, *name);
  if (!jobs) return fail_with(jobs.error());
  auto enqueued = queue.enqueue_batch(*jobs);
  if (!enqueued) return fail_with(enqueued.error());
  Json out = Json::array();
  for (const auto& e : *enqueued) out.push_back(enqueued_json(e));
  return json_response(201, {{"jobs", out}});
}

Result<HttpResponse> lease(Queue& queue, const HttpRequest& request) {
  auto name = queue_param(request);
  if (!name) return fail_with(name.error());
  auto body = JsonBody::parse(request.body);
  if (!body) return fail_with(body.error());
  auto lease = read_lease(*body, *name);
  if (!lease) return fail_with(lease.error());
  auto jobs = queue.lease(*lease);
  if (!jobs) return fail_with(jobs.error());
  Json out = Json::array();
  for (const auto& job : *jobs) out.push_back(json::job_to_json(job));
  return json_response(200, {{"jobs", out}});
}

// A settling call: the job id of the path and the body its reader makes of the request.
template <class Body>
Result<std::pair<JobId, Body>> settling(const HttpRequest& request,
                                        Result<Body> (*read)(const JsonBody&)) {
  auto id = job_id_param(request);
  if (!id) return fail_with(id.error());
  auto body = JsonBody::parse(request.body);
  if (!body) return fail_with(body.error());
  auto read_body = read(*body);
  if (!read_body) return fail_with(read_body.error());
  return std::pair<JobId, Body>(*id, std::move(*read_body));
}

Result<HttpResponse> complete(Queue& queue, const HttpRequest& request) {
  auto call = settling(request, read_complete);
  if (!call) return fail_with(call.error());
  const auto& [id, token] = *call;
  if (auto ok = queue.complete(id, token); !ok) return fail_with(ok.error());
  return json_response(200, {{"id", id}, {"state", "succeeded"}});
}

Result<HttpResponse> fail(Queue& queue, const detail::SecretScrubber& secrets,
                          const HttpRequest& request) {
  auto call = settling(request, read_fail);
  if (!call) return fail_with(call.error());
  const auto& [id, body] = *call;
  auto outcome = queue.fail(id, body.token, secrets.scrub(body.error), body.options);
  if (!outcome) return fail_with(outcome.error());
  return json_response(
      200, {{"id", id}, {"state", *outcome == FailOutcome::kDead ? "dead" : "available"}});
}

Result<HttpResponse> extend(Queue& queue, const HttpRequest& request) {
  auto call = settling(request, read_extend);
  if (!call) return fail_with(call.error());
  const auto& [id, body] = *call;
  if (auto ok = queue.extend(id, body.token, body.lease); !ok) return fail_with(ok.error());
  return json_response(200, {{"id", id}, {"lease", format_duration(body.lease)}});
}

Result<HttpResponse> release(Queue& queue, const HttpRequest& request) {
  auto call = settling(request, read_release);
  if (!call) return fail_with(call.error());
  const auto& [id, body] = *call;
  if (auto ok = queue.release(id, body.token, body.delay); !ok) return fail_with(ok.error());
  return json_response(200, {{"id", id}, {"state", "available"}});
}

Result<HttpResponse> progress(Queue& queue, const HttpRequest& request) {
  auto call = settling(request, read_progress);
  if (!call) return fail_with(call.error());
  const auto& [id, body] = *call;
  if (auto ok = queue.progress(id, body.token, body.json); !ok) return fail_with(ok.error());
  return json_response(200, {{"id", id}, {"progress", Json::parse(body.json)}});
}

}  // namespace

void add_worker_routes(Router& router, Queue& queue, const detail::SecretScrubber& secrets) {
  auto bind = [&queue](Result<HttpResponse> (*handler)(Queue&, const HttpRequest&)) {
    return api_route([&queue, handler](const HttpRequest& r) { return handler(queue, r); });
  };
  router.add("POST", "/api/queues/{queue}/jobs", bind(enqueue));
  router.add("POST", "/api/queues/{queue}/jobs/batch", bind(enqueue_batch));
  router.add("POST", "/api/queues/{queue}/lease", bind(lease));
  router.add("POST", "/api/jobs/{id}/complete", bind(complete));
  router.add("POST", "/api/jobs/{id}/fail", api_route([&queue, &secrets](const HttpRequest& r) {
               return fail(queue, secrets, r);
             }));
  router.add("POST", "/api/jobs/{id}/extend", bind(extend));
  router.add("POST", "/api/jobs/{id}/release", bind(release));
  router.add("POST", "/api/jobs/{id}/progress", bind(progress));
}

}  // namespace readpast::server
