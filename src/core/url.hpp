// core/url.hpp — database URLs: which engine, where, and a form safe to print.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "readpast/error.hpp"

namespace readpast::detail {

enum class EngineKind { kSqlite, kPostgres };

struct DatabaseUrl {
  EngineKind kind = EngineKind::kSqlite;
  // SQLite: the file path, and the query parameters after '?' (synchronous, busy_timeout).
  std::string sqlite_path;
  std::map<std::string, std::string, std::less<>> params;
  // PostgreSQL: the connection string for libpq, as given (URI or key=value keywords),
  // less readpast's own parameters (which land in params: "schema", "reply_timeout").
  std::string postgres_conninfo;
  // The URL with any password replaced by "***": the only form that may be printed.
  std::string redacted;
};

// "sqlite:PATH[?k=v&...]", "postgresql://..." or "postgres://...", or libpq keywords
// ("host=... dbname=..."). Errors never echo a password.
Result<DatabaseUrl> parse_database_url(std::string_view url);

// [begin, end) of a range of characters in a string.
struct TextSpan {
  std::size_t begin = 0;
  std::size_t end = 0;
};

// Where the password of "scheme://user:password@host..." is, for any scheme; nullopt
// when the URI has none. It ends at the last '@' before the first '/', so that a password
// written with a raw '@' is covered whole (libpq would split it at its first '@').
std::optional<TextSpan> uri_password_span(std::string_view text);

// Replaces every password of a URL (the URI's, and password=... or sslpassword=... as a
// URI parameter or libpq keyword) with "***".
std::string redact_url(std::string_view url);

// The passwords of a URL, each as written and as libpq reads it (%XX decoded, quotes
// and escapes of a keyword value removed): the text to scrub from what is printed.
std::vector<std::string> url_passwords(std::string_view url);

// The URL with its passwords left out ("postgresql://u:pw@h/db?password=x&a=1" →
// "postgresql://u@h/db?a=1"): a URL that still works where libpq finds the password
// elsewhere (PGPASSWORD, ~/.pgpass). Empty when the URL was nothing but a password.
std::string url_without_password(std::string_view url);

}  // namespace readpast::detail
