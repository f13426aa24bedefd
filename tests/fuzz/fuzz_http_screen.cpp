// What `readpast serve` decides from a request's head (server/guard.hpp screen_head): the
// target decoded once, then the guard on the access of the route the router matches. For
// any method, target and headers:
//   - nothing crashes or throws;
//   - an admitted request's path is canonical: it starts with '/', has no empty, '.' or '..'
//     segment and no '/', '\' or control character inside a segment;
//   - without the token, no route but a public one is ever reached, whatever the spelling;
//   - what the router dispatches to is what router.access() judged.
// The input: its first byte chooses a loopback server or not; then "METHOD TARGET" and one
// header per line ("Name: value").
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "server/guard.hpp"
#include "server/responses.hpp"
#include "server/router.hpp"

namespace {

using namespace readpast::server;

constexpr std::string_view kToken = "fuzz-token-7d1c0a9b3e5f";

// The server's shape: the dashboard's public patterns, and token routes at every depth
// under /api/ plus /healthz and /metrics.
Router make_router(Access& reached) {
  Router router;
  auto route = [&reached](Access access) {
    return [&reached, access](const HttpRequest&) {
      reached = access;
      return error_response(200, "ok", "reached");
    };
  };
  for (const char* pattern : {"/", "/jobs", "/jobs/{id}", "/assets/{name}"}) {
    router.add("GET", pattern, route(Access::kPublic), Access::kPublic);
  }
  for (const char* pattern : {"/healthz", "/metrics", "/api/{a}", "/api/{a}/{b}",
                              "/api/{a}/{b}/{c}", "/api/{a}/{b}/{c}/{d}"}) {
    for (const char* method : {"GET", "POST", "DELETE"}) {
      router.add(method, pattern, route(Access::kToken));
    }
  }
  return router;
}

bool canonical(std::string_view path) {
  if (path == "/") return true;
  if (!path.starts_with('/') || path.ends_with('/')) return false;
  std::size_t start = 1;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view segment = path.substr(start, end - start);
    if (segment.empty() || segment == "." || segment == "..") return false;
    for (unsigned char c : segment) {
      if (c == '\\' || c < 0x20 || c == 0x7f) return false;
    }
    start = end + 1;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool loopback = (data[0] & 1) != 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  // The property is about requests without the token: an input that holds it is skipped.
  const bool has_token = text.find(kToken) != std::string_view::npos;

  HttpRequest head;
  std::size_t line_end = text.find('\n');
  std::string_view first = text.substr(0, line_end);
  std::size_t space = first.find(' ');
  head.method = std::string(first.substr(0, space));
  head.target =
      space == std::string_view::npos ? std::string() : std::string(first.substr(space + 1));
  while (line_end != std::string_view::npos) {
    std::size_t start = line_end + 1;
    line_end = text.find('\n', start);
    std::string_view line =
        text.substr(start, line_end == std::string_view::npos ? line_end : line_end - start);
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view value = line.substr(colon + 1);
    if (value.starts_with(' ')) value.remove_prefix(1);
    head.headers.emplace(std::string(line.substr(0, colon)), std::string(value));
  }

  Access reached = Access::kPublic;
  bool reached_any = false;
  const Router router = make_router(reached);
  const RequestGuard guard({std::string(kToken), loopback});
  auto refusal = screen_head(head, router, guard);
  if (refusal) {
    if (refusal->status < 400 || refusal->status > 499) std::abort();
    return 0;
  }
  if (!canonical(head.path)) std::abort();
  const Access judged = router.access(head.method, head.path);
  reached = Access::kPublic;
  HttpResponse response = router.dispatch(head);
  reached_any = response.status == 200;
  if (reached_any && reached != judged) std::abort();
  if (!has_token && reached_any && reached != Access::kPublic) std::abort();
  return 0;
}
