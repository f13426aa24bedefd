// lease: order, max_jobs, delayed jobs, the columns it sets, and concurrent leasers.
#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "conformance/queue_test.hpp"

namespace readpast::test {
namespace {

TEST_P(QueueTest, LeaseOrdersByPriorityThenRunAtThenId) {
  const TimePoint t0 = now();
  auto at = [&](int priority, Duration ago) {
    auto spec = new_job("q", std::to_string(priority));
    spec.priority = priority;
    spec.run_at = t0 - ago;
    return enqueue(spec);
  };
  // Enqueued in an order that matches none of the keys on its own.
  JobId p5_old = at(5, std::chrono::minutes(10));
  JobId p1_new = at(1, std::chrono::minutes(1));
  JobId p5_new_a = at(5, std::chrono::minutes(1));
  JobId p1_old = at(1, std::chrono::minutes(10));
  JobId p5_new_b = at(5, std::chrono::minutes(1));
  JobId p3 = at(3, std::chrono::minutes(5));
  JobId p1_new_b = at(1, std::chrono::minutes(1));

  std::vector<JobId> expected = {p1_old, p1_new, p1_new_b, p3, p5_old, p5_new_a, p5_new_b};
  std::vector<JobId> got;
  for (std::size_t i = 0; i < expected.size(); ++i) got.push_back(lease_one("q").id);
  EXPECT_EQ(got, expected);
  EXPECT_TRUE(lease("q", 10).empty());
}

TEST_P(QueueTest, LeaseOfManyJobsReturnsThemInHandOutOrder) {
  auto low = new_job("q");
  low.priority = 200;
  JobId a = enqueue(low);
  JobId b = enqueue("q");
  auto high = new_job("q");
  high.priority = 0;
  JobId c = enqueue(high);
  JobId d = enqueue("q");
  auto leased = lease("q", 3);
  EXPECT_EQ(ids_of(leased), (std::vector<JobId>{c, b, d}));
  EXPECT_EQ(ids_of(lease("q", 3)), std::vector<JobId>{a});
}

TEST_P(QueueTest, LeaseIsFifoWithinAPriority) {
  std::vector<JobId> ids;
  for (int i = 0; i < 10; ++i) ids.push_back(enqueue("q", std::to_string(i)));
  std::vector<JobId> got;
  for (int i = 0; i < 10; ++i) got.push_back(lease_one("q").id);
  EXPECT_EQ(got, ids);
}

TEST_P(QueueTest, NegativeAndLargePrioritiesOrderNumerically) {
  auto spec = [](int priority) {
    auto job = new_job("q");
    job.priority = priority;
    return job;
  };
  JobId big = enqueue(spec(100000));
  JobId neg = enqueue(spec(-5));
  JobId zero = enqueue(spec(0));
  JobId nine = enqueue(spec(9));
  JobId ten = enqueue(spec(10));  // "10" sorts before "9" as text
  EXPECT_EQ(ids_of(lease("q", 5)), (std::vector<JobId>{neg, zero, nine, ten, big}));
}

TEST_P(QueueTest, LeaseReturnsAtMostMaxJobs) {
  for (int i = 0; i < 7; ++i) enqueue("q");
  EXPECT_EQ(lease("q", 3).size(), 3u);
  EXPECT_EQ(lease("q", 1).size(), 1u);
  EXPECT_EQ(lease("q", 10).size(), 3u);
  EXPECT_EQ(lease("q", 10).size(), 0u);
}

TEST_P(QueueTest, LeaseOfAnEmptyQueueReturnsNothing) {
  EXPECT_TRUE(lease("nothing-here", 5).empty());
  enqueue("other");
  EXPECT_TRUE(lease("nothing-here", 5).empty());
}

TEST_P(QueueTest, LeaseOnlyTakesJobsOfItsQueue) {
  JobId a = enqueue("a");
  JobId b = enqueue("b");
  EXPECT_EQ(ids_of(lease("b", 10)), std::vector<JobId>{b});
  EXPECT_EQ(ids_of(lease("a", 10)), std::vector<JobId>{a});
}

TEST_P(QueueTest, LeaseSkipsRunningAndFinishedJobs) {
  JobId running = enqueue("q");
  lease_one("q");
  succeeded_job("q");
  dead_job("q");
  cancelled_job("q");
  EXPECT_TRUE(lease("q", 10).empty());
  EXPECT_EQ(get(running).state, JobState::kRunning);
}

TEST_P(QueueTest, DelayedJobIsNotLeasedBeforeRunAtAndIsLeasedAfter) {
  auto spec = new_job("q");
  spec.delay = std::chrono::milliseconds(700);
  JobId id = enqueue(spec);
  const TimePoint run_at = get(id).run_at;
  EXPECT_TRUE(lease("q", 1).empty()) << "leased before its run_at";
  std::optional<Job> leased;
  ASSERT_TRUE(eventually([&] {
    auto jobs = lease("q", 1);
    if (jobs.empty()) return false;
    leased = jobs.front();
    return true;
  })) << "never leased after its run_at";
  EXPECT_EQ(leased->id, id);
  // Leased at or after run_at: the database set started_at from the same clock.
  ASSERT_TRUE(leased->started_at.has_value());
  EXPECT_GE(*leased->started_at, run_at - kClockTolerance);
  EXPECT_GE(now(), run_at - kClockTolerance);
}

TEST_P(QueueTest, ScheduledJobDoesNotBlockLaterJobsOfHigherPriority) {
  auto scheduled = new_job("q");
  scheduled.priority = 0;
  scheduled.delay = std::chrono::hours(1);
  enqueue(scheduled);
  JobId ready = enqueue("q");
  EXPECT_EQ(ids_of(lease("q", 10)), std::vector<JobId>{ready});
}

TEST_P(QueueTest, LeaseSetsRunningAttemptsTokenWorkerExpiryAndStartedAt) {
  JobId id = enqueue("q", "the payload");
  const Job before_lease = get(id);
  TimePoint before = now();
  auto jobs = ok(q().lease(LeaseRequest{"q", "host-a/123/7", 1, std::chrono::seconds(45)}));
  TimePoint after = now();
  ASSERT_EQ(jobs.size(), 1u);
  const Job& job = jobs.front();
  EXPECT_EQ(job.id, id);
  EXPECT_EQ(job.state, JobState::kRunning);
  EXPECT_EQ(job.attempts, 1);
  ASSERT_TRUE(job.lease_token.has_value());
  EXPECT_EQ(job.lease_token->hex().size(), 32u);
  EXPECT_EQ(job.leased_by, std::optional<std::string>("host-a/123/7"));
  ASSERT_TRUE(job.lease_expires_at.has_value());
  EXPECT_TIME_WITHIN(*job.lease_expires_at, before + std::chrono::seconds(45),
                     after + std::chrono::seconds(45));
  ASSERT_TRUE(job.started_at.has_value());
  EXPECT_TIME_WITHIN(*job.started_at, before, after);
  EXPECT_EQ(job.payload, "the payload");
  // Unchanged by the lease.
  EXPECT_EQ(job.queue, "q");
  EXPECT_EQ(job.priority, before_lease.priority);
  EXPECT_EQ(job.max_attempts, before_lease.max_attempts);
  EXPECT_EQ(job.enqueued_at, before_lease.enqueued_at);
  EXPECT_FALSE(job.finished_at.has_value());
  // What lease returned is what is stored.
  EXPECT_EQ(dump(get(id)), dump(job));
}

TEST_P(QueueTest, EveryLeaseGetsAFreshToken) {
  JobId id = enqueue("q");
  std::set<std::string> tokens;
  for (int i = 0; i < 5; ++i) {
    Job job = lease_one("q");
    ASSERT_EQ(job.id, id);
    EXPECT_EQ(job.attempts, 1) << "release must not spend an attempt";
    EXPECT_TRUE(tokens.insert(job.lease_token->hex()).second)
        << "token reused: " << job.lease_token->hex();
    ok(q().release(job.id, *job.lease_token));
  }
  // Tokens of different jobs leased together differ too.
  for (int i = 0; i < 5; ++i) enqueue("q");
  for (const auto& job : lease("q", 10)) {
    EXPECT_TRUE(tokens.insert(job.lease_token->hex()).second);
  }
}

TEST_P(QueueTest, ConcurrentLeasersNeverGetTheSameJob) {
  constexpr int kJobs = 400;
  constexpr int kThreads = 4;
  std::vector<NewJob> jobs;
  for (int i = 0; i < kJobs; ++i) jobs.push_back(new_job("q", std::to_string(i)));
  auto enqueued = ok(q().enqueue_batch(jobs));

  std::mutex mu;
  std::map<JobId, std::vector<std::string>> holders;  // guarded by mu
  std::vector<std::string> errors;                    // guarded by mu
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Half the threads share the fixture's handle, half open their own.
      std::optional<Queue> own;
      if (t % 2 == 1) {
        auto opened = Queue::open(url());
        if (!opened) {
          std::lock_guard lock(mu);
          errors.push_back(opened.error().message);
          return;
        }
        own.emplace(std::move(*opened));
      }
      Queue& queue = own ? *own : q();
      std::string worker = "worker-" + std::to_string(t);
      int empty_in_a_row = 0;
      while (empty_in_a_row < 3) {
        auto leased = queue.lease(LeaseRequest{"q", worker, 1 + t, std::chrono::minutes(5)});
        if (!leased) {
          // Busy is an acceptable answer under contention; anything else is not.
          if (!leased.error().is_unavailable()) {
            std::lock_guard lock(mu);
            errors.push_back(leased.error().message);
            return;
          }
          continue;
        }
        empty_in_a_row = leased->empty() ? empty_in_a_row + 1 : 0;
        std::lock_guard lock(mu);
        for (const auto& job : *leased) holders[job.id].push_back(worker);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_EQ(holders.size(), static_cast<std::size_t>(kJobs)) << "some jobs were never leased";
  for (const auto& [id, workers] : holders) {
    EXPECT_EQ(workers.size(), 1u) << "job " << id << " was leased " << workers.size()
                                  << " times while its lease held";
  }
  for (const auto& e : enqueued) EXPECT_EQ(holders.count(e.id), 1u) << "job " << e.id;
}

}  // namespace
}  // namespace readpast::test
