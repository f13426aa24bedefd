#include "server/api_bodies.hpp"

#include "json/job_json.hpp"
#include "readpast/queue.hpp"
#include "server/api_support.hpp"

namespace readpast::server {
namespace {

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
  // Bounded recursion: JsonBody::parse refused anything nested deeper than kMaxJsonDepth.
  return payload->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A JSON array of at most `max` positive job ids, the value of `field`.
Result<std::vector<JobId>> positive_ids(const nlohmann::json& items, std::string_view field,
                                        std::size_t max) {
  if (!items.is_array() || items.size() > max) {
    return fail_with(
        field_error(field, "must be an array of at most " + std::to_string(max) + " job ids"));
  }
  std::vector<JobId> ids;
  ids.reserve(items.size());
  for (const auto& item : items) {
    if (!item.is_number_integer() || item.get<std::int64_t>() <= 0) {
      return fail_with(field_error(field, "must hold positive integers"));
    }
    ids.push_back(item.get<std::int64_t>());
  }
  return ids;
}

// The fields allowed, and the lease token every settling call must carry.
Result<LeaseToken> fence(const JsonBody& body, std::initializer_list<std::string_view> fields) {
  if (auto ok = body.only(fields); !ok) return fail_with(ok.error());
  return JsonBody::required(body.lease_token("lease_token"), "lease_token");
}

}  // namespace

Result<NewJob> read_new_job(const JsonBody& body, const std::string& queue) {
  if (auto ok =
          body.only({"payload", "payload_base64", "priority", "delay", "run_at", "max_attempts",
                     "unique_key", "unique_for", "after", "group", "after_group"});
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
  for (auto [field, into] :
       {std::pair{"group", &job.group}, std::pair{"after_group", &job.after_group}}) {
    auto name = body.text(field);
    if (!name) return fail_with(name.error());
    *into = std::move(*name);
  }
  if (const auto* after = body.find("after")) {
    auto ids = positive_ids(*after, "after", kMaxDependencies);
    if (!ids) return fail_with(ids.error());
    job.after = std::move(*ids);
  }
  auto unique_for = body.duration("unique_for");
  if (!unique_for) return fail_with(unique_for.error());
  if (*unique_for) {
    if (!job.unique_key) return fail_with(field_error("unique_for", "must go with 'unique_key'"));
    if (**unique_for <= Duration::zero()) {
      return fail_with(field_error("unique_for", "must be longer than zero"));
    }
    job.unique_for = *unique_for;
  }
  return job;
}

Result<std::vector<NewJob>> read_job_batch(const JsonBody& body, const std::string& queue) {
  if (auto ok = body.only({"jobs"}); !ok) return fail_with(ok.error());
  const auto* items = body.find("jobs");
  if (!items || !items->is_array() || items->empty() || items->size() > kMaxBatch) {
    return fail_with(field_error("jobs", "must be an array of 1 to 10000 jobs"));
  }
  std::vector<NewJob> jobs;
  jobs.reserve(items->size());
  for (std::size_t i = 0; i < items->size(); ++i) {
    const auto& item = (*items)[i];
    if (!item.is_object()) return fail_with(field_error("jobs", "must hold JSON objects"));
    auto job = read_new_job(JsonBody(item), queue);
    if (!job) {
      return fail_with(
          Error::invalid_argument("jobs[" + std::to_string(i) + "]: " + job.error().message));
    }
    jobs.push_back(std::move(*job));
  }
  return jobs;
}

Result<LeaseRequest> read_lease(const JsonBody& body, const std::string& queue) {
  if (auto ok = body.only({"worker_id", "max_jobs", "lease"}); !ok) return fail_with(ok.error());
  LeaseRequest lease;
  lease.queue = queue;
  auto worker_id = JsonBody::required(body.text("worker_id"), "worker_id");
  if (!worker_id) return fail_with(worker_id.error());
  lease.worker_id = std::move(*worker_id);
  auto max_jobs = body.int_in("max_jobs", 1, 10000);
  if (!max_jobs) return fail_with(max_jobs.error());
  lease.max_jobs = max_jobs->value_or(1);
  auto duration = body.duration("lease");
  if (!duration) return fail_with(duration.error());
  lease.lease_duration = duration->value_or(kDefaultLease);
  return lease;
}

Result<LeaseToken> read_complete(const JsonBody& body) {
  return fence(body, {"lease_token"});
}

Result<FailBody> read_fail(const JsonBody& body) {
  auto token = fence(body, {"lease_token", "error", "retry_after", "no_retry"});
  if (!token) return fail_with(token.error());
  FailBody out{*token, {}, {}};
  auto error = body.text("error");
  if (!error) return fail_with(error.error());
  out.error = error->value_or("");
  auto retry_after = body.duration("retry_after");
  if (!retry_after) return fail_with(retry_after.error());
  out.options.retry_after = *retry_after;
  auto no_retry = body.boolean("no_retry");
  if (!no_retry) return fail_with(no_retry.error());
  out.options.no_retry = no_retry->value_or(false);
  return out;
}

Result<ExtendBody> read_extend(const JsonBody& body) {
  auto token = fence(body, {"lease_token", "lease"});
  if (!token) return fail_with(token.error());
  auto lease = body.duration("lease");
  if (!lease) return fail_with(lease.error());
  return ExtendBody{*token, lease->value_or(kDefaultLease)};
}

Result<ReleaseBody> read_release(const JsonBody& body) {
  auto token = fence(body, {"lease_token", "delay"});
  if (!token) return fail_with(token.error());
  auto delay = body.duration("delay");
  if (!delay) return fail_with(delay.error());
  return ReleaseBody{*token, delay->value_or(Duration::zero())};
}

Result<ProgressBody> read_progress(const JsonBody& body) {
  auto token = fence(body, {"lease_token", "progress"});
  if (!token) return fail_with(token.error());
  // Not find(), which reads null as absent: null is a JSON value like any other here.
  auto value = body.value().find("progress");
  if (value == body.value().end()) {
    return fail_with(field_error("progress", "is required (any JSON value)"));
  }
  // The body parsed, so its strings are valid UTF-8 and the dump cannot throw.
  std::string json = value->dump();
  if (json.size() > kMaxProgressBytes) {
    return fail_with(field_error(
        "progress",
        "must be at most " + std::to_string(kMaxProgressBytes) + " bytes of JSON text"));
  }
  return ProgressBody{*token, std::move(json)};
}

Status read_empty(const JsonBody& body) {
  return body.only({});
}

Result<std::vector<JobId>> read_job_ids(const JsonBody& body) {
  if (auto ok = body.only({"ids"}); !ok) return fail_with(ok.error());
  const auto* items = body.find("ids");
  if (!items) return fail_with(field_error("ids", "must be an array of at most 10000 job ids"));
  return positive_ids(*items, "ids", 10000);
}

Result<JobState> read_retry_all(const JsonBody& body) {
  if (auto ok = body.only({"state"}); !ok) return fail_with(ok.error());
  auto state = body.state("state");
  if (!state) return fail_with(state.error());
  JobState which = state->value_or(JobState::kDead);
  if (which != JobState::kDead && which != JobState::kCancelled) {
    return fail_with(field_error("state", "must be dead or cancelled"));
  }
  return which;
}

Result<PurgeRequest> read_purge(const JsonBody& body, const std::string& queue) {
  if (auto ok = body.only({"state", "older_than"}); !ok) return fail_with(ok.error());
  auto state = JsonBody::required(body.state("state"), "state");
  if (!state) return fail_with(state.error());
  auto older_than = body.duration("older_than");
  if (!older_than) return fail_with(older_than.error());
  return PurgeRequest{
      .queue = queue, .state = *state, .older_than = *older_than, .limit = std::nullopt};
}

Result<QueueLimits> read_limits(const JsonBody& body) {
  if (auto ok = body.only({"running", "rate"}); !ok) return fail_with(ok.error());
  QueueLimits limits;
  auto running = body.integer("running");
  if (!running) return fail_with(running.error());
  limits.running = *running;
  auto rate = body.text("rate");
  if (!rate) return fail_with(rate.error());
  if (*rate) {
    auto parsed = parse_rate(**rate);
    if (!parsed) return fail_with(Error::invalid_argument("\"rate\": " + parsed.error().message));
    limits.rate = *parsed;
  }
  if (limits.empty()) {
    return fail_with(Error::invalid_argument("give \"running\" or \"rate\" (or both)"));
  }
  if (auto ok = validate_limits(limits); !ok) return fail_with(ok.error());
  return limits;
}

Result<ListQuery> read_list_query(const HttpRequest& request) {
  ListQuery query;
  ListRequest& list = query.list;
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
  if (auto view = request.query_value("view"); view && !view->empty()) {
    auto parsed = parse_list_view(*view);
    if (!parsed) {
      return fail_with(
          Error::invalid_argument("?view= must be one of scheduled, retrying, expired"));
    }
    list.view = *parsed;
  }
  if (auto text = request.query_value("q"); text && !text->empty()) {
    list.search = std::string(*text);
  }
  if (auto order = request.query_value("order"); order && !order->empty()) {
    if (*order != "newest" && *order != "oldest") {
      return fail_with(Error::invalid_argument("?order= must be newest or oldest"));
    }
    query.newest = *order == "newest";
  }
  auto before = query_integer(request, "before", 1, INT64_MAX, 0);
  if (!before) return fail_with(before.error());
  auto after = query_integer(request, "after", 0, INT64_MAX - 1, -1);
  if (!after) return fail_with(after.error());
  if (*before > 0 && *after >= 0) {
    return fail_with(Error::invalid_argument("give ?before= or ?after=, not both"));
  }
  auto limit = query_integer(request, "limit", 1, kMaxListPage, kDefaultListPage);
  if (!limit) return fail_with(limit.error());
  auto payload_max = query_integer(request, "payload_max", 0, INT64_MAX, INT64_MAX);
  if (!payload_max) return fail_with(payload_max.error());
  query.before = *before;
  query.after = *after;
  query.limit = *limit;
  query.payload_max = *payload_max;
  list.limit = static_cast<int>(*limit) + 1;
  list.scan_limit = kListScanIds;
  // The cursor that reads against the order (towards the "prev" side), if that is the one
  // given.
  query.backwards = query.newest ? *after >= 0 : *before > 0;
  const bool newest_read = query.newest != query.backwards;
  list.order = newest_read ? ListOrder::kNewestFirst : ListOrder::kOldestFirst;
  if (*before > 0) list.before_id = *before;
  if (*after >= 0) list.after_id = *after;
  return query;
}

}  // namespace readpast::server
