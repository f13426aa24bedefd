// Durations ("500ms", "1m30s") and RFC 3339 times: parsing, formatting, round trips.
#include "readpast/time.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace readpast {
namespace {

using namespace std::chrono_literals;
using std::chrono::days;
using std::chrono::duration_cast;
using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

Duration must_parse(std::string_view text) {
  auto parsed = parse_duration(text);
  EXPECT_TRUE(parsed.has_value()) << "'" << text
                                  << "' was rejected: " << (parsed ? "" : parsed.error().message);
  return parsed.value_or(Duration{-1});
}

TEST(ParseDuration, ReadsEachUnit) {
  EXPECT_EQ(must_parse("500ms"), milliseconds(500));
  EXPECT_EQ(must_parse("30s"), seconds(30));
  EXPECT_EQ(must_parse("5m"), minutes(5));
  EXPECT_EQ(must_parse("2h"), hours(2));
  EXPECT_EQ(must_parse("7d"), days(7));
}

TEST(ParseDuration, ReadsZero) {
  EXPECT_EQ(must_parse("0s"), Duration::zero());
  EXPECT_EQ(must_parse("0ms"), Duration::zero());
}

TEST(ParseDuration, ReadsDecimals) {
  EXPECT_EQ(must_parse("1.5s"), milliseconds(1500));
  EXPECT_EQ(must_parse("0.25s"), milliseconds(250));
  EXPECT_EQ(must_parse("1.5h"), minutes(90));
  EXPECT_EQ(must_parse("2.5ms"), std::chrono::microseconds(2500));
}

TEST(ParseDuration, ReadsCompounds) {
  EXPECT_EQ(must_parse("1m30s"), seconds(90));
  EXPECT_EQ(must_parse("2h5m"), minutes(125));
  EXPECT_EQ(must_parse("1d2h3m4s5ms"), days(1) + hours(2) + minutes(3) + seconds(4) + 5ms);
}

TEST(ParseDuration, AcceptsOneHundredYears) {
  // The documented limit is "beyond 100 years"; 36500 days is within it.
  EXPECT_EQ(must_parse("36500d"), days(36500));
}

TEST(ParseDuration, RejectsMalformedText) {
  for (std::string_view text : {"",    "5",     "s",     "ms",    "-1s",  "-0.5s", "5x",   "5 s",
                                " 5s", "5s ",   ".5.5s", "1e9d",  "1e3s", "5sec",  "1m30", "m30s",
                                "abc", "1s-1s", "0x10s", "1..5s", "nan",  "infs",  "inf"}) {
    auto parsed = parse_duration(text);
    EXPECT_FALSE(parsed.has_value())
        << "'" << text << "' was accepted as " << parsed->count() << "us";
    if (!parsed) {
      EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument) << text;
    }
  }
}

TEST(ParseDuration, RejectsEmbeddedNul) {
  using namespace std::string_view_literals;
  auto parsed = parse_duration("5\0s"sv);
  EXPECT_FALSE(parsed.has_value());
}

TEST(ParseDuration, RejectsValuesBeyondOneHundredYearsAndOverflow) {
  for (std::string_view text :
       {"36600d", "1000000000d", "99999999999999999999s", "9223372036854775807ms",
        "18446744073709551616ms", "9223372036854775807d", "1000000000000000000000000000000h",
        "36499d36499d", "20000000000000000000us"}) {
    auto parsed = parse_duration(text);
    EXPECT_FALSE(parsed.has_value())
        << "'" << text << "' was accepted as " << parsed->count() << "us";
  }
}

// Found by the fuzz_duration target: hundreds of digits made std::stod throw, and the
// command line died with "internal error: stod" (exit 1) instead of a usage error.
TEST(ParseDuration, HundredsOfDigitsAreAnErrorNotAnException) {
  const std::string huge(400, '9');
  for (const std::string& text : {huge + "s", huge + ".5ms", "1" + huge + "d"}) {
    auto parsed = parse_duration(text);
    ASSERT_FALSE(parsed.has_value()) << text;
    EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(parsed.error().message.find("too long"), std::string::npos) << parsed.error().message;
  }
  // So small that it underflows a double: zero.
  EXPECT_EQ(must_parse("0." + std::string(400, '0') + "1s"), Duration::zero());
  // What stod read, from_chars reads the same.
  EXPECT_EQ(must_parse("1.s"), seconds(1));
  EXPECT_EQ(must_parse(".5s"), milliseconds(500));
  EXPECT_EQ(must_parse("007s"), seconds(7));
}

TEST(FormatDuration, WritesTheDocumentedExamples) {
  EXPECT_EQ(format_duration(seconds(90)), "1m30s");
  EXPECT_EQ(format_duration(milliseconds(250)), "250ms");
  EXPECT_EQ(format_duration(Duration::zero()), "0s");
  EXPECT_EQ(format_duration(seconds(30)), "30s");
}

TEST(FormatDuration, IsReadBackByParseDuration) {
  for (Duration d :
       {Duration(milliseconds(1)), Duration(milliseconds(999)), Duration(milliseconds(1500)),
        Duration(seconds(59)), Duration(minutes(1)), Duration(minutes(61)), Duration(hours(25)),
        Duration(days(7)), Duration(days(36500)),
        Duration(days(3) + hours(4) + minutes(5) + seconds(6) + 7ms)}) {
    std::string text = format_duration(d);
    auto back = parse_duration(text);
    ASSERT_TRUE(back.has_value()) << d.count() << "us formatted as unreadable '" << text << "'";
    EXPECT_EQ(*back, d) << "'" << text << "'";
  }
}

