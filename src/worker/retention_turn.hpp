// worker/retention_turn.hpp — one queue's turn at retention, as workers and `readpast serve`
// take it: claim the queue's retention pass ("retention:QUEUE", Queue::claim_task) for one
// interval, so that of every worker and server racing, on any hosts, one deletes per
// interval; then delete the queue's finished jobs past their retention
// (Queue::apply_retention) in small batches with a pause between them, so that other
// writers are never held up for long.
//
// When to try again: the claim's next run is the database's time *during* the claim plus
// the interval, so a try scheduled from a time taken before the claim comes too early, is
// refused, and the turn is lost. RetentionTurn::claim_returned is taken after the claim
// returned: a next try at claim_returned + interval is never early (the database's clock and
// this host's steady clock advance at the same pace).
//
// Thread-safety: a free function; `queue` is thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string_view>

#include "readpast/queue.hpp"

namespace readpast::worker {

struct RetentionTurn {
  bool claimed = false;      // false: another worker's (or server's) turn
  std::int64_t removed = 0;  // jobs deleted, when claimed
  std::chrono::steady_clock::time_point claim_returned{};
};

// Deletes at most this many rows per state and statement, then calls `pause`.
inline constexpr int kRetentionBatch = 1000;
inline constexpr auto kRetentionPause = std::chrono::milliseconds(10);

// `pause(d)` waits d and returns false when the caller is stopping (the turn ends early).
// An error of the claim or of a deletion ends the turn and is returned (what was deleted
// before it stays deleted).
Result<RetentionTurn> take_retention_turn(Queue& queue, std::string_view name, Duration interval,
                                          std::string_view by,
                                          const std::function<bool(Duration)>& pause);

}  // namespace readpast::worker
