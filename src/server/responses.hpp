// server/responses.hpp — JSON responses, and errors as JSON with a stable code:
//   {"error": {"code": "lease_lost", "message": "..."}}
// The library's ErrorCode names (readpast::to_string) and their HTTP statuses:
//   invalid_argument 400, not_found 404, lease_lost 409, conflict 409, unavailable 503,
//   schema 503, internal 500.
// The server adds its own codes: unauthorized 401, forbidden 403, method_not_allowed 405,
// payload_too_large 413, unsupported_media_type 415, header_too_large 431 (see
// docs/http.md).
//
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "readpast/error.hpp"
#include "server/http.hpp"

namespace readpast::server {

int http_status(ErrorCode code) noexcept;

HttpResponse json_response(int status, const nlohmann::ordered_json& body);
HttpResponse error_response(int status, std::string_view code, std::string_view message);
HttpResponse error_response(const Error& error);

}  // namespace readpast::server
