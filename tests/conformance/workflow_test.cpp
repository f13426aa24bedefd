// Progress, error history and unique windows (docs/workflows.md): the same on every engine.
#include <atomic>
#include <map>
#include <set>
#include <thread>

#include "conformance/queue_test.hpp"

namespace readpast::test {
namespace {

NewJob unique_job(std::string queue, std::string key, std::optional<Duration> window) {
  NewJob job = new_job(std::move(queue));
  job.unique_key = std::move(key);
  job.unique_for = window;
  return job;
}

FailOptions now_retry() {
  FailOptions options;
  options.retry_after = Duration::zero();
  return options;
}

PurgeRequest dead_of(std::string queue) {
  PurgeRequest request;
  request.queue = std::move(queue);
  request.state = JobState::kDead;
  return request;
}

// JSON text of exactly `bytes` bytes: a string of 'x's.
std::string json_string_of(std::size_t bytes) {
  return "\"" + std::string(bytes - 2, 'x') + "\"";
}

// ---- Progress -----------------------------------------------------------------------------

TEST_P(QueueTest, ProgressIsRecordedUnderTheLeaseAndReplacedByTheNext) {
  const JobId id = enqueue("p");
  EXPECT_EQ(get(id).progress, std::nullopt);
  Job job = lease_one("p");
  ok(q().progress(id, *job.lease_token, R"({"done": 1, "of": 10})"));
  EXPECT_EQ(get(id).progress, R"({"done": 1, "of": 10})");
  ok(q().progress(id, *job.lease_token, "[2, 10]"));
  EXPECT_EQ(get(id).progress, "[2, 10]");
  // The same text again is still an accepted call, not a lost lease.
  ok(q().progress(id, *job.lease_token, "[2, 10]"));
}

TEST_P(QueueTest, ProgressWithAStaleTokenIsLeaseLostAndChangesNothing) {
  const JobId id = enqueue("p");
  Job job = lease_one("p");
  ok(q().progress(id, *job.lease_token, "1"));
  const std::string before = snapshot();
  EXPECT_TRUE(q().progress(id, LeaseToken::random(), "2").error().is_lease_lost());
  EXPECT_EQ(get(id).progress, "1");
  EXPECT_EQ(snapshot(), before);
  // Once the job is finished its token fences nothing: the progress stays as it was.
  ok(q().complete(id, *job.lease_token));
  EXPECT_TRUE(q().progress(id, *job.lease_token, "3").error().is_lease_lost());
  EXPECT_EQ(get(id).progress, "1");
  EXPECT_EQ(get(id).state, JobState::kSucceeded);
}

TEST_P(QueueTest, ProgressOfAnAttemptThatLostItsLeaseIsRefused) {
  QueueOptions options;
  options.rescue_interval = Duration::zero();
  open(options);
  const JobId id = enqueue("p");
  Job first = lease_one("p", "w1", kShortLease);
  std::this_thread::sleep_for(kShortLease + std::chrono::milliseconds(50));
  Job second = lease_one("p", "w2");  // rescues the first lease, then takes the job again
  ASSERT_EQ(second.id, id);
  ok(q().progress(id, *second.lease_token, R"("second")"));
  EXPECT_TRUE(q().progress(id, *first.lease_token, R"("first")").error().is_lease_lost());
  EXPECT_EQ(get(id).progress, R"("second")");
}

TEST_P(QueueTest, ProgressOverTheLimitOrNotJsonIsRefusedAndChangesNothing) {
  const JobId id = enqueue("p");
  Job job = lease_one("p");
  ok(q().progress(id, *job.lease_token, R"({"ok": true})"));
  const std::string before = snapshot();
  for (const std::string& bad :
       {json_string_of(kMaxProgressBytes + 1), std::string("{"), std::string(""),
        std::string("{\"a\": 1} x"), std::string("'single'"), std::string(100, '[')}) {
    EXPECT_ERROR_CODE(q().progress(id, *job.lease_token, bad), ErrorCode::kInvalidArgument)
        << bad.substr(0, 20);
  }
  EXPECT_EQ(get(id).progress, R"({"ok": true})");
  EXPECT_EQ(snapshot(), before);
  // Exactly the limit is accepted.
  ok(q().progress(id, *job.lease_token, json_string_of(kMaxProgressBytes)));
  EXPECT_EQ(get(id).progress->size(), kMaxProgressBytes);
}

TEST_P(QueueTest, ProgressSurvivesExtendAndStaysAfterTheJobFinished) {
  const JobId id = enqueue("p");
  Job job = lease_one("p");
  ok(q().progress(id, *job.lease_token, R"({"step": "upload"})"));
  ok(q().extend(id, *job.lease_token, std::chrono::minutes(1)));
  EXPECT_EQ(get(id).progress, R"({"step": "upload"})");
  ok(q().complete(id, *job.lease_token));
  EXPECT_EQ(get(id).progress, R"({"step": "upload"})");
}

TEST_P(QueueTest, LeaseAndListDoNotCarryProgressOrErrors) {
  const JobId id = enqueue("p");
  Job job = lease_one("p");
  ok(q().progress(id, *job.lease_token, "7"));
  ok(q().fail(id, *job.lease_token, "boom", now_retry()));
  Job again = lease_one("p");
  EXPECT_EQ(again.progress, std::nullopt);
  EXPECT_TRUE(again.errors.empty());
  for (const Job& listed : all_jobs()) {
    EXPECT_EQ(listed.progress, std::nullopt);
    EXPECT_TRUE(listed.errors.empty());
  }
}

// ---- Error history ------------------------------------------------------------------------

TEST_P(QueueTest, ErrorHistoryKeepsEveryFailedAttemptUntilDead) {
  NewJob spec = new_job("e");
  spec.max_attempts = 3;
  const JobId id = enqueue(spec);
  EXPECT_TRUE(get(id).errors.empty());
  std::vector<TimePoint> before, after;
  for (int attempt = 1; attempt <= 3; ++attempt) {
    const std::string worker = "w" + std::to_string(attempt);
    Job job = lease_one("e", worker);
    ASSERT_EQ(job.attempts, attempt);
    before.push_back(now());
    auto outcome =
        ok(q().fail(id, *job.lease_token, "error " + std::to_string(attempt), now_retry()));
    after.push_back(now());
    EXPECT_EQ(outcome, attempt == 3 ? FailOutcome::kDead : FailOutcome::kRetrying);
  }
  Job dead = get(id);
  EXPECT_EQ(dead.state, JobState::kDead);
  EXPECT_EQ(dead.last_error, "error 3");
  ASSERT_EQ(dead.errors.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    const JobError& e = dead.errors[i];
    EXPECT_EQ(e.attempt, static_cast<int>(i) + 1);
    EXPECT_EQ(e.worker, "w" + std::to_string(i + 1));
    EXPECT_EQ(e.error, "error " + std::to_string(i + 1));
    EXPECT_TIME_WITHIN(e.at, before[i], after[i]);
  }
}

TEST_P(QueueTest, ErrorHistoryGoesOnAfterRetryWithAttemptsCountedAgain) {
  NewJob spec = new_job("e");
  spec.max_attempts = 1;
  const JobId id = enqueue(spec);
  Job job = lease_one("e", "a");
  ok(q().fail(id, *job.lease_token, "first"));
  ok(q().retry(std::vector<JobId>{id}));
  job = lease_one("e", "b");
  ok(q().fail(id, *job.lease_token, "second"));
  auto errors = get(id).errors;
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].error, "first");
  EXPECT_EQ(errors[1].error, "second");
  EXPECT_EQ(errors[1].attempt, 1);
  EXPECT_EQ(errors[1].worker, "b");
}

