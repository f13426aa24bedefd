// complete, fail, extend, release and their batch forms, on a job whose lease is held.
#include <thread>

#include "conformance/queue_test.hpp"

namespace readpast::test {
namespace {

Backoff fixed_backoff(Duration base, Duration cap = std::chrono::hours(10)) {
  return Backoff{base, cap, 0.0};
}

// --- complete ---

TEST_P(QueueTest, CompleteMarksTheJobSucceededWithFinishedAt) {
  JobId id = enqueue("q");
  Job leased = lease_one("q");
  TimePoint before = now();
  ok(q().complete(id, *leased.lease_token));
  TimePoint after = now();
  Job job = get(id);
  EXPECT_EQ(job.state, JobState::kSucceeded);
  ASSERT_TRUE(job.finished_at.has_value());
  EXPECT_TIME_WITHIN(*job.finished_at, before, after);
  EXPECT_EQ(job.attempts, 1);
  EXPECT_EQ(job.started_at, leased.started_at);
  EXPECT_EQ(job.payload, leased.payload);
}

TEST_P(QueueTest, CompleteDeletesTheJobWhenRetentionIsZero) {
  QueueOptions options;
  options.retention.succeeded = Duration::zero();
  open(options);
  JobId id = enqueue("q");
  JobId other = enqueue("q");
  Job leased = lease_one("q");
  ok(q().complete(id, *leased.lease_token));
  EXPECT_ERROR_CODE(q().get(id), ErrorCode::kNotFound);
  EXPECT_EQ(get(other).state, JobState::kAvailable);
  auto stats = ok(q().stats("q"));
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].succeeded, 0);
}

TEST_P(QueueTest, CompleteBatchWithZeroRetentionDeletesOnlyTheHeldJobs) {
  QueueOptions options;
  options.retention.succeeded = Duration::zero();
  open(options);
  enqueue("q");
  enqueue("q");
  auto jobs = lease("q", 2);
  ASSERT_EQ(jobs.size(), 2u);
  std::vector<LeasedRef> refs = {{jobs[0].id, *jobs[0].lease_token},
                                 {jobs[1].id, LeaseToken::random()}};
  auto held = ok(q().complete_batch(refs));
  EXPECT_EQ(held, (std::vector<bool>{true, false}));
  EXPECT_ERROR_CODE(q().get(jobs[0].id), ErrorCode::kNotFound);
  EXPECT_EQ(get(jobs[1].id).state, JobState::kRunning);
}

TEST_P(QueueTest, DoesNotCompleteTwice) {
  JobId id = enqueue("q");
  Job leased = lease_one("q");
  ok(q().complete(id, *leased.lease_token));
  std::string before = dump(get(id));
  EXPECT_ERROR_CODE(q().complete(id, *leased.lease_token), ErrorCode::kLeaseLost);
  EXPECT_EQ(dump(get(id)), before);
}

TEST_P(QueueTest, DoesNotCompleteWithAStaleToken) {
  JobId id = enqueue("q");
  Job first = lease_one("q");
  ok(q().release(id, *first.lease_token));
  Job second = lease_one("q");
  ASSERT_EQ(second.id, id);
  std::string before = dump(get(id));
  EXPECT_ERROR_CODE(q().complete(id, *first.lease_token), ErrorCode::kLeaseLost);
  EXPECT_EQ(dump(get(id)), before);
  ok(q().complete(id, *second.lease_token));
}

