// core/schedule_spec.hpp — the tick times of a periodic schedule: "every DUR" or a cron
// expression, both in UTC.
//
//   every 30s | @every 1m30s       ticks at every multiple of the duration since the Unix
//                                  epoch (so every host computes the same ticks); >= 10ms
//   M H DOM MON DOW                cron with 5 fields: seconds are 0
//   S M H DOM MON DOW              cron with 6 fields: seconds first
//   @yearly @annually @monthly @weekly @daily @midnight @hourly
//
// A cron field is `*`, a value, a range `a-b`, any of those followed by `/step`, or a
// comma-separated list of them. Months may be written jan..dec, days of the week sun..sat
// (0..7, where 0 and 7 are Sunday). As in cron, when both day-of-month and day-of-week
// are restricted, a day matches when either does.
//
// Thread-safety: immutable after parse(); safe to share.
#pragma once

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

 private:
  struct Cron {
    std::bitset<60> seconds;
    std::bitset<60> minutes;
    std::bitset<24> hours;
    std::bitset<32> days;     // 1..31
    std::bitset<13> months;   // 1..12
    std::bitset<7> weekdays;  // 0 = Sunday
    bool days_restricted = false;
    bool weekdays_restricted = false;
  };

  // Does the day (UTC) match the day-of-month and day-of-week fields?
  bool day_matches(std::chrono::sys_days day) const;

  std::optional<Duration> every_;  // set for "every DUR"; otherwise cron_ is used
  Cron cron_;
};

// The unique key of the job a schedule enqueues for a tick ("schedule:NAME@TIME"): it tells
// where a job came from, and is a second guard against enqueuing one tick twice.
std::string schedule_job_key(std::string_view schedule, TimePoint tick);

}  // namespace readpast::detail
