#include "server/json_body.hpp"

#include <fmt/format.h>

#include <cmath>

namespace readpast::server {

Error field_error(std::string_view field, std::string_view what) {
  // fmt::format, not "'" + std::string(field): GCC 12 at -O3 reports a false -Wrestrict
  // (GCC bug 105329) on a literal prepended to a std::string.
  return Error::invalid_argument(fmt::format("'{}' {}", field, what));
}

bool nests_deeper_than(std::string_view text, int limit) noexcept {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
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
      if (++depth > limit) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

Result<JsonBody> JsonBody::parse(std::string_view text) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return JsonBody(nlohmann::json::object());
  }
  if (nests_deeper_than(text, kMaxJsonDepth)) {
    return fail_with(Error::invalid_argument("the body nests arrays and objects deeper than " +
                                             std::to_string(kMaxJsonDepth) + " levels"));
  }
  nlohmann::json value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return fail_with(Error::invalid_argument("the body is not valid JSON"));
  if (!value.is_object())
    return fail_with(Error::invalid_argument("the body must be a JSON object"));
  return JsonBody(std::move(value));
}

Status JsonBody::only(std::initializer_list<std::string_view> allowed) const {
  for (const auto& item : value_.items()) {
    bool known = false;
    for (auto name : allowed) known = known || item.key() == name;
    if (!known) {
      std::string list;
      for (auto name : allowed) list += (list.empty() ? "" : ", ") + std::string(name);
      return fail_with(Error::invalid_argument("unknown field '" + item.key() + "'" +
                                               (list.empty() ? "" : " (expected: " + list + ")")));
    }
  }
  return {};
}

const nlohmann::json* JsonBody::find(std::string_view field) const {
  auto it = value_.find(field);
  if (it == value_.end() || it->is_null()) return nullptr;
  return &*it;
}

Result<std::optional<std::string>> JsonBody::text(std::string_view field) const {
  const auto* value = find(field);
  if (!value) return std::optional<std::string>();
  if (!value->is_string()) return fail_with(field_error(field, "must be a string"));
  return std::optional<std::string>(value->get<std::string>());
}

Result<std::optional<std::int64_t>> JsonBody::integer(std::string_view field) const {
  const auto* value = find(field);
  if (!value) return std::optional<std::int64_t>();
  if (value->is_number_integer()) return std::optional<std::int64_t>(value->get<std::int64_t>());
  if (value->is_number_unsigned()) {
    return fail_with(field_error(field, "is out of range"));
  }
  return fail_with(field_error(field, "must be an integer"));
}

Result<std::optional<bool>> JsonBody::boolean(std::string_view field) const {
  const auto* value = find(field);
  if (!value) return std::optional<bool>();
  if (!value->is_boolean()) return fail_with(field_error(field, "must be true or false"));
  return std::optional<bool>(value->get<bool>());
}

Result<std::optional<Duration>> JsonBody::duration(std::string_view field) const {
  const auto* value = find(field);
  if (!value) return std::optional<Duration>();
  if (value->is_string()) {
    auto parsed = parse_duration(value->get<std::string>());
    if (!parsed) return fail_with(field_error(field, "is not valid: " + parsed.error().message));
    return std::optional<Duration>(*parsed);
  }
  if (value->is_number()) {
    double seconds = value->get<double>();
    double limit = std::chrono::duration<double>(kMaxDuration).count();
    if (!std::isfinite(seconds) || seconds < 0 || seconds > limit) {
      return fail_with(field_error(field, "must be from 0 to 100 years"));
    }
    return std::optional<Duration>(
        std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds)));
  }
  return fail_with(field_error(field, "must be a duration such as \"30s\", or seconds"));
}

Result<std::optional<TimePoint>> JsonBody::time(std::string_view field) const {
  auto value = text(field);
  if (!value) return fail_with(value.error());
  if (!*value) return std::optional<TimePoint>();
  auto parsed = parse_time(**value);
  if (!parsed) return fail_with(field_error(field, "is not valid: " + parsed.error().message));
  return std::optional<TimePoint>(*parsed);
}

Result<std::optional<LeaseToken>> JsonBody::lease_token(std::string_view field) const {
  auto value = text(field);
  if (!value) return fail_with(value.error());
  if (!*value) return std::optional<LeaseToken>();
  auto token = LeaseToken::from_hex(**value);
  if (!token) return fail_with(field_error(field, "must be 32 hex digits"));
  return std::optional<LeaseToken>(*token);
}

Result<std::optional<int>> JsonBody::int_in(std::string_view field, int low, int high) const {
  auto value = integer(field);
  if (!value) return fail_with(value.error());
  if (!*value) return std::optional<int>();
  if (**value < low || **value > high) {
    return fail_with(
        field_error(field, "must be from " + std::to_string(low) + " to " + std::to_string(high)));
  }
  return std::optional<int>(static_cast<int>(**value));
}

Result<std::optional<JobState>> JsonBody::state(std::string_view field) const {
  auto value = text(field);
  if (!value) return fail_with(value.error());
  if (!*value) return std::optional<JobState>();
  auto state = parse_job_state(**value);
  if (!state) {
    return fail_with(
        field_error(field, "must be one of available, running, succeeded, dead, cancelled"));
  }
  return std::optional<JobState>(*state);
}

}  // namespace readpast::server
