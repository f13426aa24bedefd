#include "readpast/time.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>

namespace readpast {
namespace {

// Microseconds per unit, or 0 when the unit is unknown.
double unit_micros(std::string_view unit) {
  if (unit == "us") return 1;
  if (unit == "ms") return 1e3;
  if (unit == "s") return 1e6;
  if (unit == "m") return 60e6;
  if (unit == "h") return 3600e6;
  if (unit == "d") return 86400e6;
  return 0;
}

Error bad_duration(std::string_view text, std::string_view why) {
  std::string shown(text.substr(0, 40));
  return Error::invalid_argument("bad duration '" + shown + "': " + std::string(why) +
                                 " (examples: 500ms, 30s, 1.5s, 1m30s, 2h, 7d)");
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Reads exactly n digits at pos; -1 on failure.
int read_digits(std::string_view s, std::size_t& pos, int n) {
  if (pos + static_cast<std::size_t>(n) > s.size()) return -1;
  int value = 0;
  for (int i = 0; i < n; ++i) {
    char c = s[pos++];
    if (!is_digit(c)) return -1;
    value = value * 10 + (c - '0');
  }
  return value;
}

}  // namespace

Result<Duration> parse_duration(std::string_view text) {
  if (text.empty()) return fail_with(bad_duration(text, "it is empty"));
  double total_micros = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t start = pos;
    bool seen_dot = false;
    while (pos < text.size() && (is_digit(text[pos]) || (text[pos] == '.' && !seen_dot))) {
      seen_dot = seen_dot || text[pos] == '.';
      ++pos;
    }
    const std::string_view number = text.substr(start, pos - start);
    if (number.empty() || number == ".") {
      return fail_with(bad_duration(text, "expected a number"));
    }
    // from_chars, not stod: a number of hundreds of digits must be an error, not an
    // exception (out of range). One that small is zero; one that large is too long.
    double value = 0;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (ec == std::errc::result_out_of_range) {
      if (number.substr(0, number.find('.')).find_first_not_of('0') != std::string_view::npos) {
        return fail_with(bad_duration(text, "too long"));
      }
      value = 0;
    } else if (ec != std::errc() || end != number.data() + number.size()) {
      return fail_with(bad_duration(text, "expected a number"));
    }
    std::size_t unit_start = pos;
    while (pos < text.size() && std::isalpha(static_cast<unsigned char>(text[pos]))) ++pos;
    std::string_view unit = text.substr(unit_start, pos - unit_start);
    if (unit.empty()) return fail_with(bad_duration(text, "a unit is missing"));
    double per_unit = unit_micros(unit);
    if (per_unit == 0) return fail_with(bad_duration(text, "unknown unit"));
    total_micros += value * per_unit;
    if (total_micros > static_cast<double>(kMaxDuration.count()))
      return fail_with(bad_duration(text, "too long"));
  }
  return Duration(static_cast<Duration::rep>(std::llround(total_micros)));
}

std::string format_duration(Duration d) {
  using std::chrono::duration_cast;
  if (d == Duration::zero()) return "0s";
  std::string out;
  if (d < Duration::zero()) {
    out = "-";
    d = -d;
  }
  auto take = [&](Duration unit, const char* name) {
    auto n = d / unit;
    if (n > 0) {
      out += std::to_string(n) + name;
      d -= n * unit;
    }
  };
  take(std::chrono::hours(24), "d");
  take(std::chrono::hours(1), "h");
  take(std::chrono::minutes(1), "m");
  take(std::chrono::seconds(1), "s");
  take(std::chrono::milliseconds(1), "ms");
  take(std::chrono::microseconds(1), "us");
  return out;
}

Result<TimePoint> parse_time(std::string_view text) {
  auto bad = [&] {
    return fail_with(Error::invalid_argument("bad time '" + std::string(text.substr(0, 40)) +
                                             "': expected RFC 3339, e.g. 2026-11-22T10:00:00Z"));
  };
  std::size_t pos = 0;
  int year = read_digits(text, pos, 4);
  if (year < 0 || pos >= text.size() || text[pos++] != '-') return bad();
  int month = read_digits(text, pos, 2);
  if (month < 1 || month > 12 || pos >= text.size() || text[pos++] != '-') return bad();
  int day = read_digits(text, pos, 2);
  if (day < 1 || pos >= text.size() || (text[pos] != 'T' && text[pos] != 't' && text[pos] != ' '))
    return bad();
  ++pos;
  int hour = read_digits(text, pos, 2);
  if (hour < 0 || hour > 23 || pos >= text.size() || text[pos++] != ':') return bad();
  int minute = read_digits(text, pos, 2);
  if (minute < 0 || minute > 59 || pos >= text.size() || text[pos++] != ':') return bad();
  int second = read_digits(text, pos, 2);
  if (second < 0 || second > 60) return bad();  // 60: a leap second, folded into the next
  std::int64_t micros = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    int digits = 0;
    while (pos < text.size() && is_digit(text[pos])) {
      if (digits < 6) micros = micros * 10 + (text[pos] - '0');
      ++digits;
      ++pos;
    }
    if (digits == 0) return bad();
    for (int i = digits; i < 6; ++i) micros *= 10;
  }
  if (pos >= text.size()) return bad();
  std::chrono::minutes offset{0};
  if (text[pos] == 'Z' || text[pos] == 'z') {
    ++pos;
  } else if (text[pos] == '+' || text[pos] == '-') {
    int sign = text[pos++] == '-' ? -1 : 1;
    int oh = read_digits(text, pos, 2);
    if (oh < 0 || oh > 23 || pos >= text.size() || text[pos++] != ':') return bad();
    int om = read_digits(text, pos, 2);
    if (om < 0 || om > 59) return bad();
    offset = std::chrono::minutes(sign * (oh * 60 + om));
  } else {
    return bad();
  }
  if (pos != text.size()) return bad();
  using namespace std::chrono;
  year_month_day ymd{std::chrono::year(year), std::chrono::month(static_cast<unsigned>(month)),
                     std::chrono::day(static_cast<unsigned>(day))};
  if (!ymd.ok()) return bad();
  TimePoint t = time_point_cast<microseconds>(sys_days(ymd)) + hours(hour) + minutes(minute) +
                seconds(second) + microseconds(micros) - offset;
  // An offset can carry 9999-12-31 into the year 10000 (or 0000-01-01 into -1) in UTC,
  // which format_time could not write back as RFC 3339.
  const year_month_day utc{floor<days>(t)};
  if (utc.year() < std::chrono::year(0) || utc.year() > std::chrono::year(9999)) return bad();
  return t;
}

std::string format_time(TimePoint t) {
  using namespace std::chrono;
  auto day_point = floor<days>(t);
  year_month_day ymd{day_point};
  auto since_midnight = t - day_point;
  auto h = duration_cast<hours>(since_midnight);
  auto m = duration_cast<minutes>(since_midnight - h);
  auto s = duration_cast<seconds>(since_midnight - h - m);
  auto us = duration_cast<microseconds>(since_midnight - h - m - s);
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%04d-%02u-%02uT%02d:%02d:%02d.%06lldZ",
                static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                static_cast<unsigned>(ymd.day()), static_cast<int>(h.count()),
                static_cast<int>(m.count()), static_cast<int>(s.count()),
                static_cast<long long>(us.count()));
  return buffer;
}

}  // namespace readpast
