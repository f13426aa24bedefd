// cli/nearest_name.hpp — "did you mean …?": the known name closest to a misspelt one.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace readpast::cli {

// The number of single-character insertions, deletions, substitutions and swaps of two
// neighbours that turn `a` into `b` (optimal string alignment distance).
std::size_t edit_distance(std::string_view a, std::string_view b);

// The name in `known` that `typed` most likely misspells, compared without leading dashes:
// the closest one within 1 edit (none for names of 1 or 2 characters, 2 for names longer
// than 5), else the only one that `typed` begins (at least 2 characters). nullopt when nothing is
// close enough; the first of equally close names wins.
std::optional<std::string> nearest_name(std::string_view typed, std::span<const std::string> known);

}  // namespace readpast::cli
