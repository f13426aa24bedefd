// Network faults between the MariaDB engine and its server, through a TCP proxy the test
// controls (support/tcp_proxy.hpp): every connection reset mid-run, and a proxy gone silent
// (no FIN, no RST). A silent connection is given up after reply_timeout, a new one after
// connect_timeout; once the network is back, calls succeed without reopening the Queue, and
// nothing enqueued is lost.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "readpast/queue.hpp"
#include "support/engines/mariadb_server.hpp"
#include "support/tcp_proxy.hpp"

namespace readpast {
namespace {

using namespace std::chrono_literals;
using test::MariadbServer;
using test::TcpProxy;

NewJob job_in(const std::string& queue) {
  NewJob job;
  job.queue = queue;
  job.payload = "x";
  return job;
}

LeaseRequest lease_of(const std::string& queue, int max_jobs = 1) {
  LeaseRequest request;
  request.queue = queue;
  request.worker_id = "w";
  request.max_jobs = max_jobs;
  return request;
}

class MariadbNetworkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto& server = MariadbServer::shared();
    url_ = server.fresh_database_url();
    QueueOptions options;
    options.init_schema = true;
    ASSERT_TRUE(Queue::open(url_, options).has_value());  // the schema
    proxy_ = std::make_unique<TcpProxy>(server.port());
    // The database's URL through the proxy, with short timeouts.
    const std::string port = ":" + std::to_string(server.port()) + "/";
    proxied_ = url_;
    proxied_.replace(proxied_.find(port), port.size(), ":" + std::to_string(proxy_->port()) + "/");
    proxied_ += "?connect_timeout=2&reply_timeout=2";
  }
  Queue open() {
    auto queue = Queue::open(proxied_);
    EXPECT_TRUE(queue.has_value()) << queue.error().message;
    return std::move(*queue);
  }
  template <class F>
  auto eventually_ok(F&& call, std::chrono::seconds within = 15s) {
    const auto deadline = std::chrono::steady_clock::now() + within;
    auto result = call();
    while (!result && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(100ms);
      result = call();
    }
    return result;
  }
  std::string url_;
  std::string proxied_;
  std::unique_ptr<TcpProxy> proxy_;
};

TEST_F(MariadbNetworkTest, ASilentNetworkIsDetectedWithinTheReplyTimeout) {
  Queue queue = open();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(queue.enqueue(job_in("q")).has_value());
  proxy_->blackhole(/*kernel_drop=*/false);
  const auto t0 = std::chrono::steady_clock::now();
  auto leased = queue.lease(lease_of("q"));
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(leased.has_value());
  EXPECT_EQ(leased.error().code, ErrorCode::kUnavailable) << leased.error().message;
  std::cout << "[ detect   ] in-flight call failed after "
            << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
            << " ms: " << leased.error().message << "\n";
  EXPECT_GE(took, 1500ms);
  EXPECT_LT(took, 10s) << "reply_timeout is 2 s";
  // While silent: new connections fail within connect_timeout plus slack.
  const auto t1 = std::chrono::steady_clock::now();
  EXPECT_FALSE(queue.stats("q").has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - t1, 10s);

  proxy_->pass();
  auto again = eventually_ok([&] { return queue.lease(lease_of("q", 5)); });
  ASSERT_TRUE(again.has_value()) << again.error().message;
  // The lease in flight may have committed: its job comes back when its lease expires.
  EXPECT_GE(again->size(), 4u);
}

TEST_F(MariadbNetworkTest, ResetConnectionsLoseNothing) {
  Queue queue = open();
  Queue direct = [&] {
    auto q = Queue::open(url_);
    EXPECT_TRUE(q.has_value());
    return std::move(*q);
  }();
  constexpr int kJobs = 300;
  for (int i = 0; i < kJobs; ++i) ASSERT_TRUE(direct.enqueue(job_in("r")).has_value());
  int completed = 0;
  int failures = 0;
  for (int round = 0; completed < kJobs && round < 5000; ++round) {
    if (round % 25 == 10) proxy_->reset();
    auto jobs = queue.lease(lease_of("r", 4));
    if (!jobs) {
      ++failures;
      EXPECT_EQ(jobs.error().code, ErrorCode::kUnavailable) << jobs.error().message;
      continue;
    }
    for (const Job& job : *jobs) {
      auto done = queue.complete(job.id, *job.lease_token);
      if (done) {
        ++completed;
      } else {
        ++failures;
        // Lost with the connection: the job comes back when its lease expires.
        EXPECT_TRUE(done.error().code == ErrorCode::kUnavailable ||
                    done.error().code == ErrorCode::kLeaseLost)
            << done.error().message;
      }
    }
    if (jobs->empty()) {
      // Leases lost in a reset come back when they expire (30 s): rescue them now.
      auto stats = direct.stats("r");
      ASSERT_TRUE(stats.has_value());
      if (!stats->empty() && stats->front().available == 0 && stats->front().running > 0) break;
    }
  }
  std::cout << "[ resets   ] " << proxy_->accepted() << " connections, " << completed
            << " jobs completed through resets, " << failures << " calls failed\n";
  auto stats = direct.stats("r");
  ASSERT_TRUE(stats.has_value());
  ASSERT_EQ(stats->size(), 1u);
  // Every job is completed, or running under a lease whose reply a reset lost (back when it
  // expires); none is lost.
  EXPECT_EQ(stats->front().succeeded + stats->front().running, kJobs);
  EXPECT_EQ(stats->front().succeeded, completed);
  EXPECT_GT(proxy_->accepted(), 1) << "the resets broke connections";
}

}  // namespace
}  // namespace readpast
