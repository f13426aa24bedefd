#include "cli/arguments.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "core/url.hpp"
#include "readpast/queue.hpp"

namespace readpast::cli {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

CliResult<Duration> parse_duration_arg(std::string_view option, std::string_view text) {
  // Zero needs no unit: `--retain-succeeded 0` is what its help says ("0 deletes them on
  // completion"), and `--grace 0` reads as meant.
  if (text == "0") return Duration::zero();
  auto d = parse_duration(text);
  if (!d) return fail_cli(usage_error(fmt::format("{}: {}", option, d.error().message)));
  return *d;
}

CliResult<Duration> parse_positive_duration_arg(std::string_view option, std::string_view text) {
  auto d = parse_duration_arg(option, text);
  if (d && *d <= Duration::zero()) {
    return fail_cli(usage_error(fmt::format("{}: must be more than zero", option)));
  }
  return d;
}

CliResult<TimePoint> parse_time_arg(std::string_view option, std::string_view text) {
  auto t = parse_time(text);
  if (!t) return fail_cli(usage_error(fmt::format("{}: {}", option, t.error().message)));
  return *t;
}

std::optional<std::size_t> parse_size(std::string_view text) {
  std::size_t digits_end = 0;
  while (digits_end < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[digits_end])) || text[digits_end] == '.')) {
    ++digits_end;
  }
  if (digits_end == 0) return std::nullopt;
  std::string number(text.substr(0, digits_end));
  double value = 0;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc() || end != number.data() + number.size()) return std::nullopt;
  std::string unit = lower(text.substr(digits_end));
  if (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  double scale;
  if (unit.empty() || unit == "b") {
    scale = 1;
  } else if (unit == "kb") {
    scale = 1e3;
  } else if (unit == "mb") {
    scale = 1e6;
  } else if (unit == "gb") {
    scale = 1e9;
  } else if (unit == "kib" || unit == "k") {
    scale = 1024.0;
  } else if (unit == "mib" || unit == "m") {
    scale = 1024.0 * 1024;
  } else if (unit == "gib" || unit == "g") {
    scale = 1024.0 * 1024 * 1024;
  } else {
    return std::nullopt;
  }
  double bytes = std::round(value * scale);
  if (bytes < 1 || bytes > 1e15) return std::nullopt;
  return static_cast<std::size_t>(bytes);
}

CliResult<std::size_t> parse_size_arg(std::string_view option, std::string_view text) {
  auto size = parse_size(text);
  if (!size) {
    return fail_cli(usage_error(
        fmt::format("{}: bad size '{}': expected a positive number of bytes with an optional unit "
                    "(B, KB, MB, GB, KiB, MiB, GiB), e.g. 16MiB",
                    option, text.substr(0, 40))));
  }
  return *size;
}

CliResult<JobState> parse_state_arg(std::string_view option, std::string_view text,
                                    std::initializer_list<JobState> allowed) {
  auto state = parse_job_state(text);
  bool ok = state && std::find(allowed.begin(), allowed.end(), *state) != allowed.end();
  if (ok) return *state;
  std::string names;
  for (JobState s : allowed) {
    if (!names.empty()) names += ", ";
    names += to_string(s);
  }
  return fail_cli(usage_error(
      fmt::format("{}: bad state '{}': expected one of {}", option, text.substr(0, 40), names)));
}

CliStatus check_queue_name(std::string_view name) {
  if (auto ok = validate_queue_name(name); !ok) return fail_cli(usage_error(ok.error().message));
  return {};
}

CliStatus check_database_url(std::string_view url) {
  auto parsed = detail::parse_database_url(url);
  if (!parsed) return fail_cli(usage_error(parsed.error().message));
  return {};
}

std::string format_size(std::size_t bytes) {
  constexpr double kKi = 1024.0;
  auto b = static_cast<double>(bytes);
  if (b >= kKi * kKi * kKi) return fmt::format("{:.3g} GiB", b / (kKi * kKi * kKi));
  if (b >= kKi * kKi) return fmt::format("{:.3g} MiB", b / (kKi * kKi));
  if (b >= kKi) return fmt::format("{:.3g} KiB", b / kKi);
  return fmt::format("{} bytes", bytes);
}

}  // namespace readpast::cli
