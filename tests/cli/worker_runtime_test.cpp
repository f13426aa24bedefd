// The worker runtime driven in-process with C++ handlers (the path a future
// readpast::Worker takes), against a real SQLite database; and the small pieces the
// --exec runner is built from.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "readpast/queue.hpp"
#include "support/temp_dir.hpp"
#include "worker/exec_handler.hpp"
#include "worker/runtime.hpp"
#include "worker/tail_buffer.hpp"
#include "worker/utf8.hpp"

namespace readpast::worker {
namespace {

using namespace std::chrono_literals;

class RuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    QueueOptions options;
    options.init_schema = true;
    options.backoff.base = 10ms;
    options.backoff.cap = 10ms;
    auto opened = Queue::open("sqlite:" + dir_.file("jobs.db"), options);
    ASSERT_TRUE(opened) << opened.error().message;
    queue_.emplace(std::move(*opened));
  }

  Queue& q() { return *queue_; }

  JobId enqueue(std::string payload = "x", int max_attempts = 25,
                std::optional<Duration> delay = std::nullopt) {
    NewJob job;
    job.queue = "q";
    job.payload = std::move(payload);
    job.max_attempts = max_attempts;
    job.delay = delay;
    auto enqueued = q().enqueue(job);
    EXPECT_TRUE(enqueued) << enqueued.error().message;
    return enqueued ? enqueued->id : 0;
  }

  Job get(JobId id) {
    auto job = q().get(id);
    EXPECT_TRUE(job) << job.error().message;
    return job ? *job : Job{};
  }

  RuntimeOptions options(bool drain = true) {
    RuntimeOptions o;
    o.queue = "q";
    o.worker_id = "test";
    o.drain = drain;
    o.lease_duration = 1s;
    return o;
  }

