// core/secret_scrubber.hpp — takes the secrets a process knows (the database password,
// the HTTP API token) out of text it hands on: log lines, a command's stderr, the
// last_error it stores. Redacting a URL hides its password where it is written;
// scrubbing also catches a password that something else printed (a command that dumps
// its environment, a message that quotes a connection string).
//
// Scrubbing is a safety net for accidents, not a barrier: a command that knows a secret
// can always print it encoded.
//
// Thread-safety: add() while the scrubber is being set up; the const members may then be
// called from many threads at once. Copies are independent.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace readpast::detail {

class SecretScrubber {
 public:
  // What each occurrence of a secret becomes.
  static constexpr std::string_view kReplacement = "[redacted]";
  // Shorter secrets are not scrubbed: replacing every "abc" would garble all text and
  // still show where the secret is.
  static constexpr std::size_t kMinSecretBytes = 4;

  // Adds a secret; one shorter than kMinSecretBytes, or known already, is ignored.
  void add(std::string_view secret);
  // Adds the passwords of a database URL, as written and as libpq decodes them
  // (url_passwords in core/url.hpp).
  void add_url_passwords(std::string_view database_url);

  bool empty() const noexcept { return secrets_.empty(); }

  // `text` with every occurrence of a secret replaced by kReplacement. Where two secrets
  // overlap, the one that starts first wins, and of those the longest.
  std::string scrub(std::string_view text) const;

  // For text that arrives in pieces (a pipe): scrubs `text` onto `out`, but stops before
  // a tail that is the beginning of a secret the next piece may complete. Returns how many
  // bytes of `text` it consumed; the caller passes the rest again, ahead of the next piece,
  // and the last time calls scrub() instead.
  std::size_t scrub_prefix(std::string_view text, std::string& out) const;

 private:
  std::size_t scrub_into(std::string_view text, std::string& out, bool more_follows) const;

  std::vector<std::string> secrets_;  // invariant: longest first
};

}  // namespace readpast::detail
