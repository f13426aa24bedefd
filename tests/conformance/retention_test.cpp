// Retention of finished jobs per state and per queue, recent finish counts, fail_batch and
// retries that meet a held unique key.
#include "conformance/queue_test.hpp"

namespace readpast::test {
namespace {

NewJob keyed(const std::string& queue, const std::string& key, int max_attempts = 1) {
  NewJob job = new_job(queue);
  job.unique_key = key;
  job.max_attempts = max_attempts;
  return job;
}

// --- retention ---

TEST_P(QueueTest, RetentionDeletesEachFinishedStateAfterItsOwnAge) {
  QueueOptions options;
  options.retention.succeeded = std::chrono::hours(1);
  options.retention.cancelled = std::chrono::milliseconds(300);
  options.retention.dead = std::chrono::milliseconds(300);
  open(options);
  JobId succeeded = succeeded_job("q");
  JobId cancelled = cancelled_job("q");
  JobId dead = dead_job("q");
  JobId available = enqueue("q");
  EXPECT_EQ(ok(q().apply_retention("q")), 0) << "removed before the retention passed";
  std::int64_t removed = 0;
  ASSERT_TRUE(eventually([&] {
    removed += ok(q().apply_retention("q"));
    return removed >= 2;
  }));
  EXPECT_EQ(removed, 2);
  EXPECT_EQ(get(succeeded).state, JobState::kSucceeded) << "its retention is an hour";
  EXPECT_ERROR_CODE(q().get(cancelled), ErrorCode::kNotFound);
  EXPECT_ERROR_CODE(q().get(dead), ErrorCode::kNotFound);
  EXPECT_EQ(get(available).state, JobState::kAvailable);
}

TEST_P(QueueTest, RetentionWithoutAnAgeKeepsThatStateForever) {
  QueueOptions options;
  options.retention.succeeded = Duration::zero();
  options.retention.cancelled = std::nullopt;
  options.retention.dead = std::nullopt;
  open(options);
  JobId cancelled = cancelled_job("q");
  JobId dead = dead_job("q");
  EXPECT_EQ(ok(q().apply_retention("q")), 0);
  EXPECT_EQ(get(cancelled).state, JobState::kCancelled);
  EXPECT_EQ(get(dead).state, JobState::kDead);
}

TEST_P(QueueTest, AQueuesOwnRetentionOverridesTheDefault) {
  QueueOptions options;
  options.retention.dead = std::chrono::hours(24);
  options.queue_retention["short"].dead = Duration::zero();
  open(options);
  JobId kept = dead_job("long");
  JobId gone = dead_job("short");
  EXPECT_EQ(ok(q().apply_retention("long")), 0);
  EXPECT_EQ(ok(q().apply_retention("short")), 1);
  EXPECT_EQ(get(kept).state, JobState::kDead);
  EXPECT_ERROR_CODE(q().get(gone), ErrorCode::kNotFound);
}

TEST_P(QueueTest, RetentionDeletesAtMostTheLimitOfEachStatePerCall) {
  QueueOptions options;
  options.retention.succeeded = Duration::zero();
  options.retention.dead = Duration::zero();
  open(options);
  for (int i = 0; i < 5; ++i) dead_job("q");
  EXPECT_EQ(ok(q().apply_retention("q", 2)), 2);
  EXPECT_EQ(ok(q().apply_retention("q", 2)), 2);
  EXPECT_EQ(ok(q().apply_retention("q", 2)), 1);
  EXPECT_EQ(ok(q().apply_retention("q", 2)), 0);
  EXPECT_ERROR_CODE(q().apply_retention("q", 0), ErrorCode::kInvalidArgument);
}

TEST_P(QueueTest, BadRetentionIsRefusedWhenOpening) {
  QueueOptions options;
  options.retention.dead = Duration(-1);
  EXPECT_ERROR_CODE(Queue::open(url(), options), ErrorCode::kInvalidArgument);
  QueueOptions bad_name;
  bad_name.queue_retention["bad name"] = Retention{};
  EXPECT_ERROR_CODE(Queue::open(url(), bad_name), ErrorCode::kInvalidArgument);
}

TEST_P(QueueTest, FinishedSinceCountsJobsThatSucceededOrDiedSinceATime) {
  succeeded_job("a");
  const TimePoint since = now();
  succeeded_job("a");
  succeeded_job("a");
  dead_job("a");
  succeeded_job("b");
  cancelled_job("b");
  auto all = ok(q().finished_since(since));
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].queue, "a");
  EXPECT_GE(all[0].succeeded, 2);
  EXPECT_LE(all[0].succeeded, 3);
  EXPECT_EQ(all[0].dead, 1);
  EXPECT_EQ(all[1].queue, "b");
  EXPECT_EQ(all[1].succeeded, 1);
  EXPECT_EQ(all[1].dead, 0) << "a cancelled job is not dead";
  auto only_b = ok(q().finished_since(since, "b"));
  ASSERT_EQ(only_b.size(), 1u);
  EXPECT_EQ(only_b[0].succeeded, 1);
  EXPECT_TRUE(ok(q().finished_since(now() + std::chrono::hours(1))).empty());
}

