#include "core/url.hpp"

#include <cctype>

namespace readpast::detail {
namespace {

constexpr std::string_view kSqliteScheme = "sqlite:";

bool starts_with_any(std::string_view s, std::initializer_list<std::string_view> prefixes) {
  for (auto p : prefixes) {
    if (s.starts_with(p)) return true;
  }
  return false;
}

// Splits "a=1&b=2" into params; false on an entry without '='.
bool parse_query(std::string_view query, std::map<std::string, std::string, std::less<>>& out) {
  while (!query.empty()) {
    auto amp = query.find('&');
    auto item = query.substr(0, amp);
    auto eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) return false;
    out.emplace(std::string(item.substr(0, eq)), std::string(item.substr(eq + 1)));
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return true;
}

Result<DatabaseUrl> parse_sqlite(std::string_view url) {
  DatabaseUrl parsed;
  parsed.kind = EngineKind::kSqlite;
  // SQLite takes no password, but a URL may carry one by mistake ("?password=...",
  // "sqlite://user:pw@..."): it is echoed in errors, so redact it like any other.
  parsed.redacted = redact_url(url);
  std::string_view rest = url.substr(kSqliteScheme.size());
  // Accept sqlite://PATH too, as many tools write it: sqlite:///abs and sqlite://rel.
  if (rest.starts_with("//")) rest.remove_prefix(2);
  auto question = rest.find('?');
  std::string_view path = rest.substr(0, question);
  if (path.empty())
    return fail_with(
        Error::invalid_argument("bad URL '" + parsed.redacted + "': sqlite: needs a file path"));
  if (question != std::string_view::npos &&
      !parse_query(rest.substr(question + 1), parsed.params)) {
    return fail_with(
        Error::invalid_argument("bad URL '" + parsed.redacted + "': parameters must be key=value"));
  }
  for (const auto& [key, value] : parsed.params) {
    if (key != "synchronous" && key != "busy_timeout" && key != "cache_mib") {
      return fail_with(
          Error::invalid_argument("bad URL '" + parsed.redacted + "': unknown parameter '" + key +
                                  "' (sqlite URLs take synchronous, busy_timeout and cache_mib)"));
    }
  }
  parsed.sqlite_path = std::string(path);
  return parsed;
}

// Takes readpast's own parameters ("schema", "reply_timeout") out of a postgresql:// URI,
// so libpq, which rejects parameters it does not know, never sees them.
std::string extract_uri_params(std::string_view uri,
                               std::map<std::string, std::string, std::less<>>& params) {
  auto question = uri.find('?');
  if (question == std::string_view::npos) return std::string(uri);
  std::string kept;
  std::string_view query = uri.substr(question + 1);
  while (!query.empty()) {
    auto amp = query.find('&');
    auto item = query.substr(0, amp);
    auto eq = item.find('=');
    const std::string_view key = item.substr(0, eq);
    if (eq != std::string_view::npos && (key == "schema" || key == "reply_timeout")) {
      params.emplace(std::string(key), std::string(item.substr(eq + 1)));
    } else if (!item.empty()) {
      kept += kept.empty() ? "" : "&";
      kept += item;
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  std::string result(uri.substr(0, question));
  if (!kept.empty()) result += "?" + kept;
  return result;
}

}  // namespace

std::optional<TextSpan> uri_password_span(std::string_view text) {
  // scheme: a letter, then letters, digits, '+', '.', '-'; then "://"
  std::size_t i = 0;
  if (text.empty() || std::isalpha(static_cast<unsigned char>(text[0])) == 0) return std::nullopt;
  while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) != 0 ||
                             text[i] == '+' || text[i] == '.' || text[i] == '-')) {
    ++i;
  }
  if (text.substr(i, 3) != "://") return std::nullopt;
  i += 3;
  // user: anything up to the first ':' (the password follows) unless '/', '@' or '?' ends
  // the authority's user part first.
  const std::size_t colon = text.find_first_of(":/@?", i);
  if (colon == std::string_view::npos || text[colon] != ':') return std::nullopt;
  // password: up to '@'; a '/' or '?' first means the ':' was a host's port, not a password.
  const std::size_t at = text.find_first_of("@/?", colon + 1);
  if (at == std::string_view::npos || text[at] != '@') return std::nullopt;
  return TextSpan{colon + 1, at};
}

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

