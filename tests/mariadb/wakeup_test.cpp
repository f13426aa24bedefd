// Wake-up by polling (MariaDB has no NOTIFY): an idle worker starts a job enqueued by another
// Queue within the poll's cap (measured and printed), and wakes by itself when a scheduled
// job comes due.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "readpast/queue.hpp"
#include "support/engines/mariadb_server.hpp"

namespace readpast {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using test::MariadbServer;

template <class T>
T must(Result<T> result) {
  if (!result) throw std::runtime_error(result.error().message);
  return std::move(*result);
}
void must(Status status) {
  if (!status) throw std::runtime_error(status.error().message);
}

Queue open_queue(const std::string& url) {
  QueueOptions options;
  options.init_schema = true;
  return must(Queue::open(url, options));
}

NewJob job(const std::string& queue) {
  NewJob j;
  j.queue = queue;
  j.payload = "hello";
  return j;
}

TEST(MariadbWakeup, IdleWorkerStartsAJobEnqueuedByAnotherQueueWithin50ms) {
  const std::string url = MariadbServer::shared().fresh_database_url();
  Queue worker = open_queue(url);
  Queue producer = open_queue(url);  // its own connections, as another process would have
  std::vector<double> latencies_ms;
  constexpr int kRounds = 21;
  for (int round = 0; round < kRounds; ++round) {
    std::atomic<bool> idle{false};
    auto leased_at = std::async(std::launch::async, [&] {
      while (true) {
        auto jobs = must(worker.lease({.queue = "mail", .worker_id = "idle-worker"}));
        if (!jobs.empty()) {
          const auto at = Clock::now();
          must(worker.complete(jobs[0].id, *jobs[0].lease_token));
          return at;
        }
        idle = true;
        must(worker.wait_for_work("mail", 30s));
      }
    });
    while (!idle) std::this_thread::sleep_for(1ms);
    // Well into its wait, so that its polls are at their slowest (the cap).
    std::this_thread::sleep_for(std::chrono::milliseconds(200 + 7 * round));
    const auto enqueued_at = Clock::now();
    must(producer.enqueue(job("mail")));
    latencies_ms.push_back(
        std::chrono::duration<double, std::milli>(leased_at.get() - enqueued_at).count());
  }
  std::sort(latencies_ms.begin(), latencies_ms.end());
  std::printf(
      "[ latency  ] enqueue by another Queue -> idle worker leased it: min %.2f ms, median "
      "%.2f ms, max %.2f ms (%d rounds)\n",
      latencies_ms.front(), latencies_ms[kRounds / 2], latencies_ms.back(), kRounds);
  RecordProperty("wakeup_latency_max_ms", std::to_string(latencies_ms.back()));
  // The poll's cap is 25 ms, so a round takes under 50 ms. A loaded machine (CI runs two test
  // programs at once on two cores) can keep the worker's thread off the CPU for one round
  // (59 ms and 92 ms were seen), so the bar is all rounds but two. A broken wake-up stays far
  // above it: an uncapped poll sleeps for hundreds of ms by now, a missed one for the 30 s.
  const auto within =
      std::count_if(latencies_ms.begin(), latencies_ms.end(), [](double ms) { return ms < 50.0; });
  EXPECT_GE(within, kRounds - 2) << "rounds under 50 ms";
  EXPECT_LT(latencies_ms.back(), 250.0);
}

TEST(MariadbWakeup, AScheduledJobWakesTheWaiterWhenItComesDue) {
  Queue worker = open_queue(MariadbServer::shared().fresh_database_url());
  NewJob later = job("mail");
  later.delay = 400ms;
  must(worker.enqueue(later));
  const auto started = Clock::now();
  EXPECT_TRUE(must(worker.wait_for_work("mail", 10s)));
  const auto after = Clock::now() - started;
  EXPECT_GE(after, 350ms);
  EXPECT_LT(after, 1s) << "woken when due, not at the timeout";
  EXPECT_EQ(must(worker.lease({.queue = "mail", .worker_id = "w"})).size(), 1u);
}

TEST(MariadbWakeup, AnotherQueuesJobDoesNotWakeTheWaiter) {
  const std::string url = MariadbServer::shared().fresh_database_url();
  Queue worker = open_queue(url);
  Queue producer = open_queue(url);
  auto waiter = std::async(std::launch::async, [&] {
    const auto started = Clock::now();
    const bool woken = must(worker.wait_for_work("mail", 600ms));
    return std::pair(woken, Clock::now() - started);
  });
  std::this_thread::sleep_for(100ms);
  must(producer.enqueue(job("sms")));
  auto [woken, after] = waiter.get();
  EXPECT_FALSE(woken);
  EXPECT_GE(after, 590ms);
}

}  // namespace
}  // namespace readpast
