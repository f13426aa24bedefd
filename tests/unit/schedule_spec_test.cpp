#include "core/schedule_spec.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

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

// Europe/Berlin in 2026: CET (+01) springs forward to CEST (+02) on 29 March at 01:00Z
// (02:00 local becomes 03:00); CEST falls back to CET on 25 October at 01:00Z (03:00 local
// becomes 02:00, so 02:00-02:59 local happens twice).
constexpr std::string_view kBerlin = "CRON_TZ=Europe/Berlin ";

std::string berlin(std::string_view cron) {
  return std::string(kBerlin) + std::string(cron);
}

TEST(ScheduleSpec, ATimeZoneReadsTheFieldsInLocalTime) {
  EXPECT_EQ(spec(berlin("0 9 * * *")).time_zone(), "Europe/Berlin");
  EXPECT_EQ(spec("0 9 * * *").time_zone(), "UTC");
  // 09:00 local is 08:00Z in winter and 07:00Z in summer, on either side of the change.
  EXPECT_EQ(next(berlin("0 9 * * *"), "2026-03-27T12:00:00Z"), "2026-03-28T08:00:00.000000Z");
  EXPECT_EQ(next(berlin("0 9 * * *"), "2026-03-28T12:00:00Z"), "2026-03-29T07:00:00.000000Z");
  EXPECT_EQ(latest(berlin("0 9 * * *"), "2026-03-29T06:59:59Z"), "2026-03-28T08:00:00.000000Z");
  EXPECT_EQ(next(berlin("0 9 * * *"), "2026-10-24T12:00:00Z"), "2026-10-25T08:00:00.000000Z");
  EXPECT_EQ(next(berlin("@daily"), "2026-11-22T12:00:00Z"), "2026-11-22T23:00:00.000000Z");
  EXPECT_EQ(next("CRON_TZ=UTC 0 9 * * *", "2026-11-22T12:00:00Z"), "2026-11-23T09:00:00.000000Z");
}

TEST(ScheduleSpec, ALocalTimeSkippedBySpringForwardTicksWhenTheGapEnds) {
  // 02:30 does not exist on 29 March: the daily job runs at 03:00 local (01:00Z), once.
  EXPECT_EQ(next(berlin("30 2 * * *"), "2026-03-28T02:00:00Z"), "2026-03-29T01:00:00.000000Z");
  EXPECT_EQ(next(berlin("30 2 * * *"), "2026-03-29T01:00:00Z"), "2026-03-30T00:30:00.000000Z");
  EXPECT_EQ(latest(berlin("30 2 * * *"), "2026-03-29T05:00:00Z"), "2026-03-29T01:00:00.000000Z");
  // Every 15 minutes: 01:45 local, then 03:00 (02:00-02:45 and 03:00 are one instant), 03:15.
  EXPECT_EQ(next(berlin("*/15 * * * *"), "2026-03-29T00:45:00Z"), "2026-03-29T01:00:00.000000Z");
  EXPECT_EQ(next(berlin("*/15 * * * *"), "2026-03-29T01:00:00Z"), "2026-03-29T01:15:00.000000Z");
  EXPECT_EQ(latest(berlin("*/15 * * * *"), "2026-03-29T01:14:59Z"), "2026-03-29T01:00:00.000000Z");
}

TEST(ScheduleSpec, ALocalTimeRepeatedByFallBackTicksOnceUnlessTheHourIsAStar) {
  // 02:30 local happens at 00:30Z (CEST) and 01:30Z (CET): a fixed hour ticks at the first.
  EXPECT_EQ(next(berlin("30 2 * * *"), "2026-10-24T12:00:00Z"), "2026-10-25T00:30:00.000000Z");
  EXPECT_EQ(next(berlin("30 2 * * *"), "2026-10-25T00:30:00Z"), "2026-10-26T01:30:00.000000Z");
  EXPECT_EQ(latest(berlin("30 2 * * *"), "2026-10-25T01:45:00Z"), "2026-10-25T00:30:00.000000Z")
      << "in the second 02:xx, the civil time 02:30 still came first at 00:30Z";
  EXPECT_EQ(latest(berlin("50 2 * * *"), "2026-10-25T01:05:00Z"), "2026-10-25T00:50:00.000000Z")
      << "02:50 CEST came before 02:05 CET, though its civil time is later";
  // With the hour a star, every 15 minutes keeps its rhythm through both 02:xx hours.
  std::vector<std::string> ticks;
  TimePoint t = at("2026-10-25T00:40:00Z");
  for (int i = 0; i < 7; ++i) {
    auto tick = spec(berlin("*/15 * * * *")).next_after(t);
    ASSERT_TRUE(tick.has_value());
    ticks.push_back(format_time(*tick).substr(11, 5));
    t = *tick;
  }
  EXPECT_EQ(ticks, (std::vector<std::string>{"00:45", "01:00", "01:15", "01:30", "01:45", "02:00",
                                             "02:15"}));
  EXPECT_EQ(latest(berlin("*/15 * * * *"), "2026-10-25T01:20:00Z"), "2026-10-25T01:15:00.000000Z");
  EXPECT_EQ(latest(berlin("*/15 * * * *"), "2026-10-25T00:59:00Z"), "2026-10-25T00:45:00.000000Z");
  // Hourly at :00: 01:00 CEST, 02:00 CEST, 02:00 CET, 03:00 CET, an hour apart each.
  EXPECT_EQ(next(berlin("0 * * * *"), "2026-10-25T00:00:00Z"), "2026-10-25T01:00:00.000000Z");
  EXPECT_EQ(next(berlin("0 * * * *"), "2026-10-25T01:00:00Z"), "2026-10-25T02:00:00.000000Z");
}

TEST(ScheduleSpec, ABadTimeZoneIsRefused) {
  for (std::string_view bad :
       {"CRON_TZ=Mars/Olympus 0 9 * * *", "CRON_TZ= 0 9 * * *",
        "CRON_TZ=../../etc/passwd 0 9 * * *", "CRON_TZ=/usr/share/zoneinfo/UTC 0 9 * * *",
        "CRON_TZ=Europe/Berlin", "CRON_TZ=Europe/Berlin every 1h"}) {
    auto parsed = ScheduleSpec::parse(bad);
    EXPECT_FALSE(parsed.has_value()) << "'" << bad << "' was accepted";
    if (!parsed) {
      EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument);
      EXPECT_EQ(parsed.error().message.find('\n'), std::string::npos);
    }
  }
}

TEST(ScheduleSpec, SplitsAndWritesTheZonePrefix) {
  auto [zone, expression] = split_time_zone("CRON_TZ=Europe/Berlin 0 9 * * *");
  EXPECT_EQ(zone, "Europe/Berlin");
  EXPECT_EQ(expression, "0 9 * * *");
  EXPECT_EQ(split_time_zone("0 9 * * *").zone, "");
  EXPECT_EQ(with_time_zone("Asia/Tokyo", "@daily"), "CRON_TZ=Asia/Tokyo @daily");
}

TEST(ScheduleSpec, JobKeyNamesTheScheduleAndTick) {
  EXPECT_EQ(schedule_job_key("nightly", at("2026-11-22T00:00:00Z")),
            "schedule:nightly@2026-11-22T00:00:00.000000Z");
}

}  // namespace
}  // namespace readpast::detail
