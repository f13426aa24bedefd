// The SQLite engine's URLs:
// "sqlite:PATH[?synchronous=...&busy_timeout=...&cache_mib=...&page_size=...]",
// also written "sqlite://PATH" (sqlite:///abs, sqlite://rel) as many tools do.
#include "core/url.hpp"

namespace readpast::detail {
namespace {

constexpr std::string_view kScheme = "sqlite:";

bool claims(std::string_view url) {
  return url.starts_with(kScheme);
}

Result<DatabaseUrl> parse(std::string_view url) {
  DatabaseUrl parsed;
  parsed.engine = "sqlite";
  // SQLite takes no password, but a URL may carry one by mistake ("?password=...",
  // "sqlite://user:pw@..."): it is echoed in errors, so redact it like any other.
  parsed.redacted = redact_url(url);
  // Taken as a path, "sqlite://user:pw@/x.db" would be echoed by every "cannot open"
  // message with its password in it.
  if (uri_password_span(url)) {
    return fail_with(Error::invalid_argument("bad URL '" + parsed.redacted +
                                             "': a sqlite: URL takes no user or password"));
  }
  std::string_view rest = url.substr(kScheme.size());
  if (rest.starts_with("//")) rest.remove_prefix(2);
  auto question = rest.find('?');
  std::string_view path = rest.substr(0, question);
  if (path.empty()) {
    return fail_with(
        Error::invalid_argument("bad URL '" + parsed.redacted + "': sqlite: needs a file path"));
  }
  if (question != std::string_view::npos &&
      !parse_url_params(rest.substr(question + 1), parsed.params)) {
    return fail_with(
        Error::invalid_argument("bad URL '" + parsed.redacted + "': parameters must be key=value"));
  }
  for (const auto& [key, value] : parsed.params) {
    if (key != "synchronous" && key != "busy_timeout" && key != "cache_mib" && key != "page_size") {
      return fail_with(Error::invalid_argument(
          "bad URL '" + parsed.redacted + "': unknown parameter '" + key +
          "' (sqlite URLs take synchronous, busy_timeout, cache_mib and page_size)"));
    }
  }
  parsed.location = std::string(path);
  return parsed;
}

}  // namespace

const UrlScheme& sqlite_url_scheme() {
  static constexpr UrlScheme kSqlite{
      "sqlite", "sqlite:PATH[?busy_timeout=MS&synchronous=normal&cache_mib=N&page_size=N]", claims,
      parse};
  return kSqlite;
}

}  // namespace readpast::detail
