// worker/utf8.hpp — UTF-8 checks for text that leaves readpast: last_error (which a
// PostgreSQL TEXT column would refuse if invalid) and payloads shown by the CLI.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace readpast::worker {

// True when `text` is well-formed UTF-8 (no overlongs, no surrogates, nothing past
// U+10FFFF). NUL bytes are valid UTF-8.
bool is_valid_utf8(std::string_view text) noexcept;

// The text with every ill-formed sequence replaced by U+FFFD and every NUL by U+2400 (␀),
// fit for a database text column. Bytes of a character cut in half at the start (as a
// tail buffer may do) are dropped rather than replaced.
std::string sanitize_utf8(std::string_view text);

// Length of the well-formed UTF-8 sequence starting at text[0], or 0 when ill-formed.
std::size_t utf8_sequence_length(std::string_view text) noexcept;

}  // namespace readpast::worker