TEST_P(QueueTest, AFailWithAStaleTokenRecordsNoError) {
  const JobId id = enqueue("e");
  Job job = lease_one("e");
  ok(q().complete(id, *job.lease_token));
  EXPECT_TRUE(q().fail(id, *job.lease_token, "late").error().is_lease_lost());
  EXPECT_TRUE(get(id).errors.empty());
  EXPECT_EQ(get(id).last_error, std::nullopt);
}

TEST_P(QueueTest, ARescuedLeaseIsAFailedAttemptOfTheHistory) {
  QueueOptions options;
  options.rescue_interval = std::chrono::hours(1);  // only the explicit rescue below
  open(options);
  NewJob spec = new_job("e");
  spec.max_attempts = 2;
  const JobId id = enqueue(spec);
  lease_one("e", "lost-1", kShortLease);
  std::this_thread::sleep_for(kShortLease + std::chrono::milliseconds(50));
  const TimePoint before = now();
  EXPECT_EQ(ok(q().rescue_expired("e")), 1);
  const TimePoint after = now();
  lease_one("e", "lost-2", kShortLease);
  std::this_thread::sleep_for(kShortLease + std::chrono::milliseconds(50));
  EXPECT_EQ(ok(q().rescue_expired("e")), 1);
  Job dead = get(id);
  EXPECT_EQ(dead.state, JobState::kDead);
  ASSERT_EQ(dead.errors.size(), 2u);
  EXPECT_EQ(dead.errors[0].attempt, 1);
  EXPECT_EQ(dead.errors[0].worker, "lost-1");
  EXPECT_EQ(dead.errors[0].error, "lease expired (worker lost)");
  EXPECT_TIME_WITHIN(dead.errors[0].at, before, after);
  EXPECT_EQ(dead.errors[1].attempt, 2);
  EXPECT_EQ(dead.errors[1].worker, "lost-2");
  EXPECT_EQ(dead.errors[1].error, dead.last_error);
}

