#include "core/snapshot_holder_text.hpp"

#include <chrono>

namespace readpast::detail {

std::string snapshot_holder_text(const SnapshotHolder& holder) {
  std::string out = holder.kind;
  if (holder.pid) out += " " + std::to_string(*holder.pid);
  std::string about = holder.client;
  if (!holder.state.empty()) about += (about.empty() ? "" : ", ") + holder.state;
  if (!about.empty()) out += " (" + about + ")";
  if (holder.age) {
    // Whole seconds: an age of minutes is the point, not its milliseconds.
    out += ", open for " +
           format_duration(std::chrono::duration_cast<std::chrono::seconds>(*holder.age));
  }
  if (holder.transactions) out += ", " + std::to_string(*holder.transactions) + " transactions ago";
  return out;
}

}  // namespace readpast::detail
