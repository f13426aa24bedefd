// server/json_body.hpp — reads the JSON body of a request into typed values. Every failure
// is kInvalidArgument naming the field, so that a bad request changes nothing and says why.
//
// Thread-safety: a JsonBody is used by one request's thread.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "readpast/error.hpp"
#include "readpast/job.hpp"
#include "readpast/time.hpp"

namespace readpast::server {

// The deepest nesting of arrays and objects a body may have. Deeper is refused before the
// parser builds anything, because serialising a value (a payload is stored as its JSON
// text) recurses once per level: nothing may recurse on a depth the client chooses.
inline constexpr int kMaxJsonDepth = 256;

// Whether `text` nests arrays and objects deeper than `limit`, counted in one pass without
// recursion (brackets inside strings do not count; text that is not JSON is left for the
// parser to refuse).
bool nests_deeper_than(std::string_view text, int limit) noexcept;

// "'field' must be TYPE"
Error field_error(std::string_view field, std::string_view what);

class JsonBody {
 public:
  // An empty body reads as {}. Anything but a JSON object, or one nested deeper than
  // kMaxJsonDepth, is kInvalidArgument.
  static Result<JsonBody> parse(std::string_view text);
  explicit JsonBody(nlohmann::json value) : value_(std::move(value)) {}

  // kInvalidArgument naming the first field that is not one of `allowed`: a misspelt
  // option is an error, not silently ignored.
  Status only(std::initializer_list<std::string_view> allowed) const;

  // nullopt when the field is absent or null; kInvalidArgument when it has another type.
  Result<std::optional<std::string>> text(std::string_view field) const;
  Result<std::optional<std::int64_t>> integer(std::string_view field) const;
  Result<std::optional<bool>> boolean(std::string_view field) const;
  // A DUR string ("30s", "1m30s") or a number of seconds (may be fractional).
  Result<std::optional<Duration>> duration(std::string_view field) const;
  // RFC 3339.
  Result<std::optional<TimePoint>> time(std::string_view field) const;
  Result<std::optional<LeaseToken>> lease_token(std::string_view field) const;
  // As integer(), and within [low, high].
  Result<std::optional<int>> int_in(std::string_view field, int low, int high) const;
  Result<std::optional<JobState>> state(std::string_view field) const;

  // A field that must be there.
  template <class T>
  static Result<T> required(Result<std::optional<T>> value, std::string_view field) {
    if (!value) return fail_with(value.error());
    if (!*value) return fail_with(field_error(field, "is required"));
    return std::move(**value);
  }

  const nlohmann::json& value() const noexcept { return value_; }
  const nlohmann::json* find(std::string_view field) const;

 private:
  nlohmann::json value_;
};

}  // namespace readpast::server
