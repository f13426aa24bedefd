#include "core/schedule_spec.hpp"

#include <array>
#include <charconv>
#include <chrono>
#include <vector>

namespace readpast::detail {
namespace {

using std::chrono::days;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;
using std::chrono::sys_days;
using std::chrono::sys_seconds;

constexpr auto kMinInterval = std::chrono::milliseconds(10);
// How far latest_at_or_before and next_after look: past the longest gap a satisfiable cron
// expression can have (Feb 29 on a given weekday recurs within 28 years, but with the
// day-of-month OR day-of-week rule every restricted pair matches within months).
constexpr auto kSearchSpan = days(366 * 8);
// A bound on the steps of one search, whatever the expression. A search visits each day of
// its span at most once and finishes within a few steps on the first day that matches, so
// this is never reached; it only guarantees that no input can make a search run long.
constexpr int kMaxSteps = 20000;
// How far a daylight-saving (or other) change of a zone's offset may move its civil time
// (real ones: 30 minutes to 2 hours).
constexpr auto kZoneSlack = hours(3);
// A bound on the matching civil times one search of a zone looks at: near a change, those
// of the hours the change moves; elsewhere one or two.
constexpr int kMaxZoneMatches = 4 * 3600 + 16;
constexpr std::size_t kMaxZoneName = 64;

// An IANA zone name as tzdata spells them ("Europe/Berlin", "America/Argentina/Buenos_Aires",
// "Etc/GMT+5", "UTC"): names only, never a path ("..", a leading '/').
bool plausible_zone_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxZoneName) return false;
  bool part_start = true;
  for (char c : name) {
    const bool letter = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
    const bool digit = c >= '0' && c <= '9';
    if (c == '/') {
      if (part_start) return false;
      part_start = true;
      continue;
    }
    if (part_start && !letter) return false;
    if (!letter && !digit && c != '_' && c != '-' && c != '+') return false;
    part_start = false;
  }
  return !part_start;
}

Error bad(std::string_view text, std::string_view why) {
  std::string shown;
  for (char c : text.substr(0, 80)) shown += (c >= 0x20 && c < 0x7f) ? c : '?';
  return Error::invalid_argument("invalid schedule '" + shown + "': " + std::string(why));
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    auto at = text.find(separator, start);
    parts.push_back(text.substr(start, at == std::string_view::npos ? at : at - start));
    if (at == std::string_view::npos) return parts;
    start = at + 1;
  }
}

std::vector<std::string_view> words(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    std::size_t start = i;
    while (i < text.size() && text[i] != ' ' && text[i] != '\t') ++i;
    if (i > start) out.push_back(text.substr(start, i - start));
  }
  return out;
}

char lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

// One cron field: its range and the names it accepts (index + name_base = value).
struct FieldRule {
  std::string_view name;
  int min = 0;
  int max = 0;
  const std::array<std::string_view, 12>* names = nullptr;
  int name_base = 0;
};

constexpr std::array<std::string_view, 12> kMonthNames = {"jan", "feb", "mar", "apr", "may", "jun",
                                                          "jul", "aug", "sep", "oct", "nov", "dec"};
constexpr std::array<std::string_view, 12> kDayNames = {"sun", "mon", "tue", "wed",
                                                        "thu", "fri", "sat"};

