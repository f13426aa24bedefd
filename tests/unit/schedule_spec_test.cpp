#include "core/schedule_spec.hpp"

#include <gtest/gtest.h>

namespace readpast::detail {
namespace {

TimePoint at(std::string_view rfc3339) {
  auto t = parse_time(rfc3339);
  EXPECT_TRUE(t.has_value()) << rfc3339;
  return t.value_or(TimePoint{});
}

ScheduleSpec spec(std::string_view text) {
  auto parsed = ScheduleSpec::parse(text);
  EXPECT_TRUE(parsed.has_value()) << text << ": " << (parsed ? "" : parsed.error().message);
  return *parsed;
}

std::string latest(std::string_view text, std::string_view t) {
  auto tick = spec(text).latest_at_or_before(at(t));
  return tick ? format_time(*tick) : "none";
}

std::string next(std::string_view text, std::string_view t) {
  auto tick = spec(text).next_after(at(t));
  return tick ? format_time(*tick) : "none";
}

TEST(ScheduleSpec, EveryTicksAtMultiplesSinceTheEpoch) {
  EXPECT_EQ(latest("every 30s", "2026-11-22T10:00:45Z"), "2026-11-22T10:00:30.000000Z");
  EXPECT_EQ(latest("@every 1m30s", "2026-11-22T10:00:45Z"), "2026-11-22T10:00:00.000000Z");
  EXPECT_EQ(latest("every 250ms", "2026-11-22T10:00:00.600Z"), "2026-11-22T10:00:00.500000Z");
  EXPECT_EQ(next("every 30s", "2026-11-22T10:00:30Z"), "2026-11-22T10:01:00.000000Z");
  EXPECT_EQ(latest("every 1h", "2026-11-22T10:00:00Z"), "2026-11-22T10:00:00.000000Z")
      << "a tick exactly at t counts";
}

TEST(ScheduleSpec, FiveFieldCronTicksOnWholeMinutes) {
  EXPECT_EQ(latest("*/15 * * * *", "2026-11-22T10:44:59Z"), "2026-11-22T10:30:00.000000Z");
  EXPECT_EQ(next("*/15 * * * *", "2026-11-22T10:44:59Z"), "2026-11-22T10:45:00.000000Z");
  EXPECT_EQ(latest("0 9 * * *", "2026-11-22T08:00:00Z"), "2026-11-21T09:00:00.000000Z");
  EXPECT_EQ(next("0 9 * * *", "2026-11-22T09:00:00Z"), "2026-11-23T09:00:00.000000Z");
  EXPECT_EQ(latest("30 2 1 * *", "2026-11-22T00:00:00Z"), "2026-11-01T02:30:00.000000Z");
  EXPECT_EQ(next("5 4 * * *", "2026-12-31T23:59:59Z"), "2027-01-01T04:05:00.000000Z");
}

TEST(ScheduleSpec, SixFieldCronHasSecondsFirst) {
  EXPECT_EQ(latest("*/10 * * * * *", "2026-11-22T10:00:25.5Z"), "2026-11-22T10:00:20.000000Z");
  EXPECT_EQ(next("0 30 9 * * mon-fri", "2026-11-21T12:00:00Z"), "2026-11-23T09:30:00.000000Z")
      << "2026-11-21 is a Saturday";
  EXPECT_EQ(latest("15,45 0 12 * * *", "2026-11-22T12:00:30Z"), "2026-11-22T12:00:15.000000Z");
}

TEST(ScheduleSpec, NamesRangesStepsAndLists) {
  EXPECT_EQ(next("0 0 1 jan,jul *", "2026-11-22T00:00:00Z"), "2027-01-01T00:00:00.000000Z");
  EXPECT_EQ(next("0 0 * * SUN", "2026-11-22T00:00:00Z"), "2026-11-29T00:00:00.000000Z");
  EXPECT_EQ(next("0 0 * * 7", "2026-11-22T00:00:00Z"), "2026-11-29T00:00:00.000000Z")
      << "7 is Sunday too";
  EXPECT_EQ(next("0 8-10/2 * * *", "2026-11-22T08:00:00Z"), "2026-11-22T10:00:00.000000Z");
  EXPECT_EQ(next("10/20 * * * *", "2026-11-22T08:31:00Z"), "2026-11-22T08:50:00.000000Z");
}

TEST(ScheduleSpec, DayOfMonthOrDayOfWeekWhenBothAreRestricted) {
  // The 13th, or any Friday: 2026-11-27 is a Friday, before December 13.
  EXPECT_EQ(next("0 0 13 * fri", "2026-11-22T00:00:00Z"), "2026-11-27T00:00:00.000000Z");
  // Only the day of month restricted: Fridays do not count.
  EXPECT_EQ(next("0 0 13 * *", "2026-11-22T00:00:00Z"), "2026-12-13T00:00:00.000000Z");
}

TEST(ScheduleSpec, LeapDaysAndMonthEnds) {
  EXPECT_EQ(next("0 0 29 2 *", "2026-11-22T00:00:00Z"), "2028-02-29T00:00:00.000000Z");
  EXPECT_EQ(latest("0 0 29 2 *", "2026-11-22T00:00:00Z"), "2024-02-29T00:00:00.000000Z");
  EXPECT_EQ(next("0 0 31 * *", "2026-11-22T00:00:00Z"), "2026-12-31T00:00:00.000000Z");
  EXPECT_EQ(latest("0 0 31 * *", "2026-11-22T00:00:00Z"), "2026-10-31T00:00:00.000000Z");
}

TEST(ScheduleSpec, Macros) {
  EXPECT_EQ(next("@hourly", "2026-11-22T10:00:00Z"), "2026-11-22T11:00:00.000000Z");
  EXPECT_EQ(next("@daily", "2026-11-22T10:00:00Z"), "2026-11-23T00:00:00.000000Z");
  EXPECT_EQ(next("@weekly", "2026-11-22T10:00:00Z"), "2026-11-29T00:00:00.000000Z");
  EXPECT_EQ(next("@monthly", "2026-11-22T10:00:00Z"), "2026-12-01T00:00:00.000000Z");
  EXPECT_EQ(next("@yearly", "2026-11-22T10:00:00Z"), "2027-01-01T00:00:00.000000Z");
}

TEST(ScheduleSpec, RejectsWhatIsNotASchedule) {
  for (std::string_view bad : {"",
                               "   ",
                               "* * * *",
                               "* * * * * * *",
                               "60 * * * *",
                               "* 24 * * *",
                               "* * 0 * *",
                               "* * 32 * *",
                               "* * * 13 *",
                               "* * * * 8",
                               "*/0 * * * *",
                               "5-1 * * * *",
                               "a * * * *",
                               ",* * * * *",
                               "0 0 30 2 *",
                               "0 0 31 4,6,9,11 *",
                               "every",
                               "every 5",
                               "every 0s",
                               "every 5ms",
                               "every 1s 2s",
                               "@sometimes",
                               "@daily extra",
                               "1,,2 * * * *"}) {
    auto parsed = ScheduleSpec::parse(bad);
    EXPECT_FALSE(parsed.has_value()) << "'" << bad << "' was accepted";
    if (!parsed) {
      EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument);
      EXPECT_EQ(parsed.error().message.find('\n'), std::string::npos);
    }
  }
  EXPECT_FALSE(ScheduleSpec::parse(std::string(1000, '*')).has_value());
}

TEST(ScheduleSpec, JobKeyNamesTheScheduleAndTick) {
  EXPECT_EQ(schedule_job_key("nightly", at("2026-11-22T00:00:00Z")),
            "schedule:nightly@2026-11-22T00:00:00.000000Z");
}

}  // namespace
}  // namespace readpast::detail
