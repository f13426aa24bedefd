#include "server/dashboard.hpp"

#include "server/embedded_file.hpp"
#include "server/responses.hpp"

namespace readpast::server {
namespace {

std::string_view content_type_of(std::string_view path) {
  if (path.ends_with(".html")) return "text/html; charset=utf-8";
  if (path.ends_with(".js")) return "text/javascript; charset=utf-8";
  if (path.ends_with(".css")) return "text/css; charset=utf-8";
  if (path.ends_with(".svg")) return "image/svg+xml";
  return "application/octet-stream";
}

HttpResponse file_response(std::string_view path) {
  for (const auto& file : embedded_files()) {
    if (file.path == path) {
      HttpResponse response{200, std::string(content_type_of(path)), std::string(file.content), {}};
      // Small files; always revalidated so that a new binary's dashboard shows at once.
      response.headers.emplace_back("Cache-Control", "no-cache");
      return response;
    }
  }
  return error_response(404, "not_found", "no such file");
}

}  // namespace

void add_security_headers(HttpResponse& response) {
  response.headers.emplace_back("X-Content-Type-Options", "nosniff");
  response.headers.emplace_back("X-Frame-Options", "DENY");
  response.headers.emplace_back("Referrer-Policy", "no-referrer");
  response.headers.emplace_back(
      "Content-Security-Policy",
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
      "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'");
}

void add_dashboard_routes(Router& router) {
  auto page = [](const HttpRequest&) { return file_response("index.html"); };
  router.add("GET", "/", page, Access::kPublic);
  router.add("GET", "/jobs", page, Access::kPublic);
  router.add("GET", "/jobs/{id}", page, Access::kPublic);
  router.add("GET", "/schedules", page, Access::kPublic);
  router.add("GET", "/workers", page, Access::kPublic);
  router.add(
      "GET", "/assets/{name}",
      [](const HttpRequest& request) { return file_response(request.param("name")); },
      Access::kPublic);
}

}  // namespace readpast::server