bool iequals_at(std::string_view text, std::size_t pos, std::string_view word) {
  if (text.size() - pos < word.size()) return false;
  for (std::size_t k = 0; k < word.size(); ++k) {
    if (std::tolower(static_cast<unsigned char>(text[pos + k])) != word[k]) return false;
  }
  return true;
}

// The end of a keyword value that starts at `pos`: a single-quoted string with backslash
// escapes (an unterminated one runs to the end of the text, so nothing of it leaks), or a
// bare word ending at whitespace or '&'.
std::size_t value_end(std::string_view text, std::size_t pos) {
  if (pos < text.size() && text[pos] == '\'') {
    for (std::size_t k = pos + 1; k < text.size(); ++k) {
      if (text[k] == '\\') {
        ++k;
      } else if (text[k] == '\'') {
        return k + 1;
      }
    }
    return text.size();
  }
  std::size_t k = pos;
  while (k < text.size() && !is_space(text[k]) && text[k] != '&') ++k;
  return k;
}

}  // namespace

std::string redact_url(std::string_view url) {
  std::string text(url);
  // scheme://user:secret@host → scheme://user:***@host, for any scheme: an unknown
  // scheme is echoed in the "bad URL" error and must not leak its password either.
  if (auto span = uri_password_span(text)) {
    text.replace(span->begin, span->end - span->begin, "***");
  }
  // password=secret or password='sec ret', in keyword form or a URI query, in any case.
  constexpr std::string_view kKeyword = "password";
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    if (!iequals_at(text, i, kKeyword)) {
      out += text[i++];
      continue;
    }
    std::size_t k = i + kKeyword.size();
    while (k < text.size() && is_space(text[k])) ++k;
    if (k >= text.size() || text[k] != '=') {
      out += text[i++];
      continue;
    }
    ++k;
    while (k < text.size() && is_space(text[k])) ++k;
    out.append(text, i, k - i);
    out += "***";
    i = value_end(text, k);
  }
  return out;
}

namespace {

// libpq's keyword form: optional whitespace, a keyword of letters and '_', optional
// whitespace, '='.
bool looks_like_keywords(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && is_space(text[i])) ++i;
  const std::size_t word = i;
  while (i < text.size() &&
         (std::isalpha(static_cast<unsigned char>(text[i])) != 0 || text[i] == '_')) {
    ++i;
  }
  if (i == word) return false;
  while (i < text.size() && is_space(text[i])) ++i;
  return i < text.size() && text[i] == '=';
}

}  // namespace

Result<DatabaseUrl> parse_database_url(std::string_view url) {
  if (url.empty()) return fail_with(Error::invalid_argument("bad URL: it is empty"));
  if (url.starts_with(kSqliteScheme)) return parse_sqlite(url);
  if (starts_with_any(url, {"postgresql://", "postgres://"})) {
    DatabaseUrl parsed;
    parsed.kind = EngineKind::kPostgres;
    parsed.redacted = redact_url(url);
    parsed.postgres_conninfo = extract_uri_params(url, parsed.params);
    return parsed;
  }
  // libpq keyword form: at least one key=value and no scheme.
  if (url.find("://") == std::string_view::npos && looks_like_keywords(url)) {
    DatabaseUrl parsed;
    parsed.kind = EngineKind::kPostgres;
    parsed.redacted = redact_url(url);
    parsed.postgres_conninfo = std::string(url);
    return parsed;
  }
  return fail_with(Error::invalid_argument(
      "bad URL '" + redact_url(url) +
      "': expected sqlite:PATH, postgresql://... or libpq keywords (host=... dbname=...)"));
}

}  // namespace readpast::detail
