// worker/snapshot_watch.hpp — whether the oldest snapshot (Queue::storage_health) has been held
// long enough to warn about (WorkerOptions::warn_snapshot_after). A holder whose transaction's
// age the database does not give (a standby's feedback through its walsender, a replication
// slot, another role's session) counts from the first turn that saw it as the oldest.
//
// Thread-safety: none; the runtime's maintenance thread owns it.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "readpast/options.hpp"

namespace readpast::worker {

class SnapshotWatch {
 public:
  explicit SnapshotWatch(Duration warn_after) : warn_after_(warn_after) {}

  // What to warn about after a look at `health` at `now`: the warning's text, or nullopt.
  std::optional<std::string> observe(const StorageHealth& health,
                                     std::chrono::steady_clock::time_point now);

 private:
  Duration warn_after_;
  // The holder of unknown age seen last (kind, pid, client), and since when.
  std::optional<std::string> unknown_age_holder_;
  std::chrono::steady_clock::time_point unknown_age_since_{};
};

}  // namespace readpast::worker