std::optional<int> parse_value(std::string_view text, const FieldRule& rule) {
  if (rule.names != nullptr && text.size() == 3) {
    for (std::size_t i = 0; i < rule.names->size(); ++i) {
      const auto& name = (*rule.names)[i];
      if (name.empty()) continue;
      if (lower(text[0]) == name[0] && lower(text[1]) == name[1] && lower(text[2]) == name[2]) {
        return static_cast<int>(i) + rule.name_base;
      }
    }
  }
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// Parses one field into the bits [min, max] it selects. `restricted` tells whether it was
// anything but a bare `*` (the day-of-month / day-of-week rule needs to know).
template <std::size_t N>
Status parse_field(std::string_view spec, std::string_view field, const FieldRule& rule,
                   std::bitset<N>& bits, bool* restricted) {
  if (restricted != nullptr) *restricted = field != "*";
  auto problem = [&](std::string_view why) {
    return fail_with(bad(spec, std::string(rule.name) + " field '" +
                                   std::string(field.substr(0, 20)) + "': " + std::string(why)));
  };
  for (std::string_view item : split(field, ',')) {
    if (item.empty()) return problem("an empty list item");
    int step = 1;
    if (auto slash = item.find('/'); slash != std::string_view::npos) {
      auto parsed = parse_value(item.substr(slash + 1), FieldRule{rule.name, 1, 1 << 20});
      if (!parsed || *parsed < 1) return problem("the step must be a whole number of at least 1");
      step = *parsed;
      item = item.substr(0, slash);
    }
    int first = rule.min;
    int last = rule.max;
    if (item != "*") {
      auto dash = item.find('-');
      auto low = parse_value(item.substr(0, dash), rule);
      if (!low) return problem("not a number or name");
      first = *low;
      if (dash != std::string_view::npos) {
        auto high = parse_value(item.substr(dash + 1), rule);
        if (!high) return problem("not a number or name");
        last = *high;
      } else if (step == 1) {
        last = first;  // a single value; "a/n" runs from a to the end
      }
    }
    if (first < rule.min || last > rule.max || first > last) {
      return problem("out of range " + std::to_string(rule.min) + "-" + std::to_string(rule.max));
    }
    for (int v = first; v <= last; v += step) bits.set(static_cast<std::size_t>(v));
  }
  return {};
}

struct Civil {
  sys_days day;
  std::chrono::year_month_day ymd;
  int hour = 0;
  int minute = 0;
  int second = 0;
};

Civil civil(sys_seconds t) {
  Civil c;
  c.day = std::chrono::floor<days>(t);
  c.ymd = std::chrono::year_month_day(c.day);
  auto rest = t - c.day;
  c.hour = static_cast<int>(std::chrono::duration_cast<hours>(rest).count());
  c.minute = static_cast<int>(std::chrono::duration_cast<minutes>(rest % hours(1)).count());
  c.second = static_cast<int>((rest % minutes(1)).count());
  return c;
}

cctz::civil_second to_civil_second(sys_seconds s) {
  const Civil c = civil(s);
  return cctz::civil_second(static_cast<int>(c.ymd.year()), static_cast<unsigned>(c.ymd.month()),
                            static_cast<unsigned>(c.ymd.day()), c.hour, c.minute, c.second);
}

sys_days month_start(std::chrono::year_month_day ymd) {
  return sys_days(ymd.year() / ymd.month() / 1);
}

// The highest set bit at or below `from`, or -1.
template <std::size_t N>
int highest_at_or_below(const std::bitset<N>& bits, int from) {
  for (int v = from; v >= 0; --v) {
    if (bits.test(static_cast<std::size_t>(v))) return v;
  }
  return -1;
}

// The lowest set bit at or above `from`, or -1.
template <std::size_t N>
int lowest_at_or_above(const std::bitset<N>& bits, int from) {
  for (int v = from; v < static_cast<int>(N); ++v) {
    if (bits.test(static_cast<std::size_t>(v))) return v;
  }
  return -1;
}

}  // namespace

