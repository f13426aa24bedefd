#include "core/limits.hpp"

#include <algorithm>
#include <charconv>
#include <functional>
#include <string>

#include "readpast/queue.hpp"
#include "readpast/time.hpp"

namespace readpast {

Result<RateLimit> parse_rate(std::string_view text) {
  auto bad = [&](std::string_view why) {
    std::string shown(text.substr(0, 64));
    for (char& c : shown) {
      if (c < 0x20 || c >= 0x7f) c = '?';
    }
    return fail_with(Error::invalid_argument("invalid rate '" + shown + "': " + std::string(why) +
                                             " (expected N/DUR, e.g. 100/1s)"));
  };
  auto slash = text.find('/');
  if (slash == std::string_view::npos) return bad("no '/'");
  std::string_view count_text = text.substr(0, slash);
  std::string_view window_text = text.substr(slash + 1);
  if (count_text.empty()) return bad("the count is missing");
  if (window_text.empty()) return bad("the duration is missing");
  RateLimit rate;
  auto [end, ec] =
      std::from_chars(count_text.data(), count_text.data() + count_text.size(), rate.count);
  if (ec != std::errc{} || end != count_text.data() + count_text.size()) {
    return bad("the count is not a whole number");
  }
  auto window = parse_duration(window_text);
  if (!window) return bad(window.error().message);
  rate.window = *window;
  if (auto ok = validate_rate(rate); !ok) return bad(ok.error().message);
  return rate;
}

std::string format_rate(const RateLimit& rate) {
  return std::to_string(rate.count) + "/" + format_duration(rate.window);
}

Status validate_rate(const RateLimit& rate) {
  if (rate.count < 1 || rate.count > kMaxRateCount) {
    return fail_with(Error::invalid_argument("a rate's count must be from 1 to " +
                                             std::to_string(kMaxRateCount)));
  }
  if (rate.window <= Duration::zero() || rate.window > kMaxDuration) {
    return fail_with(Error::invalid_argument("a rate's duration must be positive"));
  }
  return {};
}

Status validate_limits(const QueueLimits& limits) {
  if (limits.running && (*limits.running < 1 || *limits.running > kMaxRunningLimit)) {
    return fail_with(Error::invalid_argument("a running limit must be from 1 to " +
                                             std::to_string(kMaxRunningLimit)));
  }
  if (limits.rate) return validate_rate(*limits.rate);
  return {};
}

namespace detail {

const char* limit_kind_name(LimitKind kind) noexcept {
  return kind == LimitKind::kRunning ? "running" : "rate";
}

Allowance lease_allowance(const QueueLimits& limits, std::int64_t max_jobs,
                          std::optional<std::int64_t> running,
                          std::optional<std::int64_t> free_rate_slots) {
  Allowance allowance{max_jobs, std::nullopt};
  if (limits.running && running) {
    const std::int64_t left = std::max<std::int64_t>(0, *limits.running - *running);
    if (left < allowance.jobs) allowance = {left, LimitKind::kRunning};
  }
  if (limits.rate && free_rate_slots && *free_rate_slots < allowance.jobs) {
    allowance = {std::max<std::int64_t>(0, *free_rate_slots), LimitKind::kRate};
  }
  return allowance;
}

std::vector<std::int64_t> resized_rate_slots(std::vector<std::int64_t> old_times,
                                             std::int64_t count) {
  std::sort(old_times.begin(), old_times.end(), std::greater<>());
  old_times.resize(static_cast<std::size_t>(count), 0);
  return old_times;
}

}  // namespace detail
}  // namespace readpast
