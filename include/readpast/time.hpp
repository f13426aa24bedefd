// readpast/time.hpp — the duration and time-point types of the public API.
//
// Thread-safety: free functions without shared state; safe from any thread.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "readpast/error.hpp"

namespace readpast {

// Microsecond resolution: what both engines store.
using Duration = std::chrono::microseconds;
using TimePoint = std::chrono::sys_time<std::chrono::microseconds>;

// The longest duration readpast accepts anywhere (delays, leases, backoff, retention):
// 100 years. Longer ones are kInvalidArgument, so that now + d can never overflow.
inline constexpr Duration kMaxDuration = std::chrono::hours(24 * 365 * 100);

// Parses "500ms", "30s", "5m", "2h", "7d", decimals ("1.5s") and compounds ("1m30s").
// Negative values and values beyond 100 years are rejected.
Result<Duration> parse_duration(std::string_view text);

// Formats a duration the way parse_duration reads it, e.g. "1m30s", "250ms", "0s".
std::string format_duration(Duration d);

// Parses an RFC 3339 time ("2026-11-22T10:00:00Z", "2026-11-22T10:00:00.250+01:00").
Result<TimePoint> parse_time(std::string_view text);

// Formats as RFC 3339 in UTC with microseconds, e.g. "2026-11-22T10:00:00.250000Z".
std::string format_time(TimePoint t);

}  // namespace readpast
