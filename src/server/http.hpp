// server/http.hpp — a request and a response as the routes see them, independent of the
// HTTP library underneath (server/http_service.hpp fills them in).
//
// Thread-safety: plain values.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace readpast::server {

// Compares header names without regard to case, as HTTP does.
struct CaseInsensitiveLess {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const noexcept;
};

// Equal but for the case of ASCII letters: header names, tokens such as "Bearer".
bool equals_ignoring_case(std::string_view a, std::string_view b) noexcept;

struct HttpRequest {
  std::string method;  // "GET", "POST", ... ("HEAD" is served as "GET")
  std::string target;  // the request line's target, as sent
  // Decoded from `target` by parse_request_target (request_target.hpp), once, before the
  // guard and the router look at the request.
  std::string path;  // without the query string, percent-decoded, canonical
  std::map<std::string, std::string, std::less<>> query;  // the first value of each name
  std::map<std::string, std::string, CaseInsensitiveLess> headers;
  std::string body;
  // Filled in by the router: the {name} segments of the route's pattern.
  std::map<std::string, std::string, std::less<>> params;

  std::optional<std::string_view> header(std::string_view name) const;
  std::optional<std::string_view> query_value(std::string_view name) const;
  std::string_view param(std::string_view name) const;  // "" when there is none
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

using Route = std::function<HttpResponse(const HttpRequest&)>;

}  // namespace readpast::server
