// core/url.hpp — database URLs: which engine, where, and a form safe to print.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>

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
// when the URI has none.
std::optional<TextSpan> uri_password_span(std::string_view text);

// Replaces the password of a postgresql:// URI or a password=... keyword with "***".
std::string redact_url(std::string_view url);

}  // namespace readpast::detail
