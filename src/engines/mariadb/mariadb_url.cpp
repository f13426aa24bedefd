// The MariaDB engine's URLs: "mariadb://USER[:PASSWORD]@HOST[:PORT]/DATABASE", "mysql://" the
// same, with optional parameters: socket=/path (connect over that unix socket; HOST is then
// ignored), connect_timeout=SECONDS and reply_timeout=SECONDS (how long a statement's reply may
// take before its connection is given up as dead). USER and PASSWORD may be %XX-encoded (a password
// with
// '@' or '/' in it). The location is left empty: the engine connects with the parsed parts,
// kept in params (user, password, host, port, database, socket, connect_timeout,
// reply_timeout).
#include <charconv>

#include "core/percent_decode.hpp"
#include "core/url.hpp"

namespace readpast::detail {
namespace {

bool claims(std::string_view url) {
  return url.starts_with("mariadb://") || url.starts_with("mysql://");
}

Result<DatabaseUrl> parse(std::string_view url) {
  DatabaseUrl parsed;
  parsed.engine = "mariadb";
  parsed.redacted = redact_url(url);
  auto bad = [&](std::string_view why) {
    return fail_with(
        Error::invalid_argument("bad URL '" + parsed.redacted + "': " + std::string(why)));
  };
  std::string_view rest = url.substr(url.find("://") + 3);
  std::string_view query;
  if (auto question = rest.find('?'); question != std::string_view::npos) {
    query = rest.substr(question + 1);
    rest = rest.substr(0, question);
  }
  auto slash = rest.find('/');
  if (slash == std::string_view::npos || slash + 1 == rest.size()) {
    return bad("a mariadb:// URL names its database: mariadb://USER@HOST/DATABASE");
  }
  std::string_view authority = rest.substr(0, slash);
  std::string_view database = rest.substr(slash + 1);
  if (database.find('/') != std::string_view::npos) return bad("the database name has a '/'");
  // The user info ends at the last '@', so that a raw '@' in a password stays in it.
  std::string_view userinfo;
  if (auto at = authority.rfind('@'); at != std::string_view::npos) {
    userinfo = authority.substr(0, at);
    authority = authority.substr(at + 1);
  }
  if (userinfo.empty()) return bad("a mariadb:// URL names its user: mariadb://USER@HOST/DATABASE");
  std::string_view user = userinfo;
  std::optional<std::string_view> password;
  if (auto colon = userinfo.find(':'); colon != std::string_view::npos) {
    user = userinfo.substr(0, colon);
    password = userinfo.substr(colon + 1);
  }
  std::string_view host = authority;
  std::string_view port;
  if (host.starts_with('[')) {  // [::1]:3306
    auto close = host.find(']');
    if (close == std::string_view::npos) return bad("unclosed '[' in the host");
    port = host.substr(close + 1);
    host = host.substr(1, close - 1);
    if (!port.empty() && !port.starts_with(':')) return bad("bad host");
    if (!port.empty()) port.remove_prefix(1);
  } else if (auto colon = host.rfind(':'); colon != std::string_view::npos) {
    port = host.substr(colon + 1);
    host = host.substr(0, colon);
  }
  if (!port.empty()) {
    int number = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), number);
    if (ec != std::errc() || end != port.data() + port.size() || number < 1 || number > 65535) {
      return bad("the port must be a number from 1 to 65535");
    }
    parsed.params["port"] = std::string(port);
  }
  if (!query.empty() && !parse_url_params(query, parsed.params)) {
    return bad("parameters must be key=value");
  }
  for (const auto& [key, value] : parsed.params) {
    if (key == "port") continue;
    if (key != "socket" && key != "connect_timeout" && key != "reply_timeout") {
      return bad("unknown parameter '" + key +
                 "' (mariadb URLs take socket, connect_timeout and reply_timeout)");
    }
  }
  if (host.empty() && !parsed.params.contains("socket")) {
    return bad("a mariadb:// URL names its host (or ?socket=/path)");
  }
  auto decoded_user = percent_decode(user);
  if (!decoded_user || decoded_user->empty()) return bad("bad user name");
  parsed.params["user"] = *decoded_user;
  if (password) {
    auto decoded = percent_decode(*password);
    if (!decoded) return bad("bad %-encoding in the password");
    parsed.params["password"] = *decoded;
  }
  parsed.params["host"] = std::string(host);
  auto decoded_database = percent_decode(database);
  if (!decoded_database || decoded_database->empty()) return bad("bad database name");
  parsed.params["database"] = *decoded_database;
  return parsed;
}

}  // namespace

const UrlScheme& mariadb_url_scheme() {
  static constexpr UrlScheme kMariadb{
      "mariadb", "mariadb://USER[:PASSWORD]@HOST[:PORT]/DATABASE (or mysql://)", claims, parse};
  return kMariadb;
}

}  // namespace readpast::detail