Result<ScheduleSpec> ScheduleSpec::parse(std::string_view text) {
  if (text.size() > 200) return fail_with(bad(text, "longer than 200 characters"));
  const auto [zone, expression] = split_time_zone(text);
  auto parts = words(expression);
  if (parts.empty() && zone.empty()) return fail_with(bad(text, "it is empty"));
  ScheduleSpec spec;
  if (!zone.empty() || expression.size() != text.size()) {
    if (!plausible_zone_name(zone)) {
      return fail_with(bad(text, "CRON_TZ= needs an IANA time zone name, e.g. Europe/Berlin"));
    }
    if (!cctz::load_time_zone(std::string(zone), &spec.zone_)) {
      return fail_with(bad(text, "unknown time zone '" + std::string(zone) +
                                     "' (an IANA name such as Europe/Berlin)"));
    }
    spec.zone_name_ = std::string(zone);
    if (parts.empty()) return fail_with(bad(text, "CRON_TZ=ZONE comes before a cron expression"));
    if (parts[0] == "every" || parts[0] == "@every") {
      return fail_with(bad(text, "a time zone applies to cron expressions, not to 'every'"));
    }
  }
  if (parts[0] == "every" || parts[0] == "@every") {
    if (parts.size() != 2) return fail_with(bad(text, "write 'every DURATION', e.g. 'every 30s'"));
    auto every = parse_duration(parts[1]);
    if (!every) return fail_with(bad(text, every.error().message));
    if (*every < kMinInterval) return fail_with(bad(text, "the interval must be at least 10ms"));
    spec.every_ = *every;
    return spec;
  }
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 7> kMacros = {{
      {"@yearly", "0 0 0 1 1 *"},
      {"@annually", "0 0 0 1 1 *"},
      {"@monthly", "0 0 0 1 * *"},
      {"@weekly", "0 0 0 * * 0"},
      {"@daily", "0 0 0 * * *"},
      {"@midnight", "0 0 0 * * *"},
      {"@hourly", "0 0 * * * *"},
  }};
  if (parts[0].starts_with('@')) {
    if (parts.size() != 1) return fail_with(bad(text, "a macro such as @daily stands alone"));
    for (const auto& [macro, expansion] : kMacros) {
      if (parts[0] == macro) {
        auto expanded = parse(expansion);
        if (!expanded) return expanded;
        expanded->zone_ = spec.zone_;
        expanded->zone_name_ = spec.zone_name_;
        return expanded;
      }
    }
    return fail_with(bad(text, "unknown macro (@yearly, @monthly, @weekly, @daily, @hourly)"));
  }
  if (parts.size() != 5 && parts.size() != 6) {
    return fail_with(bad(text,
                         "a cron expression has 5 fields (minute hour day month weekday) or 6 "
                         "(seconds first), or write 'every DURATION'"));
  }
  std::size_t i = 0;
  Cron& cron = spec.cron_;
  if (parts.size() == 6) {
    if (auto ok = parse_field(text, parts[i++], FieldRule{"seconds", 0, 59}, cron.seconds, nullptr);
        !ok) {
      return fail_with(ok.error());
    }
  } else {
    cron.seconds.set(0);
  }
  if (auto ok = parse_field(text, parts[i++], FieldRule{"minute", 0, 59}, cron.minutes, nullptr);
      !ok) {
    return fail_with(ok.error());
  }
  if (auto ok = parse_field(text, parts[i++], FieldRule{"hour", 0, 23}, cron.hours,
                            &cron.hours_restricted);
      !ok) {
    return fail_with(ok.error());
  }
  if (auto ok = parse_field(text, parts[i++], FieldRule{"day-of-month", 1, 31}, cron.days,
                            &cron.days_restricted);
      !ok) {
    return fail_with(ok.error());
  }
  if (auto ok = parse_field(text, parts[i++], FieldRule{"month", 1, 12, &kMonthNames, 1},
                            cron.months, nullptr);
      !ok) {
    return fail_with(ok.error());
  }
  std::bitset<8> weekdays;  // 0..7; 7 is Sunday too
  if (auto ok = parse_field(text, parts[i++], FieldRule{"day-of-week", 0, 7, &kDayNames, 0},
                            weekdays, &cron.weekdays_restricted);
      !ok) {
    return fail_with(ok.error());
  }
  for (std::size_t d = 0; d < 7; ++d) cron.weekdays[d] = weekdays[d];
  if (weekdays[7]) cron.weekdays.set(0);
  // A day-of-month that no allowed month has (e.g. 31 in February only) never matches.
  const TimePoint probe = std::chrono::floor<days>(std::chrono::system_clock::now());
  if (!spec.next_after(probe)) return fail_with(bad(text, "it matches no time at all"));
  return spec;
}

