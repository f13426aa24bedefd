// The PostgreSQL engine's URLs: "postgresql://..." or "postgres://..." (libpq's URI, several
// hosts allowed), or libpq's keywords ("host=... dbname=..."). readpast's own parameters
// (kOwnParameters) are taken out of a URI before libpq, which refuses parameters it does not
// know, sees it. listen_url is itself a (percent-encoded) URL that may hold a password: the
// redacted form shows it decoded and redacted.
#include <array>
#include <cctype>

#include "core/percent_decode.hpp"
#include "core/url.hpp"

namespace readpast::detail {
namespace {

// What each means: docs/postgres.md, "URL parameters".
constexpr std::array<std::string_view, 7> kOwnParameters = {
    "schema",        "reply_timeout", "pool_mode",  "pool_size",
    "poll_interval", "listen_url",    "lease_lanes"};

bool is_own_parameter(std::string_view key) {
  for (std::string_view own : kOwnParameters) {
    if (key == own) return true;
  }
  return false;
}

bool is_space(char c) {
  return c == ' ' || (c >= '\t' && c <= '\r');
}

bool is_uri(std::string_view url) {
  return url.starts_with("postgresql://") || url.starts_with("postgres://");
}

// libpq's keyword form: optional whitespace, a keyword of letters and '_', optional
// whitespace, '=', and no scheme anywhere.
bool looks_like_keywords(std::string_view text) {
  if (text.find("://") != std::string_view::npos) return false;
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

bool claims(std::string_view url) {
  return is_uri(url) || looks_like_keywords(url);
}

// The URI without readpast's own parameters, which land in `params`.
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
    if (eq != std::string_view::npos && is_own_parameter(key)) {
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

Result<DatabaseUrl> parse(std::string_view url) {
  DatabaseUrl parsed;
  parsed.engine = "postgres";
  parsed.redacted = redact_url(url);
  parsed.location = is_uri(url) ? extract_uri_params(url, parsed.params) : std::string(url);
  if (auto it = parsed.params.find("listen_url"); it != parsed.params.end()) {
    auto decoded = percent_decode(it->second);
    if (!decoded) {
      return fail_with(Error::invalid_argument("bad URL '" + redact_url(parsed.location) +
                                               "': listen_url is not percent-encoded"));
    }
    // Shown decoded and redacted; its password is nowhere in the printable form.
    const std::string raw = "listen_url=" + it->second;
    if (auto at = parsed.redacted.find(raw); at != std::string::npos) {
      parsed.redacted.replace(at, raw.size(), "listen_url=" + redact_url(*decoded));
    }
    it->second = std::move(*decoded);
  }
  return parsed;
}

}  // namespace

const UrlScheme& postgres_url_scheme() {
  static constexpr UrlScheme kPostgres{
      "postgres", "postgresql://USER@HOST/DB (or libpq keywords: host=H dbname=DB)", claims, parse};
  return kPostgres;
}

}  // namespace readpast::detail
