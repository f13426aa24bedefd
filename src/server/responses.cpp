#include "server/responses.hpp"

namespace readpast::server {

int http_status(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return 400;
    case ErrorCode::kNotFound:
      return 404;
    case ErrorCode::kLeaseLost:
      return 409;
    case ErrorCode::kConflict:
      return 409;
    case ErrorCode::kUnavailable:
      return 503;
    case ErrorCode::kSchema:
      return 503;
    case ErrorCode::kInternal:
      return 500;
  }
  return 500;
}

HttpResponse json_response(int status, const nlohmann::ordered_json& body) {
  // Text that is not valid UTF-8 (a last_error written by another client, a path) is
  // replaced rather than failing the response.
  return {status,
          "application/json",
          body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n",
          {}};
}

HttpResponse error_response(int status, std::string_view code, std::string_view message) {
  nlohmann::ordered_json error = {{"code", code}, {"message", message}};
  return json_response(status, {{"error", error}});
}

HttpResponse error_response(const Error& error) {
  return error_response(http_status(error.code), to_string(error.code), error.message);
}

}  // namespace readpast::server
