// wait_for_work: woken soon by another connection's enqueue; false after a quiet timeout.
#include <atomic>
#include <future>
#include <thread>

#include "conformance/queue_test.hpp"

namespace readpast::test {
namespace {

TEST_P(QueueTest, WaitForWorkWakesSoonAfterAnotherConnectionEnqueues) {
  Queue& waiter = q();
  Queue producer = open_another();
  std::atomic<bool> done{false};
  const auto started = std::chrono::steady_clock::now();
  auto woken = std::async(std::launch::async, [&] {
    auto result = waiter.wait_for_work("q", std::chrono::seconds(20));
    done = true;
    return result;
  });
  // The waiter may not be listening yet when the first job lands, so keep enqueueing
  // (every 100 ms) until it wakes; each enqueue is a chance to wake it.
  int enqueued = 0;
  while (!done && std::chrono::steady_clock::now() - started < std::chrono::seconds(25)) {
    ok(producer.enqueue(new_job("q")));
    ++enqueued;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  auto result = woken.get();
  const auto elapsed = std::chrono::steady_clock::now() - started;
  ASSERT_TRUE(result.has_value()) << result.error().message;
  EXPECT_TRUE(*result) << "not woken by " << enqueued << " enqueues";
  EXPECT_LT(elapsed, std::chrono::seconds(3)) << "woken, but late";
  EXPECT_GE(enqueued, 1);
}

TEST_P(QueueTest, WaitForWorkReturnsFalseAfterTheTimeoutWhenNothingHappens) {
  q();
  const auto started = std::chrono::steady_clock::now();
  auto woken = ok(q().wait_for_work("q", std::chrono::milliseconds(400)));
  const auto elapsed = std::chrono::steady_clock::now() - started;
  EXPECT_FALSE(woken);
  EXPECT_GE(elapsed, std::chrono::milliseconds(400) - kClockTolerance) << "returned early";
  EXPECT_LT(elapsed, std::chrono::seconds(3)) << "overslept its timeout";
}

TEST_P(QueueTest, WaitForWorkWithAZeroTimeoutReturnsAtOnce) {
  q();
  const auto started = std::chrono::steady_clock::now();
  auto woken = q().wait_for_work("q", Duration::zero());
  EXPECT_TRUE(woken.has_value()) << woken.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(1));
}

}  // namespace
}  // namespace readpast::test
