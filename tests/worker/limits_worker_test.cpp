// The worker runtime on a queue held back by a global limit (docs/workflows.md "Global
// limits"): it neither spins on leases that return nothing nor oversleeps when a place frees.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "worker_test.hpp"

namespace readpast::test {
namespace {

using namespace std::chrono_literals;

std::int64_t lease_calls(const std::vector<MetricSample>& samples, const std::string& queue) {
  for (const auto& s : samples) {
    if (s.name == "readpast_lease_seconds_count" && s.queue == queue) return s.value;
  }
  return 0;
}

TEST_P(WorkerTest, AThrottledWorkerPollsCalmlyAndStartsAsSoonAsAPlaceFrees) {
  QueueOptions counted;
  counted.metrics_interval = std::chrono::hours(1);  // only flush_metrics() writes
  Queue& queue = reopen(counted);
  for (int i = 0; i < 4; ++i) enqueue("q");
  QueueLimits limits;
  limits.running = 1;
  ASSERT_TRUE(queue.set_limits("q", limits));
  // Another client holds the queue's one place for a second.
  Queue holder = open_another();
  auto held = holder.lease(LeaseRequest{"q", "holder", 1});
  ASSERT_TRUE(held && held->size() == 1u);
  std::atomic<std::int64_t> released_at{0};
  std::thread release([&] {
    std::this_thread::sleep_for(1s);
    released_at = std::chrono::steady_clock::now().time_since_epoch().count();
    EXPECT_TRUE(holder.complete(held->front().id, *held->front().lease_token));
  });

  std::atomic<int> in_handler{0};
  std::atomic<int> most{0};
  std::atomic<std::int64_t> first_start{0};
  WorkerOptions o = options();
  Worker worker(queue, o);
  QueueConfig config;
  config.concurrency = 4;
  ASSERT_TRUE(worker.handle(
      "q",
      [&](const Job&, std::stop_token) {
        std::int64_t expected = 0;
        first_start.compare_exchange_strong(
            expected, std::chrono::steady_clock::now().time_since_epoch().count());
        const int now = ++in_handler;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::sleep_for(50ms);
        --in_handler;
        return JobResult::success();
      },
      config));
  const auto started = std::chrono::steady_clock::now();
  ASSERT_TRUE(worker.run());
  const auto took = std::chrono::steady_clock::now() - started;
  release.join();

  EXPECT_EQ(stats("q").succeeded, 4);
  EXPECT_EQ(most.load(), 1) << "the worker ran more jobs at once than the running limit";
  EXPECT_GE(first_start.load(), released_at.load())
      << "the worker started a job while the limit's one place was held";
  // A place freed at 1 s; three jobs of 50 ms follow one by one. Polling (idle waits up to
  // 100 ms here) and waking on the settle keep it well under 3 s.
  EXPECT_LT(took, 3s) << "the worker overslept once the place freed";
  ASSERT_TRUE(queue.flush_metrics());
  const std::int64_t calls = lease_calls(*queue.metrics(), "q");
  // Throttled for a second with idle waits of at most 100 ms: tens of leases, not thousands.
  EXPECT_LT(calls, 100) << "the worker spun on a throttled queue: " << calls << " leases";
  EXPECT_GE(calls, 4);
}

}  // namespace
}  // namespace readpast::test
