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
  const bool on = lanes_.load(std::memory_order_relaxed);
  if (age < kHeldAge || !xmin) {
    if (!on || young_since_) return Change::kNone;
    young_since_ = now;
    clean_head_seen_ = false;
    return Change::kYoung;  // turned off by the first short head scan from now on
  }
  young_since_.reset();
  if (on || now - oldest_since_ < kHeldFor) return Change::kNone;
  lanes_.store(true, std::memory_order_relaxed);
  return Change::kOn;
}

void LeaseMode::head_scan_took(std::chrono::steady_clock::time_point start,
                               std::chrono::steady_clock::duration took) {
  std::lock_guard lock(mu_);
  if (young_since_ && start >= *young_since_ && took < kCleanHeadScan) clean_head_seen_ = true;
  turn_off_when_clean();
}

void LeaseMode::turn_off_when_clean() {
  if (setting_ != LeaseLanes::kAuto || !young_since_ || !clean_head_seen_) return;
  young_since_.reset();
  lanes_.store(false, std::memory_order_relaxed);
}

}  // namespace readpast::detail::pg
