// Time limits, lost leases, pause and resume, and shutdown: what the worker records when a
// handler is stopped, and that nothing is left running or leased.
#include <array>
#include <atomic>
#include <thread>
#include <vector>

#include "worker/worker_test.hpp"

namespace readpast::test {
namespace {

TEST_P(WorkerTest, ATimeoutStopsTheHandlerAndFailsTheAttempt) {
  JobId id = enqueue("q", "x", 1);
  QueueConfig config;
  config.timeout = 200ms;
  Worker worker(q(), options());
  ASSERT_TRUE(worker.handle("q", wait_for_cancel, config));
  const auto started = std::chrono::steady_clock::now();
  ASSERT_TRUE(worker.run());
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
  Job job = get(id);
  EXPECT_EQ(job.state, JobState::kDead);
  EXPECT_EQ(job.last_error, "timed out after 200ms: cancelled");
  EXPECT_EQ(log_.count("job_timed_out"), 1);
}

TEST_P(WorkerTest, APerJobTimeoutOverridesTheQueues) {
  JobId quick = enqueue("q", "100ms", 1);
  JobId patient = enqueue("q", "none", 1);
  QueueConfig config;
  config.timeout = 10s;
  config.timeout_for = [](const Job& job) -> std::optional<Duration> {
    if (job.payload == "100ms") return Duration(100ms);
    return std::nullopt;
  };
  Worker worker(q(), options());
  ASSERT_TRUE(worker.handle(
      "q",
      [](const Job& job, std::stop_token cancel) {
        if (job.payload == "100ms") return wait_for_cancel(job, cancel);
        std::this_thread::sleep_for(300ms);  // within the queue's 10s
        return JobResult::success();
      },
      config));
  ASSERT_TRUE(worker.run());
  EXPECT_EQ(get(quick).state, JobState::kDead);
  EXPECT_EQ(get(quick).last_error, "timed out after 100ms: cancelled");
  EXPECT_EQ(get(patient).state, JobState::kSucceeded);
}

TEST_P(WorkerTest, ALostLeaseStopsTheHandlerAndDiscardsItsResult) {
  JobId id = enqueue("q");
  Queue admin = open_another();
  WorkerOptions o = options();
  o.lease_duration = 600ms;  // extended every 200ms: the cancel is noticed soon
  Worker worker(q(), o);
  std::atomic<bool> cancelled_seen{false};
  ASSERT_TRUE(worker.handle("q", [&](const Job& job, std::stop_token cancel) {
    auto result = wait_for_cancel(job, cancel);
    cancelled_seen = cancel.stop_requested();
    return JobResult::success();  // discarded: the lease was lost
  }));
  std::thread canceller([&] {
    ASSERT_TRUE(wait_for_state(id, JobState::kRunning));
    ASSERT_TRUE(admin.cancel(std::vector<JobId>{id}));
  });
  ASSERT_TRUE(worker.run());
  canceller.join();
  EXPECT_TRUE(cancelled_seen) << "the handler's stop token never fired";
  EXPECT_EQ(get(id).state, JobState::kCancelled) << "the result of a lost lease was recorded";
  EXPECT_EQ(worker.counters().lost, 1);
  EXPECT_EQ(worker.counters().succeeded, 0);
}

TEST_P(WorkerTest, ACancelStopsTheHandlerWithinASecondWhateverTheLease) {
  // The default 30 s lease is extended every 10 s; between extends the worker reads whether
  // its leases still hold (runtime.cpp, kLeaseCheck), so the handler (an --exec command:
  // SIGTERM) is stopped within a second of the cancel. The bound leaves room for sanitizer
  // builds on a busy machine; without the check the stop comes at the next extend, 10 s.
  JobId id = enqueue("q");
  Queue admin = open_another();
  WorkerOptions o = options();
  o.lease_duration = 30s;
  Worker worker(q(), o);
  std::atomic<std::int64_t> stopped_at{0};
  ASSERT_TRUE(worker.handle("q", [&](const Job& job, std::stop_token cancel) {
    auto result = wait_for_cancel(job, cancel);
    stopped_at = std::chrono::steady_clock::now().time_since_epoch().count();
    return result;
  }));
  std::atomic<std::int64_t> cancelled_at{0};
  std::thread canceller([&] {
    ASSERT_TRUE(wait_for_state(id, JobState::kRunning));
    std::this_thread::sleep_for(100ms);  // not just after a check
    cancelled_at = std::chrono::steady_clock::now().time_since_epoch().count();
    ASSERT_TRUE(admin.cancel(std::vector<JobId>{id}));
  });
  ASSERT_TRUE(worker.run());
  canceller.join();
  ASSERT_NE(stopped_at.load(), 0);
  const auto took = std::chrono::steady_clock::duration(stopped_at - cancelled_at);
  EXPECT_LT(took, 1500ms) << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                          << " ms from the cancel to the handler's stop";
  EXPECT_EQ(get(id).state, JobState::kCancelled);
  EXPECT_EQ(worker.counters().lost, 1);
}

TEST_P(WorkerTest, OnPostgresACancelIsPushedToTheHandlerFasterThanAnyPoll) {
  // PostgreSQL announces a cancel at commit (Queue::on_cancel): the worker checks its leases
  // at once, instead of at its next poll (every 400 ms). Four cancels at different moments
  // between polls all stop their handlers within 250 ms; polling alone would take longer
  // for most of them.
  if (GetParam() != "postgres") GTEST_SKIP() << "only PostgreSQL pushes cancellations";
  constexpr int kJobs = 4;
  std::vector<JobId> ids;
  for (int i = 0; i < kJobs; ++i) ids.push_back(enqueue("q"));
  Queue admin = open_another();
  WorkerOptions o = options();
  o.lease_duration = 30s;
  Worker worker(q(), o);
  QueueConfig one_at_a_time;
  one_at_a_time.concurrency = 1;
  std::array<std::atomic<std::int64_t>, kJobs> stopped_at{};
  ASSERT_TRUE(worker.handle(
      "q",
      [&](const Job& job, std::stop_token cancel) {
        auto result = wait_for_cancel(job, cancel);
        for (int i = 0; i < kJobs; ++i) {
          if (ids[i] == job.id)
            stopped_at[i] = std::chrono::steady_clock::now().time_since_epoch().count();
        }
        return result;
      },
      one_at_a_time));
  std::array<std::int64_t, kJobs> cancelled_at{};
  std::thread canceller([&] {
    for (int i = 0; i < kJobs; ++i) {
      ASSERT_TRUE(wait_for_state(ids[i], JobState::kRunning));
      std::this_thread::sleep_for(std::chrono::milliseconds(60 + 90 * i));  // apart from polls
      cancelled_at[i] = std::chrono::steady_clock::now().time_since_epoch().count();
      ASSERT_TRUE(admin.cancel(std::vector<JobId>{ids[i]}));
    }
  });
  ASSERT_TRUE(worker.run());
  canceller.join();
  for (int i = 0; i < kJobs; ++i) {
    ASSERT_NE(stopped_at[i].load(), 0) << i;
    const auto took = std::chrono::steady_clock::duration(stopped_at[i] - cancelled_at[i]);
    EXPECT_LT(took, 250ms) << "job " << i << ": "
                           << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                           << " ms from the cancel to the handler's stop";
  }
  EXPECT_EQ(worker.counters().lost, kJobs);
}

TEST_P(WorkerTest, LeasesAreExtendedWhileAHandlerRuns) {
  JobId id = enqueue("q");
  WorkerOptions o = options();
  o.lease_duration = 300ms;
  Queue other = open_another();
  std::atomic<bool> stolen{false};
  Worker worker(q(), o);
  ASSERT_TRUE(worker.handle("q", [&](const Job&, std::stop_token) {
    // Four lease lengths: without extensions the job would be anyone's by now.
    for (int i = 0; i < 12; ++i) {
      std::this_thread::sleep_for(100ms);
      auto taken = other.lease(LeaseRequest{"q", "thief", 1, 1s});
      if (taken && !taken->empty()) stolen = true;
    }
    return JobResult::success();
  }));
  ASSERT_TRUE(worker.run());
  EXPECT_FALSE(stolen) << "another worker leased the job while its handler ran";
  EXPECT_EQ(get(id).state, JobState::kSucceeded);
  EXPECT_EQ(get(id).attempts, 1);
}

TEST_P(WorkerTest, AWorkerDoesNotLeaseFromAPausedQueueAndResumesWhenItIsResumed) {
  ASSERT_TRUE(q().pause("q"));
  JobId id = enqueue("q");
  std::atomic<int> runs{0};
  RunningWorker running(q(), options(/*drain=*/false), [&](Worker& w) {
    ASSERT_TRUE(w.handle("q", [&](const Job&, std::stop_token) {
      ++runs;
      return JobResult::success();
    }));
  });
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(runs, 0) << "a job of a paused queue was run";
  EXPECT_EQ(get(id).state, JobState::kAvailable);
  Queue admin = open_another();
  ASSERT_TRUE(admin.resume("q"));
  EXPECT_TRUE(wait_for_state(id, JobState::kSucceeded));
  EXPECT_EQ(runs, 1);
}

TEST_P(WorkerTest, PausingLetsRunningJobsFinish) {
  JobId first = enqueue("q", "first");
  JobId second = enqueue("q", "second");
  std::atomic<bool> first_started{false};
  std::atomic<bool> release_first{false};
  RunningWorker running(q(), options(/*drain=*/false), [&](Worker& w) {
    ASSERT_TRUE(w.handle("q", [&](const Job& job, std::stop_token) {
      if (job.payload == "first") {
        first_started = true;
        while (!release_first) std::this_thread::sleep_for(5ms);
      }
      return JobResult::success();
    }));
  });
  ASSERT_TRUE(eventually([&] { return first_started.load(); }));
  Queue admin = open_another();
  ASSERT_TRUE(admin.pause("q"));
  release_first = true;
  EXPECT_TRUE(wait_for_state(first, JobState::kSucceeded));
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(get(second).state, JobState::kAvailable) << "leased from a paused queue";
}

TEST_P(WorkerTest, ShutdownLetsRunningHandlersFinishWithinTheGrace) {
  JobId id = enqueue("q");
  std::atomic<bool> started{false};
  WorkerOptions o = options(/*drain=*/false);
  o.grace = 10s;
  Worker worker(q(), o);
  ASSERT_TRUE(worker.handle("q", [&](const Job&, std::stop_token) {
    started = true;
    std::this_thread::sleep_for(300ms);
    return JobResult::success();
  }));
  std::thread stopper([&] {
    while (!started) std::this_thread::sleep_for(5ms);
    worker.stop();
  });
  ASSERT_TRUE(worker.run());
  stopper.join();
  EXPECT_EQ(get(id).state, JobState::kSucceeded);
  EXPECT_EQ(worker.counters().released, 0);
}

TEST_P(WorkerTest, ShutdownPastTheGraceReleasesJobsWithoutSpendingAnAttempt) {
  JobId id = enqueue("q");
  WorkerOptions o = options(/*drain=*/false);
  o.grace = 100ms;
  Worker worker(q(), o);
  std::atomic<bool> started{false};
  std::atomic<bool> cancelled{false};
  ASSERT_TRUE(worker.handle("q", [&](const Job& job, std::stop_token cancel) {
    started = true;
    auto result = wait_for_cancel(job, cancel);
    cancelled = cancel.stop_requested();
    return result;
  }));
  // Stop once the handler runs: a job leased but not yet handed to a handler is released
  // without one (ShutdownReleasesPrefetchedJobsNobodyStarted).
  std::thread stopper([&] {
    ASSERT_TRUE(wait_for_state(id, JobState::kRunning));
    while (!started) std::this_thread::sleep_for(5ms);
    worker.stop();
  });
  ASSERT_TRUE(worker.run());
  stopper.join();
  EXPECT_TRUE(cancelled);
  Job job = get(id);
  EXPECT_EQ(job.state, JobState::kAvailable);
  EXPECT_EQ(job.attempts, 0);
  EXPECT_EQ(worker.counters().released, 1);
  EXPECT_EQ(worker.counters().failed, 0);
}

TEST_P(WorkerTest, ASecondStopEndsTheGraceAtOnce) {
  JobId id = enqueue("q");
  WorkerOptions o = options(/*drain=*/false);
  o.grace = 1h;
  Worker worker(q(), o);
  ASSERT_TRUE(worker.handle("q", wait_for_cancel));
  std::thread stopper([&] {
    ASSERT_TRUE(wait_for_state(id, JobState::kRunning));
    worker.stop();
    std::this_thread::sleep_for(100ms);
    worker.stop();
  });
  const auto started = std::chrono::steady_clock::now();
  ASSERT_TRUE(worker.run());
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);
  EXPECT_EQ(get(id).state, JobState::kAvailable);
}

TEST_P(WorkerTest, ShutdownReleasesPrefetchedJobsNobodyStarted) {
  for (int i = 0; i < 20; ++i) enqueue("q");
  std::atomic<bool> started{false};
  QueueConfig config;
  config.prefetch = 10;
  WorkerOptions o = options(/*drain=*/false);
  o.grace = 10s;
  Worker worker(q(), o);
  ASSERT_TRUE(worker.handle(
      "q",
      [&](const Job&, std::stop_token) {
        started = true;
        std::this_thread::sleep_for(300ms);
        return JobResult::success();
      },
      config));
  std::thread stopper([&] {
    while (!started) std::this_thread::sleep_for(5ms);
    worker.stop();
  });
  ASSERT_TRUE(worker.run());
  stopper.join();
  QueueStats s = stats("q");
  EXPECT_EQ(s.running, 0) << "a leased job was left running";
  EXPECT_EQ(s.succeeded + s.available, 20);
  EXPECT_GE(worker.counters().released, 1) << "nothing was prefetched";
  ListRequest available;
  available.queue = "q";
  available.state = JobState::kAvailable;
  auto left = q().list(available);
  ASSERT_TRUE(left);
  for (const Job& job : *left) {
    EXPECT_EQ(job.attempts, 0) << "a released job spent an attempt";
  }
}

TEST_P(WorkerTest, ADrainingWorkerEndsOnceItsLastJobIsSettledNotAfterAnIdleWait) {
  // Two threads, one job: the fetcher has a free thread while the job runs, so it leases
  // again and finds nothing. The job's completion sends no notification, so a worker that
  // then waits for work waits its whole idle wait (5 s here) before it looks again and
  // sees that the queue is drained. It must look as soon as its last job is settled (the
  // bound leaves seconds for a sanitizer build on a loaded machine).
  const JobId id = enqueue("q");
  WorkerOptions o = options();
  o.idle_wait_min = 5s;
  o.idle_wait_max = 5s;
  QueueConfig two_threads;
  two_threads.concurrency = 2;
  Worker worker(q(), o);
  ASSERT_TRUE(worker.handle(
      "q",
      [&](const Job&, std::stop_token) {
        std::this_thread::sleep_for(300ms);
        return JobResult::success();
      },
      two_threads));
  const auto started = std::chrono::steady_clock::now();
  ASSERT_TRUE(worker.run());
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_LT(took, 3s) << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                      << " ms to drain one job of 300 ms";
  EXPECT_EQ(get(id).state, JobState::kSucceeded);
}

TEST_P(WorkerTest, StopBeforeRunReturnsAtOnce) {
  enqueue("q");
  Worker worker(q(), options(/*drain=*/false));
  ASSERT_TRUE(worker.handle("q", [](const Job&, std::stop_token) { return JobResult::success(); }));
  worker.stop();
  ASSERT_TRUE(worker.run());
  EXPECT_EQ(worker.counters().succeeded, 0);
}

}  // namespace
}  // namespace readpast::test
