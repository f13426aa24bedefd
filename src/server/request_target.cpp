#include "server/request_target.hpp"

#include "core/percent_decode.hpp"

namespace readpast::server {
namespace {

bool is_control(unsigned char c) noexcept {
  return c < 0x20 || c == 0x7f;
}

Error bad_target(std::string_view why) {
  return Error::invalid_argument("bad request target: " + std::string(why));
}

Result<std::string> canonical_path(std::string_view raw) {
  if (raw == "/") return std::string("/");
  std::string path;
  std::size_t start = 1;  // past the leading '/'
  while (start <= raw.size()) {
    std::size_t end = raw.find('/', start);
    if (end == std::string_view::npos) end = raw.size();
    std::string_view encoded = raw.substr(start, end - start);
    if (encoded.empty())
      return fail_with(bad_target("empty path segment ('//' or a trailing '/')"));
    auto segment = detail::percent_decode(encoded, /*plus_is_space=*/false);
    if (!segment) return fail_with(bad_target("malformed %-escape in the path"));
    if (*segment == "." || *segment == "..") {
      return fail_with(bad_target("'.' and '..' segments are not allowed"));
    }
    for (unsigned char c : *segment) {
      if (c == '/' || c == '\\' || is_control(c)) {
        return fail_with(
            bad_target("a path segment may not contain '/', '\\' or control characters"));
      }
    }
    path += '/';
    path += *segment;
    start = end + 1;
  }
  return path;
}

}  // namespace

Result<RequestTarget> parse_request_target(std::string_view target) {
  if (!target.starts_with('/')) {
    return fail_with(bad_target("it must be a path starting with '/'"));
  }
  if (target.find('#') != std::string_view::npos) {
    return fail_with(bad_target("a fragment ('#') is not sent to a server"));
  }
  const std::size_t question = target.find('?');
  RequestTarget out;
  auto path = canonical_path(target.substr(0, question));
  if (!path) return fail_with(path.error());
  out.path = std::move(*path);
  if (question == std::string_view::npos) return out;

  std::string_view query = target.substr(question + 1);
  while (!query.empty()) {
    std::size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    std::size_t eq = pair.find('=');
    auto name = detail::percent_decode(pair.substr(0, eq), /*plus_is_space=*/true);
    auto value = detail::percent_decode(
        eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1),
        /*plus_is_space=*/true);
    if (!name || !value) return fail_with(bad_target("malformed %-escape in the query"));
    if (name->find('\0') != std::string::npos || value->find('\0') != std::string::npos) {
      return fail_with(bad_target("NUL in the query"));
    }
    out.query.emplace(std::move(*name), std::move(*value));
  }
  return out;
}

}  // namespace readpast::server