// Rotating the storage (Queue::rotate_storage: PostgreSQL moves the jobs left in its running
// ring's oldest segment and truncates it; other engines have nothing to rotate) changes nothing
// a client sees: leases held across rotations settle in every way, under their tokens only.
TEST_P(QueueTest, LeasesHeldAcrossStorageRotationsSettleAsBefore) {
  for (int i = 0; i < 5; ++i) enqueue("q");
  const std::vector<Job> held = lease("q", 5);
  ASSERT_EQ(held.size(), 5u);
  auto rotate = [&] {
    for (int i = 0; i < 3; ++i) ok(q().rotate_storage());
  };
  rotate();
  ok(q().complete(held[0].id, *held[0].lease_token));
  rotate();
  FailOptions at_once;
  at_once.retry_after = Duration::zero();
  EXPECT_EQ(ok(q().fail(held[1].id, *held[1].lease_token, "boom", at_once)),
            FailOutcome::kRetrying);
  ok(q().extend(held[2].id, *held[2].lease_token, std::chrono::minutes(5)));
  rotate();
  ok(q().release(held[3].id, *held[3].lease_token));
  EXPECT_ERROR_CODE(q().complete(held[4].id, *held[0].lease_token), ErrorCode::kLeaseLost);
  ok(q().complete(held[2].id, *held[2].lease_token));
  ok(q().complete(held[4].id, *held[4].lease_token));
  EXPECT_EQ(get(held[0].id).state, JobState::kSucceeded);
  EXPECT_EQ(get(held[1].id).state, JobState::kAvailable);
  EXPECT_EQ(get(held[1].id).errors.size(), 1u);
  EXPECT_EQ(get(held[2].id).state, JobState::kSucceeded);
  EXPECT_EQ(get(held[3].id).state, JobState::kAvailable);
  EXPECT_EQ(get(held[4].id).state, JobState::kSucceeded);
}

// A read-only Queue refuses to rotate, as it refuses every call that writes, on every engine
// (QueueOptions::read_only), and the ring is left as it was.
TEST_P(QueueTest, AReadOnlyQueueRefusesToRotateStorage) {
  enqueue("q");
  const Job held = lease_one("q");
  QueueOptions options;
  options.read_only = true;
  Queue reader = open_another(options);
  EXPECT_ERROR_CODE(reader.rotate_storage(), ErrorCode::kInvalidArgument);
  ok(q().complete(held.id, *held.lease_token));
}

TEST_P(QueueTest, DoesNotCompleteWithAnInventedToken) {
  JobId id = enqueue("q");
  lease_one("q");
  std::string before = dump(get(id));
  EXPECT_ERROR_CODE(q().complete(id, LeaseToken::random()), ErrorCode::kLeaseLost);
  // An empty token may also be refused as bad input; either way nothing changes.
  auto empty = q().complete(id, LeaseToken{});
  ASSERT_FALSE(empty.has_value());
  EXPECT_TRUE(empty.error().code == ErrorCode::kLeaseLost ||
              empty.error().code == ErrorCode::kInvalidArgument)
      << to_string(empty.error().code);
  EXPECT_EQ(dump(get(id)), before);
}

TEST_P(QueueTest, DoesNotCompleteWithAnotherJobsToken) {
  JobId a = enqueue("q");
  JobId b = enqueue("q");
  Job job_a = lease_one("q");
  Job job_b = lease_one("q");
  ASSERT_EQ(job_a.id, a);
  ASSERT_EQ(job_b.id, b);
  std::string before = snapshot();
  EXPECT_ERROR_CODE(q().complete(a, *job_b.lease_token), ErrorCode::kLeaseLost);
  EXPECT_ERROR_CODE(q().fail(a, *job_b.lease_token, "x"), ErrorCode::kLeaseLost);
  EXPECT_ERROR_CODE(q().extend(a, *job_b.lease_token, std::chrono::hours(1)),
                    ErrorCode::kLeaseLost);
  EXPECT_ERROR_CODE(q().release(a, *job_b.lease_token), ErrorCode::kLeaseLost);
  EXPECT_EQ(snapshot(), before);
}

TEST_P(QueueTest, DoesNotSettleAJobThatDoesNotExist) {
  enqueue("q");
  std::string before = snapshot();
  const JobId missing = 987654321;
  auto token = LeaseToken::random();
  EXPECT_ERROR_CODE(q().complete(missing, token), ErrorCode::kLeaseLost);
  EXPECT_ERROR_CODE(q().fail(missing, token, "x"), ErrorCode::kLeaseLost);
  EXPECT_ERROR_CODE(q().extend(missing, token, std::chrono::seconds(5)), ErrorCode::kLeaseLost);
  EXPECT_ERROR_CODE(q().release(missing, token), ErrorCode::kLeaseLost);
  EXPECT_EQ(snapshot(), before);
}

