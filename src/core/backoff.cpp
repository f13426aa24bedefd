#include <algorithm>
#include <cmath>

#include "readpast/options.hpp"

namespace readpast {

Duration Backoff::delay_after(int failed_attempt, double r) const {
  // 2^(n-1) overflows quickly; past 2^40 any sane base is far beyond any sane cap.
  const int exponent = std::clamp(failed_attempt - 1, 0, 40);
  const double raw = static_cast<double>(base.count()) * std::ldexp(1.0, exponent);
  const double capped = std::min(raw, static_cast<double>(cap.count()));
  const double factor = 1.0 - jitter * std::clamp(r, 0.0, 1.0);
  return Duration(static_cast<Duration::rep>(capped * factor));
}

Status Backoff::validate() const {
  if (base < Duration::zero() || cap < Duration::zero()) {
    return fail_with(Error::invalid_argument("backoff: base and cap must not be negative"));
  }
  if (cap > kMaxDuration) {
    return fail_with(Error::invalid_argument("backoff: cap must not exceed 100 years"));
  }
  if (base > cap) return fail_with(Error::invalid_argument("backoff: base must not exceed cap"));
  if (!(jitter >= 0.0 && jitter <= 1.0)) {
    return fail_with(Error::invalid_argument("backoff: jitter must be between 0 and 1"));
  }
  return {};
}

Status Retention::validate() const {
  auto check = [](Duration d, std::string_view what) -> Status {
    if (d < Duration::zero() || d > kMaxDuration) {
      return fail_with(Error::invalid_argument("retention of " + std::string(what) +
                                               " jobs must be between 0 and 100 years"));
    }
    return {};
  };
  if (auto ok = check(succeeded, "succeeded"); !ok) return ok;
  if (cancelled) {
    if (auto ok = check(*cancelled, "cancelled"); !ok) return ok;
  }
  if (dead) {
    if (auto ok = check(*dead, "dead"); !ok) return ok;
  }
  return {};
}

}  // namespace readpast
