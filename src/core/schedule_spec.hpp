// core/schedule_spec.hpp — the tick times of a periodic schedule: "every DUR" or a cron
// expression, in UTC unless the cron expression names a time zone.
//
//   every 30s | @every 1m30s       ticks at every multiple of the duration since the Unix
//                                  epoch (so every host computes the same ticks); >= 10ms
//   M H DOM MON DOW                cron with 5 fields: seconds are 0
//   S M H DOM MON DOW              cron with 6 fields: seconds first
//   @yearly @annually @monthly @weekly @daily @midnight @hourly
//   CRON_TZ=ZONE <cron>            the cron fields read in the IANA zone ZONE (e.g.
//                                  Europe/Berlin), from the system's tzdata through cctz
//
// In a zone, a local time that a daylight-saving change skips (02:30 on a spring-forward
// night) ticks when the gap ends (03:00 local), so that a daily job still runs that day; a
// local time that occurs twice (02:30 on a fall-back night) ticks once, at its first
// occurrence, unless the hour field is '*': then it ticks at both, so that "every 15
// minutes" keeps running every 15 minutes through the repeated hour (as Vixie cron does).
// Each tick is an instant: several local times that map to one instant (every minute of a
// skipped hour, at its end) are one tick.
//
// A cron field is `*`, a value, a range `a-b`, any of those followed by `/step`, or a
// comma-separated list of them. Months may be written jan..dec, days of the week sun..sat
// (0..7, where 0 and 7 are Sunday). As in cron, when both day-of-month and day-of-week
// are restricted, a day matches when either does.
//
// Thread-safety: immutable after parse(); safe to share.
#pragma once

#include <cctz/time_zone.h>

#include <bitset>
#include <optional>
#include <string>
#include <string_view>

#include "readpast/error.hpp"
#include "readpast/time.hpp"

namespace readpast::detail {

class ScheduleSpec {
 public:
  // kInvalidArgument, with a one-line reason, for anything else (including a cron
  // expression that matches no time at all, such as "0 0 31 2 *").
  static Result<ScheduleSpec> parse(std::string_view text);

  // The latest tick at or before t; nullopt when there is none within the 8 years before.
  std::optional<TimePoint> latest_at_or_before(TimePoint t) const;
  // The first tick after t; nullopt when there is none within the 8 years after.
  std::optional<TimePoint> next_after(TimePoint t) const;

  // The zone the cron fields are read in: "UTC" unless the spec names one.
  const std::string& time_zone() const { return zone_name_; }

 private:
  struct Cron {
    std::bitset<60> seconds;
    std::bitset<60> minutes;
    std::bitset<24> hours;
    std::bitset<32> days;     // 1..31
    std::bitset<13> months;   // 1..12
    std::bitset<7> weekdays;  // 0 = Sunday
    bool hours_restricted = false;
    bool days_restricted = false;
    bool weekdays_restricted = false;
  };

  // Does the day (civil, in the zone) match the day-of-month and day-of-week fields?
  bool day_matches(std::chrono::sys_days day) const;
  // The cron search itself, in civil time: the seconds count local wall-clock time as if it
  // were UTC (no zone, no gaps, no repeats).
  std::optional<std::chrono::sys_seconds> civil_at_or_before(std::chrono::sys_seconds s) const;
  std::optional<std::chrono::sys_seconds> civil_at_or_after(std::chrono::sys_seconds s) const;
  // The instants a matching civil time ticks at in zone_ (see the rules above): first and
  // last are the same but for a repeated time when the hour field is '*'.
  struct Ticks {
    TimePoint first;
    TimePoint last;
  };
  Ticks ticks_of(std::chrono::sys_seconds civil) const;
  std::chrono::seconds offset_at(std::chrono::sys_seconds t) const;  // east of UTC

  std::optional<Duration> every_;  // set for "every DUR"; otherwise cron_ is used
  Cron cron_;
  cctz::time_zone zone_ = cctz::utc_time_zone();
  std::string zone_name_ = "UTC";
};

// A spec's zone prefix apart from the rest: {"Europe/Berlin", "0 9 * * *"} for
// "CRON_TZ=Europe/Berlin 0 9 * * *" (the blanks between them dropped); {"", spec} when there
// is none. Not validated.
struct ZoneAndExpression {
  std::string_view zone;
  std::string_view expression;
};
ZoneAndExpression split_time_zone(std::string_view spec);

// The spec that reads `expression` in `zone` (the CLI's --tz): "CRON_TZ=ZONE EXPRESSION".
std::string with_time_zone(std::string_view zone, std::string_view expression);

// The unique key of the job a schedule enqueues for a tick ("schedule:NAME@TIME"): it tells
// where a job came from, and is a second guard against enqueuing one tick twice.
std::string schedule_job_key(std::string_view schedule, TimePoint tick);

}  // namespace readpast::detail