TEST_P(QueueTest, DoesNotSettleAnAvailableJob) {
  JobId id = enqueue("q");
  std::string before = snapshot();
  auto token = LeaseToken::random();
  EXPECT_ERROR_CODE(q().complete(id, token), ErrorCode::kLeaseLost);
  EXPECT_ERROR_CODE(q().fail(id, token, "x"), ErrorCode::kLeaseLost);
  EXPECT_ERROR_CODE(q().extend(id, token, std::chrono::seconds(5)), ErrorCode::kLeaseLost);
  EXPECT_ERROR_CODE(q().release(id, token), ErrorCode::kLeaseLost);
  EXPECT_EQ(snapshot(), before);
}

// --- fail ---

TEST_P(QueueTest, FailPutsTheJobBackAvailableAfterTheBackoff) {
  QueueOptions options;
  options.backoff = fixed_backoff(std::chrono::seconds(10));
  open(options);
  JobId id = enqueue("q");
  Job leased = lease_one("q");
  TimePoint before = now();
  auto outcome = ok(q().fail(id, *leased.lease_token, "it broke"));
  TimePoint after = now();
  EXPECT_EQ(outcome, FailOutcome::kRetrying);
  Job job = get(id);
  EXPECT_EQ(job.state, JobState::kAvailable);
  EXPECT_EQ(job.attempts, 1);
  EXPECT_EQ(job.last_error, std::optional<std::string>("it broke"));
  EXPECT_TIME_WITHIN(job.run_at, before + std::chrono::seconds(10),
                     after + std::chrono::seconds(10));
  EXPECT_FALSE(job.finished_at.has_value());
  EXPECT_TRUE(lease("q", 1).empty()) << "leased before its backoff passed";
}

TEST_P(QueueTest, FailBackoffDoublesWithEachAttempt) {
  QueueOptions options;
  options.backoff = fixed_backoff(std::chrono::seconds(10));
  open(options);
  JobId id = enqueue("q");
  Job first = lease_one("q");
  FailOptions now_please;
  now_please.retry_after = Duration::zero();
  ok(q().fail(id, *first.lease_token, "first", now_please));
  Job second = lease_one("q");
  ASSERT_EQ(second.id, id);
  EXPECT_EQ(second.attempts, 2);
  ok(q().fail(id, *second.lease_token, "first", now_please));
  Job third = lease_one("q");
  EXPECT_EQ(third.attempts, 3);
  TimePoint before = now();
  ok(q().fail(id, *third.lease_token, "third"));
  TimePoint after = now();
  // Attempt 3 failed: base * 2^(3-1) = 40s.
  EXPECT_TIME_WITHIN(get(id).run_at, before + std::chrono::seconds(40),
                     after + std::chrono::seconds(40));
}

TEST_P(QueueTest, FailBackoffStopsAtTheCap) {
  QueueOptions options;
  options.backoff = fixed_backoff(std::chrono::seconds(10), std::chrono::seconds(15));
  open(options);
  JobId id = enqueue("q");
  FailOptions now_please;
  now_please.retry_after = Duration::zero();
  Job first = lease_one("q");
  ok(q().fail(id, *first.lease_token, "x", now_please));
  Job second = lease_one("q");
  TimePoint before = now();
  ok(q().fail(id, *second.lease_token, "x"));
  TimePoint after = now();
  EXPECT_TIME_WITHIN(get(id).run_at, before + std::chrono::seconds(15),
                     after + std::chrono::seconds(15));
}

TEST_P(QueueTest, FailBackoffJitterStaysInItsRange) {
  QueueOptions options;
  options.backoff = Backoff{std::chrono::seconds(100), std::chrono::hours(1), 0.5};
  open(options);
  for (int i = 0; i < 10; ++i) enqueue("q");
  for (int i = 0; i < 10; ++i) {
    Job job = lease_one("q");
    TimePoint before = now();
    ok(q().fail(job.id, *job.lease_token, "x"));
    TimePoint after = now();
    EXPECT_TIME_WITHIN(get(job.id).run_at, before + std::chrono::seconds(50),
                       after + std::chrono::seconds(100));
  }
}