// --- fail_batch ---

TEST_P(QueueTest, FailBatchReportsWhereEachJobWentOrThatItsLeaseWasLost) {
  auto last_try = new_job("q");
  last_try.max_attempts = 1;
  enqueue(last_try);
  enqueue("q");
  enqueue("q");
  auto jobs = lease("q", 3);
  ASSERT_EQ(jobs.size(), 3u);
  std::vector<FailRequest> items = {
      {jobs[0].id, *jobs[0].lease_token, "one", {}},
      {jobs[1].id, *jobs[1].lease_token, "two", {}},
      {jobs[2].id, LeaseToken::random(), "stale", {}},
  };
  auto outcomes = ok(q().fail_batch(items));
  ASSERT_EQ(outcomes.size(), 3u);
  EXPECT_EQ(outcomes[0], std::optional<FailOutcome>(FailOutcome::kDead));
  EXPECT_EQ(outcomes[1], std::optional<FailOutcome>(FailOutcome::kRetrying));
  EXPECT_EQ(outcomes[2], std::nullopt);
  EXPECT_EQ(get(jobs[0].id).last_error, std::optional<std::string>("one"));
  EXPECT_EQ(get(jobs[1].id).last_error, std::optional<std::string>("two"));
  EXPECT_EQ(get(jobs[2].id).state, JobState::kRunning) << "a stale token changed the job";
  EXPECT_FALSE(get(jobs[2].id).last_error.has_value());
  EXPECT_TRUE(ok(q().fail_batch(std::vector<FailRequest>{})).empty());
}

TEST_P(QueueTest, FailWithNoRetrySendsTheJobToDeadWhateverAttemptsAreLeft) {
  JobId id = enqueue("q");  // 25 attempts
  Job leased = lease_one("q");
  FailOptions give_up;
  give_up.no_retry = true;
  EXPECT_EQ(ok(q().fail(id, *leased.lease_token, "cannot ever work", give_up)), FailOutcome::kDead);
  Job job = get(id);
  EXPECT_EQ(job.state, JobState::kDead);
  EXPECT_EQ(job.attempts, 1);
  EXPECT_TRUE(job.finished_at.has_value());
  EXPECT_TRUE(lease("q", 1).empty());
}

// --- retries that meet a held unique key ---

TEST_P(QueueTest, RetryOfSeveralJobsSkipsOnlyThoseWhoseKeyIsHeld) {
  JobId held_old = dead_job("q");  // no key: retried
  auto spec = keyed("q", "k");
  JobId keyed_dead = enqueue(spec);
  Job leased = lease_one("q");
  ASSERT_EQ(leased.id, keyed_dead);
  ok(q().fail(keyed_dead, *leased.lease_token, "boom"));
  JobId holder = ok(q().enqueue(keyed("q", "k"))).id;
  JobId free_key = dead_job("q");
  auto retried = ok(q().retry(std::vector<JobId>{held_old, keyed_dead, free_key}));
  EXPECT_EQ(retried, (std::vector<JobId>{held_old, free_key}));
  EXPECT_EQ(get(keyed_dead).state, JobState::kDead) << "its key is held by job " << holder;
  EXPECT_EQ(get(holder).state, JobState::kAvailable);
}

TEST_P(QueueTest, RetryOfTwoDeadJobsSharingAKeyRetriesOnlyTheOlder) {
  std::vector<JobId> dead;
  for (int i = 0; i < 2; ++i) {
    JobId id = enqueue(keyed("q", "k"));
    Job leased = lease_one("q");
    ok(q().fail(id, *leased.lease_token, "boom"));
    dead.push_back(id);
  }
  auto retried = ok(q().retry(dead));
  EXPECT_EQ(retried, (std::vector<JobId>{dead[0]}));
  EXPECT_EQ(get(dead[1]).state, JobState::kDead);
}

TEST_P(QueueTest, RetryAllSkipsJobsWhoseKeyIsHeldAndRetriesTheRest) {
  std::vector<JobId> dead;
  for (const char* key : {"a", "b", "a"}) {
    JobId id = enqueue(keyed("q", key));
    Job leased = lease_one("q");
    ok(q().fail(id, *leased.lease_token, "boom"));
    dead.push_back(id);
  }
  JobId plain = dead_job("q");
  JobId holder_b = ok(q().enqueue(keyed("q", "b"))).id;
  EXPECT_EQ(ok(q().retry_all("q", JobState::kDead)), 2);
  EXPECT_EQ(get(dead[0]).state, JobState::kAvailable) << "the older of the two 'a' jobs";
  EXPECT_EQ(get(dead[1]).state, JobState::kDead) << "'b' is held by job " << holder_b;
  EXPECT_EQ(get(dead[2]).state, JobState::kDead) << "the younger 'a' job collides";
  EXPECT_EQ(get(plain).state, JobState::kAvailable);
}

}  // namespace
}  // namespace readpast::test
