// Metrics that outlive their jobs (docs/metrics.md) and the worker processes' registry (the
// dashboard's workers page), on every engine.
#include <map>
#include <string>
#include <thread>
#include <tuple>

#include "queue_test.hpp"

namespace readpast::test {
namespace {

std::int64_t value_of(const std::vector<MetricSample>& samples, const std::string& name,
                      const std::string& queue, const std::string& label = "",
                      const std::string& label_value = "") {
  for (const auto& s : samples) {
    if (s.name == name && s.queue == queue && s.label == label && s.label_value == label_value) {
      return s.value;
    }
  }
  return 0;
}

QueueOptions flushed_by_hand() {
  QueueOptions options;
  options.metrics_interval = std::chrono::hours(1);  // only flush_metrics() writes
  return options;
}

TEST_P(QueueTest, MetricsCountWhatLeasesBecameAndOutliveTheJobs) {
  Queue& a = open(flushed_by_hand());
  for (int i = 0; i < 5; ++i) enqueue("q", "p" + std::to_string(i));
  auto jobs = lease("q", 5);
  ASSERT_EQ(jobs.size(), 5u);
  for (int i = 0; i < 3; ++i) ok(a.complete(jobs[i].id, *jobs[i].lease_token));
  FailOptions at_once;
  at_once.retry_after = Duration::zero();
  EXPECT_EQ(ok(a.fail(jobs[3].id, *jobs[3].lease_token, "boom", at_once)), FailOutcome::kRetrying);
  FailOptions no_retry;
  no_retry.no_retry = true;
  EXPECT_EQ(ok(a.fail(jobs[4].id, *jobs[4].lease_token, "bad", no_retry)), FailOutcome::kDead);
  EXPECT_TRUE(ok(a.metrics()).empty()) << "nothing is written before a flush";
  ok(a.flush_metrics());

  auto samples = ok(a.metrics());
  EXPECT_EQ(value_of(samples, "readpast_jobs_completed_total", "q"), 3);
  EXPECT_EQ(value_of(samples, "readpast_jobs_failed_total", "q"), 2);
  EXPECT_EQ(value_of(samples, "readpast_jobs_dead_total", "q"), 1);
  EXPECT_EQ(value_of(samples, "readpast_job_run_seconds_count", "q"), 5);
  EXPECT_EQ(value_of(samples, "readpast_job_run_seconds_bucket", "q", "le", "+Inf"), 5);
  EXPECT_EQ(value_of(samples, "readpast_job_wait_seconds_count", "q"), 5);
  EXPECT_EQ(value_of(samples, "readpast_lease_seconds_count", "q"), 1);
  EXPECT_GE(value_of(samples, "readpast_job_run_seconds_sum", "q"), 0);

  // Retention deletes the finished jobs; the counts stay.
  for (JobState state : {JobState::kSucceeded, JobState::kDead}) {
    PurgeRequest purge;
    purge.queue = "q";
    purge.state = state;
    ok(a.purge(purge));
  }
  // A second handle (another process, say) runs the retried job; its flush adds to the totals.
  Queue b = open_another(flushed_by_hand());
  auto retried = ok(b.lease(LeaseRequest{"q", "w2", 1, std::chrono::seconds(30)}));
  ASSERT_EQ(retried.size(), 1u);
  ok(b.complete(retried[0].id, *retried[0].lease_token));
  // A spent token is refused: a lost lease, not a completion.
  EXPECT_TRUE(is_error(b.complete(retried[0].id, *retried[0].lease_token), ErrorCode::kLeaseLost,
                       "complete with a spent token"));
  ok(b.flush_metrics());
  samples = ok(a.metrics());
  EXPECT_EQ(value_of(samples, "readpast_jobs_completed_total", "q"), 4);
  EXPECT_EQ(value_of(samples, "readpast_jobs_failed_total", "q"), 2);
  EXPECT_EQ(value_of(samples, "readpast_job_run_seconds_count", "q"), 6);
  EXPECT_EQ(value_of(samples, "readpast_lease_seconds_count", "q"), 2);
  EXPECT_EQ(ok(a.stats()).size(), 1u);
  EXPECT_EQ(ok(a.stats()).front().succeeded, 1) << "the purged jobs are gone";
}

TEST_P(QueueTest, MetricsCountRescuesAndNotJobsOtherHandlesLeased) {
  Queue& a = open(flushed_by_hand());
  enqueue("q", "x");
  enqueue("q", "y");
  // Leased by another handle: when `a` settles it, `a` cannot tell its queue; not counted.
  Queue b = open_another(flushed_by_hand());
  auto other = ok(b.lease(LeaseRequest{"q", "w2", 1, kShortLease}));
  ASSERT_EQ(other.size(), 1u);
  Job mine = lease_one("q", "w1", kShortLease);
  std::this_thread::sleep_for(kShortLease + kClockTolerance);
  EXPECT_EQ(ok(a.rescue_expired("q")), 2);
  ok(a.flush_metrics());
  ok(b.flush_metrics());
  auto samples = ok(a.metrics());
  EXPECT_EQ(value_of(samples, "readpast_jobs_rescued_total", "q"), 2);
  EXPECT_EQ(value_of(samples, "readpast_jobs_completed_total", "q"), 0);
  EXPECT_EQ(value_of(samples, "readpast_lease_seconds_count", "q"), 2);
  (void)mine;
}

TEST_P(QueueTest, AZeroMetricsIntervalRecordsNothing) {
  QueueOptions options;
  options.metrics_interval = Duration::zero();
  Queue& a = open(options);
  enqueue("q");
  Job job = lease_one("q");
  ok(a.complete(job.id, *job.lease_token));
  ok(a.flush_metrics());
  EXPECT_TRUE(ok(a.metrics()).empty());
}

TEST_P(QueueTest, WorkersReportThemselvesAndAreForgotten) {
  WorkerProcess worker;
  worker.name = "host-a/100";
  worker.host = "host-a";
  worker.pid = 100;
  worker.queues = {"emails", "sms"};
  worker.threads = 4;
  const TimePoint before = now();
  ok(q().report_worker(worker));
  auto workers = ok(q().workers());
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_EQ(workers[0].name, "host-a/100");
  EXPECT_EQ(workers[0].host, "host-a");
  EXPECT_EQ(workers[0].pid, 100);
  EXPECT_EQ(workers[0].queues, (std::vector<std::string>{"emails", "sms"}));
  EXPECT_EQ(workers[0].threads, 4);
  EXPECT_GE(workers[0].heartbeat_at + kClockTolerance, before);
  EXPECT_EQ(workers[0].started_at, workers[0].heartbeat_at);
  const TimePoint started = workers[0].started_at;

  // The same process again: a new heartbeat, the same start.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ok(q().report_worker(worker));
  workers = ok(q().workers());
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_EQ(workers[0].started_at, started);
  EXPECT_GT(workers[0].heartbeat_at, started);

  // The name reused by another process: it started anew.
  worker.pid = 200;
  worker.queues = {"emails"};
  ok(q().report_worker(worker));
  workers = ok(q().workers());
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_EQ(workers[0].pid, 200);
  EXPECT_EQ(workers[0].queues, std::vector<std::string>{"emails"});
  EXPECT_GT(workers[0].started_at, started);

  WorkerProcess other = worker;
  other.name = "host-b/7";
  ok(q().report_worker(other));
  EXPECT_EQ(ok(q().workers()).size(), 2u);
  ok(q().forget_worker("host-a/100"));
  workers = ok(q().workers());
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_EQ(workers[0].name, "host-b/7");
  ok(q().forget_worker("nobody"));  // forgetting an unknown process is not an error

  // Bad input changes nothing.
  WorkerProcess unnamed = other;
  unnamed.name.clear();
  EXPECT_TRUE(is_error(q().report_worker(unnamed), ErrorCode::kInvalidArgument, "no name"));
  WorkerProcess bad_queue = other;
  bad_queue.name = "host-c/1";
  bad_queue.queues = {"no spaces"};
  EXPECT_TRUE(is_error(q().report_worker(bad_queue), ErrorCode::kInvalidArgument, "bad queue"));
  EXPECT_EQ(ok(q().workers()).size(), 1u);
}

}  // namespace
}  // namespace readpast::test