TEST_P(QueueTest, ErrorHistoryGoesWithItsJob) {
  NewJob spec = new_job("e");
  spec.max_attempts = 1;
  const JobId purged = enqueue(spec);
  Job job = lease_one("e");
  ok(q().fail(purged, *job.lease_token, "gone"));
  ASSERT_EQ(get(purged).errors.size(), 1u);
  EXPECT_EQ(ok(q().purge(dead_of("e"))), 1);
  EXPECT_ERROR_CODE(q().get(purged), ErrorCode::kNotFound);
  // A job that failed once and then succeeded, deleted on completion (zero retention).
  QueueOptions zero;
  zero.retention.succeeded = Duration::zero();
  Queue deleting = open_another(zero);
  const JobId completed = enqueue("e");
  job = lease_one("e");
  ok(q().fail(completed, *job.lease_token, "once", now_retry()));
  job = lease_one("e");
  ok(deleting.complete(completed, *job.lease_token));
  EXPECT_ERROR_CODE(q().get(completed), ErrorCode::kNotFound);
}

// ---- Unique for a period ------------------------------------------------------------------

TEST_P(QueueTest, UniqueForRefusesTheKeyInEveryStateUntilTheWindowCloses) {
  constexpr Duration kWindow = std::chrono::seconds(2);
  auto first = ok(q().enqueue(unique_job("u", "k", kWindow)));
  ASSERT_TRUE(first.inserted);
  auto refused = [&](std::optional<Duration> window) {
    auto again = ok(q().enqueue(unique_job("u", "k", window)));
    return !again.inserted && again.id == first.id;
  };
  EXPECT_TRUE(refused(kWindow)) << "available";
  Job job = lease_one("u");
  EXPECT_TRUE(refused(kWindow)) << "running";
  ok(q().complete(job.id, *job.lease_token));
  EXPECT_TRUE(refused(kWindow)) << "succeeded";
  EXPECT_TRUE(refused(std::nullopt)) << "succeeded, a plain unique key";
  // Another queue, or another key, is not refused.
  EXPECT_TRUE(ok(q().enqueue(unique_job("u2", "k", kWindow))).inserted);
  EXPECT_TRUE(ok(q().enqueue(unique_job("u", "other", kWindow))).inserted);
  // After the window, the key takes a new job (and opens a new window).
  const TimePoint closes = get(first.id).enqueued_at + kWindow;
  std::this_thread::sleep_until(closes + kClockTolerance + std::chrono::milliseconds(100));
  auto next = ok(q().enqueue(unique_job("u", "k", kWindow)));
  EXPECT_TRUE(next.inserted);
  EXPECT_NE(next.id, first.id);
  auto refused_again = ok(q().enqueue(unique_job("u", "k", std::nullopt)));
  EXPECT_FALSE(refused_again.inserted);
  EXPECT_EQ(refused_again.id, next.id);
}