bool ScheduleSpec::day_matches(sys_days day) const {
  const std::chrono::year_month_day ymd(day);
  const bool dom = cron_.days.test(static_cast<unsigned>(ymd.day()));
  const bool dow = cron_.weekdays.test(std::chrono::weekday(day).c_encoding());
  if (cron_.days_restricted && cron_.weekdays_restricted) return dom || dow;
  return dom && dow;  // an unrestricted field has every bit set
}

std::optional<TimePoint> ScheduleSpec::latest_at_or_before(TimePoint t) const {
  if (every_) {
    const auto n = t.time_since_epoch().count();
    const auto step = every_->count();
    auto ticks = n / step;
    if (n % step != 0 && n < 0) --ticks;  // floor for times before the epoch
    return TimePoint(Duration(ticks * step));
  }
  // Back through the matching civil times, from the latest one whose tick could be at or
  // before t: after a fall-back, t's civil time in the offset before the change (the civil
  // times past t's own came earlier). Ticks fall as the civil times do, so the first tick
  // found at or before t is the answer once a civil time's latest tick is not after it.
  const sys_seconds second = std::chrono::floor<seconds>(t);
  sys_seconds from = second + std::max(offset_at(second), offset_at(second - kZoneSlack));
  std::optional<TimePoint> best;
  for (int found = 0; found < kMaxZoneMatches; ++found) {
    auto civil_match = civil_at_or_before(from);
    if (!civil_match) break;
    const Ticks ticks = ticks_of(*civil_match);
    for (const TimePoint at : {ticks.last, ticks.first}) {
      if (at <= t && (!best || at > *best)) best = at;
    }
    if (best && ticks.last <= *best) break;
    from = *civil_match - seconds(1);
  }
  return best;
}

std::optional<TimePoint> ScheduleSpec::next_after(TimePoint t) const {
  if (every_) {
    auto latest = latest_at_or_before(t);
    return *latest + *every_;
  }
  // Forward through the matching civil times, from the earliest one whose tick could be after
  // t: after a fall-back, t's civil time in the offset after the change (the repeated civil
  // times tick again when the hour field is '*').
  const sys_seconds second = std::chrono::floor<seconds>(t);
  sys_seconds from = second + std::min(offset_at(second), offset_at(second + kZoneSlack));
  std::optional<TimePoint> best;
  for (int found = 0; found < kMaxZoneMatches; ++found) {
    auto civil_match = civil_at_or_after(from);
    if (!civil_match) break;
    const Ticks ticks = ticks_of(*civil_match);
    for (const TimePoint at : {ticks.first, ticks.last}) {
      if (at > t && (!best || at < *best)) best = at;
    }
    if (best && ticks.first >= *best) break;
    from = *civil_match + seconds(1);
  }
  return best;
}

std::optional<sys_seconds> ScheduleSpec::civil_at_or_before(sys_seconds s) const {
  const sys_seconds stop = s - kSearchSpan;
  // Every step below moves s back by at least a second, most by a whole unit.
  for (int steps = 0; s >= stop && steps < kMaxSteps; ++steps) {
    const Civil c = civil(s);
    if (!cron_.months.test(static_cast<unsigned>(c.ymd.month()))) {
      s = sys_seconds(month_start(c.ymd)) - seconds(1);  // last second of the month before
      continue;
    }
    if (!day_matches(c.day)) {
      s = sys_seconds(c.day) - seconds(1);
      continue;
    }
    const int hour = highest_at_or_below(cron_.hours, c.hour);
    if (hour < 0) {
      s = sys_seconds(c.day) - seconds(1);
      continue;
    }
    if (hour < c.hour) {
      s = sys_seconds(c.day) + hours(hour) + minutes(59) + seconds(59);
      continue;
    }
    const int minute = highest_at_or_below(cron_.minutes, c.minute);
    if (minute < 0) {
      s = sys_seconds(c.day) + hours(c.hour) - seconds(1);
      continue;
    }
    if (minute < c.minute) {
      s = sys_seconds(c.day) + hours(c.hour) + minutes(minute) + seconds(59);
      continue;
    }
    const int second = highest_at_or_below(cron_.seconds, c.second);
    if (second < 0) {
      s = sys_seconds(c.day) + hours(c.hour) + minutes(c.minute) - seconds(1);
      continue;
    }
    return sys_seconds(c.day) + hours(c.hour) + minutes(c.minute) + seconds(second);
  }
  return std::nullopt;
}

