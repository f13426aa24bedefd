// Network faults between workers and a database server, on every engine that has one,
// through a TCP proxy the test controls (support/tcp_proxy.hpp): connections reset, delayed,
// or gone silent without a FIN or an RST. Silent connections must be found dead within a
// bounded time (the engine's timeouts, which readpast sets and a URL may tune: on
// PostgreSQL TCP keepalive and tcp_user_timeout, on every server engine reply_timeout), and
// the workers carry on.
//
// The program moves itself into a network namespace of its own first (main below), so that
// the proxy can have the kernel drop its packets; without root the tests that need that are
// skipped.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <future>
#include <random>
#include <thread>

#include "chaos.hpp"
#include "support/engines.hpp"
#include "support/tcp_proxy.hpp"

namespace readpast::test {
namespace {

std::string g_namespace_why;  // why there is no private network namespace, if there is none

// `url` with the proxy's port instead of the server's, and `params` appended.
std::string through(const std::string& url, int server_port, int proxy_port,
                    const std::string& params = "") {
  const std::string server = ":" + std::to_string(server_port) + "/";
  std::string out = url;
  out.replace(out.find(server), server.size(), ":" + std::to_string(proxy_port) + "/");
  if (!params.empty()) out += (out.find('?') == std::string::npos ? "?" : "&") + params;
  return out;
}

// URL parameters with reply_timeout set to `timeout`, whatever they said of it before.
std::string with_reply_timeout(const std::string& params, const std::string& timeout) {
  std::string out;
  std::size_t at = 0;
  while (at <= params.size()) {
    const auto amp = params.find('&', at);
    const std::string item = params.substr(at, amp == std::string::npos ? amp : amp - at);
    if (!item.empty() && !item.starts_with("reply_timeout=")) out += item + "&";
    if (amp == std::string::npos) break;
    at = amp + 1;
  }
  return out + "reply_timeout=" + timeout;
}

class NetworkTest : public ::testing::TestWithParam<std::string> {
 protected:
  const EngineUnderTest& engine() const { return engine_named(GetParam()); }
  void SetUp() override {
    if (!engine().server_port) GTEST_SKIP() << "an embedded database has no network";
    url_ = engine().fresh_url();
    open_queue(url_);  // the schema
    proxy_ = std::make_unique<TcpProxy>(engine().server_port());
  }
  // The fresh database through the proxy, with the engine's fast failure detection.
  std::string via_proxy() const {
    return through(url_, engine().server_port(), proxy_->port(), engine().fast_network_failure);
  }
  void require_kernel_blackhole() {
    std::string why;
    if (!kernel_blackhole_available(&why)) {
      GTEST_SKIP() << "needs packets dropped by the kernel: " << why
                   << (g_namespace_why.empty() ? "" : " (" + g_namespace_why + ")");
    }
  }
  std::string url_;
  std::unique_ptr<TcpProxy> proxy_;
};

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

template <class F>
auto timed(F&& call) {
  const auto t0 = std::chrono::steady_clock::now();
  auto result = call();
  return std::make_pair(std::move(result), std::chrono::steady_clock::now() - t0);
}

std::int64_t ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

// A call in flight when the network goes silent fails as kUnavailable once the engine's
// fast detection (2 s) gives it up; new connections fail within connect_timeout; once the
// network is back, calls succeed again without reopening the Queue.
TEST_P(NetworkTest, ASilentNetworkIsDetectedWithinTheConfiguredTimeouts) {
  require_kernel_blackhole();
  Queue queue = open_queue(via_proxy());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(queue.enqueue(job_in("q")));

  proxy_->blackhole(/*kernel_drop=*/true);
  auto [leased, took] = timed([&] { return queue.lease(lease_of("q")); });
  ASSERT_FALSE(leased);
  EXPECT_EQ(leased.error().code, ErrorCode::kUnavailable) << leased.error().message;
  std::cout << "[ detect   ] in-flight call failed after " << ms(took)
            << " ms: " << leased.error().message << "\n";
  EXPECT_LT(took, 8s) << "the timeouts are 2 s";
  EXPECT_GE(took, 1s) << "it failed before the network timeout: " << leased.error().message;

  // While silent: every call fails, each within connect_timeout (2 s) plus slack.
  for (int i = 0; i < 2; ++i) {
    auto [stats, stats_took] = timed([&] { return queue.stats("q"); });
    EXPECT_FALSE(stats);
    EXPECT_LT(stats_took, 6s);
  }

  proxy_->pass();
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  Result<std::vector<Job>> again = fail_with(Error::unavailable("not tried"));
  while (!again && std::chrono::steady_clock::now() < deadline) {
    again = queue.lease(lease_of("q", 5));
    if (!again) std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(again) << again.error().message;
  // The lease that was in flight may have committed: its job comes back when it expires.
  EXPECT_GE(again->size(), 4u);
}

// The same without faster settings: readpast's own keepalive and tcp_user_timeout bound
// the wait (about a minute). Long run only.
TEST_P(NetworkTest, ASilentNetworkIsDetectedWithReadpastsDefaultTimeouts) {
  require_kernel_blackhole();
  if (!long_run()) GTEST_SKIP() << "takes over a minute: runs with scripts/reliability.sh --long";
  Queue queue = open_queue(through(url_, engine().server_port(), proxy_->port()));
  ASSERT_TRUE(queue.enqueue(job_in("q")));
  proxy_->blackhole(true);
  auto [leased, took] = timed([&] { return queue.lease(lease_of("q")); });
  ASSERT_FALSE(leased);
  EXPECT_EQ(leased.error().code, ErrorCode::kUnavailable);
  std::cout << "[ detect   ] default settings: in-flight call failed after " << ms(took) << " ms\n";
  EXPECT_LT(took, 90s);
  proxy_->pass();
}

// A peer that stops answering while its TCP stays up (the proxy swallows the bytes, the
// kernel still acknowledges them: a hung server or pooler). TCP cannot see this; readpast
// gives the connection up after reply_timeout (URL parameter; 5 minutes by default), and
// the call fails as kUnavailable instead of waiting forever.
TEST_P(NetworkTest, APeerThatStopsAnsweringIsGivenUpAfterTheReplyTimeout) {
  Queue queue = open_queue(through(url_, engine().server_port(), proxy_->port(),
                                   with_reply_timeout(engine().fast_network_failure, "3s")));
  ASSERT_TRUE(queue.enqueue(job_in("q")));
  proxy_->blackhole(/*kernel_drop=*/false);
  auto call = std::async(std::launch::async,
                         [&] { return timed([&] { return queue.lease(lease_of("q")); }); });
  if (call.wait_for(30s) != std::future_status::ready) {
    proxy_->pass();  // let the call finish so that the test can end
    call.wait();
    FAIL() << "a call through a silent peer was still waiting after 30 s (reply_timeout 3 s)";
  }
  auto [leased, took] = call.get();
  std::cout << "[ detect   ] silent peer: call ended after " << ms(took)
            << " ms: " << (leased ? std::string("ok") : leased.error().message) << "\n";
  ASSERT_FALSE(leased);
  EXPECT_EQ(leased.error().code, ErrorCode::kUnavailable);
  EXPECT_GE(took, 2900ms);
  EXPECT_LT(took, 8s);
  // Back to normal: the next calls reconnect.
  proxy_->pass();
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  while (!queue.stats("q") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(queue.stats("q")) << "no recovery after the peer came back";
}

// Resets mid-drain: every connection torn down with an RST, again and again, and delays.
// Workers (mp_worker) reconnect and the history holds.
TEST_P(NetworkTest, WorkersDrainThroughResetsDelaysAndSilence) {
  const int jobs = scaled(4000, 100000);
  const int cycles = scaled(2, 12);
  const bool kernel = kernel_blackhole_available();
  ChaosRun run("network", url_, "net");
  run.enqueue(jobs);
  const std::string via = via_proxy();
  std::vector<std::unique_ptr<ChildProcess>> workers;
  for (int i = 0; i < 4; ++i) {
    workers.push_back(run.spawn_mp_worker("p" + std::to_string(i), 3s, 200us, 4, 16, "all", via));
  }
  auto inject = [&](const std::string& kind, auto&& start, Duration hold, auto&& stop) {
    const TimePoint t_start = wall_now();
    start();
    std::this_thread::sleep_for(hold);
    stop();
    run.fault(kind, "", t_start);
  };
  // Each cycle leaves the workers a few seconds to reconnect (readpast's pool backs off up
  // to 2 s between attempts) before the next fault: back-to-back silences would add up to
  // an outage longer than mp_worker waits out (30 s).
  for (int cycle = 0; cycle < cycles; ++cycle) {
    std::this_thread::sleep_for(cycle == 0 ? 500ms : 3s);
    inject(
        "proxy_reset", [&] { proxy_->reset(); }, 0ms, [] {});
    std::this_thread::sleep_for(500ms);
    inject(
        "proxy_delay", [&] { proxy_->delay(200ms); }, 1s, [&] { proxy_->pass(); });
    std::this_thread::sleep_for(500ms);
    inject(
        kernel ? "proxy_blackhole" : "proxy_silent", [&] { proxy_->blackhole(kernel); }, 3s,
        [&] { proxy_->pass(); });
  }
  ASSERT_TRUE(ChaosRun::wait_all(workers, std::chrono::steady_clock::now() + scaled(3min, 20min)));
  for (const auto& w : workers) {
    EXPECT_TRUE(w->exited_cleanly()) << run.describe(*w);
  }
  const CheckReport report = run.check();
  EXPECT_TRUE(report.ok()) << report.summary();
  EXPECT_EQ(report.lost, 0);
  EXPECT_EQ(report.double_completions, 0);
  EXPECT_EQ(report.succeeded, jobs);
  std::cout << "[ proxy    ] " << proxy_->accepted() << " connections through the proxy\n";
}

INSTANTIATE_TEST_SUITE_P(Chaos, NetworkTest, ::testing::ValuesIn(engine_names()),
                         engine_param_name);

}  // namespace
}  // namespace readpast::test

int main(int argc, char** argv) {
  // Before any thread exists: every thread and child process (the database servers
  // included) then lives in the new namespace.
  if (!readpast::test::enter_private_network_namespace(&readpast::test::g_namespace_why)) {
    std::printf("[ network  ] no private network namespace (%s): kernel drops unavailable\n",
                readpast::test::g_namespace_why.c_str());
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