TEST_P(QueueTest, FailHonoursRetryAfter) {
  JobId id = enqueue("q");
  Job leased = lease_one("q");
  FailOptions options;
  options.retry_after = std::chrono::minutes(5);
  TimePoint before = now();
  EXPECT_EQ(ok(q().fail(id, *leased.lease_token, "later", options)), FailOutcome::kRetrying);
  TimePoint after = now();
  EXPECT_TIME_WITHIN(get(id).run_at, before + std::chrono::minutes(5),
                     after + std::chrono::minutes(5));
}

TEST_P(QueueTest, FailWithRetryAfterZeroIsLeasableAtOnce) {
  JobId id = enqueue("q");
  Job leased = lease_one("q");
  FailOptions options;
  options.retry_after = Duration::zero();
  ok(q().fail(id, *leased.lease_token, "again", options));
  Job again = lease_one("q");
  EXPECT_EQ(again.id, id);
  EXPECT_EQ(again.attempts, 2);
  EXPECT_EQ(again.last_error, std::optional<std::string>("again"))
      << "last_error is kept while the job retries";
}

TEST_P(QueueTest, FailUsesTheQueuesOwnBackoff) {
  QueueOptions options;
  options.backoff = fixed_backoff(std::chrono::seconds(10));
  options.queue_backoff["slow"] = fixed_backoff(std::chrono::minutes(3));
  open(options);
  JobId slow = enqueue("slow");
  JobId plain = enqueue("plain");
  Job slow_job = lease_one("slow");
  Job plain_job = lease_one("plain");
  TimePoint before = now();
  ok(q().fail(slow, *slow_job.lease_token, "x"));
  ok(q().fail(plain, *plain_job.lease_token, "x"));
  TimePoint after = now();
  EXPECT_TIME_WITHIN(get(slow).run_at, before + std::chrono::minutes(3),
                     after + std::chrono::minutes(3));
  EXPECT_TIME_WITHIN(get(plain).run_at, before + std::chrono::seconds(10),
                     after + std::chrono::seconds(10));
}

TEST_P(QueueTest, FailOptionsBackoffOverridesTheQueues) {
  QueueOptions options;
  options.queue_backoff["q"] = fixed_backoff(std::chrono::minutes(3));
  open(options);
  JobId id = enqueue("q");
  Job leased = lease_one("q");
  FailOptions fail_options;
  fail_options.backoff = fixed_backoff(std::chrono::seconds(20));
  TimePoint before = now();
  ok(q().fail(id, *leased.lease_token, "x", fail_options));
  TimePoint after = now();
  EXPECT_TIME_WITHIN(get(id).run_at, before + std::chrono::seconds(20),
                     after + std::chrono::seconds(20));
}

TEST_P(QueueTest, FailRetryAfterOverridesEveryBackoff) {
  QueueOptions options;
  options.queue_backoff["q"] = fixed_backoff(std::chrono::minutes(3));
  open(options);
  JobId id = enqueue("q");
  Job leased = lease_one("q");
  FailOptions fail_options;
  fail_options.backoff = fixed_backoff(std::chrono::seconds(20));
  fail_options.retry_after = std::chrono::hours(2);
  TimePoint before = now();
  ok(q().fail(id, *leased.lease_token, "x", fail_options));
  TimePoint after = now();
  EXPECT_TIME_WITHIN(get(id).run_at, before + std::chrono::hours(2), after + std::chrono::hours(2));
}

