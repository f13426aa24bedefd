// The PostgreSQL engine's URLs: "postgresql://..." or "postgres://..." (libpq's URI, several
// hosts allowed), or libpq's keywords ("host=... dbname=..."). readpast's own parameters
// (schema, reply_timeout) are taken out of a URI before libpq, which refuses parameters it
// does not know, sees it.
#include <cctype>

#include "core/url.hpp"

namespace readpast::detail {
namespace {

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

Result<DatabaseUrl> parse(std::string_view url) {
  DatabaseUrl parsed;
  parsed.engine = "postgres";
  parsed.redacted = redact_url(url);
  parsed.location = is_uri(url) ? extract_uri_params(url, parsed.params) : std::string(url);
  return parsed;
}

}  // namespace

const UrlScheme& postgres_url_scheme() {
  static constexpr UrlScheme kPostgres{
      "postgres", "postgresql://USER@HOST/DB (or libpq keywords: host=H dbname=DB)", claims, parse};
  return kPostgres;
}

}  // namespace readpast::detail
