#include "server/guard.hpp"

#include "server/listen_address.hpp"
#include "server/request_target.hpp"
#include "server/responses.hpp"

namespace readpast::server {
namespace {

bool is_safe_method(std::string_view method) {
  return method == "GET" || method == "HEAD" || method == "OPTIONS";
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// "application/json", "application/json; charset=utf-8"
bool is_json_content_type(std::string_view value) {
  return equals_ignoring_case(trim(value.substr(0, value.find(';'))), "application/json");
}

// Origin "http://host:port" against the Host header "host:port".
bool same_origin(std::string_view origin, std::string_view host) {
  for (std::string_view scheme : {"http://", "https://"}) {
    if (origin.starts_with(scheme)) return equals_ignoring_case(origin.substr(scheme.size()), host);
  }
  return false;
}

}  // namespace

bool constant_time_equal(std::string_view given, std::string_view secret) noexcept {
  if (secret.empty()) return false;
  unsigned char diff = given.size() == secret.size() ? 0 : 1;
  for (std::size_t i = 0; i < given.size(); ++i) {
    diff |= static_cast<unsigned char>(given[i] ^ secret[i % secret.size()]);
  }
  return diff == 0;
}

std::string_view host_without_port(std::string_view authority) {
  if (authority.starts_with('[')) {
    std::size_t close = authority.find(']');
    return close == std::string_view::npos ? authority : authority.substr(1, close - 1);
  }
  return authority.substr(0, authority.rfind(':'));
}

std::optional<HttpResponse> RequestGuard::check(const HttpRequest& request, Access access) const {
  auto host = request.header("Host");
  if (options_.loopback && (!host || !is_loopback_host(host_without_port(*host)))) {
    return error_response(403, "forbidden",
                          "this server answers requests for a loopback host only (Host: " +
                              std::string(host.value_or("")) + ")");
  }

  if (options_.token && access != Access::kPublic) {
    auto authorization = request.header("Authorization");
    std::string_view given;
    if (authorization && authorization->size() > 7 &&
        equals_ignoring_case(authorization->substr(0, 7), "Bearer ")) {
      given = trim(authorization->substr(7));
    }
    if (!constant_time_equal(given, *options_.token)) {
      HttpResponse response = error_response(
          401, "unauthorized",
          authorization ? "wrong token" : "this server needs 'Authorization: Bearer TOKEN'");
      response.headers.emplace_back("WWW-Authenticate", "Bearer");
      return response;
    }
  }

  if (!is_safe_method(request.method)) {
    auto site = request.header("Sec-Fetch-Site");
    auto origin = request.header("Origin");
    bool cross_site = (site && *site != "same-origin" && *site != "none") ||
                      (origin && !(host && same_origin(*origin, *host)));
    if (cross_site) {
      return error_response(403, "forbidden", "cross-site requests are refused");
    }
    auto type = request.header("Content-Type");
    if (!type || !is_json_content_type(*type)) {
      return error_response(415, "unsupported_media_type",
                            "send 'Content-Type: application/json' (a JSON body, {} if empty)");
    }
  }
  return std::nullopt;
}

std::optional<HttpResponse> screen_head(HttpRequest& head, const Router& router,
                                        const RequestGuard& guard) {
  auto target = parse_request_target(head.target);
  if (!target) return error_response(target.error());
  head.path = std::move(target->path);
  head.query = std::move(target->query);
  return guard.check(head, router.access(head.method, head.path));
}

}  // namespace readpast::server
