#include "server/api_support.hpp"

#include <fmt/format.h>

#include <charconv>

#include "readpast/queue.hpp"
#include "server/responses.hpp"

namespace readpast::server {
namespace {

std::optional<std::int64_t> parse_integer(std::string_view text) {
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

Result<JobId> job_id_param(const HttpRequest& request) {
  auto id = parse_integer(request.param("id"));
  if (!id || *id <= 0) {
    return fail_with(Error::invalid_argument("a job id is a positive integer, not '" +
                                             std::string(request.param("id").substr(0, 40)) + "'"));
  }
  return *id;
}

Result<std::string> queue_param(const HttpRequest& request) {
  std::string name(request.param("queue"));
  if (auto ok = validate_queue_name(name); !ok) return fail_with(ok.error());
  return name;
}

Result<std::int64_t> query_integer(const HttpRequest& request, std::string_view name,
                                   std::int64_t low, std::int64_t high, std::int64_t fallback) {
  auto text = request.query_value(name);
  if (!text) return fallback;
  auto value = parse_integer(*text);
  if (!value || *value < low || *value > high) {
    // fmt::format: a literal prepended to a std::string trips GCC 12's false -Wrestrict at
    // -O3 (GCC bug 105329).
    return fail_with(
        Error::invalid_argument(fmt::format("?{}= must be from {} to {}", name, low, high)));
  }
  return *value;
}

Route api_route(std::function<Result<HttpResponse>(const HttpRequest&)> handler) {
  return [handler = std::move(handler)](const HttpRequest& request) {
    auto response = handler(request);
    return response ? std::move(*response) : error_response(response.error());
  };
}

}  // namespace readpast::server
