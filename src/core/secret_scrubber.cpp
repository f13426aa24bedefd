#include "core/secret_scrubber.hpp"

#include <algorithm>

#include "core/url.hpp"

namespace readpast::detail {

void SecretScrubber::add(std::string_view secret) {
  if (secret.size() < kMinSecretBytes) return;
  if (std::find(secrets_.begin(), secrets_.end(), secret) != secrets_.end()) return;
  // Longest first, so that a secret that contains another is replaced whole.
  auto at = std::find_if(secrets_.begin(), secrets_.end(),
                         [&](const std::string& known) { return known.size() < secret.size(); });
  secrets_.emplace(at, secret);
}

void SecretScrubber::add_url_passwords(std::string_view database_url) {
  for (const std::string& password : url_passwords(database_url)) add(password);
}

std::string SecretScrubber::scrub(std::string_view text) const {
  std::string out;
  out.reserve(text.size());
  scrub_into(text, out, false);
  return out;
}

std::size_t SecretScrubber::scrub_prefix(std::string_view text, std::string& out) const {
  return scrub_into(text, out, true);
}

std::size_t SecretScrubber::scrub_into(std::string_view text, std::string& out,
                                       bool more_follows) const {
  if (secrets_.empty()) {
    out.append(text);
    return text.size();
  }
  std::size_t i = 0;
  while (i < text.size()) {
    const std::string_view rest = text.substr(i);
    bool replaced = false;
    for (const std::string& secret : secrets_) {
      if (rest.starts_with(secret)) {
        out += kReplacement;
        i += secret.size();
        replaced = true;
        break;
      }
      // The end of this piece may be the start of a secret: wait for the next one. (A
      // shorter secret that matches here must not win over a longer one that may.)
      if (more_follows && rest.size() < secret.size() && secret.starts_with(rest)) return i;
    }
    if (!replaced) out += text[i++];
  }
  return i;
}

}  // namespace readpast::detail
