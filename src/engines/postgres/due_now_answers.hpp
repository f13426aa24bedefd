#pragma once
// What an idle waiter of the PostgreSQL engine may take from another's probe instead of asking
// the database itself (wait_for_work, postgres_engine.cpp).
//
// Before it waits, a waiter probes when its queue's next job is due. "One is due now" means the
// waiter's lease found none because a transaction holds them locked (another worker's lease in
// flight): the waiter looks again within 50 ms. With several workers on a short backlog a
// lease often finds every job taken, and each worker then probed: 400-600 probes a second from
// 8 workers, a sixth of a core under a held snapshot, where each probe walks the entries behind
// the lanes' frontiers (docs/benchmarks.md, run 46). For kShared after such an answer the
// process' other waiters on the queue take it as theirs. An answer stale by then (the jobs were
// taken meanwhile) costs at most one empty lease 50 ms later; the next probe corrects it.
//
// Thread safety: every member may be called from any thread.
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace readpast::detail::pg {

class DueNowAnswers {
 public:
  static constexpr auto kShared = std::chrono::milliseconds(20);

  // A probe of `queue` at `now` found a job due now.
  void seen(std::string_view queue, std::chrono::steady_clock::time_point now) {
    std::lock_guard lock(mu_);
    if (auto it = at_.find(queue); it != at_.end()) {
      it->second = now;
    } else {
      at_.emplace(std::string(queue), now);
    }
  }

  // Whether a probe of `queue` found a job due now within kShared before `now`.
  bool fresh(std::string_view queue, std::chrono::steady_clock::time_point now) const {
    std::lock_guard lock(mu_);
    auto it = at_.find(queue);
    return it != at_.end() && now >= it->second && now - it->second < kShared;
  }

 private:
  mutable std::mutex mu_;  // guards at_
  std::map<std::string, std::chrono::steady_clock::time_point, std::less<>> at_;
};

}  // namespace readpast::detail::pg
