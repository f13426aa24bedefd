// core/utf8.hpp — the one UTF-8 decoder of readpast, for text that leaves it: last_error and
// worker ids (which a PostgreSQL TEXT column would refuse if invalid or holding a NUL),
// payloads shown by the command line and the API.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace readpast::detail {

// True when `text` is well-formed UTF-8 (no overlongs, no surrogates, nothing past
// U+10FFFF). NUL bytes are valid UTF-8.
bool is_valid_utf8(std::string_view text) noexcept;

// The text with every ill-formed sequence replaced by U+FFFD and every NUL by U+2400 (␀),
// fit for a database text column on every engine.
std::string sanitize_utf8(std::string_view text);

// The text without the continuation bytes at its start: the rest of a character whose lead
// byte was cut off (as keeping only the tail of a stream does).
std::string_view without_cut_character(std::string_view text) noexcept;

// Length of the well-formed UTF-8 sequence starting at text[0], or 0 when ill-formed.
std::size_t utf8_sequence_length(std::string_view text) noexcept;

}  // namespace readpast::detail
