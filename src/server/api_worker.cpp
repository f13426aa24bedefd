// The worker's side of the API: enqueue, lease, and the calls fenced by the lease token.
#include <chrono>

#include "json/job_json.hpp"
#include "server/api.hpp"
#include "server/api_support.hpp"
#include "server/responses.hpp"

namespace readpast::server {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::size_t kMaxBatch = 10000;
constexpr Duration kDefaultLease = std::chrono::seconds(30);

// "payload": a string is stored as its UTF-8 bytes; any other JSON value (object, array,
// number, ...) as its compact JSON text. "payload_base64": bytes that are not text.
Result<std::string> payload_from(const JsonBody& body) {
  const auto* payload = body.find("payload");
  const auto* base64 = body.find("payload_base64");
  if (payload && base64) {
    return fail_with(Error::invalid_argument("give 'payload' or 'payload_base64', not both"));
  }
  if (base64) {
    if (!base64->is_string()) return fail_with(field_error("payload_base64", "must be a string"));
    auto bytes = json::base64_decode(base64->get<std::string>());
    if (!bytes) return fail_with(field_error("payload_base64", "is not valid base64"));
    return std::move(*bytes);
  }
  if (!payload) return std::string();
  if (payload->is_string()) return payload->get<std::string>();
  return payload->dump();
}

Result<NewJob> new_job_from(const JsonBody& body, const std::string& queue) {
  if (auto ok = body.only({"payload", "payload_base64", "priority", "delay", "run_at",
                           "max_attempts", "unique_key"});
      !ok) {
    return fail_with(ok.error());
  }
  NewJob job;
  job.queue = queue;
  auto payload = payload_from(body);
  if (!payload) return fail_with(payload.error());
  job.payload = std::move(*payload);
  auto priority = body.int_in("priority", INT32_MIN, INT32_MAX);
  if (!priority) return fail_with(priority.error());
  job.priority = priority->value_or(kDefaultPriority);
  auto delay = body.duration("delay");
  if (!delay) return fail_with(delay.error());
  job.delay = *delay;
  auto run_at = body.time("run_at");
  if (!run_at) return fail_with(run_at.error());
  job.run_at = *run_at;
  if (job.delay && job.run_at) {
    return fail_with(Error::invalid_argument("give 'delay' or 'run_at', not both"));
  }
  auto max_attempts = body.int_in("max_attempts", 1, INT32_MAX);
  if (!max_attempts) return fail_with(max_attempts.error());
  job.max_attempts = max_attempts->value_or(kDefaultMaxAttempts);
  auto unique_key = body.text("unique_key");
  if (!unique_key) return fail_with(unique_key.error());
  job.unique_key = std::move(*unique_key);
  return job;
}

Json enqueued_json(const Enqueued& enqueued) {
  return {{"id", enqueued.id}, {"inserted", enqueued.inserted}};
}

Result<HttpResponse> enqueue(Queue& queue, const HttpRequest& request) {
  auto name = queue_param(request);
  if (!name) return fail_with(name.error());
  auto body = JsonBody::parse(request.body);
  if (!body) return fail_with(body.error());
  auto job = new_job_from(*body, *name);
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
  if (auto ok = body->only({"jobs"}); !ok) return fail_with(ok.error());
  const auto* items = body->find("jobs");
  if (!items || !items->is_array() || items->empty() || items->size() > kMaxBatch) {
    return fail_with(field_error("jobs", "must be an array of 1 to 10000 jobs"));
  }
  std::vector<NewJob> jobs;
  jobs.reserve(items->size());
  for (std::size_t i = 0; i < items->size(); ++i) {
    const auto& item = (*items)[i];
    if (!item.is_object()) return fail_with(field_error("jobs", "must hold JSON objects"));
    auto job = new_job_from(JsonBody(item), *name);
    if (!job) {
      return fail_with(
          Error::invalid_argument("jobs[" + std::to_string(i) + "]: " + job.error().message));
    }
    jobs.push_back(std::move(*job));
  }
  auto enqueued = queue.enqueue_batch(jobs);
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
  if (auto ok = body->only({"worker_id", "max_jobs", "lease"}); !ok) return fail_with(ok.error());
  LeaseRequest lease;
  lease.queue = *name;
  auto worker_id = JsonBody::required(body->text("worker_id"), "worker_id");
  if (!worker_id) return fail_with(worker_id.error());
  lease.worker_id = std::move(*worker_id);
  auto max_jobs = body->int_in("max_jobs", 1, 10000);
  if (!max_jobs) return fail_with(max_jobs.error());
  lease.max_jobs = max_jobs->value_or(1);
  auto duration = body->duration("lease");
  if (!duration) return fail_with(duration.error());
  lease.lease_duration = duration->value_or(kDefaultLease);
  auto jobs = queue.lease(lease);
  if (!jobs) return fail_with(jobs.error());
  Json out = Json::array();
  for (const auto& job : *jobs) out.push_back(json::job_to_json(job));
  return json_response(200, {{"jobs", out}});
}

// The token and the body of a settling call.
struct Fenced {
  JobId id = 0;
  LeaseToken token;
  JsonBody body{nlohmann::json::object()};
};

Result<Fenced> fenced(const HttpRequest& request, std::initializer_list<std::string_view> fields) {
  auto id = job_id_param(request);
  if (!id) return fail_with(id.error());
  auto body = JsonBody::parse(request.body);
  if (!body) return fail_with(body.error());
  if (auto ok = body->only(fields); !ok) return fail_with(ok.error());
  auto token = JsonBody::required(body->lease_token("lease_token"), "lease_token");
  if (!token) return fail_with(token.error());
  return Fenced{*id, std::move(*token), std::move(*body)};
}

Result<HttpResponse> complete(Queue& queue, const HttpRequest& request) {
  auto call = fenced(request, {"lease_token"});
  if (!call) return fail_with(call.error());
  if (auto ok = queue.complete(call->id, call->token); !ok) return fail_with(ok.error());
  return json_response(200, {{"id", call->id}, {"state", "succeeded"}});
}

Result<HttpResponse> fail(Queue& queue, const HttpRequest& request) {
  auto call = fenced(request, {"lease_token", "error", "retry_after", "no_retry"});
  if (!call) return fail_with(call.error());
  auto error = call->body.text("error");
  if (!error) return fail_with(error.error());
  FailOptions options;
  auto retry_after = call->body.duration("retry_after");
  if (!retry_after) return fail_with(retry_after.error());
  options.retry_after = *retry_after;
  auto no_retry = call->body.boolean("no_retry");
  if (!no_retry) return fail_with(no_retry.error());
  options.no_retry = no_retry->value_or(false);
  auto outcome = queue.fail(call->id, call->token, error->value_or(""), options);
  if (!outcome) return fail_with(outcome.error());
  return json_response(
      200, {{"id", call->id}, {"state", *outcome == FailOutcome::kDead ? "dead" : "available"}});
}

Result<HttpResponse> extend(Queue& queue, const HttpRequest& request) {
  auto call = fenced(request, {"lease_token", "lease"});
  if (!call) return fail_with(call.error());
  auto duration = call->body.duration("lease");
  if (!duration) return fail_with(duration.error());
  Duration lease = duration->value_or(kDefaultLease);
  if (auto ok = queue.extend(call->id, call->token, lease); !ok) return fail_with(ok.error());
  return json_response(200, {{"id", call->id}, {"lease", format_duration(lease)}});
}

Result<HttpResponse> release(Queue& queue, const HttpRequest& request) {
  auto call = fenced(request, {"lease_token", "delay"});
  if (!call) return fail_with(call.error());
  auto delay = call->body.duration("delay");
  if (!delay) return fail_with(delay.error());
  if (auto ok = queue.release(call->id, call->token, delay->value_or(Duration::zero())); !ok) {
    return fail_with(ok.error());
  }
  return json_response(200, {{"id", call->id}, {"state", "available"}});
}

}  // namespace

void add_worker_routes(Router& router, Queue& queue) {
  auto bind = [&queue](Result<HttpResponse> (*handler)(Queue&, const HttpRequest&)) {
    return api_route([&queue, handler](const HttpRequest& r) { return handler(queue, r); });
  };
  router.add("POST", "/api/queues/{queue}/jobs", bind(enqueue));
  router.add("POST", "/api/queues/{queue}/jobs/batch", bind(enqueue_batch));
  router.add("POST", "/api/queues/{queue}/lease", bind(lease));
  router.add("POST", "/api/jobs/{id}/complete", bind(complete));
  router.add("POST", "/api/jobs/{id}/fail", bind(fail));
  router.add("POST", "/api/jobs/{id}/extend", bind(extend));
  router.add("POST", "/api/jobs/{id}/release", bind(release));
}

}  // namespace readpast::server
