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

}  // namespace readpast