TEST_P(QueueTest, FailAtMaxAttemptsMakesTheJobDead) {
  auto spec = new_job("q");
  spec.max_attempts = 2;
  JobId id = enqueue(spec);
  FailOptions now_please;
  now_please.retry_after = Duration::zero();
  Job first = lease_one("q");
  EXPECT_EQ(ok(q().fail(id, *first.lease_token, "one", now_please)), FailOutcome::kRetrying);
  Job second = lease_one("q");
  EXPECT_EQ(second.attempts, 2);
  TimePoint before = now();
  EXPECT_EQ(ok(q().fail(id, *second.lease_token, "two", now_please)), FailOutcome::kDead);
  TimePoint after = now();
  Job job = get(id);
  EXPECT_EQ(job.state, JobState::kDead);
  EXPECT_EQ(job.attempts, 2);
  EXPECT_EQ(job.last_error, std::optional<std::string>("two"));
  ASSERT_TRUE(job.finished_at.has_value());
  EXPECT_TIME_WITHIN(*job.finished_at, before, after);
  EXPECT_TRUE(lease("q", 1).empty());
}

TEST_P(QueueTest, FailOfASingleAttemptJobMakesItDeadAtOnce) {
  auto spec = new_job("q");
  spec.max_attempts = 1;
  JobId id = enqueue(spec);
  Job leased = lease_one("q");
  EXPECT_EQ(ok(q().fail(id, *leased.lease_token, "boom")), FailOutcome::kDead);
  EXPECT_EQ(get(id).state, JobState::kDead);
}

TEST_P(QueueTest, FailKeepsAnErrorWithArbitraryBytes) {
  using namespace std::string_literals;
  JobId id = enqueue("q");
  Job leased = lease_one("q");
  const std::string error = "line 1\nline 2 'quoted' \"dq\" \xc3\xa9 ;--"s;
  ok(q().fail(id, *leased.lease_token, error));
  EXPECT_EQ(get(id).last_error, std::optional<std::string>(error));
}

TEST_P(QueueTest, FailAcceptsAnErrorThatIsNotValidUtf8) {
  // last_error is often the tail of a command's stderr: arbitrary bytes, perhaps cut in the
  // middle of a UTF-8 sequence. The failure must be recorded whatever they are (stored
  // as given, or made valid), not refused by the database.
  using namespace std::string_literals;
  for (const std::string& error :
       {"cut mid-sequence: \xe2\x82"s, "latin-1: caf\xe9"s, "nul \0 inside"s, "\xff\xfe"s}) {
    JobId id = enqueue("q");
    Job leased = lease_one("q");
    auto outcome = q().fail(id, *leased.lease_token, error);
    ASSERT_TRUE(outcome.has_value())
        << to_string(outcome.error().code) << ": " << outcome.error().message;
    EXPECT_EQ(*outcome, FailOutcome::kRetrying);
    Job job = get(id);
    EXPECT_EQ(job.state, JobState::kAvailable);
    ASSERT_TRUE(job.last_error.has_value());
    EXPECT_FALSE(job.last_error->empty());
  }
}

TEST_P(QueueTest, DoesNotFailWithAStaleToken) {
  JobId id = enqueue("q");
  Job first = lease_one("q");
  ok(q().release(id, *first.lease_token));
  Job second = lease_one("q");
  std::string before = dump(get(id));
  EXPECT_ERROR_CODE(q().fail(id, *first.lease_token, "stale"), ErrorCode::kLeaseLost);
  EXPECT_EQ(dump(get(id)), before);
  EXPECT_EQ(ok(q().fail(id, *second.lease_token, "fresh")), FailOutcome::kRetrying);
}

// --- extend ---

TEST_P(QueueTest, ExtendMovesTheLeaseExpiry) {
  JobId id = enqueue("q");
  Job leased = lease_one("q", "w", std::chrono::seconds(30));
  TimePoint before = now();
  ok(q().extend(id, *leased.lease_token, std::chrono::minutes(10)));
  TimePoint after = now();
  Job job = get(id);
  ASSERT_TRUE(job.lease_expires_at.has_value());
  EXPECT_TIME_WITHIN(*job.lease_expires_at, before + std::chrono::minutes(10),
                     after + std::chrono::minutes(10));
  EXPECT_EQ(job.state, JobState::kRunning);
  EXPECT_EQ(job.lease_token, leased.lease_token) << "extend keeps the token";
  EXPECT_EQ(job.attempts, 1);
}

