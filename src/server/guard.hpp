// server/guard.hpp — what every request passes before it reaches a route:
//
// 1. Host. A server on a loopback address answers only requests whose Host header names a
//    loopback host (localhost, 127.x.x.x, [::1]): a web page that re-points its own domain
//    at 127.0.0.1 (DNS rebinding) is refused.
// 2. Token. With a token, every request for data (/api/, /metrics, /healthz) must carry
//    "Authorization: Bearer TOKEN", compared in constant time. The dashboard's own files
//    (HTML, JS, CSS: no data in them) are served without it; the page asks for the token
//    and sends it with each of its requests. No cookie is ever set, so a browser never
//    attaches credentials to a request on its own.
// 3. Cross-site requests. A request that changes something (any method but GET, HEAD,
//    OPTIONS) must have Content-Type application/json — which a cross-site form cannot
//    send, and cross-site script only after a CORS preflight that this server never
//    grants — and, when the browser says where it comes from (Origin, Sec-Fetch-Site),
//    must come from this server's own pages.
//
// Thread-safety: immutable after construction; check() may be called from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "server/http.hpp"

namespace readpast::server {

struct GuardOptions {
  std::optional<std::string> token;  // nullopt: no token (allowed on loopback only)
  bool loopback = true;              // listening on a loopback address
};

class RequestGuard {
 public:
  explicit RequestGuard(GuardOptions options) : options_(std::move(options)) {}

  // nullopt lets the request through; otherwise the response that refuses it.
  std::optional<HttpResponse> check(const HttpRequest& request) const;

  // Whether the path is one of the dashboard's files (served without the token).
  static bool is_public_path(std::string_view path);

 private:
  GuardOptions options_;
};

// Compares in time that depends only on the length of `given`, never on where the two
// differ or on the secret's length.
bool constant_time_equal(std::string_view given, std::string_view secret) noexcept;

// The host part of a Host header or of an origin's authority: "[::1]:8080" → "::1",
// "localhost:8080" → "localhost".
std::string_view host_without_port(std::string_view authority);

}  // namespace readpast::server