namespace readpast::test {
namespace {

std::int64_t total_bytes(const StorageHealth& health) {
  std::int64_t total = 0;
  for (const StorageSize& size : health.sizes) total += size.bytes;
  return total;
}

// Queue::storage_health on every engine: each table of the storage by name with its size, in
// order, read by a read-only Queue too, and growing as jobs are stored. (Who holds the oldest
// snapshot is each engine's own test, tests/postgres/storage_health_test.cpp and
// tests/mariadb/storage_health_test.cpp: the suite cannot hold one the same way everywhere,
// and SQLite's readers do not say who they are.)
TEST_P(QueueTest, StorageHealthSaysWhatEachTableTakes) {
  enqueue("q");
  QueueOptions options;
  options.read_only = true;
  Queue reader = open_another(options);
  const StorageHealth before = ok(reader.storage_health());
  ASSERT_FALSE(before.sizes.empty());
  for (std::size_t i = 0; i < before.sizes.size(); ++i) {
    EXPECT_FALSE(before.sizes[i].relation.empty());
    EXPECT_GE(before.sizes[i].bytes, 0) << before.sizes[i].relation;
    if (i > 0) {
      EXPECT_LT(before.sizes[i - 1].relation, before.sizes[i].relation);
    }
  }
  // 2 MB of payloads: more than any engine keeps in the pages it had. Letters that do not
  // repeat, or PostgreSQL would compress them to nothing.
  std::vector<NewJob> jobs;
  std::uint32_t seed = 12345;
  for (int i = 0; i < 500; ++i) {
    std::string payload(4000, ' ');
    for (char& c : payload) {
      seed = seed * 1664525u + 1013904223u;
      c = static_cast<char>('a' + (seed >> 24) % 26);
    }
    jobs.push_back(new_job("q", std::move(payload)));
  }
  ok(q().enqueue_batch(jobs));
  // MariaDB's sizes are InnoDB's statistics, which a background thread recomputes at most
  // every 10 s after a change: read them again for a while.
  const auto give_up = std::chrono::steady_clock::now() + 3 * kPatience;
  std::int64_t after = total_bytes(ok(reader.storage_health()));
  while (after <= total_bytes(before) + 1'000'000 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(100ms);
    after = total_bytes(ok(reader.storage_health()));
  }
  EXPECT_GT(after, total_bytes(before) + 1'000'000);
}

}  // namespace
}  // namespace readpast::test