TEST_P(QueueTest, ExtendCanShortenTheLease) {
  JobId id = enqueue("q");
  Job leased = lease_one("q", "w", std::chrono::minutes(10));
  TimePoint before = now();
  ok(q().extend(id, *leased.lease_token, std::chrono::seconds(5)));
  TimePoint after = now();
  EXPECT_TIME_WITHIN(*get(id).lease_expires_at, before + std::chrono::seconds(5),
                     after + std::chrono::seconds(5));
}

TEST_P(QueueTest, ExtendedLeaseOutlivesItsOriginalExpiry) {
  QueueOptions options;
  options.rescue_interval = Duration::zero();
  open(options);
  JobId id = enqueue("q");
  Job leased = lease_one("q", "w", kShortLease);
  ok(q().extend(id, *leased.lease_token, std::chrono::seconds(30)));
  // Time must pass here: nothing can be polled for "did not expire".
  std::this_thread::sleep_for(kShortLease + std::chrono::milliseconds(200));
  EXPECT_TRUE(lease("q", 1, "intruder").empty()) << "an extended lease was handed out";
  EXPECT_EQ(ok(q().rescue_expired("q")), 0);
  ok(q().complete(id, *leased.lease_token));
}

TEST_P(QueueTest, DoesNotExtendWithAStaleToken) {
  JobId id = enqueue("q");
  Job first = lease_one("q");
  ok(q().release(id, *first.lease_token));
  lease_one("q");
  std::string before = dump(get(id));
  EXPECT_ERROR_CODE(q().extend(id, *first.lease_token, std::chrono::hours(1)),
                    ErrorCode::kLeaseLost);
  EXPECT_EQ(dump(get(id)), before);
}

// --- release ---

TEST_P(QueueTest, ReleasePutsTheJobBackWithoutSpendingAnAttempt) {
  JobId id = enqueue("q");
  const int attempts_before_lease = get(id).attempts;
  Job leased = lease_one("q");
  EXPECT_EQ(leased.attempts, attempts_before_lease + 1);
  ok(q().release(id, *leased.lease_token));
  TimePoint after = now();
  Job job = get(id);
  EXPECT_EQ(job.state, JobState::kAvailable);
  EXPECT_EQ(job.attempts, attempts_before_lease) << "release spent an attempt";
  EXPECT_LE(job.run_at, after + kClockTolerance) << "released without delay: runs now";
  Job again = lease_one("q");
  EXPECT_EQ(again.id, id);
  EXPECT_EQ(again.attempts, leased.attempts) << "re-lease after release counts one attempt";
  EXPECT_NE(again.lease_token, leased.lease_token);
}

TEST_P(QueueTest, ReleaseDoesNotMakeTheLastAttemptDead) {
  auto spec = new_job("q");
  spec.max_attempts = 1;
  JobId id = enqueue(spec);
  for (int i = 0; i < 3; ++i) {
    Job leased = lease_one("q");
    ok(q().release(id, *leased.lease_token));
    EXPECT_EQ(get(id).state, JobState::kAvailable);
  }
  Job leased = lease_one("q");
  ok(q().complete(id, *leased.lease_token));
  EXPECT_EQ(get(id).state, JobState::kSucceeded);
}

TEST_P(QueueTest, ReleaseWithADelaySetsRunAt) {
  JobId id = enqueue("q");
  Job leased = lease_one("q");
  TimePoint before = now();
  ok(q().release(id, *leased.lease_token, std::chrono::hours(1)));
  TimePoint after = now();
  Job job = get(id);
  EXPECT_EQ(job.state, JobState::kAvailable);
  EXPECT_TIME_WITHIN(job.run_at, before + std::chrono::hours(1), after + std::chrono::hours(1));
  EXPECT_TRUE(lease("q", 1).empty()) << "leased before the release delay passed";
}

