#include "core/url.hpp"

#include <algorithm>
#include <cctype>

#include "core/percent_decode.hpp"

namespace readpast::detail {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

bool is_port_number(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
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
  // The authority runs to the first '/'. libpq's user info ends at its first '@' and its
  // user name at the first ':' (a '?' or '#' may be part of either), so a raw '@' in a
  // password or a user name ("admin@server", as some hosted services name users) is
  // misread, and the first '@' would leave the rest of the password in view. The user
  // info is taken to run to the last '@' of the authority instead, so that no part of a
  // password is shown.
  const std::size_t slash = std::min(text.find('/', i), text.size());
  const std::string_view authority = text.substr(i, slash - i);
  if (const std::size_t at = authority.rfind('@'); at != std::string_view::npos) {
    const std::size_t colon = authority.substr(0, at).find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    return TextSpan{i + colon + 1, i + at};
  }
  // No '@' before the first '/': either "host:port/..." or a password with a raw '/' in
  // it, which libpq reads as a port (and which a "bad port" message would echo). What
  // follows the ':' is a password when it is no port (a list of hosts has a ',') and an
  // '@' comes later.
  const std::size_t colon = authority.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  const std::string_view after_colon = authority.substr(colon + 1);
  if (is_port_number(after_colon) || after_colon.find(',') != std::string_view::npos) {
    return std::nullopt;
  }
  const std::size_t late_at = text.rfind('@');
  if (late_at == std::string_view::npos || late_at < slash) return std::nullopt;
  return TextSpan{i + colon + 1, late_at};
}

namespace {

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

bool is_keyword_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// One password in a URL.
struct PasswordSpan {
  TextSpan value;  // the password as written (quotes included)
  TextSpan item;   // what leaves it out when cut: ":secret" or "sslpassword = 'secret'"
};

// Every password of a URL in the order written, overlapping spans merged: the URI's
// (scheme://user:PASSWORD@...) and every VALUE of a keyword ending in "password" (libpq's
// password and sslpassword, as URI query parameters or keywords), in any case.
std::vector<PasswordSpan> password_spans(std::string_view text) {
  std::vector<PasswordSpan> spans;
  const auto uri = uri_password_span(text);
  if (uri) spans.push_back({*uri, {uri->begin - 1, uri->end}});
  constexpr std::string_view kKeyword = "password";
  for (std::size_t i = 0; i < text.size(); ++i) {
    // "password=" inside the URI's password is part of that password, not a keyword.
    if (uri && i >= uri->begin && i < uri->end) continue;
    if (!iequals_at(text, i, kKeyword)) continue;
    std::size_t k = i + kKeyword.size();
    while (k < text.size() && is_space(text[k])) ++k;
    if (k >= text.size() || text[k] != '=') continue;
    ++k;
    while (k < text.size() && is_space(text[k])) ++k;
    std::size_t key = i;
    while (key > 0 && is_keyword_char(text[key - 1])) --key;
    const std::size_t end = value_end(text, k);
    spans.push_back({{k, end}, {key, end}});
    i = end - 1;  // the value is not searched for keywords
  }
  std::sort(spans.begin(), spans.end(), [](const PasswordSpan& a, const PasswordSpan& b) {
    return a.item.begin < b.item.begin;
  });
  std::vector<PasswordSpan> merged;
  for (const PasswordSpan& span : spans) {
    if (!merged.empty() && span.item.begin < merged.back().item.end) {
      PasswordSpan& last = merged.back();
      last.value = {std::min(last.value.begin, span.value.begin),
                    std::max(last.value.end, span.value.end)};
      last.item.end = std::max(last.item.end, span.item.end);
    } else {
      merged.push_back(span);
    }
  }
  return merged;
}

// A keyword value as libpq reads it: a quoted one without its quotes and escapes.
std::string unquote(std::string_view value) {
  if (value.size() < 2 || value.front() != '\'' || value.back() != '\'') return std::string(value);
  std::string out;
  for (std::size_t k = 1; k + 1 < value.size(); ++k) {
    if (value[k] == '\\' && k + 2 < value.size()) ++k;
    out += value[k];
  }
  return out;
}

}  // namespace

std::string redact_url(std::string_view url) {
  std::string out;
  std::size_t copied = 0;
  for (const PasswordSpan& span : password_spans(url)) {
    out.append(url.substr(copied, span.value.begin - copied));
    out += "***";
    copied = span.value.end;
  }
  out.append(url.substr(copied));
  return out;
}

std::vector<std::string> url_passwords(std::string_view url) {
  std::vector<std::string> found;
  auto add = [&found](std::string text) {
    if (!text.empty() && std::find(found.begin(), found.end(), text) == found.end()) {
      found.push_back(std::move(text));
    }
  };
  for (const PasswordSpan& span : password_spans(url)) {
    const std::string written =
        unquote(url.substr(span.value.begin, span.value.end - span.value.begin));
    // libpq decodes %XX in a URI's user info and query; a keyword value may be either.
    if (auto decoded = percent_decode(written)) add(std::move(*decoded));
    add(written);
  }
  return found;
}

std::string url_without_password(std::string_view url) {
  std::string out(url);
  auto spans = password_spans(url);
  // From the last to the first, so that the earlier spans still point at their text.
  for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
    TextSpan cut = it->item;
    auto at = [&out](std::size_t k) { return k < out.size() ? out[k] : '\0'; };
    if (out[cut.begin] == ':') {
      // "user:secret@host" → "user@host"
    } else if (at(cut.end) == '&') {
      ++cut.end;  // "?password=x&a=1" → "?a=1"
    } else if (cut.begin > 0 && (at(cut.begin - 1) == '&' || at(cut.begin - 1) == '?')) {
      --cut.begin;  // "?a=1&password=x" → "?a=1", "?password=x" → ""
    } else {
      // libpq keywords: the separating whitespace after it, or before it at the end.
      while (cut.end < out.size() && is_space(out[cut.end])) ++cut.end;
      if (cut.end == out.size()) {
        while (cut.begin > 0 && is_space(out[cut.begin - 1])) --cut.begin;
      }
    }
    out.erase(cut.begin, cut.end - cut.begin);
  }
  return out;
}

bool parse_url_params(std::string_view query,
                      std::map<std::string, std::string, std::less<>>& out) {
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

Result<DatabaseUrl> parse_database_url(std::string_view url) {
  if (url.empty()) return fail_with(Error::invalid_argument("bad URL: it is empty"));
  std::string forms;
  for (const UrlScheme* scheme : registered_url_schemes()) {
    if (scheme->claims(url)) return scheme->parse(url);
    forms += (forms.empty() ? "" : ", ") + std::string(scheme->forms);
  }
  return fail_with(Error::invalid_argument("bad URL '" + redact_url(url) + "': expected " + forms));
}

}  // namespace readpast::detail
