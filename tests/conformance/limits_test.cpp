// Global limits (docs/workflows.md "Global limits"): a running limit and a rate over every
// client of the database, checked job by job from the jobs' own times.
#include <algorithm>
#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "conformance/queue_test.hpp"

namespace readpast::test {
namespace {

QueueLimits running_limit(std::int64_t n) {
  QueueLimits limits;
  limits.running = n;
  return limits;
}

QueueLimits rate_limit(std::int64_t count, Duration window) {
  QueueLimits limits;
  limits.rate = RateLimit{count, window};
  return limits;
}

// The most jobs running at one instant, from each job's [started_at, finished_at): a job
// that finished at t no longer runs at t.
int max_running(const std::vector<Job>& jobs) {
  std::vector<std::pair<TimePoint, int>> events;
  for (const Job& job : jobs) {
    if (!job.started_at || !job.finished_at) continue;
    events.emplace_back(*job.started_at, +1);
    events.emplace_back(*job.finished_at, -1);
  }
  std::sort(events.begin(), events.end());  // at equal times, -1 sorts first
  int running = 0;
  int most = 0;
  for (const auto& [at, delta] : events) {
    running += delta;
    most = std::max(most, running);
  }
  return most;
}

std::int64_t throttled_count(const std::vector<MetricSample>& samples, const std::string& queue,
                             const std::string& limit) {
  for (const auto& s : samples) {
    if (s.name == "readpast_lease_throttled_total" && s.queue == queue && s.label == "limit" &&
        s.label_value == limit) {
      return s.value;
    }
  }
  return 0;
}

TEST_P(QueueTest, ARunningLimitCapsALeaseOfManyAndFreesAPlaceWhenAJobSettles) {
  for (int i = 0; i < 10; ++i) enqueue("q");
  enqueue("other");
  ok(q().set_limits("q", running_limit(3)));
  auto first = lease("q", 10);
  ASSERT_EQ(first.size(), 3u) << "the running limit did not cap the lease";
  EXPECT_TRUE(lease("q", 10).empty()) << "a lease went past the running limit";
  EXPECT_TRUE(ok(open_another().lease(LeaseRequest{"q", "w2", 5})).empty())
      << "another client went past the running limit";
  EXPECT_EQ(lease("other", 10).size(), 1u) << "a limit of one queue held back another";
  ok(q().complete(first[0].id, *first[0].lease_token));
  EXPECT_EQ(lease("q", 10).size(), 1u) << "completing a job did not free its place";
  FailOptions at_once;
  at_once.retry_after = Duration::zero();
  ok(q().fail(first[1].id, *first[1].lease_token, "boom", at_once));
  EXPECT_EQ(lease("q", 10).size(), 1u) << "failing a job did not free its place";
}

TEST_P(QueueTest, ExpiredLeasesCountAsRunningUntilRescued) {
  for (int i = 0; i < 4; ++i) enqueue("q");
  ok(q().set_limits("q", running_limit(2)));
  ASSERT_EQ(lease("q", 2, "lost-worker", std::chrono::milliseconds(200)).size(), 2u);
  EXPECT_TRUE(lease("q", 2).empty());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // Rescued (by the lease's periodic rescue or by hand), the lost worker's jobs come back.
  ok(q().rescue_expired("q"));
  EXPECT_EQ(lease("q", 4).size(), 2u) << "expired leases kept blocking the queue";
}

TEST_P(QueueTest, ConcurrentLeasesFromManyHandlesNeverExceedTheRunningLimit) {
  constexpr int kLimit = 3;
  constexpr int kJobs = 60;
  std::vector<JobId> ids;
  for (int i = 0; i < kJobs; ++i) ids.push_back(enqueue("q", "p" + std::to_string(i)));
  ok(q().set_limits("q", running_limit(kLimit)));
  std::atomic<int> done{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 6; ++w) {
    workers.emplace_back([&, w] {
      Queue handle = open_another();
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (done.load() < kJobs && std::chrono::steady_clock::now() < deadline) {
        auto jobs = handle.lease(LeaseRequest{"q", "w" + std::to_string(w), 2});
        if (!jobs || jobs->empty()) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
          continue;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(3));
        for (const Job& job : *jobs) {
          if (handle.complete(job.id, *job.lease_token)) done.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : workers) t.join();
  ASSERT_EQ(done.load(), kJobs) << "not every job ran";
  std::vector<Job> jobs;
  for (JobId id : ids) jobs.push_back(get(id));
  for (const Job& job : jobs) {
    EXPECT_EQ(job.state, JobState::kSucceeded);
    EXPECT_EQ(job.attempts, 1) << "job " << job.id << " was leased twice";
  }
  const int most = max_running(jobs);
  EXPECT_LE(most, kLimit) << "more jobs ran at once than the running limit";
  EXPECT_GE(most, 2) << "the workers never ran jobs side by side: the test proves nothing";
}

TEST_P(QueueTest, ARateLimitCapsALeaseOfManyAndHoldsInEveryWindow) {
  for (int i = 0; i < 10; ++i) enqueue("hour");
  ok(q().set_limits("hour", rate_limit(3, std::chrono::hours(1))));
  EXPECT_EQ(lease("hour", 10).size(), 3u) << "the rate did not cap the lease";
  EXPECT_TRUE(lease("hour", 1).empty()) << "a lease went past the rate";

  constexpr int kCount = 3;
  constexpr auto kWindow = std::chrono::milliseconds(300);
  std::vector<JobId> ids;
  for (int i = 0; i < 40; ++i) ids.push_back(enqueue("q"));
  ok(q().set_limits("q", rate_limit(kCount, kWindow)));
  std::vector<std::thread> workers;
  for (int w = 0; w < 3; ++w) {
    workers.emplace_back([&, w] {
      Queue handle = open_another();
      const auto stop = std::chrono::steady_clock::now() + std::chrono::milliseconds(1300);
      while (std::chrono::steady_clock::now() < stop) {
        auto jobs = handle.lease(LeaseRequest{"q", "w" + std::to_string(w), 2});
        if (jobs) {
          for (const Job& job : *jobs) (void)handle.complete(job.id, *job.lease_token);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    });
  }
  for (auto& t : workers) t.join();
  std::vector<TimePoint> starts;
  for (JobId id : ids) {
    Job job = get(id);
    if (job.started_at) starts.push_back(*job.started_at);
  }
  std::sort(starts.begin(), starts.end());
  // Any kCount + 1 consecutive leases span at least the window: no window of that length
  // (wherever it starts) holds more than kCount.
  for (std::size_t i = 0; i + kCount < starts.size(); ++i) {
    EXPECT_GE(starts[i + kCount] - starts[i], kWindow)
        << "leases " << i << " to " << i + kCount << " fell in one window";
  }
  EXPECT_GE(starts.size(), 3u * kCount) << "the window did not slide: later leases got nothing";
  EXPECT_LE(starts.size(), 5u * kCount) << "more leases than 1.3 s of the rate allows";
}

TEST_P(QueueTest, ChangingARateKeepsTheLeasesItAlreadyCounted) {
  for (int i = 0; i < 10; ++i) enqueue("q");
  ok(q().set_limits("q", rate_limit(2, std::chrono::hours(1))));
  ASSERT_EQ(lease("q", 5).size(), 2u);
  ok(q().set_limits("q", rate_limit(3, std::chrono::hours(1))));
  EXPECT_EQ(lease("q", 5).size(), 1u) << "a new rate forgot the leases of the window";
  ok(q().set_limits("q", rate_limit(1, std::chrono::hours(1))));
  EXPECT_TRUE(lease("q", 5).empty());
}

TEST_P(QueueTest, SettingOneLimitKeepsTheOtherAndClearRemovesBoth) {
  for (int i = 0; i < 10; ++i) enqueue("q");
  ok(q().set_limits("q", running_limit(4)));
  ok(q().set_limits("q", rate_limit(100, std::chrono::seconds(1))));
  QueueLimits both = ok(q().limits("q"));
  EXPECT_EQ(both.running, 4);
  ASSERT_TRUE(both.rate);
  EXPECT_EQ(both.rate->count, 100);
  EXPECT_EQ(both.rate->window, std::chrono::seconds(1));
  // Another handle leases while the limits hold (so it knows the queue as limited).
  Queue other = open_another();
  EXPECT_EQ(ok(other.lease(LeaseRequest{"q", "w2", 10})).size(), 4u);
  EXPECT_TRUE(ok(other.lease(LeaseRequest{"q", "w2", 10})).empty());
  ok(q().clear_limits("q"));
  EXPECT_TRUE(ok(q().limits("q")).empty());
  EXPECT_EQ(ok(other.lease(LeaseRequest{"q", "w2", 3})).size(), 3u)
      << "cleared limits still held back another handle's lease";
  EXPECT_EQ(lease("q", 10).size(), 3u) << "cleared limits still held back leases";
}

TEST_P(QueueTest, LimitsAreInTheDatabaseForEveryClientAndShowInStats) {
  ok(q().set_limits("empty", running_limit(2)));
  ok(q().set_limits("empty", rate_limit(50, std::chrono::minutes(1))));
  Queue reopened = ok(Queue::open(url()));
  QueueLimits limits = ok(reopened.limits("empty"));
  EXPECT_EQ(limits.running, 2);
  ASSERT_TRUE(limits.rate);
  EXPECT_EQ(format_rate(*limits.rate), "50/1m");
  auto stats = ok(reopened.stats());
  ASSERT_EQ(stats.size(), 1u) << "a limited queue without jobs is not listed";
  EXPECT_EQ(stats[0].queue, "empty");
  EXPECT_EQ(stats[0].limits, limits);
  enqueue("plain");
  auto one = ok(reopened.stats("plain"));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_TRUE(one[0].limits.empty());
  one = ok(reopened.stats("empty"));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].limits.running, 2);
}

TEST_P(QueueTest, BadLimitsAreRefusedAndChangeNothing) {
  ok(q().set_limits("q", running_limit(5)));
  const std::string before = snapshot();
  EXPECT_ERROR_CODE(q().set_limits("q", running_limit(0)), ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(q().set_limits("q", running_limit(-1)), ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(q().set_limits("q", rate_limit(0, std::chrono::seconds(1))),
                    ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(q().set_limits("q", rate_limit(5, Duration::zero())),
                    ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(q().set_limits("q", rate_limit(kMaxRateCount + 1, std::chrono::seconds(1))),
                    ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(q().set_limits("q", QueueLimits{}), ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(q().set_limits("bad name", running_limit(1)), ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(q().clear_limits(""), ErrorCode::kInvalidArgument);
  EXPECT_EQ(snapshot(), before);
  EXPECT_EQ(ok(q().limits("q")).running, 5);
  for (const char* text : {"5/0s", "x/1s", "5/", "/1s", "0/1s", "-1/1s", "5", "5/1x", "5/-1s"}) {
    EXPECT_ERROR_CODE(parse_rate(text), ErrorCode::kInvalidArgument) << text;
  }
  EXPECT_EQ(ok(parse_rate("100/1s")), (RateLimit{100, std::chrono::seconds(1)}));
  EXPECT_EQ(ok(parse_rate("5000/1m")), (RateLimit{5000, std::chrono::minutes(1)}));
}

TEST_P(QueueTest, ALeaseCutShortByALimitIsCountedAsThrottled) {
  QueueOptions options;
  options.metrics_interval = std::chrono::hours(1);
  Queue& a = open(options);
  for (int i = 0; i < 5; ++i) enqueue("q");
  for (int i = 0; i < 3; ++i) enqueue("r");
  ok(a.set_limits("q", running_limit(2)));
  ok(a.set_limits("r", rate_limit(1, std::chrono::hours(1))));
  EXPECT_EQ(ok(a.lease(LeaseRequest{"q", "w", 3})).size(), 2u);  // throttled: 3 due left
  EXPECT_TRUE(ok(a.lease(LeaseRequest{"q", "w", 3})).empty());   // throttled
  EXPECT_EQ(ok(a.lease(LeaseRequest{"r", "w", 1})).size(), 1u);  // not: it took what it asked
  EXPECT_TRUE(ok(a.lease(LeaseRequest{"r", "w", 1})).empty());   // throttled by the rate
  ok(a.flush_metrics());
  auto samples = ok(a.metrics());
  EXPECT_EQ(throttled_count(samples, "q", "running"), 2);
  EXPECT_EQ(throttled_count(samples, "r", "rate"), 1);
  EXPECT_EQ(throttled_count(samples, "q", "rate"), 0);
}

TEST_P(QueueTest, WaitForWorkDoesNotReportAThrottledQueueButWakesWhenAJobSettles) {
  enqueue("q");
  enqueue("q");
  ok(q().set_limits("q", running_limit(1)));
  Job job = lease_one("q");
  const auto started = std::chrono::steady_clock::now();
  EXPECT_FALSE(ok(q().wait_for_work("q", std::chrono::milliseconds(400))))
      << "a throttled worker would spin";
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(350));
  Queue settler = open_another();
  std::thread settle([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ok(settler.complete(job.id, *job.lease_token));
  });
  const auto waiting = std::chrono::steady_clock::now();
  const bool woken = ok(q().wait_for_work("q", std::chrono::seconds(5)));
  const auto waited = std::chrono::steady_clock::now() - waiting;
  settle.join();
  EXPECT_TRUE(woken);
  EXPECT_LT(waited, std::chrono::seconds(2)) << "a settled job did not wake the waiting worker";
  EXPECT_EQ(lease("q", 5).size(), 1u);
}

}  // namespace
}  // namespace readpast::test
