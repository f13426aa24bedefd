// readpast::Worker's fetching on PostgreSQL, where a lease in flight can be seen from outside
// (pg_stat_activity): with prefetch, a second lease overlaps the first (worker/runtime.hpp).
#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "pg_test_util.hpp"
#include "readpast/worker.hpp"

namespace readpast::test {
namespace {

class WorkerFetchTest : public PostgresTest {};

// The worker's leases (calls of lease_head_walk(), sql/statements.sql) that wait for a lock.
int leases_waiting_for_a_lock(SqlConnection& watcher) {
  return std::stoi(
      watcher.scalar("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                     "AND wait_event_type = 'Lock' AND query LIKE '%lease_head_walk(%'"));
}

TEST_F(WorkerFetchTest, WithPrefetchASecondLeaseIsInFlightBesideTheFirst) {
  // One thread and 21 jobs ahead: 22 slots. The first lease takes all 22; once a lease
  // came back full, leases ask for 11 and the next one overlaps the one in flight. To catch them in
  // flight, a session holds the queues table locked: every lease reads it (the paused and limits
  // probe), no completion does, so the leases wait where pg_stat_activity shows them while the jobs
  // already leased finish. One fetcher would leave one lease waiting; two must wait at once.
  constexpr int kJobs = 100;
  Queue queue = open();
  std::vector<NewJob> jobs;
  for (int i = 0; i < kJobs; ++i) jobs.push_back(job("q", std::to_string(i)));
  must(queue.enqueue_batch(jobs));

  std::mutex mu;
  std::condition_variable cv;
  bool gate_open = false;
  std::multiset<std::string> seen;
  WorkerOptions options;
  options.worker_id = "overlap";
  options.lease_duration = 30s;
  options.drain = true;
  options.run_schedules = false;
  options.retention_interval = std::nullopt;
  Worker worker(queue, options);
  QueueConfig config;
  config.concurrency = 1;
  config.prefetch = 21;
  ASSERT_TRUE(worker.handle(
      "q",
      [&](const Job& job, std::stop_token) {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return gate_open; });
        seen.insert(job.payload);
        return JobResult::success();
      },
      config));
  auto running = std::async(std::launch::async, [&] { return worker.run(); });

  // The first job waits at the gate while the worker fills its 22 slots.
  ASSERT_TRUE(eventually([&] { return must(queue.stats("q")).front().running == 22; }))
      << "the worker did not lease its capacity";
  SqlConnection blocker = sql();
  blocker.exec("BEGIN");
  blocker.exec("LOCK TABLE readpast.queues IN ACCESS EXCLUSIVE MODE");
  {
    std::lock_guard lock(mu);
    gate_open = true;
  }
  cv.notify_all();
  SqlConnection watcher = sql();
  int most_waiting = 0;
  EXPECT_TRUE(eventually([&] {
    most_waiting = std::max(most_waiting, leases_waiting_for_a_lock(watcher));
    return most_waiting >= 2;
  })) << "at most "
      << most_waiting << " lease(s) of the worker in flight at once";
  blocker.exec("COMMIT");

  auto ran = running.get();
  ASSERT_TRUE(ran) << ran.error().message;
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(kJobs));
  for (int i = 0; i < kJobs; ++i) EXPECT_EQ(seen.count(std::to_string(i)), 1u) << i;
  const auto done = must(queue.list(in_queue("q", kJobs + 1)));
  ASSERT_EQ(done.size(), static_cast<std::size_t>(kJobs));
  for (const Job& j : done) {
    EXPECT_EQ(j.state, JobState::kSucceeded) << j.id;
    EXPECT_EQ(j.attempts, 1) << "job " << j.id << " was leased more than once";
  }
  EXPECT_EQ(worker.counters().succeeded, kJobs);
}

}  // namespace
}  // namespace readpast::test
