#include "engines/postgres/lease_mode.hpp"

namespace readpast::detail::pg {

Result<LeaseLanes> parse_lease_lanes(std::string_view text) {
  if (text == "auto") return LeaseLanes::kAuto;
  if (text == "always") return LeaseLanes::kAlways;
  if (text == "never") return LeaseLanes::kNever;
  return fail_with(Error::invalid_argument(
      "lease_lanes must be auto (the default: from lanes while another session holds an old "
      "snapshot), always or never"));
}

bool LeaseMode::claim_probe(std::chrono::steady_clock::time_point now) {
  if (setting_ != LeaseLanes::kAuto) return false;
  const auto at = now.time_since_epoch().count();
  auto due = next_probe_.load(std::memory_order_relaxed);
  if (at < due) return false;
  const auto next = (now + kProbeEvery).time_since_epoch().count();
  return next_probe_.compare_exchange_strong(due, next, std::memory_order_relaxed);
}

LeaseMode::Change LeaseMode::observe(std::int64_t age, std::optional<std::int64_t> xmin,
                                     std::chrono::steady_clock::time_point now) {
  std::lock_guard lock(mu_);
  if (xmin != oldest_) {
    oldest_ = xmin;
    oldest_since_ = now;
  }
  // Time to try the head again: its first lease says whether vacuum has shortened it.
  if (long_head_since_ && now - *long_head_since_ >= kLongHeadFor) long_head_since_.reset();
  if (age < kHeldAge || !xmin) {
    if (held_ && !young_since_) {
      young_since_ = now;
      clean_head_seen_ = false;
      return Change::kYoung;  // turned off by the first short head scan from now on
    }
    return publish();
  }
  young_since_.reset();
  if (now - oldest_since_ >= kHeldFor) held_ = true;
  return publish();
}

void LeaseMode::head_scan_took(std::chrono::steady_clock::time_point start,
                               std::chrono::steady_clock::duration took) {
  std::lock_guard lock(mu_);
  if (young_since_ && start >= *young_since_ && took < kCleanHeadScan) clean_head_seen_ = true;
  turn_off_when_clean();
}

LeaseMode::Change LeaseMode::head_walked(std::int64_t pages, int max_jobs,
                                         std::chrono::steady_clock::time_point now) {
  // A batch's own entries fill a page per hundred or so; 64 a page leaves room.
  if (setting_ != LeaseLanes::kAuto || pages <= kLongHeadPages + max_jobs / 64) {
    return Change::kNone;
  }
  std::lock_guard lock(mu_);
  if (!long_head_since_) long_head_since_ = now;
  return publish();
}

void LeaseMode::turn_off_when_clean() {
  if (setting_ != LeaseLanes::kAuto || !young_since_ || !clean_head_seen_) return;
  young_since_.reset();
  held_ = false;
  publish();
}

LeaseMode::Change LeaseMode::publish() {
  if (setting_ != LeaseLanes::kAuto) return Change::kNone;
  const bool on = held_ || long_head_since_.has_value();
  const bool was = lanes_.exchange(on, std::memory_order_relaxed);
  return on && !was ? Change::kOn : Change::kNone;
}

}  // namespace readpast::detail::pg
