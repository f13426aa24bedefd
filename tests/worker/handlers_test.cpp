// What handlers return, and how the worker leases for them: results, exceptions, retry
// policies, concurrency, batches no larger than free threads, several queues, wake-ups.
#include <time.h>

#include <set>

#include "support/engines.hpp"
#include "worker/worker_test.hpp"

namespace readpast::test {
namespace {

TEST_P(WorkerTest, EventsBelowTheLogLevelAreNotLogged) {
  for (int i = 0; i < 3; ++i) enqueue("q");
  WorkerOptions quiet = options();
  quiet.log_level = LogLevel::kInfo;
  {
    Worker worker(q(), quiet);
    ASSERT_TRUE(
        worker.handle("q", [](const Job&, std::stop_token) { return JobResult::success(); }));
    ASSERT_TRUE(worker.run());
    EXPECT_EQ(worker.counters().succeeded, 3);
  }
  EXPECT_EQ(log_.count("job_started"), 0) << log_.all();
  EXPECT_EQ(log_.count("job_succeeded"), 0) << log_.all();
  EXPECT_EQ(log_.count("drained"), 1) << "an info event was dropped: " << log_.all();

  // Above kDebug too: at kWarn (readpast work -q) the info event of the drain stays out.
  enqueue("q");
  WorkerOptions warnings_only = options();
  warnings_only.log_level = LogLevel::kWarn;
  {
    Worker worker(q(), warnings_only);
    ASSERT_TRUE(
        worker.handle("q", [](const Job&, std::stop_token) { return JobResult::success(); }));
    ASSERT_TRUE(worker.run());
    EXPECT_EQ(worker.counters().succeeded, 1);
  }
  EXPECT_EQ(log_.count("drained"), 1) << "an info event below kWarn was logged: " << log_.all();

  // The default level sends every event to the logger.
  for (int i = 0; i < 2; ++i) enqueue("q");
  Worker worker(q(), options());
  ASSERT_TRUE(worker.handle("q", [](const Job&, std::stop_token) { return JobResult::success(); }));
  ASSERT_TRUE(worker.run());
  EXPECT_EQ(log_.count("job_started"), 2) << log_.all();
  EXPECT_EQ(log_.count("job_succeeded"), 2) << log_.all();
}

TEST_P(WorkerTest, HandlerResultsAreRecorded) {
  JobId ok = enqueue("q", "ok");
  JobId bad = enqueue("q", "bad", 1);
  JobId thrown = enqueue("q", "throw", 1);
  JobId odd = enqueue("q", "odd", 1);
  JobId gave_up = enqueue("q", "discard", 25);
  Worker worker(q(), options());
  ASSERT_TRUE(worker.handle("q", [](const Job& job, std::stop_token) {
    if (job.payload == "bad") return JobResult::failure("it went wrong");
    if (job.payload == "throw") throw std::runtime_error("thrown");
    if (job.payload == "odd") throw 42;
    if (job.payload == "discard") return JobResult::discard("cannot ever work");
    return JobResult::success();
  }));
  ASSERT_TRUE(worker.run());
  EXPECT_EQ(get(ok).state, JobState::kSucceeded);
  EXPECT_EQ(get(bad).state, JobState::kDead);
  EXPECT_EQ(get(bad).last_error, "it went wrong");
  EXPECT_EQ(get(thrown).state, JobState::kDead);
  EXPECT_EQ(get(thrown).last_error, "thrown");
  EXPECT_EQ(get(odd).last_error, "the handler threw an exception that is not a std::exception");
  EXPECT_EQ(get(gave_up).state, JobState::kDead) << "discard left attempts to spend";
  EXPECT_EQ(get(gave_up).attempts, 1);
  auto c = worker.counters();
  EXPECT_EQ(c.succeeded, 1);
  EXPECT_EQ(c.failed, 4);
  EXPECT_EQ(c.dead, 4);
  EXPECT_EQ(c.running, 0);
  EXPECT_EQ(log_.count("job_dead"), 4) << log_.all();
}

TEST_P(WorkerTest, FailuresAreRetriedWithTheQueuesBackoffOrTheDelayAsked) {
  JobId flaky = enqueue("q", "flaky", 3);
  JobId later = enqueue("q", "later", 3);
  std::mutex mu;
  std::map<JobId, std::vector<std::chrono::steady_clock::time_point>> runs;
  QueueConfig config;
  config.backoff = Backoff{50ms, 50ms, 0.0};
  Worker worker(q(), options());
  ASSERT_TRUE(worker.handle(
      "q",
      [&](const Job& job, std::stop_token) {
        {
          std::lock_guard lock(mu);
          runs[job.id].push_back(std::chrono::steady_clock::now());
        }
        if (job.attempts == 1) {
          return job.payload == "later" ? JobResult::retry_after(400ms, "not yet")
                                        : JobResult::failure("first time");
        }
        return JobResult::success();
      },
      config));
  ASSERT_TRUE(worker.run());
  EXPECT_EQ(get(flaky).state, JobState::kSucceeded);
  EXPECT_EQ(get(flaky).attempts, 2);
  EXPECT_EQ(get(later).state, JobState::kSucceeded);
  ASSERT_EQ(runs[later].size(), 2u);
  EXPECT_GE(runs[later][1] - runs[later][0], 380ms) << "retry_after was not honoured";
  ASSERT_EQ(runs[flaky].size(), 2u);
  EXPECT_LT(runs[flaky][1] - runs[flaky][0], 380ms) << "the queue's 50ms backoff was not used";
}

TEST_P(WorkerTest, AQueuesOwnRetryDelayFunctionDecidesWhenAFailedJobRunsAgain) {
  JobId id = enqueue("q", "x", 3);
  std::vector<std::chrono::steady_clock::time_point> runs;
  std::vector<int> asked_for;
  QueueConfig config;
  config.retry_delay = [&](const Job& job) -> Duration {
    asked_for.push_back(job.attempts);
    return job.attempts == 1 ? Duration(50ms) : Duration(400ms);
  };
  Worker worker(q(), options());
  ASSERT_TRUE(worker.handle(
      "q",
      [&](const Job& job, std::stop_token) {
        runs.push_back(std::chrono::steady_clock::now());
        return job.attempts < 3 ? JobResult::failure("again") : JobResult::success();
      },
      config));
  ASSERT_TRUE(worker.run());
  EXPECT_EQ(get(id).state, JobState::kSucceeded);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(asked_for, (std::vector<int>{1, 2}));
  EXPECT_LT(runs[1] - runs[0], 350ms);
  EXPECT_GE(runs[2] - runs[1], 380ms);
}

TEST_P(WorkerTest, AQueuesMaxAttemptsCapsTheJobsOwn) {
  JobId id = enqueue("q", "x", 25);
  QueueConfig config;
  config.max_attempts = 2;
  config.backoff = Backoff{1ms, 1ms, 0.0};
  Worker worker(q(), options());
  ASSERT_TRUE(worker.handle(
      "q", [](const Job&, std::stop_token) { return JobResult::failure("always"); }, config));
  ASSERT_TRUE(worker.run());
  EXPECT_EQ(get(id).state, JobState::kDead);
  EXPECT_EQ(get(id).attempts, 2);
}

TEST_P(WorkerTest, NeverRunsOrLeasesMoreJobsThanItsThreads) {
  for (int i = 0; i < 30; ++i) enqueue("q");
  std::atomic<int> now_running{0};
  std::atomic<int> most_running{0};
  std::atomic<std::int64_t> most_leased{0};
  Queue observer = open_another();
  QueueConfig config;
  config.concurrency = 3;
  Worker worker(q(), options());
  ASSERT_TRUE(worker.handle(
      "q",
      [&](const Job&, std::stop_token) {
        int n = ++now_running;
        int seen = most_running.load();
        while (n > seen && !most_running.compare_exchange_weak(seen, n)) {
        }
        // Jobs leased (running in the database) never outnumber free threads.
        if (auto s = observer.stats("q"); s && !s->empty()) {
          std::int64_t leased = s->front().running;
          std::int64_t top = most_leased.load();
          while (leased > top && !most_leased.compare_exchange_weak(top, leased)) {
          }
        }
        std::this_thread::sleep_for(10ms);
        --now_running;
        return JobResult::success();
      },
      config));
  ASSERT_TRUE(worker.run());
  EXPECT_EQ(worker.counters().succeeded, 30);
  EXPECT_EQ(most_running.load(), 3);
  EXPECT_LE(most_leased.load(), 3) << "leased more jobs than it had free threads";
}

TEST_P(WorkerTest, PrefetchLeasesAheadAndStillRunsEveryJobOnce) {
  constexpr int kJobs = 500;
  std::vector<NewJob> jobs;
  for (int i = 0; i < kJobs; ++i) {
    NewJob job;
    job.queue = "q";
    job.payload = std::to_string(i);
    jobs.push_back(job);
  }
  ASSERT_TRUE(q().enqueue_batch(jobs));
  std::mutex mu;
  std::multiset<std::string> seen;
  QueueConfig config;
  config.concurrency = 4;
  config.prefetch = 100;
  Worker worker(q(), options());
  ASSERT_TRUE(worker.handle(
      "q",
      [&](const Job& job, std::stop_token) {
        std::lock_guard lock(mu);
        seen.insert(job.payload);
        return JobResult::success();
      },
      config));
  ASSERT_TRUE(worker.run());
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(kJobs));
  for (int i = 0; i < kJobs; ++i) EXPECT_EQ(seen.count(std::to_string(i)), 1u) << i;
  EXPECT_EQ(stats("q").succeeded, kJobs);
  EXPECT_EQ(worker.counters().succeeded, kJobs);
}

TEST_P(WorkerTest, OneWorkerRunsSeveralQueuesEachWithItsOwnHandler) {
  JobId a = enqueue("alpha", "a");
  JobId b = enqueue("beta", "b");
  std::atomic<int> alpha_runs{0}, beta_runs{0};
  Worker worker(q(), options());
  ASSERT_TRUE(worker.handle("alpha", [&](const Job& job, std::stop_token) {
    EXPECT_EQ(job.queue, "alpha");
    ++alpha_runs;
    return JobResult::success();
  }));
  ASSERT_TRUE(worker.handle("beta", [&](const Job& job, std::stop_token) {
    EXPECT_EQ(job.queue, "beta");
    ++beta_runs;
    return JobResult::success();
  }));
  EXPECT_EQ(worker.handle("alpha", [](const Job&, std::stop_token) { return JobResult::success(); })
                .error()
                .code,
            ErrorCode::kInvalidArgument);
  ASSERT_TRUE(worker.run());
  EXPECT_EQ(alpha_runs, 1);
  EXPECT_EQ(beta_runs, 1);
  EXPECT_EQ(get(a).state, JobState::kSucceeded);
  EXPECT_EQ(get(b).state, JobState::kSucceeded);
  EXPECT_EQ(get(a).leased_by, "tester");
}

TEST_P(WorkerTest, BadConfigurationIsRefused) {
  Worker worker(q(), options());
  auto noop = [](const Job&, std::stop_token) { return JobResult::success(); };
  EXPECT_FALSE(worker.handle("bad name", noop));
  EXPECT_FALSE(worker.handle("q", nullptr));
  QueueConfig bad;
  bad.concurrency = 0;
  EXPECT_FALSE(worker.handle("q", noop, bad));
  bad.concurrency = 2000;
  EXPECT_FALSE(worker.handle("q", noop, bad));
  bad.concurrency = 1;
  bad.prefetch = -1;
  EXPECT_FALSE(worker.handle("q", noop, bad));
  QueueConfig zero_timeout;
  zero_timeout.timeout = Duration::zero();
  EXPECT_FALSE(worker.handle("q", noop, zero_timeout));
  Worker nothing(q(), options());
  EXPECT_EQ(nothing.run().error().code, ErrorCode::kInvalidArgument) << "run() without a queue";
  WorkerOptions no_lease = options();
  no_lease.lease_duration = Duration::zero();
  Worker bad_options(q(), no_lease);
  ASSERT_TRUE(bad_options.handle("q", noop));
  EXPECT_EQ(bad_options.run().error().code, ErrorCode::kInvalidArgument);
}

TEST_P(WorkerTest, AnIdleWorkerStartsANewJobSoonAndDoesNotSpin) {
  std::atomic<std::int64_t> started_at_ns{0};
  WorkerOptions o = options(/*drain=*/false);
  o.idle_wait_max = 1s;
  RunningWorker running(q(), o, [&](Worker& w) {
    ASSERT_TRUE(w.handle("q", [&](const Job&, std::stop_token) {
      started_at_ns = std::chrono::steady_clock::now().time_since_epoch().count();
      return JobResult::success();
    }));
  });
  // Idle for a while: the worker must not burn CPU waiting.
  std::this_thread::sleep_for(500ms);
  timespec cpu_before{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu_before);
  std::this_thread::sleep_for(1500ms);
  timespec cpu_after{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu_after);
  const double cpu_s = static_cast<double>(cpu_after.tv_sec - cpu_before.tv_sec) +
                       static_cast<double>(cpu_after.tv_nsec - cpu_before.tv_nsec) / 1e9;
  EXPECT_LT(cpu_s, 0.5) << "an idle worker used " << cpu_s << " s of CPU in 1.5 s";

  Queue producer = open_another();
  NewJob job;
  job.queue = "q";
  const auto enqueued = std::chrono::steady_clock::now();
  ASSERT_TRUE(producer.enqueue(job));
  ASSERT_TRUE(eventually([&] { return started_at_ns.load() != 0; }));
  const auto latency = std::chrono::nanoseconds(started_at_ns.load()) - enqueued.time_since_epoch();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(latency).count();
  std::cout << "[ latency  ] enqueue to start on an idle " << GetParam() << " worker: " << ms
            << " ms\n";
  EXPECT_LT(latency, 1500ms) << "the worker slept past its longest idle wait";
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Worker, WorkerTest, ::testing::ValuesIn(engine_names()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           return param_info.param;
                         });

}  // namespace readpast::test
