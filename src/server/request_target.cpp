#include "server/request_target.hpp"

#include <optional>

namespace readpast::server {
namespace {

int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

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
    auto segment = percent_decode(encoded, /*plus_is_space=*/false);
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

std::optional<std::string> percent_decode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '%') {
      if (i + 2 >= text.size()) return std::nullopt;
      int high = hex_value(text[i + 1]);
      int low = hex_value(text[i + 2]);
      if (high < 0 || low < 0) return std::nullopt;
      out += static_cast<char>(high * 16 + low);
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

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
    auto name = percent_decode(pair.substr(0, eq), /*plus_is_space=*/true);
    auto value =
        percent_decode(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1),
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
