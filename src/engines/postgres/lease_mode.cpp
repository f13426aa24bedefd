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

bool LeaseMode::lanes(std::string_view queue) const {
  if (all_lanes_.load(std::memory_order_relaxed)) return true;
  if (long_heads_.load(std::memory_order_relaxed) == 0) return false;
  return long_head(queue);
}

bool LeaseMode::long_head(std::string_view queue) const {
  std::lock_guard lock(mu_);
  return long_head_since_.find(queue) != long_head_since_.end();
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
  // Time to try the heads again: the first lease of each says whether vacuum has shortened it.
  std::erase_if(long_head_since_,
                [&](const auto& entry) { return now - entry.second >= kLongHeadFor; });
  long_heads_.store(long_head_since_.size(), std::memory_order_relaxed);
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

LeaseMode::Change LeaseMode::head_walked(std::string_view queue, std::int64_t pages, int max_jobs,
                                         std::chrono::steady_clock::time_point now) {
  // A batch's own entries fill a page per hundred or so; 64 a page leaves room.
  if (setting_ != LeaseLanes::kAuto || pages <= kLongHeadPages + max_jobs / 64) {
    return Change::kNone;
  }
  std::lock_guard lock(mu_);
  if (!long_head_since_.try_emplace(std::string(queue), now).second) return Change::kNone;
  long_heads_.store(long_head_since_.size(), std::memory_order_relaxed);
  // Under a hold the queue's lanes were on already, and its frontiers are current.
  return held_ ? Change::kNone : Change::kOnForQueue;
}

void LeaseMode::turn_off_when_clean() {
  if (setting_ != LeaseLanes::kAuto || !young_since_ || !clean_head_seen_) return;
  young_since_.reset();
  held_ = false;
  publish();
}

LeaseMode::Change LeaseMode::publish() {
  if (setting_ != LeaseLanes::kAuto) return Change::kNone;
  const bool was = all_lanes_.exchange(held_, std::memory_order_relaxed);
  return held_ && !was ? Change::kOn : Change::kNone;
}

}  // namespace readpast::detail::pg
