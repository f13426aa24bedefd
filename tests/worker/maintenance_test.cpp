// What workers do besides running jobs: enqueue the ticks of periodic schedules (once per
// tick however many workers run) and delete old finished jobs, taking turns.
#include <set>

#include "support/engines.hpp"
#include "worker/worker_test.hpp"

namespace readpast::test {
namespace {

JobResult succeed(const Job&, std::stop_token) {
  return JobResult::success();
}

TEST_P(WorkerTest, WorkersEnqueueEachTickOfAScheduleOnceAndRunIt) {
  Schedule schedule;
  schedule.name = "heartbeat";
  schedule.queue = "ticks";
  schedule.spec = "every 200ms";
  schedule.payload = "beat";
  ASSERT_TRUE(q().add_schedule(schedule));
  // Three workers on three handles, all running the schedule.
  std::vector<Queue> handles;
  for (int i = 0; i < 3; ++i) handles.push_back(open_another());
  std::mutex mu;
  std::vector<std::string> ran;
  std::vector<std::unique_ptr<RunningWorker>> workers;
  for (int i = 0; i < 3; ++i) {
    WorkerOptions o = options(/*drain=*/false);
    o.worker_id = "scheduler-" + std::to_string(i);
    workers.push_back(std::make_unique<RunningWorker>(handles[i], o, [&](Worker& w) {
      ASSERT_TRUE(w.handle("ticks", [&](const Job& job, std::stop_token) {
        std::lock_guard lock(mu);
        ran.push_back(job.unique_key.value_or("?"));
        return JobResult::success();
      }));
    }));
  }
  std::this_thread::sleep_for(2500ms);
  ASSERT_TRUE(q().remove_schedule("heartbeat"));
  std::this_thread::sleep_for(300ms);
  for (auto& w : workers) w->stop();
  for (auto& w : workers) ASSERT_TRUE(w->join());

  std::lock_guard lock(mu);
  std::set<std::string> distinct(ran.begin(), ran.end());
  EXPECT_EQ(distinct.size(), ran.size()) << "a tick was enqueued or run twice";
  // 2.5 s of 200 ms ticks: about 12; at least 6 allows for slow, loaded machines.
  EXPECT_GE(ran.size(), 6u) << "the schedule was not kept";
  EXPECT_LE(ran.size(), 15u);
  for (const auto& key : distinct) EXPECT_TRUE(key.starts_with("schedule:heartbeat@")) << key;
}

TEST_P(WorkerTest, AWorkerWithSchedulesOffEnqueuesNothing) {
  Schedule schedule;
  schedule.name = "s";
  schedule.queue = "ticks";
  schedule.spec = "every 100ms";
  ASSERT_TRUE(q().add_schedule(schedule));
  WorkerOptions o = options(/*drain=*/false);
  o.run_schedules = false;
  {
    RunningWorker running(q(), o, [](Worker& w) { ASSERT_TRUE(w.handle("ticks", succeed)); });
    std::this_thread::sleep_for(600ms);
  }
  EXPECT_EQ(stats("ticks").succeeded + stats("ticks").available, 0);
}

TEST_P(WorkerTest, RetentionDeletesOneHundredThousandOldJobsInSmallBatches) {
  constexpr int kJobs = 100000;
  QueueOptions queue_options;
  queue_options.retention.succeeded = 1ms;
  Queue& queue = reopen(queue_options);
  std::vector<NewJob> jobs(kJobs);
  for (auto& job : jobs) job.queue = "old";
  ASSERT_TRUE(queue.enqueue_batch(jobs));
  for (int done = 0; done < kJobs;) {
    auto leased = queue.lease(LeaseRequest{"old", "setup", 10000, 1min});
    ASSERT_TRUE(leased && !leased->empty());
    std::vector<LeasedRef> refs;
    for (const Job& job : *leased) refs.push_back({job.id, *job.lease_token});
    ASSERT_TRUE(queue.complete_batch(refs));
    done += static_cast<int>(refs.size());
  }
  ASSERT_EQ(stats("old").succeeded, kJobs);

  WorkerOptions o = options(/*drain=*/false);
  o.retention_interval = 1h;  // one pass, right at the start
  RunningWorker running(queue, o, [](Worker& w) { ASSERT_TRUE(w.handle("old", succeed)); });
  // Other clients keep working while the pass runs: no long lock.
  Queue other = open_another();
  Duration slowest{0};
  for (int i = 0; i < 40 && stats("old").succeeded > 0; ++i) {
    const auto started = std::chrono::steady_clock::now();
    NewJob job;
    job.queue = "busy";
    ASSERT_TRUE(other.enqueue(job));
    auto leased = other.lease(LeaseRequest{"busy", "other", 1, 1min});
    ASSERT_TRUE(leased && leased->size() == 1);
    ASSERT_TRUE(other.complete(leased->front().id, *leased->front().lease_token));
    slowest = std::max(
        slowest, std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now() - started));
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(eventually([&] { return stats("old").succeeded == 0; }, 60s))
      << stats("old").succeeded << " old jobs left";
  std::cout << "[ retention] slowest enqueue+lease+complete of another client during the pass: "
            << format_duration(slowest) << "\n";
  EXPECT_LT(slowest, 2s) << "the retention pass held other writers up";
  EXPECT_TRUE(eventually([&] { return log_.count("retention") == 1; })) << log_.all();
}

TEST_P(WorkerTest, WorkersTakeTurnsAtRetention) {
  QueueOptions queue_options;
  queue_options.retention.dead = 1ms;
  reopen(queue_options);
  std::vector<Queue> handles;
  for (int i = 0; i < 3; ++i) handles.push_back(open_another(queue_options));
  std::vector<LogEvents> logs(3);
  {
    std::vector<std::unique_ptr<RunningWorker>> workers;
    for (int i = 0; i < 3; ++i) {
      WorkerOptions o = options(/*drain=*/false);
      o.retention_interval = 1h;
      o.logger = logs[static_cast<std::size_t>(i)].logger();
      o.worker_id = "w" + std::to_string(i);
      workers.push_back(
          std::make_unique<RunningWorker>(handles[static_cast<std::size_t>(i)], o,
                                          [](Worker& w) { ASSERT_TRUE(w.handle("q", succeed)); }));
    }
    std::this_thread::sleep_for(500ms);
  }
  // Each worker tried once at start; the task can be claimed once per hour.
  Queue probe = open_another();
  EXPECT_FALSE(*probe.claim_task("retention:q", 1h, "probe")) << "nobody claimed the pass";
}

TEST_P(WorkerTest, RetentionTriesAgainOneIntervalAfterItsClaimSoNoTurnIsSkipped) {
  // The claim's next run is the database's time during the claim plus the interval. A slow
  // claim (here: one that waits 1 s for the write lock) used to make the next try come
  // before that, be refused, and wait a whole interval more: every other turn was lost.
  QueueOptions queue_options;
  queue_options.retention.cancelled = 1ms;
  Queue& queue = reopen(queue_options);
  // Cancelled while scheduled far ahead: no worker ever leases it.
  auto cancelled_job = [&] {
    JobId id = enqueue("q", "x", 25, 1h);
    ASSERT_EQ(queue.cancel(std::vector<JobId>{id})->size(), 1u);
  };
  cancelled_job();
  LogEvents events;
  WorkerOptions o = options(/*drain=*/false);
  o.retention_interval = 2s;
  o.run_schedules = false;
  o.logger = events.logger();
  auto lock = engine_named(GetParam()).hold_write_lock(url());
  const auto started = std::chrono::steady_clock::now();
  RunningWorker running(queue, o, [](Worker& w) { ASSERT_TRUE(w.handle("q", succeed)); });
  std::this_thread::sleep_for(1s);
  lock.reset();
  // The first turn, about 1 s in (on engines whose claim waited for the lock).
  ASSERT_TRUE(eventually([&] { return events.count("retention") == 1; })) << events.all();
  cancelled_job();
  // The second turn comes one interval after the first claim, about 3 s in; the lost turn
  // would have come at about 4 s.
  std::this_thread::sleep_until(started + 3600ms);
  EXPECT_EQ(events.count("retention"), 2) << "a retention turn was skipped: " << events.all();
}

}  // namespace
}  // namespace readpast::test
