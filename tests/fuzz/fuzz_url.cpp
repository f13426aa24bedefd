// Database URLs (--db, READPAST_DB): parse_database_url never throws or crashes; the
// printable form it returns, and the URL an error message echoes, never carry a password. The
// passwords of the input are found independently here (the scheme://user:PASSWORD@ of its
// authority, and every password=VALUE keyword outside it, a value running to whitespace or '&' or,
// quoted, to its closing quote); each one of at least 6 bytes that occurs once in the input must
// not occur in what may be printed.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/url.hpp"

namespace {

bool is_space(char c) {
  return c == ' ' || (c >= '\t' && c <= '\r');
}

std::vector<std::string_view> passwords_in(std::string_view text) {
  std::vector<std::string_view> found;
  const auto span = readpast::detail::uri_password_span(text);
  if (span) found.push_back(text.substr(span->begin, span->end - span->begin));
  for (std::size_t i = 0; i + 8 <= text.size(); ++i) {
    // "password=" inside the URI's password is part of that password, not a keyword.
    if (span && i >= span->begin && i < span->end) continue;
    bool match = true;
    for (std::size_t k = 0; k < 8 && match; ++k) {
      char c = text[i + k];
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      match = c == "password"[k];
    }
    if (!match) continue;
    std::size_t k = i + 8;
    while (k < text.size() && is_space(text[k])) ++k;
    if (k >= text.size() || text[k] != '=') continue;
    ++k;
    while (k < text.size() && is_space(text[k])) ++k;
    std::size_t end = k;
    if (end < text.size() && text[end] == '\'') {
      for (++end; end < text.size() && text[end] != '\''; ++end) {
        if (text[end] == '\\') ++end;
      }
      end = std::min(end + 1, text.size());
    } else {
      while (end < text.size() && !is_space(text[end]) && text[end] != '&') ++end;
    }
    found.push_back(text.substr(k, end - k));
    i = end - 1;  // the value is not searched for keywords
  }
  return found;
}

std::size_t occurrences(std::string_view text, std::string_view part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string_view::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

void check_printable(std::string_view input, std::string_view printable) {
  for (std::string_view secret : passwords_in(input)) {
    // ("***" is what redaction writes: a "secret" with a '*' may match the redacted text.)
    if (secret.size() < 6 || occurrences(input, secret) != 1 ||
        secret.find('*') != std::string_view::npos) {
      continue;
    }
    if (printable.find(secret) != std::string_view::npos) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view url(reinterpret_cast<const char*>(data), size);
  check_printable(url, readpast::detail::redact_url(url));
  auto parsed = readpast::detail::parse_database_url(url);
  if (!parsed) {
    if (parsed.error().code != readpast::ErrorCode::kInvalidArgument) std::abort();
    // "bad URL '<the redacted URL>': <fixed text>": the echo is redact_url's (checked
    // above); anything else must be checked whole.
    const std::string& message = parsed.error().message;
    const std::string echo = "bad URL '" + readpast::detail::redact_url(url) + "'";
    if (!message.starts_with(echo)) check_printable(url, message);
    return 0;
  }
  check_printable(url, parsed->redacted);
  return 0;
}
