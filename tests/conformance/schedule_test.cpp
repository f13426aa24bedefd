// Periodic schedules: each tick enqueued exactly once, however many callers race; missed
// ticks not made up; schedules added, replaced, listed and removed.
#include <atomic>
#include <set>
#include <thread>

#include "conformance/queue_test.hpp"

namespace readpast::test {
namespace {

Schedule every(std::string name, std::string spec, std::string queue = "ticks") {
  Schedule schedule;
  schedule.name = std::move(name);
  schedule.queue = std::move(queue);
  schedule.spec = std::move(spec);
  schedule.payload = "tick";
  return schedule;
}

// A time on a whole minute, well after the schedule's creation (now).
TimePoint minute_after_now(int minutes) {
  auto t = std::chrono::floor<std::chrono::minutes>(now()) + std::chrono::minutes(minutes);
  return std::chrono::time_point_cast<Duration>(t);
}

TEST_P(QueueTest, AddedSchedulesAreListedAndReplacingOneKeepsItsTicks) {
  // Leap days only: it never ticks within this test.
  Schedule hourly = every("hourly", "0 0 29 2 *");
  hourly.priority = 7;
  hourly.max_attempts = 3;
  EXPECT_TRUE(ok(q().add_schedule(hourly)));
  EXPECT_TRUE(ok(q().add_schedule(every("fast", "every 1m", "other"))));
  auto schedules = ok(q().list_schedules());
  ASSERT_EQ(schedules.size(), 2u);
  EXPECT_EQ(schedules[0].name, "fast");
  EXPECT_EQ(schedules[1].name, "hourly");
  EXPECT_EQ(schedules[1].spec, "0 0 29 2 *");
  EXPECT_EQ(schedules[1].priority, 7);
  EXPECT_EQ(schedules[1].max_attempts, 3);
  EXPECT_EQ(schedules[1].payload, "tick");
  EXPECT_FALSE(schedules[1].last_tick.has_value());
  EXPECT_TIME_WITHIN(schedules[1].created_at, now() - std::chrono::seconds(5), now());

  const TimePoint t = minute_after_now(2);
  auto enqueued = ok(q().enqueue_due(t));
  ASSERT_EQ(enqueued.size(), 1u) << "only 'fast' ticks by then";
  EXPECT_EQ(enqueued[0].schedule, "fast");
  EXPECT_EQ(enqueued[0].tick, t);

  Schedule replaced = every("fast", "every 30s", "other");
  replaced.payload = "new payload";
  EXPECT_FALSE(ok(q().add_schedule(replaced))) << "replacing reported a new schedule";
  schedules = ok(q().list_schedules());
  ASSERT_EQ(schedules.size(), 2u);
  EXPECT_EQ(schedules[0].spec, "every 30s");
  EXPECT_EQ(schedules[0].payload, "new payload");
  ASSERT_TRUE(schedules[0].last_tick.has_value()) << "replacing forgot the last tick";
  EXPECT_EQ(*schedules[0].last_tick, t);
  EXPECT_TRUE(ok(q().enqueue_due(t)).empty()) << "the same tick was enqueued twice";

  ok(q().remove_schedule("fast"));
  EXPECT_ERROR_CODE(q().remove_schedule("fast"), ErrorCode::kNotFound);
  EXPECT_EQ(ok(q().list_schedules()).size(), 1u);
}

TEST_P(QueueTest, AScheduledJobCarriesTheSchedulesSettingsAndRunsAtItsTick) {
  Schedule schedule = every("report", "*/5 * * * *", "reports");
  schedule.payload = std::string("bytes\0and more", 14);
  schedule.priority = 3;
  schedule.max_attempts = 2;
  ok(q().add_schedule(schedule));
  const TimePoint t = minute_after_now(11);
  auto enqueued = ok(q().enqueue_due(t));
  ASSERT_EQ(enqueued.size(), 1u);
  const Job job = get(enqueued[0].id);
  EXPECT_EQ(job.queue, "reports");
  EXPECT_EQ(job.payload, schedule.payload);
  EXPECT_EQ(job.priority, 3);
  EXPECT_EQ(job.max_attempts, 2);
  EXPECT_EQ(job.state, JobState::kAvailable);
  // The latest */5 minute at or before t.
  const auto minute = std::chrono::floor<std::chrono::minutes>(t);
  const auto mm = (minute.time_since_epoch() / std::chrono::minutes(1)) % 5;
  EXPECT_EQ(job.run_at, std::chrono::time_point_cast<Duration>(minute - std::chrono::minutes(mm)));
  ASSERT_TRUE(job.unique_key.has_value());
  EXPECT_EQ(*job.unique_key, "schedule:report@" + format_time(job.run_at));
}

TEST_P(QueueTest, TicksBeforeAScheduleWasCreatedAreNotEnqueued) {
  ok(q().add_schedule(every("daily", "@daily")));
  // Midnight today has passed (unless the test runs exactly at midnight) but came before
  // the schedule existed: nothing is due until the next midnight.
  EXPECT_TRUE(ok(q().enqueue_due(now())).empty());
  EXPECT_TRUE(ok(q().enqueue_due()).empty()) << "with the database's clock";
}

TEST_P(QueueTest, MissedTicksAreEnqueuedOnceNotOncePerMissedPeriod) {
  ok(q().add_schedule(every("minutely", "* * * * *")));
  // An hour of downtime: sixty ticks passed without anyone calling.
  const TimePoint later = minute_after_now(61);
  auto enqueued = ok(q().enqueue_due(later));
  ASSERT_EQ(enqueued.size(), 1u);
  EXPECT_EQ(enqueued[0].tick, later);
  EXPECT_TRUE(ok(q().enqueue_due(later + std::chrono::seconds(30))).empty());
  EXPECT_EQ(ok(q().enqueue_due(later + std::chrono::minutes(1))).size(), 1u);
  EXPECT_EQ(ok(q().stats("ticks")).at(0).available, 2);
}

TEST_P(QueueTest, ThreeSchedulersRacingFor50TicksEnqueueExactly50Jobs) {
  ok(q().add_schedule(every("race", "every 1s")));
  const TimePoint base = std::chrono::time_point_cast<Duration>(
      std::chrono::ceil<std::chrono::seconds>(now()) + std::chrono::seconds(1));
  constexpr int kTicks = 50;
  std::vector<Queue> schedulers;
  for (int i = 0; i < 3; ++i) schedulers.push_back(open_another());
  std::atomic<int> reported{0};
  std::mutex mu;
  std::multiset<TimePoint> ticks;
  std::vector<std::thread> threads;
  std::atomic<bool> failed{false};
  for (auto& scheduler : schedulers) {
    threads.emplace_back([&] {
      // Each scheduler looks several times within every tick, as a worker polling it would.
      for (int tick = 0; tick < kTicks; ++tick) {
        for (int look = 0; look < 3; ++look) {
          const TimePoint t =
              base + std::chrono::seconds(tick) + std::chrono::milliseconds(look * 300);
          auto enqueued = scheduler.enqueue_due(t);
          if (!enqueued) {
            failed = true;
            return;
          }
          std::lock_guard lock(mu);
          for (const auto& job : *enqueued) ticks.insert(job.tick);
          reported += static_cast<int>(enqueued->size());
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  ASSERT_FALSE(failed) << "a scheduler's call failed";
  EXPECT_EQ(reported, kTicks) << "callers reported enqueuing more or fewer jobs than ticks";
  EXPECT_EQ(ok(q().stats("ticks")).at(0).available, kTicks);
  for (int tick = 0; tick < kTicks; ++tick) {
    EXPECT_EQ(ticks.count(base + std::chrono::seconds(tick)), 1u) << "tick " << tick;
  }
}

TEST_P(QueueTest, BadSchedulesAreRejectedAndChangeNothing) {
  const std::string before = snapshot();
  EXPECT_ERROR_CODE(q().add_schedule(every("x", "* * *")), ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(q().add_schedule(every("x", "61 * * * *")), ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(q().add_schedule(every("x", "0 0 31 2 *")), ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(q().add_schedule(every("x", "every 0s")), ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(q().add_schedule(every("bad name", "@hourly")), ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(q().add_schedule(every("x", "@hourly", "bad;queue")),
                    ErrorCode::kInvalidArgument);
  Schedule huge = every("x", "@hourly");
  huge.payload.assign((16u << 20) + 1, 'x');
  EXPECT_ERROR_CODE(q().add_schedule(huge), ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(q().remove_schedule("bad name"), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(ok(q().list_schedules()).empty());
  EXPECT_EQ(snapshot(), before);
}

TEST_P(QueueTest, AScheduleRemembersTheJobOfItsLastTickEvenAfterItFinished) {
  ok(q().add_schedule(every("minutely", "* * * * *")));
  EXPECT_FALSE(ok(q().list_schedules()).at(0).last_job.has_value()) << "before the first tick";
  const TimePoint t = minute_after_now(2);
  auto first = ok(q().enqueue_due(t));
  ASSERT_EQ(first.size(), 1u);
  auto schedules = ok(q().list_schedules());
  ASSERT_TRUE(schedules[0].last_job.has_value());
  EXPECT_EQ(*schedules[0].last_job, first[0].id);
  EXPECT_EQ(get(*schedules[0].last_job).unique_key, "schedule:minutely@" + format_time(t));

  // The job finished (its tick is minutes ahead, so it is cancelled rather than run): it is
  // still the last tick's job, and can be read.
  const JobId finished = first[0].id;
  EXPECT_EQ(ok(q().cancel(std::span<const JobId>(&finished, 1))).size(), 1u);
  EXPECT_EQ(*ok(q().list_schedules()).at(0).last_job, first[0].id);
  EXPECT_EQ(get(first[0].id).state, JobState::kCancelled);

  // Run now is not a tick; the next tick replaces it; replacing the schedule keeps it.
  const JobId manual = ok(q().run_schedule("minutely"));
  EXPECT_EQ(*ok(q().list_schedules()).at(0).last_job, first[0].id);
  auto second = ok(q().enqueue_due(t + std::chrono::minutes(1)));
  ASSERT_EQ(second.size(), 1u);
  EXPECT_NE(second[0].id, manual);
  EXPECT_EQ(*ok(q().list_schedules()).at(0).last_job, second[0].id);
  ok(q().add_schedule(every("minutely", "*/2 * * * *")));
  EXPECT_EQ(*ok(q().list_schedules()).at(0).last_job, second[0].id);
}

TEST_P(QueueTest, RunningAScheduleNowEnqueuesOneJobAndLeavesItsTicksAlone) {
  Schedule schedule = every("report", "*/5 * * * *", "reports");
  schedule.payload = std::string("bytes\0and more", 14);
  schedule.priority = 4;
  schedule.max_attempts = 2;
  ok(q().add_schedule(schedule));
  const TimePoint before = now();
  const JobId id = ok(q().run_schedule("report"));
  const Job job = get(id);
  EXPECT_EQ(job.queue, "reports");
  EXPECT_EQ(job.payload, schedule.payload);
  EXPECT_EQ(job.priority, 4);
  EXPECT_EQ(job.max_attempts, 2);
  EXPECT_EQ(job.state, JobState::kAvailable);
  EXPECT_EQ(job.attempts, 0);
  EXPECT_FALSE(job.unique_key.has_value()) << "a run-now job holds no tick's key";
  EXPECT_TIME_WITHIN(job.run_at, before - std::chrono::seconds(5), now());
  // Due at once: a lease takes it.
  LeaseRequest request;
  request.queue = "reports";
  request.worker_id = "w";
  auto leased = ok(q().lease(request));
  ASSERT_EQ(leased.size(), 1u);
  EXPECT_EQ(leased[0].id, id);

  // Twice is two jobs; the ticks did not move.
  const JobId second = ok(q().run_schedule("report"));
  EXPECT_NE(second, id);
  auto schedules = ok(q().list_schedules());
  ASSERT_EQ(schedules.size(), 1u);
  EXPECT_FALSE(schedules[0].last_tick.has_value()) << "run now took a tick";
  const TimePoint t = minute_after_now(11);
  auto enqueued = ok(q().enqueue_due(t));
  ASSERT_EQ(enqueued.size(), 1u) << "the next tick is still enqueued after run now";
  EXPECT_EQ(ok(q().stats("reports")).at(0).available + ok(q().stats("reports")).at(0).running, 3);
}

TEST_P(QueueTest, RunningAScheduleThatDoesNotExistChangesNothing) {
  ok(q().add_schedule(every("real", "@hourly")));
  const std::string before = snapshot();
  EXPECT_ERROR_CODE(q().run_schedule("missing"), ErrorCode::kNotFound);
  EXPECT_ERROR_CODE(q().run_schedule("bad name"), ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(q().run_schedule(""), ErrorCode::kInvalidArgument);
  EXPECT_EQ(snapshot(), before);
}

// --- shared maintenance tasks ---

TEST_P(QueueTest, ClaimTaskHasOneWinnerPerIntervalAmongRacers) {
  std::vector<Queue> racers;
  for (int i = 0; i < 4; ++i) racers.push_back(open_another());
  std::atomic<int> wins{0};
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < racers.size(); ++i) {
    threads.emplace_back([&, i] {
      for (int round = 0; round < 5; ++round) {
        auto won = racers[i].claim_task("retention:q", std::chrono::minutes(10),
                                        "racer-" + std::to_string(i));
        if (won && *won) ++wins;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wins, 1);
  EXPECT_TRUE(ok(q().claim_task("another-task", std::chrono::minutes(10), "me")))
      << "tasks are claimed independently";
}

TEST_P(QueueTest, AClaimedTaskIsFreeAgainOnceItsIntervalPassed) {
  EXPECT_TRUE(ok(q().claim_task("t", std::chrono::milliseconds(300), "a")));
  EXPECT_FALSE(ok(q().claim_task("t", std::chrono::milliseconds(300), "b")));
  EXPECT_TRUE(
      eventually([&] { return ok(q().claim_task("t", std::chrono::milliseconds(300), "b")); }));
}

}  // namespace
}  // namespace readpast::test
