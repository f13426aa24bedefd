// core/limits.hpp — the arithmetic of global limits (docs/workflows.md "Global limits"),
// the same on every engine: how many jobs a lease may take under a queue's limits, and which
// limit cut it short. Engines read the numbers under their lock and run the SQL.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "readpast/options.hpp"

namespace readpast::detail {

enum class LimitKind : std::uint8_t { kRunning, kRate };
inline constexpr std::size_t kLimitKindCount = 2;
const char* limit_kind_name(LimitKind kind) noexcept;  // "running", "rate"

// How many jobs a lease of max_jobs may take, and the limit that makes it fewer.
struct Allowance {
  std::int64_t jobs = 0;
  std::optional<LimitKind> binding;  // set when a limit allows fewer than max_jobs
};

// running: jobs of the queue running now, counted up to the running limit (the count never
// needs to go further). free_rate_slots: how many of the rate's slots hold a lease older
// than the window (docs/schema.md, readpast_rate_slots), counted up to max_jobs. A limit
// the queue does not have is passed as nullopt. When both limits cut, the smaller wins; on
// a tie, running.
Allowance lease_allowance(const QueueLimits& limits, std::int64_t max_jobs,
                          std::optional<std::int64_t> running,
                          std::optional<std::int64_t> free_rate_slots);

// The times of a rate's slots after the rate changed from old_times.size() slots to
// `count`: the newest min(old, count) lease times are kept (so a rate changed while leases
// go on still counts them), the rest are empty (0: a lease long before any window).
std::vector<std::int64_t> resized_rate_slots(std::vector<std::int64_t> old_times,
                                             std::int64_t count);

}  // namespace readpast::detail
