// Schedules (`readpast schedule add --every/--cron`, Queue::add_schedule): ScheduleSpec::parse
// never throws or crashes, refuses with kInvalidArgument, and what it accepts has
// consistent ticks around a fixed instant t:
//   next_after(t) > t and is itself a tick (latest_at_or_before(next) == next);
//   latest_at_or_before(t) <= t, and no tick lies between it and t (the next tick after it
//   is next_after(t)).
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/schedule_spec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using readpast::detail::ScheduleSpec;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto spec = ScheduleSpec::parse(text);
  if (!spec) {
    if (spec.error().code != readpast::ErrorCode::kInvalidArgument) std::abort();
    return 0;
  }
  // 2026-11-23T10:17:42.5Z: not on a round second, minute or hour.
  const readpast::TimePoint t{std::chrono::milliseconds(1795429062500)};
  const auto next = spec->next_after(t);
  if (next) {
    if (*next <= t) std::abort();
    const auto back = spec->latest_at_or_before(*next);
    if (!back || *back != *next) std::abort();
  }
  const auto latest = spec->latest_at_or_before(t);
  if (latest) {
    if (*latest > t) std::abort();
    const auto after_latest = spec->next_after(*latest);
    if (next && after_latest && *after_latest != *next) std::abort();
  }
  return 0;
}
