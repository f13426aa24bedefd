// core/url.hpp — database URLs: which engine, where, and a form safe to print.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "readpast/error.hpp"

namespace readpast::detail {

// A database URL as the engine that claimed it parsed it (engines/engine_registry.hpp).
struct DatabaseUrl {
  std::string engine;  // the name of the engine that claimed it: "sqlite", "postgres"
  // What the engine connects to: SQLite's file path, libpq's connection string (URI or
  // keywords) less readpast's own parameters.
  std::string location;
  // readpast's own parameters (SQLite: synchronous, busy_timeout, cache_mib, page_size; PostgreSQL:
  // schema, reply_timeout).
  std::map<std::string, std::string, std::less<>> params;
  // The URL with any password replaced by "***": the only form that may be printed.
  std::string redacted;
};

// One URL scheme an engine claims (engines/<name>/..._url.cpp); the build's engines list
// theirs in the order of READPAST_ENGINES (cmake/ReadpastEngines.cmake).
struct UrlScheme {
  std::string_view engine;  // the engine's name
  std::string_view forms;   // for messages: "sqlite:PATH"
  // Whether the URL is written for this engine; the first engine that claims it parses it.
  bool (*claims)(std::string_view url);
  // kInvalidArgument with a one-line message that never echoes a password.
  Result<DatabaseUrl> (*parse)(std::string_view url);
};

// Defined by the generated list of the build's engines.
std::span<const UrlScheme* const> registered_url_schemes();

// Parses with the engine whose scheme claims the URL; kInvalidArgument naming the forms every
// engine of this build takes when none does. Errors never echo a password.
Result<DatabaseUrl> parse_database_url(std::string_view url);

// "a=1&b=2" into `out`; false on an entry without a name or an '='.
bool parse_url_params(std::string_view query, std::map<std::string, std::string, std::less<>>& out);

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
