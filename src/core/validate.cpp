#include "core/validate.hpp"

#include <nlohmann/json.hpp>
#include <string>

#include "readpast/queue.hpp"

namespace readpast {

namespace {

// [A-Za-z0-9][A-Za-z0-9_.-]{0,127}; the message never echoes more than 64 bytes of the
// name, so a 10,000-byte name gives a one-line error.
Status validate_name(std::string_view name, std::string_view kind) {
  auto is_alnum = [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  };
  auto describe = [&] {
    std::string shown;
    for (char c : name.substr(0, 64)) {
      shown += (c >= 0x20 && c < 0x7f) ? std::string(1, c) : std::string("?");
    }
    if (name.size() > 64) shown += "...";
    return "invalid " + std::string(kind) + " name '" + shown + "': ";
  };
  if (name.empty()) {
    return fail_with(
        Error::invalid_argument("invalid " + std::string(kind) + " name: it is empty"));
  }
  if (name.size() > 128) {
    return fail_with(Error::invalid_argument(describe() + "longer than 128 characters"));
  }
  if (!is_alnum(name.front())) {
    return fail_with(Error::invalid_argument(describe() + "must start with a letter or digit"));
  }
  for (char c : name) {
    if (!is_alnum(c) && c != '_' && c != '.' && c != '-') {
      return fail_with(Error::invalid_argument(
          describe() + "only letters, digits, '_', '.' and '-' are allowed"));
    }
  }
  return {};
}

}  // namespace

Status validate_queue_name(std::string_view name) {
  return validate_name(name, "queue");
}

Status validate_schedule_name(std::string_view name) {
  return validate_name(name, "schedule");
}

Status validate_group_name(std::string_view name) {
  return validate_name(name, "group");
}

namespace detail {

Status validate_non_negative_duration(Duration d, std::string_view what) {
  if (d < Duration::zero()) {
    return fail_with(Error::invalid_argument(std::string(what) + " must not be negative"));
  }
  if (d > kMaxDuration) {
    return fail_with(Error::invalid_argument(std::string(what) + " must not exceed 100 years"));
  }
  return {};
}

Status validate_positive_duration(Duration d, std::string_view what) {
  if (d == Duration::zero()) {
    return fail_with(Error::invalid_argument(std::string(what) + " must be positive"));
  }
  return validate_non_negative_duration(d, what);
}

Status validate_new_job(const NewJob& job, std::size_t max_payload_bytes) {
  if (auto ok = validate_queue_name(job.queue); !ok) return ok;
  if (job.payload.size() > max_payload_bytes) {
    return fail_with(Error::invalid_argument("payload of " + std::to_string(job.payload.size()) +
                                             " bytes is over the limit of " +
                                             std::to_string(max_payload_bytes) + " bytes"));
  }
  if (job.max_attempts < 1) {
    return fail_with(Error::invalid_argument("max_attempts must be at least 1"));
  }
  if (job.delay && job.run_at) {
    return fail_with(Error::invalid_argument("give a delay or a run_at time, not both"));
  }
  if (job.delay) {
    if (auto ok = validate_non_negative_duration(*job.delay, "delay"); !ok) return ok;
  }
  if (job.run_at) {
    // Years 1 to 9999: what RFC 3339 can write and both engines can store.
    constexpr auto kEarliest = std::chrono::sys_days(std::chrono::year(1) / 1 / 1);
    constexpr auto kLatest = std::chrono::sys_days(std::chrono::year(9999) / 12 / 31);
    if (*job.run_at < kEarliest || *job.run_at > kLatest) {
      return fail_with(Error::invalid_argument("run_at must be between the years 1 and 9999"));
    }
  }
  for (const auto* name : {&job.group, &job.after_group}) {
    if (*name) {
      if (auto ok = validate_name(**name, "group"); !ok) return ok;
    }
  }
  if (job.group && job.after_group && *job.group == *job.after_group) {
    return fail_with(
        Error::invalid_argument("a job cannot wait for its own group '" + *job.group + "'"));
  }
  if (job.after.size() > kMaxDependencies) {
    return fail_with(Error::invalid_argument("a job can wait for at most " +
                                             std::to_string(kMaxDependencies) + " jobs"));
  }
  for (std::size_t i = 0; i < job.after.size(); ++i) {
    if (job.after[i] < 1) {
      return fail_with(Error::invalid_argument("job ids to wait for are positive"));
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (job.after[j] == job.after[i]) {
        return fail_with(Error::invalid_argument("job " + std::to_string(job.after[i]) +
                                                 " is listed twice to wait for"));
      }
    }
  }
  if (job.unique_for && (!job.after.empty() || job.group || job.after_group)) {
    return fail_with(Error::invalid_argument(
        "unique_for does not go with after, group or after_group (docs/workflows.md)"));
  }
  if (job.unique_for) {
    if (!job.unique_key) {
      return fail_with(Error::invalid_argument("unique_for needs a unique key"));
    }
    if (auto ok = validate_positive_duration(*job.unique_for, "unique_for"); !ok) return ok;
  }
  if (job.unique_key) {
    if (job.unique_key->empty()) {
      return fail_with(Error::invalid_argument("unique key must not be empty"));
    }
    if (job.unique_key->size() > kMaxUniqueKeyBytes) {
      return fail_with(Error::invalid_argument("unique key is longer than 1024 bytes"));
    }
  }
  return {};
}

Status validate_lease_request(const LeaseRequest& request) {
  if (auto ok = validate_queue_name(request.queue); !ok) return ok;
  if (request.max_jobs < 1 || request.max_jobs > kMaxLeaseBatch) {
    return fail_with(Error::invalid_argument("max_jobs must be between 1 and 10000"));
  }
  if (request.worker_id.size() > kMaxWorkerIdBytes) {
    return fail_with(Error::invalid_argument("worker id is longer than 256 bytes"));
  }
  return validate_positive_duration(request.lease_duration, "lease duration");
}

}  // namespace detail
}  // namespace readpast

namespace readpast::detail {

Status validate_progress(std::string_view json) {
  if (json.size() > kMaxProgressBytes) {
    return fail_with(Error::invalid_argument("progress of " + std::to_string(json.size()) +
                                             " bytes is over the limit of " +
                                             std::to_string(kMaxProgressBytes) + " bytes"));
  }
  // Depth first, in one pass without recursion (brackets inside strings do not count).
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : json) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxProgressDepth) {
        return fail_with(Error::invalid_argument("progress nests deeper than " +
                                                 std::to_string(kMaxProgressDepth) + " levels"));
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  // accept() parses without building anything (and without recursion).
  if (!nlohmann::json::accept(json)) {
    return fail_with(Error::invalid_argument("progress is not JSON text"));
  }
  return {};
}

}  // namespace readpast::detail
