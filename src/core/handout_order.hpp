// core/handout_order.hpp — the order in which jobs are handed out, the same on every engine:
// priority (smaller first), then run_at (earlier first), then id (older first). An engine's
// lease picks its rows in this order with SQL; a statement that returns them (RETURNING, an
// UPDATE's result) does not promise any order, so the engine sorts what it returns with this.
//
// Thread-safety: pure functions.
#pragma once

#include <algorithm>
#include <span>
#include <tuple>

#include "readpast/job.hpp"

namespace readpast::detail {

inline bool before_in_handout_order(const Job& a, const Job& b) noexcept {
  return std::tie(a.priority, a.run_at, a.id) < std::tie(b.priority, b.run_at, b.id);
}

inline void sort_in_handout_order(std::span<Job> jobs) {
  std::sort(jobs.begin(), jobs.end(), before_in_handout_order);
}

}  // namespace readpast::detail
