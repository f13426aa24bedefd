// server/guard.hpp — what every request passes before it reaches a route:
//
// 1. Host. A server on a loopback address answers only requests whose Host header names a
//    loopback host (localhost, 127.x.x.x, [::1]): a web page that re-points its own domain
//    at 127.0.0.1 (DNS rebinding) is refused.
// 2. Token. With a token, every request must carry "Authorization: Bearer TOKEN",
//    compared in constant time, unless the route it matches is Access::kPublic (the
//    dashboard's own HTML, JS and CSS: no data in them). The caller decides the access from
//    the router (router.hpp) on the canonical path (request_target.hpp), so the check and
//    the routing cannot disagree about which path was asked for. The page asks for the
//    token and sends it with each of its requests. No cookie is ever set, so a browser
//    never attaches credentials to a request on its own.
// 3. Cross-site requests. A request that changes something (any method but GET, HEAD,
//    OPTIONS) must have Content-Type application/json — which a cross-site form cannot
//    send, and cross-site script only after a CORS preflight that this server never
//    grants — and, when the browser says where it comes from (Origin, Sec-Fetch-Site),
//    must come from this server's own pages.
//
// The guard reads the request's line and headers only: it runs before the body is read, so
// a refused request costs no more than its headers.
//
// Thread-safety: immutable after construction; check() may be called from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "server/http.hpp"
#include "server/router.hpp"

namespace readpast::server {

struct GuardOptions {
  std::optional<std::string> token;  // nullopt: no token (allowed on loopback only)
  bool loopback = true;              // listening on a loopback address
};

class RequestGuard {
 public:
  explicit RequestGuard(GuardOptions options) : options_(std::move(options)) {}

  // nullopt lets the request through; otherwise the response that refuses it. `access` is
  // that of the route the request's method and path match (Router::access).
  std::optional<HttpResponse> check(const HttpRequest& request, Access access) const;

 private:
  GuardOptions options_;
};

// The whole decision on a request's head, as the server makes it: its target decoded once
// (request_target.hpp) into head.path and head.query, then the guard, on the access of the
// route that the method and that path match. nullopt admits the request; the router then
// dispatches on the same head.path.
std::optional<HttpResponse> screen_head(HttpRequest& head, const Router& router,
                                        const RequestGuard& guard);

// Compares in time that depends only on the length of `given`, never on where the two
// differ or on the secret's length.
bool constant_time_equal(std::string_view given, std::string_view secret) noexcept;

// The host part of a Host header or of an origin's authority: "[::1]:8080" → "::1",
// "localhost:8080" → "localhost".
std::string_view host_without_port(std::string_view authority);

}  // namespace readpast::server