TEST_P(QueueTest, DoesNotReleaseWithAStaleToken) {
  JobId id = enqueue("q");
  Job first = lease_one("q");
  ok(q().release(id, *first.lease_token));
  Job second = lease_one("q");
  std::string before = dump(get(id));
  EXPECT_ERROR_CODE(q().release(id, *first.lease_token), ErrorCode::kLeaseLost);
  EXPECT_EQ(dump(get(id)), before);
  ok(q().complete(id, *second.lease_token));
}

// --- batch forms ---

TEST_P(QueueTest, CompleteBatchReportsForEachRefWhetherItsLeaseHeld) {
  for (int i = 0; i < 4; ++i) enqueue("q");
  auto jobs = lease("q", 4);
  ASSERT_EQ(jobs.size(), 4u);
  // jobs[1]: released and re-leased, so its first token is stale.
  ok(q().release(jobs[1].id, *jobs[1].lease_token));
  Job released = lease_one("q");
  ASSERT_EQ(released.id, jobs[1].id);
  const std::string stale_before = dump(get(jobs[1].id));
  std::vector<LeasedRef> refs = {{jobs[0].id, *jobs[0].lease_token},
                                 {jobs[1].id, *jobs[1].lease_token},
                                 {jobs[2].id, *jobs[2].lease_token},
                                 {424242, LeaseToken::random()},
                                 {jobs[3].id, *jobs[0].lease_token}};
  auto held = ok(q().complete_batch(refs));
  EXPECT_EQ(held, (std::vector<bool>{true, false, true, false, false}));
  EXPECT_EQ(get(jobs[0].id).state, JobState::kSucceeded);
  EXPECT_EQ(dump(get(jobs[1].id)), stale_before);
  EXPECT_EQ(get(jobs[2].id).state, JobState::kSucceeded);
  EXPECT_EQ(get(jobs[3].id).state, JobState::kRunning);
}

TEST_P(QueueTest, CompleteBatchOfTheSameRefTwiceCompletesIt) {
  enqueue("q");
  Job job = lease_one("q");
  std::vector<LeasedRef> refs = {{job.id, *job.lease_token}, {job.id, *job.lease_token}};
  auto held = ok(q().complete_batch(refs));
  ASSERT_EQ(held.size(), 2u);
  EXPECT_TRUE(held[0] || held[1]);
  EXPECT_EQ(get(job.id).state, JobState::kSucceeded);
  EXPECT_ERROR_CODE(q().complete(job.id, *job.lease_token), ErrorCode::kLeaseLost);
}

TEST_P(QueueTest, ExtendBatchMovesOnlyTheHeldLeases) {
  for (int i = 0; i < 3; ++i) enqueue("q");
  auto jobs = lease("q", 3, "w", std::chrono::seconds(30));
  ASSERT_EQ(jobs.size(), 3u);
  const std::string stale_before = dump(get(jobs[1].id));
  std::vector<LeasedRef> refs = {{jobs[0].id, *jobs[0].lease_token},
                                 {jobs[1].id, LeaseToken::random()},
                                 {jobs[2].id, *jobs[2].lease_token},
                                 {515151, LeaseToken::random()}};
  TimePoint before = now();
  auto held = ok(q().extend_batch(refs, std::chrono::minutes(20)));
  TimePoint after = now();
  EXPECT_EQ(held, (std::vector<bool>{true, false, true, false}));
  for (int i : {0, 2}) {
    EXPECT_TIME_WITHIN(*get(jobs[i].id).lease_expires_at, before + std::chrono::minutes(20),
                       after + std::chrono::minutes(20));
  }
  EXPECT_EQ(dump(get(jobs[1].id)), stale_before);
}

TEST_P(QueueTest, BatchFormsOfNothingReturnNothing) {
  EXPECT_TRUE(ok(q().complete_batch({})).empty());
  EXPECT_TRUE(ok(q().extend_batch({}, std::chrono::seconds(5))).empty());
  EXPECT_TRUE(ok(q().enqueue_batch({})).empty());
}

}  // namespace
}  // namespace readpast::test