// 2026-11-22T10:00:00Z
TimePoint nov22_10h() {
  using namespace std::chrono;
  return TimePoint(sys_days(year(2026) / November / 22) + hours(10));
}

TimePoint must_parse_time(std::string_view text) {
  auto parsed = parse_time(text);
  EXPECT_TRUE(parsed.has_value()) << "'" << text
                                  << "' was rejected: " << (parsed ? "" : parsed.error().message);
  return parsed.value_or(TimePoint{});
}

TEST(ParseTime, ReadsUtcWithZ) {
  EXPECT_EQ(must_parse_time("2026-11-22T10:00:00Z"), nov22_10h());
  EXPECT_EQ(must_parse_time("1970-01-01T00:00:00Z"), TimePoint{});
}

TEST(ParseTime, ReadsOffsets) {
  EXPECT_EQ(must_parse_time("2026-11-22T11:00:00+01:00"), nov22_10h());
  EXPECT_EQ(must_parse_time("2026-11-22T04:30:00-05:30"), nov22_10h());
  EXPECT_EQ(must_parse_time("2026-11-22T10:00:00+00:00"), nov22_10h());
  // An offset that moves the date across midnight.
  EXPECT_EQ(must_parse_time("2026-11-23T00:30:00+14:30"), nov22_10h());
}

TEST(ParseTime, ReadsFractions) {
  EXPECT_EQ(must_parse_time("2026-11-22T10:00:00.250Z"), nov22_10h() + 250ms);
  EXPECT_EQ(must_parse_time("2026-11-22T10:00:00.5Z"), nov22_10h() + 500ms);
  EXPECT_EQ(must_parse_time("2026-11-22T10:00:00.000001Z"), nov22_10h() + 1us);
  EXPECT_EQ(must_parse_time("2026-11-22T11:00:00.250+01:00"), nov22_10h() + 250ms);
}

TEST(ParseTime, RejectsGarbage) {
  for (std::string_view text : {"",
                                "garbage",
                                "2026-11-22",
                                "10:00:00Z",
                                "2026-11-22T10:00:00",  // no offset
                                "2026-11-22 10:00:00Z x",
                                "2026-13-01T00:00:00Z",
                                "2026-11-31T00:00:00Z",
                                "2026-02-30T00:00:00Z",
                                "2026-11-22T25:00:00Z",
                                "2026-11-22T10:60:00Z",
                                "2026-11-22T10:00:00+25:00",
                                "2026-11-22T10:00:00ZZ",
                                "2026-11-22T10:00:00Z ",
                                " 2026-11-22T10:00:00Z",
                                "2026-11-22T10:00Z",
                                "26-11-22T10:00:00Z",
                                "2026-11-22T10:00:00.Z",
                                "2026-11-22T10:00:00+0100",
                                "tomorrow",
                                "1s"}) {
    auto parsed = parse_time(text);
    EXPECT_FALSE(parsed.has_value()) << "'" << text << "' was accepted as " << format_time(*parsed);
    if (!parsed) {
      EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument) << text;
    }
  }
}

// Found by the fuzz_time target: an offset carried the time out of the years RFC 3339 can
// write, so format_time produced "10000-01-01T..." that parse_time could not read back.
TEST(ParseTime, RejectsTimesOutsideYearsZeroToNineThousandNineHundredNinetyNineInUtc) {
  for (std::string_view text : {"9999-12-31T23:59:59.999999-23:59", "0000-01-01T00:00:00+00:01"}) {
    auto parsed = parse_time(text);
    EXPECT_FALSE(parsed.has_value()) << "'" << text << "' was accepted as " << format_time(*parsed);
  }
  for (std::string_view text : {"9999-12-31T23:59:59.999999Z", "0000-01-01T00:00:00Z",
                                "0000-01-01T00:00:00-01:00", "9999-12-31T10:00:00+01:00"}) {
    auto parsed = parse_time(text);
    ASSERT_TRUE(parsed.has_value()) << text;
    auto back = parse_time(format_time(*parsed));
    ASSERT_TRUE(back.has_value()) << format_time(*parsed);
    EXPECT_EQ(*back, *parsed);
  }
}

TEST(FormatTime, WritesUtcWithMicroseconds) {
  EXPECT_EQ(format_time(nov22_10h() + 250ms), "2026-11-22T10:00:00.250000Z");
  EXPECT_EQ(format_time(nov22_10h()), "2026-11-22T10:00:00.000000Z");
  EXPECT_EQ(format_time(TimePoint{}), "1970-01-01T00:00:00.000000Z");
}

TEST(FormatTime, IsReadBackByParseTime) {
  auto now = std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
  for (TimePoint t : {now, nov22_10h() + 123456us, TimePoint{}, nov22_10h() - days(20000)}) {
    auto text = format_time(t);
    auto back = parse_time(text);
    ASSERT_TRUE(back.has_value()) << "'" << text << "' unreadable";
    EXPECT_EQ(*back, t) << text;
  }
}

}  // namespace
}  // namespace readpast