TEST_P(QueueTest, UniqueForRefusesAfterDeadCancelledAndDeletedJobs) {
  constexpr Duration kWindow = std::chrono::hours(1);
  NewJob dying = unique_job("u", "dead", kWindow);
  dying.max_attempts = 1;
  const JobId dead = ok(q().enqueue(dying)).id;
  Job job = lease_one("u");
  ok(q().fail(dead, *job.lease_token, "x"));
  const JobId cancelled = ok(q().enqueue(unique_job("u", "cancelled", kWindow))).id;
  ok(q().cancel(std::vector<JobId>{cancelled}));
  const JobId removed = ok(q().enqueue(unique_job("u", "removed", kWindow))).id;
  ok(q().cancel(std::vector<JobId>{removed}));
  ok(q().remove(std::vector<JobId>{removed}));
  for (auto [key, id] : {std::pair<std::string, JobId>{"dead", dead},
                         {"cancelled", cancelled},
                         {"removed", removed}}) {
    auto again = ok(q().enqueue(unique_job("u", key, kWindow)));
    EXPECT_FALSE(again.inserted) << key;
    EXPECT_EQ(again.id, id) << key;
  }
  // retry of the dead job is not an enqueue: the window does not stop it.
  EXPECT_EQ(ok(q().retry(std::vector<JobId>{dead})).size(), 1u);
}

TEST_P(QueueTest, UniqueForIsRefusedByALiveHolderWithoutAWindowAndOpensNone) {
  const JobId holder = ok(q().enqueue(unique_job("u", "k", std::nullopt))).id;
  auto refused = ok(q().enqueue(unique_job("u", "k", std::chrono::hours(1))));
  EXPECT_FALSE(refused.inserted);
  EXPECT_EQ(refused.id, holder);
  // The refused enqueue opened no window: once the holder is done, the key is free.
  Job job = lease_one("u");
  ok(q().complete(job.id, *job.lease_token));
  EXPECT_TRUE(ok(q().enqueue(unique_job("u", "k", std::nullopt))).inserted);
}

TEST_P(QueueTest, UniqueForInABatchRefusesTheLaterJobsOfTheKey) {
  std::vector<NewJob> batch = {unique_job("u", "k", std::chrono::hours(1)), new_job("u"),
                               unique_job("u", "k", std::chrono::hours(1)),
                               unique_job("u", "k", std::nullopt)};
  auto results = ok(q().enqueue_batch(batch));
  ASSERT_EQ(results.size(), 4u);
  EXPECT_TRUE(results[0].inserted);
  EXPECT_TRUE(results[1].inserted);
  EXPECT_LT(results[0].id, results[1].id);
  EXPECT_FALSE(results[2].inserted);
  EXPECT_EQ(results[2].id, results[0].id);
  EXPECT_FALSE(results[3].inserted);
  EXPECT_EQ(results[3].id, results[0].id);
}