  // Waits (up to 10s) until the job is in the state.
  bool wait_for_state(JobId id, JobState state) {
    for (int i = 0; i < 1000; ++i) {
      if (get(id).state == state) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }

  test::TempDir dir_;
  std::optional<Queue> queue_;
};

// Blocks a handler until its stop token fires; returns aborted.
HandlerOutcome wait_for_stop(JobContext& context) {
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  cv.wait_for(lock, context.stop, 30s, [] { return false; });
  return context.stop.stop_requested() ? HandlerOutcome::aborted("stopped")
                                       : HandlerOutcome::succeeded();
}

TEST_F(RuntimeTest, OutcomesOfHandlersAreRecorded) {
  auto ok = enqueue("ok");
  auto bad = enqueue("bad", 1);
  auto thrown = enqueue("throw", 1);
  Runtime runtime(q(), options(), [](JobContext& context) {
    if (context.job.payload == "bad") return HandlerOutcome::failed("it went wrong");
    if (context.job.payload == "throw") throw std::runtime_error("thrown");
    return HandlerOutcome::succeeded();
  });
  ASSERT_TRUE(runtime.run());
  EXPECT_EQ(get(ok).state, JobState::kSucceeded);
  EXPECT_EQ(get(bad).state, JobState::kDead);
  EXPECT_EQ(get(bad).last_error, "it went wrong");
  EXPECT_EQ(get(thrown).last_error, "thrown");
  auto c = runtime.counters();
  EXPECT_EQ(c.succeeded, 1);
  EXPECT_EQ(c.failed, 2);
  EXPECT_EQ(c.dead, 2);
  EXPECT_EQ(c.running, 0);
}

TEST_F(RuntimeTest, NeverRunsMoreJobsThanSlots) {
  for (int i = 0; i < 24; ++i) enqueue();
  std::atomic<int> now_running{0};
  std::atomic<int> most{0};
  auto o = options();
  o.concurrency = 3;
  Runtime runtime(q(), o, [&](JobContext&) {
    int n = ++now_running;
    int seen = most.load();
    while (n > seen && !most.compare_exchange_weak(seen, n)) {
    }
    std::this_thread::sleep_for(15ms);
    --now_running;
    return HandlerOutcome::succeeded();
  });
  ASSERT_TRUE(runtime.run());
  EXPECT_EQ(runtime.counters().succeeded, 24);
  EXPECT_EQ(most.load(), 3);
}

TEST_F(RuntimeTest, DrainWaitsForScheduledAndRetryingJobs) {
  auto later = enqueue("later", 25, 300ms);
  auto flaky = enqueue("flaky", 3);
  Runtime runtime(q(), options(), [](JobContext& context) {
    if (context.job.payload == "flaky" && context.job.attempts < 2) {
      return HandlerOutcome::failed("first time");
    }
    return HandlerOutcome::succeeded();
  });
  ASSERT_TRUE(runtime.run());
  EXPECT_EQ(get(later).state, JobState::kSucceeded);
  EXPECT_EQ(get(flaky).state, JobState::kSucceeded);
  EXPECT_EQ(get(flaky).attempts, 2);
}

TEST_F(RuntimeTest, TimeoutStopsAHandlerAndFailsTheJob) {
  auto id = enqueue("x", 1);
  auto o = options();
  o.timeout = 200ms;
  Runtime runtime(q(), o, wait_for_stop);
  ASSERT_TRUE(runtime.run());
  auto job = get(id);
  EXPECT_EQ(job.state, JobState::kDead);
  EXPECT_EQ(job.last_error, "timed out after 200ms: stopped");
}

TEST_F(RuntimeTest, LostLeaseStopsTheHandlerAndDiscardsItsResult) {
  auto id = enqueue();
  Runtime runtime(q(), options(/*drain=*/true), wait_for_stop);
  std::thread canceller([&] {
    ASSERT_TRUE(wait_for_state(id, JobState::kRunning));
    std::vector<JobId> ids{id};
    ASSERT_TRUE(q().cancel(ids));
  });
  ASSERT_TRUE(runtime.run());
  canceller.join();
  EXPECT_EQ(get(id).state, JobState::kCancelled);
  EXPECT_EQ(runtime.counters().lost, 1);
  EXPECT_EQ(runtime.counters().failed, 0);
}

TEST_F(RuntimeTest, ShutdownLetsHandlersFinishWithinGrace) {
  auto id = enqueue();
  auto o = options(/*drain=*/false);
  o.grace = 10s;
  std::atomic<bool> started{false};
  Runtime runtime(q(), o, [&](JobContext&) {
    started = true;
    std::this_thread::sleep_for(200ms);
    return HandlerOutcome::succeeded();
  });
  std::thread stopper([&] {
    while (!started) std::this_thread::sleep_for(5ms);
    runtime.request_stop();
  });
  ASSERT_TRUE(runtime.run());
  stopper.join();
  EXPECT_EQ(get(id).state, JobState::kSucceeded);
}

TEST_F(RuntimeTest, ShutdownPastGraceReleasesTheJobWithoutSpendingAnAttempt) {
  auto id = enqueue();
  auto o = options(/*drain=*/false);
  o.grace = 50ms;
  Runtime runtime(q(), o, wait_for_stop);
  std::thread stopper([&] {
    ASSERT_TRUE(wait_for_state(id, JobState::kRunning));
    runtime.request_stop();
  });
  ASSERT_TRUE(runtime.run());
  stopper.join();
  auto job = get(id);
  EXPECT_EQ(job.state, JobState::kAvailable);
  EXPECT_EQ(job.attempts, 0);
  EXPECT_EQ(runtime.counters().released, 1);
}

TEST_F(RuntimeTest, SecondStopRequestSkipsTheGracePeriod) {
  auto id = enqueue();
  auto o = options(/*drain=*/false);
  o.grace = 1h;
  Runtime runtime(q(), o, wait_for_stop);
  std::thread stopper([&] {
    ASSERT_TRUE(wait_for_state(id, JobState::kRunning));
    runtime.request_stop();
    runtime.request_stop();
  });
  ASSERT_TRUE(runtime.run());
  stopper.join();
  EXPECT_EQ(get(id).state, JobState::kAvailable);
}

TEST_F(RuntimeTest, ExecHandlerStopsItsCommandWhenAsked) {
  ExecOptions exec;
  exec.command = "cat > /dev/null; sleep 30";
  exec.kill_wait = 1s;
  std::string seen_stderr;
  exec.stderr_sink = [&](std::string_view bytes) { seen_stderr.append(bytes); };
  ExecHandler handler(exec);
  Job job;
  job.id = 1;
  job.queue = "q";
  job.attempts = 1;
  job.payload = std::string(1 << 20, 'p');
  std::stop_source stop;
  JobContext context{job, stop.get_token()};
  std::thread stopper([&] {
    std::this_thread::sleep_for(200ms);
    stop.request_stop();
  });
  auto started = std::chrono::steady_clock::now();
  auto outcome = handler(context);
  stopper.join();
  EXPECT_EQ(outcome.kind, HandlerOutcome::Kind::kAborted);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
}

TEST_F(RuntimeTest, ExecHandlerSurvivesACommandThatDoesNotReadItsStdin) {
  // This test program leaves SIGPIPE at its default action, which would kill it.
  ExecOptions exec;
  exec.command = "exec 0<&-; echo closed stdin >&2; exit 0";
  exec.stderr_sink = [](std::string_view) {};
  ExecHandler handler(exec);
  Job job;
  job.id = 1;
  job.queue = "q";
  job.attempts = 1;
  job.payload = std::string(8 << 20, 'p');
  std::stop_source stop;
  JobContext context{job, stop.get_token()};
  auto outcome = handler(context);
  EXPECT_EQ(outcome.kind, HandlerOutcome::Kind::kSucceeded) << outcome.error;
}

TEST(Utf8Test, ValidatesAndSanitizes) {
  EXPECT_TRUE(is_valid_utf8("plain"));
  EXPECT_TRUE(is_valid_utf8("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_TRUE(is_valid_utf8(std::string("nul\0ok", 6)));
  EXPECT_FALSE(is_valid_utf8("\xff"));
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(is_valid_utf8("cut \xe2\x82"));
  EXPECT_EQ(sanitize_utf8("a\xff"
                          "b"),
            "a\xef\xbf\xbd"
            "b");
  EXPECT_EQ(sanitize_utf8(std::string("a\0b", 3)),
            "a\xe2\x90\x80"
            "b");
  EXPECT_EQ(sanitize_utf8("\x82\xac rest"), " rest");  // a character cut at the start
}

TEST(TailBufferTest, KeepsTheLastBytes) {
  TailBuffer tail(8);
  tail.append("abc");
  EXPECT_EQ(tail.text(), "abc");
  EXPECT_FALSE(tail.truncated());
  tail.append("defghij\n\n");
  EXPECT_TRUE(tail.truncated());
  EXPECT_EQ(tail.bytes(), "efghij\n\n");
  EXPECT_EQ(tail.text(), "...efghij");
  TailBuffer big(4);
  big.append("0123456789");
  EXPECT_EQ(big.bytes(), "6789");
  TailBuffer empty(4);
  empty.append("\n \n");
  EXPECT_EQ(empty.text(), "");
}

}  // namespace
}  // namespace readpast::worker
