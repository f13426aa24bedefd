// core/percent_decode.hpp — %XX escapes, as URLs carry them: the password in a database
// URL (libpq decodes it), the path and query of an HTTP request.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace readpast::detail {

// The value of a hex digit (either case), or -1 for any other character.
int hex_digit_value(char c) noexcept;

// "%41" → "A", and '+' → ' ' when plus_is_space (a form-encoded query). nullopt when a '%'
// is not followed by two hex digits, which libpq, like most URL parsers, refuses.
std::optional<std::string> percent_decode(std::string_view text, bool plus_is_space = false);

}  // namespace readpast::detail