std::optional<sys_seconds> ScheduleSpec::civil_at_or_after(sys_seconds s) const {
  const sys_seconds stop = s + kSearchSpan;
  // Every step below moves s on by at least a second, most to the start of a whole unit.
  for (int steps = 0; s <= stop && steps < kMaxSteps; ++steps) {
    const Civil c = civil(s);
    if (!cron_.months.test(static_cast<unsigned>(c.ymd.month()))) {
      // Calendar arithmetic: std::chrono::months is an average month as a duration.
      const auto next_month =
          std::chrono::year_month(c.ymd.year(), c.ymd.month()) + std::chrono::months(1);
      s = sys_seconds(sys_days(next_month / 1));
      continue;
    }
    if (!day_matches(c.day)) {
      s = sys_seconds(c.day + days(1));
      continue;
    }
    const int hour = lowest_at_or_above(cron_.hours, c.hour);
    if (hour < 0) {
      s = sys_seconds(c.day + days(1));
      continue;
    }
    if (hour > c.hour) {
      s = sys_seconds(c.day) + hours(hour);
      continue;
    }
    const int minute = lowest_at_or_above(cron_.minutes, c.minute);
    if (minute < 0) {
      s = sys_seconds(c.day) + hours(c.hour + 1);
      continue;
    }
    if (minute > c.minute) {
      s = sys_seconds(c.day) + hours(c.hour) + minutes(minute);
      continue;
    }
    const int second = lowest_at_or_above(cron_.seconds, c.second);
    if (second < 0) {
      s = sys_seconds(c.day) + hours(c.hour) + minutes(c.minute + 1);
      continue;
    }
    return sys_seconds(c.day) + hours(c.hour) + minutes(c.minute) + seconds(second);
  }
  return std::nullopt;
}

ScheduleSpec::Ticks ScheduleSpec::ticks_of(sys_seconds civil_time) const {
  using Lookup = cctz::time_zone::civil_lookup;
  const Lookup found = zone_.lookup(to_civil_second(civil_time));
  auto instant = [](auto at) { return std::chrono::time_point_cast<Duration>(at); };
  switch (found.kind) {
    case Lookup::SKIPPED:
      return {instant(found.trans), instant(found.trans)};
    case Lookup::REPEATED:
      if (!cron_.hours_restricted) return {instant(found.pre), instant(found.post)};
      return {instant(found.pre), instant(found.pre)};
    case Lookup::UNIQUE:
      break;
  }
  return {instant(found.pre), instant(found.pre)};
}

seconds ScheduleSpec::offset_at(sys_seconds t) const {
  return seconds(zone_.lookup(t).offset);
}

ZoneAndExpression split_time_zone(std::string_view spec) {
  constexpr std::string_view kPrefix = "CRON_TZ=";
  std::size_t start = spec.find_first_not_of(" \t");
  if (start == std::string_view::npos || spec.substr(start, kPrefix.size()) != kPrefix) {
    return {{}, spec};
  }
  start += kPrefix.size();
  const std::size_t end = std::min(spec.find_first_of(" \t", start), spec.size());
  const std::size_t rest = std::min(spec.find_first_not_of(" \t", end), spec.size());
  return {spec.substr(start, end - start), spec.substr(rest)};
}

std::string with_time_zone(std::string_view zone, std::string_view expression) {
  return "CRON_TZ=" + std::string(zone) + " " + std::string(expression);
}

std::string schedule_job_key(std::string_view schedule, TimePoint tick) {
  return "schedule:" + std::string(schedule) + "@" + format_time(tick);
}

}  // namespace readpast::detail