TEST_P(QueueTest, UniqueForWithoutAKeyOrNotPositiveIsRefused) {
  const std::string before = snapshot();
  NewJob no_key = new_job("u");
  no_key.unique_for = std::chrono::hours(1);
  EXPECT_ERROR_CODE(q().enqueue(no_key), ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(q().enqueue(unique_job("u", "k", Duration::zero())),
                    ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(q().enqueue(unique_job("u", "k", -std::chrono::seconds(1))),
                    ErrorCode::kInvalidArgument);
  EXPECT_EQ(snapshot(), before);
}

TEST_P(QueueTest, RetentionForgetsClosedWindowsAndKeepsOpenOnes) {
  auto open_window = ok(q().enqueue(unique_job("u", "open", std::chrono::hours(1))));
  ok(q().enqueue(unique_job("u", "closing", std::chrono::milliseconds(200))));
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  ok(q().apply_retention("u"));
  auto refused = ok(q().enqueue(unique_job("u", "open", std::nullopt)));
  EXPECT_FALSE(refused.inserted);
  EXPECT_EQ(refused.id, open_window.id);
}

TEST_P(QueueTest, ConcurrentEnqueuesOfOneKeyWithAWindowInsertOneJob) {
  // Several handles race for each key at once; for every key exactly one insert, and every
  // caller gets that job's id. The first job of each key is finished at once, so that the
  // live-key index alone could not refuse the later ones: only the window does.
  constexpr int kKeys = 12;
  constexpr int kRacers = 4;
  std::vector<Queue> racers;
  for (int r = 0; r < kRacers; ++r) racers.push_back(open_another());
  for (int k = 0; k < kKeys; ++k) {
    const std::string key = "key-" + std::to_string(k);
    std::vector<std::optional<Enqueued>> got(kRacers);
    std::vector<std::string> errors(kRacers);
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int r = 0; r < kRacers; ++r) {
      threads.emplace_back([&, r] {
        ++ready;
        while (ready.load() < kRacers) {
        }
        for (int round = 0; round < 3; ++round) {
          auto result = racers[static_cast<std::size_t>(r)].enqueue(
              unique_job("race", key, std::chrono::hours(1)));
          if (!result) {
            errors[static_cast<std::size_t>(r)] = result.error().message;
            return;
          }
          if (!got[static_cast<std::size_t>(r)] || result->inserted) {
            got[static_cast<std::size_t>(r)] = *result;
          }
          // Finish whatever job of the race is running or available, so that later rounds
          // meet a finished holder.
          auto leased = racers[static_cast<std::size_t>(r)].lease(
              LeaseRequest{"race", "racer", 10, std::chrono::seconds(30)});
          if (leased) {
            for (const Job& job : *leased) {
              (void)racers[static_cast<std::size_t>(r)].complete(job.id, *job.lease_token);
            }
          }
        }
      });
    }
    for (auto& t : threads) t.join();
    std::set<JobId> ids;
    int inserted = 0;
    for (int r = 0; r < kRacers; ++r) {
      ASSERT_EQ(errors[static_cast<std::size_t>(r)], "") << key;
      ASSERT_TRUE(got[static_cast<std::size_t>(r)].has_value()) << key;
      ids.insert(got[static_cast<std::size_t>(r)]->id);
      if (got[static_cast<std::size_t>(r)]->inserted) ++inserted;
    }
    EXPECT_EQ(inserted, 1) << key;
    EXPECT_EQ(ids.size(), 1u) << key;
  }
  // Exactly one job per key was ever stored.
  std::map<std::string, int> per_key;
  for (const Job& job : all_jobs()) {
    if (job.queue == "race") ++per_key[job.unique_key.value_or("")];
  }
  EXPECT_EQ(per_key.size(), static_cast<std::size_t>(kKeys));
  for (const auto& [key, count] : per_key) EXPECT_EQ(count, 1) << key;
}

}  // namespace
}  // namespace readpast::test
