#include "core/url.hpp"

#include <regex>

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
  parsed.redacted = std::string(url);
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
    if (key != "synchronous" && key != "busy_timeout") {
      return fail_with(
          Error::invalid_argument("bad URL '" + parsed.redacted + "': unknown parameter '" + key +
                                  "' (sqlite URLs take synchronous and busy_timeout)"));
    }
  }
  parsed.sqlite_path = std::string(path);
  return parsed;
}

// Takes readpast's own "schema" parameter out of a postgresql:// URI, so libpq, which
// rejects parameters it does not know, never sees it.
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
    if (eq != std::string_view::npos && item.substr(0, eq) == "schema") {
      params.emplace("schema", std::string(item.substr(eq + 1)));
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

std::string redact_url(std::string_view url) {
  std::string text(url);
  // scheme://user:secret@host → scheme://user:***@host, for any scheme: an unknown
  // scheme is echoed in the "bad URL" error and must not leak its password either.
  static const std::regex uri_password(R"(^([A-Za-z][A-Za-z0-9+.-]*://[^:/@?]*:)[^@/?]*@)");
  text = std::regex_replace(text, uri_password, "$1***@");
  // password=secret or password='sec ret' in keyword form or a URI query
  static const std::regex keyword_password(R"((password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*))",
                                           std::regex::icase);
  return std::regex_replace(text, keyword_password, "$1***");
}

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
  static const std::regex keywords(R"(^\s*[A-Za-z_]+\s*=.*)");
  if (url.find("://") == std::string_view::npos &&
      std::regex_match(url.begin(), url.end(), keywords)) {
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
