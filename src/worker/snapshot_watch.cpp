#include "worker/snapshot_watch.hpp"

#include "core/snapshot_holder_text.hpp"

namespace readpast::worker {

std::optional<std::string> SnapshotWatch::observe(const StorageHealth& health,
                                                  std::chrono::steady_clock::time_point now) {
  if (!health.oldest_snapshot) {
    unknown_age_holder_.reset();
    return std::nullopt;
  }
  const SnapshotHolder& holder = *health.oldest_snapshot;
  if (holder.age) {
    unknown_age_holder_.reset();
    if (*holder.age < warn_after_) return std::nullopt;
    return detail::snapshot_held_message(holder);
  }
  std::string key =
      holder.kind + '\n' + (holder.pid ? std::to_string(*holder.pid) : "") + '\n' + holder.client;
  if (unknown_age_holder_ != key) {
    unknown_age_holder_ = std::move(key);
    unknown_age_since_ = now;
  }
  const auto seen = std::chrono::duration_cast<Duration>(now - unknown_age_since_);
  if (seen < warn_after_) return std::nullopt;
  return detail::snapshot_held_message(
      holder, "seen for at least " +
                  format_duration(std::chrono::duration_cast<std::chrono::seconds>(seen)));
}

}  // namespace readpast::worker
