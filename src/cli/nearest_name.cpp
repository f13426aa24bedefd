#include "cli/nearest_name.hpp"

#include <algorithm>
#include <vector>

namespace readpast::cli {
namespace {

std::string_view without_dashes(std::string_view name) {
  while (name.starts_with('-')) name.remove_prefix(1);
  return name;
}

// How many edits still read as a typo of a word this long: none for one or two characters
// (every short option is one edit from every other), one up to five, two beyond.
std::size_t edits_allowed(std::size_t length) {
  if (length <= 2) return 0;
  return length <= 5 ? 1 : 2;
}

}  // namespace

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // Three rows of the usual dynamic programme: the swap of two neighbours looks two back.
  std::vector<std::size_t> before(b.size() + 1);
  std::vector<std::size_t> previous(b.size() + 1);
  std::vector<std::size_t> current(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        current[j] = std::min(current[j], before[j - 2] + 1);
      }
    }
    std::swap(before, previous);
    std::swap(previous, current);
  }
  return previous[b.size()];
}

std::optional<std::string> nearest_name(std::string_view typed,
                                        std::span<const std::string> known) {
  const std::string_view word = without_dashes(typed);
  const std::size_t allowed = edits_allowed(word.size());
  const std::string* best = nullptr;
  std::size_t best_distance = allowed + 1;
  for (const std::string& name : known) {
    const std::size_t distance = edit_distance(word, without_dashes(name));
    if (distance < best_distance) {
      best = &name;
      best_distance = distance;
    }
  }
  if (best != nullptr) return *best;
  // An abbreviation: "--conc" for "--concurrency", "ad" for "add", when it abbreviates one
  // name only.
  if (word.size() < 2) return std::nullopt;
  std::vector<const std::string*> longer;
  for (const std::string& name : known) {
    if (without_dashes(name).starts_with(word)) longer.push_back(&name);
  }
  if (longer.size() == 1) return *longer.front();
  return std::nullopt;
}

}  // namespace readpast::cli
