// Fencing by lease token, and expired leases: a worker that stalled past its lease can
// neither complete nor overwrite the job another worker now holds.
#include <atomic>
#include <thread>

#include "conformance/queue_test.hpp"

namespace readpast::test {
namespace {

QueueOptions rescue_at_once() {
  QueueOptions options;
  options.rescue_interval = Duration::zero();
  return options;
}

// Every settling call with `token` reports lease lost and leaves the whole database as it was.
void expect_fenced_off(Queue& queue, JobId id, const LeaseToken& token,
                       const std::function<std::string()>& snapshot) {
  const std::string before = snapshot();
  EXPECT_ERROR_CODE(queue.complete(id, token), ErrorCode::kLeaseLost);
  EXPECT_ERROR_CODE(queue.fail(id, token, "stale worker failed"), ErrorCode::kLeaseLost);
  FailOptions now_please;
  now_please.retry_after = Duration::zero();
  EXPECT_ERROR_CODE(queue.fail(id, token, "stale worker failed", now_please),
                    ErrorCode::kLeaseLost);
  EXPECT_ERROR_CODE(queue.extend(id, token, std::chrono::hours(1)), ErrorCode::kLeaseLost);
  EXPECT_ERROR_CODE(queue.release(id, token), ErrorCode::kLeaseLost);
  EXPECT_ERROR_CODE(queue.release(id, token, std::chrono::hours(1)), ErrorCode::kLeaseLost);
  std::vector<LeasedRef> refs = {{id, token}};
  auto completed = queue.complete_batch(refs);
  ASSERT_TRUE(completed.has_value()) << completed.error().message;
  EXPECT_EQ(*completed, std::vector<bool>{false});
  auto extended = queue.extend_batch(refs, std::chrono::hours(1));
  ASSERT_TRUE(extended.has_value()) << extended.error().message;
  EXPECT_EQ(*extended, std::vector<bool>{false});
  EXPECT_EQ(snapshot(), before) << "a fenced-off call changed the database";
}

// Leases `queue` as `worker` until it returns a job (expired leases come back), or fails.
Job lease_when_back(Queue& queue, const std::string& name, const std::string& worker,
                    Duration lease_duration = std::chrono::seconds(30)) {
  std::optional<Job> leased;
  bool back = eventually([&] {
    auto jobs = ok(queue.lease(LeaseRequest{name, worker, 1, lease_duration}));
    if (jobs.empty()) return false;
    leased = std::move(jobs.front());
    return true;
  });
  if (!back) throw UnexpectedError("the expired job never came back to " + name);
  return std::move(*leased);
}

TEST_P(QueueTest, StaleWorkerCannotSettleAJobReLeasedByAnotherWorker) {
  open(rescue_at_once());
  JobId id = enqueue("q", "work");
  enqueue("q2");  // another job, to see that nothing else changes either
  Job a = lease_one("q", "worker-a", kShortLease);
  Job b = lease_when_back(q(), "q", "worker-b");
  ASSERT_EQ(b.id, id);
  EXPECT_EQ(b.attempts, 2);
  EXPECT_EQ(b.leased_by, std::optional<std::string>("worker-b"));
  EXPECT_NE(b.lease_token, a.lease_token);
  // The second lease began only after the first expired (same database clock).
  EXPECT_GE(*b.started_at, *a.lease_expires_at - kClockTolerance);

  expect_fenced_off(q(), id, *a.lease_token, [this] { return snapshot(); });
  // A's calls from a different handle (another process, say) are fenced off just the same.
  Queue other = open_another();
  expect_fenced_off(other, id, *a.lease_token, [this] { return snapshot(); });

  ok(q().complete(id, *b.lease_token));
  EXPECT_EQ(get(id).state, JobState::kSucceeded);
}

TEST_P(QueueTest, StaleWorkerCannotSettleAJobAfterItsLeaseWasRescued) {
  open(rescue_at_once());
  JobId id = enqueue("q");
  Job a = lease_one("q", "worker-a", kShortLease);
  std::int64_t rescued = 0;
  ASSERT_TRUE(eventually([&] {
    rescued += ok(q().rescue_expired("q"));
    return rescued > 0;
  }));
  EXPECT_EQ(rescued, 1);
  Job job = get(id);
  EXPECT_EQ(job.state, JobState::kAvailable);
  expect_fenced_off(q(), id, *a.lease_token, [this] { return snapshot(); });
}

TEST_P(QueueTest, TokenOfACompletedJobIsLeaseLost) {
  JobId id = enqueue("q");
  Job leased = lease_one("q");
  ok(q().complete(id, *leased.lease_token));
  expect_fenced_off(q(), id, *leased.lease_token, [this] { return snapshot(); });
  EXPECT_EQ(get(id).state, JobState::kSucceeded);
}

TEST_P(QueueTest, TokenOfACancelledJobIsLeaseLost) {
  JobId id = enqueue("q");
  Job leased = lease_one("q");
  EXPECT_EQ(ok(q().cancel(std::vector<JobId>{id})), std::vector<JobId>{id});
  expect_fenced_off(q(), id, *leased.lease_token, [this] { return snapshot(); });
  EXPECT_EQ(get(id).state, JobState::kCancelled);
}

TEST_P(QueueTest, LeasesHeldTellsWhichLeasesStillHoldAndChangesNothing) {
  enqueue("q", "a");
  enqueue("q", "b");
  enqueue("q", "c");
  std::vector<Job> leased = lease("q", 3);
  ASSERT_EQ(leased.size(), 3u);
  std::vector<LeasedRef> refs;
  for (const Job& job : leased) refs.push_back({job.id, *job.lease_token});
  EXPECT_EQ(ok(q().leases_held(refs)), (std::vector<bool>{true, true, true}));

  ok(q().complete(leased[0].id, *leased[0].lease_token));
  EXPECT_EQ(ok(q().cancel(std::vector<JobId>{leased[1].id})), std::vector<JobId>{leased[1].id});
  refs.push_back({leased[2].id, LeaseToken::random()});  // someone else's token
  const std::string before = snapshot();
  EXPECT_EQ(ok(q().leases_held(refs)), (std::vector<bool>{false, false, true, false}));
  EXPECT_EQ(snapshot(), before) << "asking changed the database";
  EXPECT_TRUE(ok(q().leases_held({})).empty());
}

TEST_P(QueueTest, TokenOfADeadJobIsLeaseLost) {
  auto spec = new_job("q");
  spec.max_attempts = 1;
  JobId id = enqueue(spec);
  Job leased = lease_one("q");
  EXPECT_EQ(ok(q().fail(id, *leased.lease_token, "boom")), FailOutcome::kDead);
  expect_fenced_off(q(), id, *leased.lease_token, [this] { return snapshot(); });
}

TEST_P(QueueTest, TokenOfAFailedAttemptIsLeaseLostBeforeTheRetry) {
  JobId id = enqueue("q");
  Job leased = lease_one("q");
  EXPECT_EQ(ok(q().fail(id, *leased.lease_token, "boom")), FailOutcome::kRetrying);
  expect_fenced_off(q(), id, *leased.lease_token, [this] { return snapshot(); });
}

TEST_P(QueueTest, TokenOfAReleasedLeaseIsLeaseLost) {
  JobId id = enqueue("q");
  Job leased = lease_one("q");
  ok(q().release(id, *leased.lease_token, std::chrono::hours(1)));
  expect_fenced_off(q(), id, *leased.lease_token, [this] { return snapshot(); });
}

TEST_P(QueueTest, ExpiredLeaseComesBackToAvailable) {
  open(rescue_at_once());
  JobId held = enqueue("q");
  Job keeper = lease_one("q", "worker-keeper", std::chrono::minutes(5));
  ASSERT_EQ(keeper.id, held);
  JobId id = enqueue("q");
  Job a = lease_one("q", "worker-a", kShortLease);
  ASSERT_EQ(a.id, id);
  Job b = lease_when_back(q(), "q", "worker-b");
  EXPECT_EQ(b.id, id) << "only the expired lease comes back";
  EXPECT_EQ(b.attempts, 2) << "the expired lease spent an attempt";
  EXPECT_GE(*b.started_at, *a.lease_expires_at - kClockTolerance)
      << "handed out again before the first lease expired";
  EXPECT_EQ(get(held).state, JobState::kRunning);
  EXPECT_EQ(get(held).lease_token, keeper.lease_token);
}

TEST_P(QueueTest, ExpiredLeaseComesBackWithinAboutASecondByDefault) {
  open();  // default rescue_interval: 1s
  JobId id = enqueue("q");
  Job a = lease_one("q", "worker-a", kShortLease);
  Job b = lease_when_back(q(), "q", "worker-b");
  EXPECT_EQ(b.id, id);
  // docs/design.md "Operations": "becomes leasable again within about a second". The
  // first poll after expiry may have to wait out one rescue interval; allow it twice over.
  EXPECT_LE(*b.started_at, *a.lease_expires_at + std::chrono::milliseconds(2500));
}

TEST_P(QueueTest, LeaseRescuesExpiredLeasesAtMostOncePerRescueInterval) {
  QueueOptions options;
  options.rescue_interval = std::chrono::hours(1);
  open(options);
  JobId id = enqueue("q");
  Job a = lease_one("q", "worker-a", kShortLease);  // this lease may rescue; nothing expired
  // For twice the lease, other workers poll: the expired lease must wait for the interval.
  const auto until = std::chrono::steady_clock::now() + 2 * kShortLease;
  while (std::chrono::steady_clock::now() < until) {
    EXPECT_TRUE(lease("q", 1, "worker-b").empty()) << "rescued before the interval passed";
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(get(id).state, JobState::kRunning);
  // An explicit rescue does not wait for the interval.
  EXPECT_EQ(ok(q().rescue_expired("q")), 1);
  EXPECT_EQ(lease_one("q", "worker-b").id, id);
  (void)a;
}

TEST_P(QueueTest, StatsCountExpiredLeasesUntilARescueMovesThem) {
  QueueOptions options;
  options.rescue_interval = std::chrono::hours(1);  // only the explicit calls rescue
  open(options);
  for (int i = 0; i < 3; ++i) enqueue("q");
  enqueue("other");
  auto short_leases = lease("q", 2, "w", kShortLease);
  ASSERT_EQ(short_leases.size(), 2u);
  lease_one("q", "w", std::chrono::minutes(5));
  lease_one("other", "w", std::chrono::minutes(5));
  auto stats_named = [this](const std::string& name) {
    for (const QueueStats& s : ok(q().stats())) {
      if (s.queue == name) return s;
    }
    return QueueStats{.queue = name};
  };
  EXPECT_EQ(stats_named("q").expired, 0) << "no lease has passed yet";
  std::this_thread::sleep_for(kShortLease + kClockTolerance);

  // Expired jobs stay counted as running: nothing moved them.
  QueueStats all = stats_named("q");
  EXPECT_EQ(all.running, 3);
  EXPECT_EQ(all.expired, 2);
  EXPECT_EQ(stats_named("other").expired, 0);
  auto one = ok(q().stats("q"));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(dump(one[0]), dump(all)) << "stats of one queue and of all disagree";

  // rescue_expired_all finds the queue by its expired count and moves both jobs.
  EXPECT_EQ(ok(q().rescue_expired_all()), 2);
  all = stats_named("q");
  EXPECT_EQ(all.expired, 0);
  EXPECT_EQ(all.running, 1);
  EXPECT_EQ(all.available, 2);
  EXPECT_EQ(ok(q().rescue_expired_all()), 0);
}

TEST_P(QueueTest, ExpiredLeaseWithItsAttemptsSpentGoesDead) {
  open(rescue_at_once());
  auto spec = new_job("q");
  spec.max_attempts = 1;
  JobId id = enqueue(spec);
  Job a = lease_one("q", "worker-a", kShortLease);
  bool leased_again = false;
  ASSERT_TRUE(eventually([&] {
    if (!lease("q", 1, "worker-b").empty()) leased_again = true;
    return get(id).state == JobState::kDead;
  })) << "the expired job never went dead: "
      << dump(get(id));
  EXPECT_FALSE(leased_again) << "a job with its attempts spent was handed out again";
  Job job = get(id);
  EXPECT_EQ(job.attempts, 1);
  ASSERT_TRUE(job.finished_at.has_value());
  EXPECT_GE(*job.finished_at, *a.lease_expires_at - kClockTolerance);
  EXPECT_TRUE(job.last_error.has_value()) << "a dead job should say why";
  expect_fenced_off(q(), id, *a.lease_token, [this] { return snapshot(); });
}

TEST_P(QueueTest, RescueExpiredMovesOnlyExpiredLeasesOfItsQueue) {
  QueueOptions options;
  options.rescue_interval = std::chrono::hours(1);  // only the explicit calls rescue
  open(options);
  for (int i = 0; i < 3; ++i) enqueue("q");
  JobId other_queue = enqueue("other");
  auto short_leases = lease("q", 2, "w", kShortLease);
  ASSERT_EQ(short_leases.size(), 2u);
  Job long_lease = lease_one("q", "w", std::chrono::minutes(5));
  Job other = lease_one("other", "w", kShortLease);
  std::int64_t rescued = 0;
  ASSERT_TRUE(eventually([&] {
    rescued += ok(q().rescue_expired("q"));
    return rescued >= 2;
  }));
  EXPECT_EQ(rescued, 2);
  EXPECT_EQ(ok(q().rescue_expired("q")), 0);
  for (const auto& job : short_leases) {
    Job now_job = get(job.id);
    EXPECT_EQ(now_job.state, JobState::kAvailable);
    EXPECT_EQ(now_job.attempts, 1);
  }
  EXPECT_EQ(get(long_lease.id).state, JobState::kRunning);
  EXPECT_EQ(get(other_queue).state, JobState::kRunning) << "rescue crossed into another queue";
  // The rescued jobs can be leased right away.
  EXPECT_EQ(lease("q", 5).size(), 2u);
  (void)other;
}

// PostgreSQL pushes cancellations (a NOTIFY at commit), so that a worker stops a cancelled
// job at once; the other engines have nothing to push and say so with an empty
// subscription (their workers poll leases_held).
TEST_P(QueueTest, OnCancelPushesWhereTheEngineCanAndStopsWhenTheSubscriptionEnds) {
  std::atomic<int> calls{0};
  Subscription subscription = q().on_cancel([&calls] { ++calls; });
  if (!subscription) {
    EXPECT_NE(GetParam(), "postgres") << "PostgreSQL, listening directly, pushes cancellations";
    return;
  }
  JobId id = enqueue("q");
  lease_one("q");
  Queue other = open_another();  // another process, say
  EXPECT_EQ(ok(other.cancel(std::vector<JobId>{id})), std::vector<JobId>{id});
  EXPECT_TRUE(eventually([&] { return calls.load() > 0; }, std::chrono::seconds(5)))
      << "no push after a running job was cancelled";

  subscription.reset();
  const int seen = calls.load();
  JobId second = enqueue("q");
  lease_one("q");
  ok(other.cancel(std::vector<JobId>{second}));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(calls.load(), seen) << "called after its subscription ended";
}

}  // namespace
}  // namespace readpast::test
