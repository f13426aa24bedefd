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

std::string snapshot_held_message(const SnapshotHolder& holder, std::string_view seen) {
  std::string out = "a snapshot held by " + snapshot_holder_text(holder) + ", ";
  if (!seen.empty()) out += std::string(seen) + ", ";
  return out + kSnapshotHeldAdvice;
}

std::vector<std::pair<std::string, std::string>> snapshot_holder_fields(
    const SnapshotHolder& holder) {
  std::vector<std::pair<std::string, std::string>> fields{{"kind", holder.kind}};
  if (holder.pid) fields.emplace_back("pid", std::to_string(*holder.pid));
  if (!holder.client.empty()) fields.emplace_back("client", holder.client);
  if (!holder.state.empty()) fields.emplace_back("state", holder.state);
  if (holder.age) {
    fields.emplace_back(
        "age_seconds",
        std::to_string(std::chrono::duration_cast<std::chrono::seconds>(*holder.age).count()));
  }
  if (holder.transactions)
    fields.emplace_back("transactions", std::to_string(*holder.transactions));
  return fields;
}

}  // namespace readpast::detail
