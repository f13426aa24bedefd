// server/throughput.hpp — jobs finished per second, per queue, sampled from the database for
// the dashboard's chart and rates.
//
// Every `interval`, one sample: how many jobs of each queue reached succeeded and dead
// during an interval of the database's clock (Queue::now, Queue::finished_since):
// finished_since(start) - finished_since(end). The interval ends kSettle before the
// database's now, so that a job whose finished_at is already written but whose transaction
// has not committed yet is counted when it becomes visible instead of being missed. Each job
// is counted once. Jobs deleted on completion (zero retention) are not seen. Samples older
// than `history` are dropped.
//
// Thread-safety: one background thread (start/stop from the owner's thread); points() and
// rate() may be called from any thread (they read under mu_).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "readpast/queue.hpp"

namespace readpast::server {

class Throughput {
 public:
  // How far behind the database's clock samples end.
  static constexpr Duration kSettle = std::chrono::seconds(1);

  struct Point {
    TimePoint end{};     // the database's time at the end of the interval
    Duration length{0};  // the interval
    std::int64_t succeeded = 0;
    std::int64_t dead = 0;
  };
  struct Rate {
    double succeeded_per_s = 0;
    double dead_per_s = 0;
  };

  // REQUIRES: `queue` outlives this object; interval > 0.
  Throughput(Queue& queue, Duration interval, Duration history);
  ~Throughput();
  Throughput(const Throughput&) = delete;
  Throughput& operator=(const Throughput&) = delete;

  void start();
  void stop();
  // Takes one sample now (the thread calls this; tests may too).
  Status sample_once();

  Duration interval() const noexcept { return interval_; }
  // Oldest first; for one queue, or summed over all of them.
  std::vector<Point> points(std::optional<std::string_view> queue = std::nullopt) const;
  // Per second over the samples that ended within the last `window`.
  Rate rate(std::string_view queue, Duration window) const;

 private:
  struct Sample {
    TimePoint end{};
    Duration length{0};
    std::map<std::string, std::pair<std::int64_t, std::int64_t>, std::less<>> counts;
  };
  void loop();

  // Constant after construction.
  Queue& queue_;
  const Duration interval_;
  const Duration history_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;               // guarded by mu_
  std::optional<TimePoint> last_tick_;  // guarded by mu_ (written by the sampling thread)
  std::deque<Sample> samples_;          // guarded by mu_
  std::thread thread_;
};

}  // namespace readpast::server
