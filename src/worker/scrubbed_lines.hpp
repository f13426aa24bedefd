// worker/scrubbed_lines.hpp — a command's stderr cut into lines, with the secrets the
// worker knows taken out, on its way to the worker's log and to last_error.
//
// Lines are passed on whole: with several commands at once, a line on the worker's stderr
// is then one command's, and a sink may treat each one as a unit (the CLI escapes it for
// the terminal). A line longer than kMaxLineBytes is passed on in pieces. However the
// reads cut the stream, a secret is never passed on, not even in two pieces.
//
// Thread-safety: none; owned by the one thread that reads the stream.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "core/secret_scrubber.hpp"

namespace readpast::worker {

class ScrubbedLines {
 public:
  static constexpr std::size_t kMaxLineBytes = 4096;
  using Emit = std::function<void(std::string_view)>;

  // `secrets` must outlive this object.
  ScrubbedLines(const detail::SecretScrubber& secrets, Emit emit)
      : secrets_(secrets), emit_(std::move(emit)) {}

  // Passes on every line this completes (with its '\n'), and the beginning of a line that
  // has grown past kMaxLineBytes.
  void append(std::string_view bytes);
  // At the end of the stream: passes on what is left (a last line without its '\n').
  void finish();

 private:
  const detail::SecretScrubber& secrets_;
  Emit emit_;
  std::string pending_;  // the start of a line, not scrubbed yet
};

}  // namespace readpast::worker
