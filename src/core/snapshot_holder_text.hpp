// core/snapshot_holder_text.hpp — the oldest snapshot's holder (StorageHealth) in one line, for
// the worker's warning and `readpast stats`:
//   session 4242 (psql, idle in transaction), open for 6m12s, 120034 transactions ago
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "readpast/options.hpp"

namespace readpast::detail {

std::string snapshot_holder_text(const SnapshotHolder& holder);

// The same as a log event's fields: kind, and those of pid, client, state, age_seconds (whole
// seconds) and transactions that are known.
std::vector<std::pair<std::string, std::string>> snapshot_holder_fields(
    const SnapshotHolder& holder);

// The warning about it, one sentence for the worker's log and `readpast stats`' note:
//   a snapshot held by <snapshot_holder_text>[, <seen>], <kSnapshotHeldAdvice>
std::string snapshot_held_message(const SnapshotHolder& holder, std::string_view seen = {});

// What keeping that snapshot costs, and what ends it, after snapshot_holder_text.
inline constexpr const char* kSnapshotHeldAdvice =
    "keeps the database from reclaiming the rows that leased and finished jobs leave behind, "
    "and the queue slows down as they pile up; end that transaction (docs/metrics.md, "
    "\"The oldest snapshot\")";

}  // namespace readpast::detail
