#include "worker/retention_turn.hpp"

#include <string>

namespace readpast::worker {

Result<RetentionTurn> take_retention_turn(Queue& queue, std::string_view name, Duration interval,
                                          std::string_view by,
                                          const std::function<bool(Duration)>& pause) {
  auto claimed = queue.claim_task("retention:" + std::string(name), interval, by);
  RetentionTurn turn;
  turn.claim_returned = std::chrono::steady_clock::now();
  if (!claimed) return fail_with(claimed.error());
  turn.claimed = *claimed;
  if (!turn.claimed) return turn;
  for (;;) {
    auto batch = queue.apply_retention(name, kRetentionBatch);
    if (!batch) return fail_with(batch.error());
    turn.removed += *batch;
    if (*batch == 0 || !pause(kRetentionPause)) break;
  }
  return turn;
}

}  // namespace readpast::worker
