// cancel, retry, retry_all, purge, apply_retention, stats, list, get.
#include <algorithm>
#include <thread>

#include "conformance/queue_test.hpp"

namespace readpast::test {
namespace {

std::vector<JobId> ids(std::initializer_list<JobId> list) {
  return std::vector<JobId>(list);
}

std::vector<JobId> sorted(std::vector<JobId> v) {
  std::sort(v.begin(), v.end());
  return v;
}

QueueStats stats_of(Queue& queue, const std::string& name) {
  auto all = ok(queue.stats(name));
  if (all.size() != 1 || all[0].queue != name) {
    throw UnexpectedError("stats(" + name + ") returned " + std::to_string(all.size()) +
                          " entries");
  }
  return all[0];
}

// --- cancel ---

TEST_P(QueueTest, CancelOfAnAvailableJobMakesItCancelled) {
  JobId id = enqueue("q");
  TimePoint before = now();
  EXPECT_EQ(ok(q().cancel(ids({id}))), ids({id}));
  TimePoint after = now();
  Job job = get(id);
  EXPECT_EQ(job.state, JobState::kCancelled);
  ASSERT_TRUE(job.finished_at.has_value());
  EXPECT_TIME_WITHIN(*job.finished_at, before, after);
  EXPECT_TRUE(lease("q", 1).empty()) << "a cancelled job was leased";
}

TEST_P(QueueTest, CancelOfAScheduledJobMakesItCancelled) {
  auto spec = new_job("q");
  spec.delay = std::chrono::hours(1);
  JobId id = enqueue(spec);
  EXPECT_EQ(ok(q().cancel(ids({id}))), ids({id}));
  EXPECT_EQ(get(id).state, JobState::kCancelled);
}

TEST_P(QueueTest, CancelOfARunningJobMakesItsWorkerLoseTheLease) {
  JobId id = enqueue("q");
  Job leased = lease_one("q");
  EXPECT_EQ(ok(q().cancel(ids({id}))), ids({id}));
  EXPECT_EQ(get(id).state, JobState::kCancelled);
  // The worker learns at its next heartbeat.
  EXPECT_ERROR_CODE(q().extend(id, *leased.lease_token, std::chrono::seconds(30)),
                    ErrorCode::kLeaseLost);
  EXPECT_ERROR_CODE(q().complete(id, *leased.lease_token), ErrorCode::kLeaseLost);
  EXPECT_EQ(get(id).state, JobState::kCancelled);
}

TEST_P(QueueTest, CancelReturnsOnlyTheIdsItCancelled) {
  JobId available = enqueue("q");
  JobId done = succeeded_job("q2");
  JobId dead = dead_job("q3");
  JobId cancelled = cancelled_job("q4");
  JobId running = enqueue("q5");
  lease_one("q5");
  const JobId missing = 99999999;
  std::string finished_before = dump(get(done)) + dump(get(dead)) + dump(get(cancelled));
  auto result = ok(q().cancel(ids({missing, done, available, dead, cancelled, running})));
  EXPECT_EQ(sorted(result), sorted(ids({available, running})));
  EXPECT_EQ(dump(get(done)) + dump(get(dead)) + dump(get(cancelled)), finished_before)
      << "cancel changed a finished job";
}

TEST_P(QueueTest, CancelOfNothingDoesNothing) {
  enqueue("q");
  std::string before = snapshot();
  EXPECT_TRUE(ok(q().cancel({})).empty());
  EXPECT_TRUE(ok(q().cancel(ids({123456789}))).empty());
  EXPECT_EQ(snapshot(), before);
}

// --- retry ---

TEST_P(QueueTest, RetryPutsADeadJobBackAvailableNowWithAttemptsReset) {
  auto spec = new_job("q");
  spec.max_attempts = 2;
  JobId id = enqueue(spec);
  FailOptions now_please;
  now_please.retry_after = Duration::zero();
  for (int i = 0; i < 2; ++i) {
    Job job = lease_one("q");
    ok(q().fail(id, *job.lease_token, "boom", now_please));
  }
  ASSERT_EQ(get(id).state, JobState::kDead);
  TimePoint before = now();
  EXPECT_EQ(ok(q().retry(ids({id}))), ids({id}));
  TimePoint after = now();
  Job job = get(id);
  EXPECT_EQ(job.state, JobState::kAvailable);
  EXPECT_EQ(job.attempts, 0);
  EXPECT_EQ(job.max_attempts, 2);
  EXPECT_TIME_WITHIN(job.run_at, before, after);
  // It gets its full number of attempts again.
  Job again = lease_one("q");
  EXPECT_EQ(again.id, id);
  EXPECT_EQ(again.attempts, 1);
  EXPECT_EQ(ok(q().fail(id, *again.lease_token, "once more", now_please)), FailOutcome::kRetrying);
}

TEST_P(QueueTest, RetryPutsACancelledJobBack) {
  auto spec = new_job("q");
  spec.delay = std::chrono::hours(5);
  JobId id = enqueue(spec);
  ok(q().cancel(ids({id})));
  TimePoint before = now();
  EXPECT_EQ(ok(q().retry(ids({id}))), ids({id}));
  TimePoint after = now();
  Job job = get(id);
  EXPECT_EQ(job.state, JobState::kAvailable);
  EXPECT_EQ(job.attempts, 0);
  EXPECT_TIME_WITHIN(job.run_at, before, after);
  EXPECT_EQ(lease_one("q").id, id);
}

TEST_P(QueueTest, RetryOfAJobThatIsNotDeadOrCancelledDoesNothing) {
  JobId available = enqueue("q");
  JobId running = enqueue("q");
  lease_one("q");
  JobId done = succeeded_job("q2");
  auto scheduled_spec = new_job("q3");
  scheduled_spec.delay = std::chrono::hours(1);
  JobId scheduled = enqueue(scheduled_spec);
  std::string before = snapshot();
  EXPECT_TRUE(ok(q().retry(ids({available, running, done, scheduled, 77777777}))).empty());
  EXPECT_EQ(snapshot(), before);
}

TEST_P(QueueTest, RetryAllRetriesEveryJobOfTheQueueInTheState) {
  JobId d1 = dead_job("q");
  JobId d2 = dead_job("q");
  JobId d3 = dead_job("q");
  JobId other_dead = dead_job("other");
  JobId c1 = cancelled_job("q");
  JobId available = enqueue("q");
  EXPECT_EQ(ok(q().retry_all("q", JobState::kDead)), 3);
  for (JobId id : {d1, d2, d3}) {
    EXPECT_EQ(get(id).state, JobState::kAvailable);
    EXPECT_EQ(get(id).attempts, 0);
  }
  EXPECT_EQ(get(other_dead).state, JobState::kDead) << "retry_all crossed queues";
  EXPECT_EQ(get(c1).state, JobState::kCancelled) << "retry_all crossed states";
  EXPECT_EQ(get(available).state, JobState::kAvailable);
  EXPECT_EQ(ok(q().retry_all("q", JobState::kDead)), 0);
  EXPECT_EQ(ok(q().retry_all("q", JobState::kCancelled)), 1);
  EXPECT_EQ(get(c1).state, JobState::kAvailable);
}

// --- purge ---

TEST_P(QueueTest, PurgeDeletesOnlyJobsOfTheGivenFinishedStateAndQueue) {
  JobId s1 = succeeded_job("q");
  JobId s2 = succeeded_job("q");
  JobId d = dead_job("q");
  JobId c = cancelled_job("q");
  JobId running = enqueue("q");
  lease_one("q");
  JobId available = enqueue("q");
  JobId other = succeeded_job("other");

  PurgeRequest request;
  request.queue = "q";
  request.state = JobState::kSucceeded;
  EXPECT_EQ(ok(q().purge(request)), 2);
  EXPECT_ERROR_CODE(q().get(s1), ErrorCode::kNotFound);
  EXPECT_ERROR_CODE(q().get(s2), ErrorCode::kNotFound);
  for (JobId id : {d, c, running, available, other}) {
    EXPECT_TRUE(q().get(id).has_value()) << "purge deleted job " << id;
  }
  request.state = JobState::kDead;
  EXPECT_EQ(ok(q().purge(request)), 1);
  EXPECT_ERROR_CODE(q().get(d), ErrorCode::kNotFound);
  request.state = JobState::kCancelled;
  EXPECT_EQ(ok(q().purge(request)), 1);
  EXPECT_ERROR_CODE(q().get(c), ErrorCode::kNotFound);
  EXPECT_EQ(get(running).state, JobState::kRunning);
  EXPECT_EQ(get(available).state, JobState::kAvailable);
  EXPECT_EQ(get(other).state, JobState::kSucceeded);
}

TEST_P(QueueTest, PurgeRefusesAvailableAndRunningJobs) {
  enqueue("q");
  enqueue("q");
  lease_one("q");
  std::string before = snapshot();
  for (JobState state : {JobState::kAvailable, JobState::kRunning}) {
    PurgeRequest request;
    request.queue = "q";
    request.state = state;
    EXPECT_ERROR_CODE(q().purge(request), ErrorCode::kInvalidArgument);
  }
  EXPECT_EQ(snapshot(), before);
}

TEST_P(QueueTest, PurgeOlderThanIsMeasuredFromFinishedAt) {
  // Both enqueued now; `early` finishes 600 ms before `late`.
  JobId early = enqueue("q");
  JobId late = enqueue("q");
  Job early_job = lease_one("q");
  ASSERT_EQ(early_job.id, early);
  Job late_job = lease_one("q");
  ok(q().complete(early, *early_job.lease_token));
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // time must pass
  ok(q().complete(late, *late_job.lease_token));
  PurgeRequest request;
  request.queue = "q";
  request.state = JobState::kSucceeded;
  request.older_than = std::chrono::milliseconds(300);
  // Measured from enqueued_at or started_at, both would be older than 300 ms.
  EXPECT_EQ(ok(q().purge(request)), 1);
  EXPECT_ERROR_CODE(q().get(early), ErrorCode::kNotFound);
  EXPECT_EQ(get(late).state, JobState::kSucceeded);
  request.older_than = std::chrono::hours(1);
  EXPECT_EQ(ok(q().purge(request)), 0);
}

TEST_P(QueueTest, PurgeLimitDeletesAtMostThatMany) {
  for (int i = 0; i < 5; ++i) dead_job("q");
  PurgeRequest request;
  request.queue = "q";
  request.state = JobState::kDead;
  request.limit = 2;
  EXPECT_EQ(ok(q().purge(request)), 2);
  EXPECT_EQ(stats_of(q(), "q").dead, 3);
  EXPECT_EQ(ok(q().purge(request)), 2);
  EXPECT_EQ(ok(q().purge(request)), 1);
  EXPECT_EQ(ok(q().purge(request)), 0);
}

TEST_P(QueueTest, RemoveExpiredSucceededDeletesOnlySucceededJobsPastRetention) {
  QueueOptions options;
  options.retention.succeeded = std::chrono::milliseconds(800);
  open(options);
  std::vector<JobId> done;
  for (int i = 0; i < 3; ++i) done.push_back(succeeded_job("q"));
  JobId other = succeeded_job("other");
  JobId dead = dead_job("q");
  JobId available = enqueue("q");
  EXPECT_EQ(ok(q().apply_retention("q")), 0) << "removed before the retention passed";
  std::int64_t removed = 0;
  ASSERT_TRUE(eventually([&] {
    auto n = ok(q().apply_retention("q", 2));
    EXPECT_LE(n, 2) << "went past the limit";
    removed += n;
    return removed >= 3;
  }));
  EXPECT_EQ(removed, 3);
  for (JobId id : done) EXPECT_ERROR_CODE(q().get(id), ErrorCode::kNotFound);
  EXPECT_EQ(get(other).state, JobState::kSucceeded) << "crossed queues";
  EXPECT_EQ(get(dead).state, JobState::kDead);
  EXPECT_EQ(get(available).state, JobState::kAvailable);
}

// --- stats ---

TEST_P(QueueTest, StatsCountsJobsPerState) {
  enqueue("q");
  auto scheduled = new_job("q");
  scheduled.delay = std::chrono::hours(1);
  enqueue(scheduled);
  enqueue("q");
  lease_one("q");  // one running
  succeeded_job("q");
  succeeded_job("q");
  dead_job("q");
  cancelled_job("q");
  enqueue("other");

  QueueStats stats = stats_of(q(), "q");
  EXPECT_EQ(stats.available, 2) << "available includes scheduled";
  EXPECT_EQ(stats.scheduled, 1);
  EXPECT_EQ(stats.running, 1);
  EXPECT_EQ(stats.succeeded, 2);
  EXPECT_EQ(stats.dead, 1);
  EXPECT_EQ(stats.cancelled, 1);
}

TEST_P(QueueTest, StatsListsEveryQueueInNameOrder) {
  enqueue("b");
  enqueue("a");
  enqueue("c.2");
  enqueue("a");
  dead_job("d");
  auto all = ok(q().stats());
  std::vector<std::string> names;
  for (const auto& s : all) names.push_back(s.queue);
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b", "c.2", "d"}));
  EXPECT_EQ(all[0].available, 2);
  EXPECT_EQ(all[3].dead, 1);
  EXPECT_EQ(all[3].available, 0);
}

TEST_P(QueueTest, StatsOfAQueueWithoutJobsIsEmptyOrZero) {
  enqueue("q");
  auto stats = ok(q().stats("nothing"));
  ASSERT_LE(stats.size(), 1u);
  if (!stats.empty()) {
    EXPECT_EQ(dump(stats[0]), dump(QueueStats{.queue = "nothing"}));
  }
}

TEST_P(QueueTest, OldestAvailableAgeIsTheAgeOfTheOldestRunnableJob) {
  auto scheduled = new_job("q");
  scheduled.delay = std::chrono::hours(1);
  enqueue(scheduled);
  EXPECT_EQ(stats_of(q(), "q").oldest_available_age, Duration::zero())
      << "a scheduled job is not waiting yet";
  TimePoint enqueued = now();
  enqueue("q");
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // time must pass
  enqueue("q");
  Duration age = stats_of(q(), "q").oldest_available_age;
  TimePoint after = now();
  EXPECT_GE(age, std::chrono::milliseconds(400) - kClockTolerance);
  EXPECT_LE(age, (after - enqueued) + kClockTolerance);
  // Once every runnable job is leased, nothing is waiting.
  lease("q", 10);
  EXPECT_EQ(stats_of(q(), "q").oldest_available_age, Duration::zero());
}

// --- list and get ---

TEST_P(QueueTest, ListFiltersByQueueAndState) {
  JobId a1 = enqueue("a");
  JobId a2 = enqueue("a");
  JobId b1 = enqueue("b");
  Job running = lease_one("a");
  ASSERT_EQ(running.id, a1);
  JobId b_dead = dead_job("b");

  auto of = [](const std::vector<Job>& jobs) {
    std::vector<JobId> v;
    for (const auto& j : jobs) v.push_back(j.id);
    return v;
  };
  ListRequest request;
  EXPECT_EQ(of(ok(q().list(request))), ids({a1, a2, b1, b_dead}));
  request.queue = "a";
  EXPECT_EQ(of(ok(q().list(request))), ids({a1, a2}));
  request.state = JobState::kRunning;
  EXPECT_EQ(of(ok(q().list(request))), ids({a1}));
  request.queue.reset();
  request.state = JobState::kAvailable;
  EXPECT_EQ(of(ok(q().list(request))), ids({a2, b1}));
  request.state = JobState::kDead;
  EXPECT_EQ(of(ok(q().list(request))), ids({b_dead}));
  request.queue = "a";
  EXPECT_TRUE(ok(q().list(request)).empty());
  // Listed jobs carry every column, as get returns them.
  request = ListRequest{};
  for (const auto& job : ok(q().list(request))) EXPECT_EQ(dump(job), dump(get(job.id)));
}

TEST_P(QueueTest, ListPagesByIdWithAfterId) {
  std::vector<JobId> all;
  for (int i = 0; i < 25; ++i) all.push_back(enqueue(i % 2 ? "a" : "b"));
  ListRequest request;
  request.limit = 10;
  std::vector<JobId> seen;
  std::vector<std::size_t> page_sizes;
  while (true) {
    auto page = ok(q().list(request));
    page_sizes.push_back(page.size());
    for (const auto& job : page) seen.push_back(job.id);
    if (page.size() < 10) break;
    request.after_id = page.back().id;
  }
  EXPECT_EQ(seen, all);
  EXPECT_EQ(page_sizes, (std::vector<std::size_t>{10, 10, 5}));
  request.after_id = all[20];
  request.limit = 100;
  EXPECT_EQ(ok(q().list(request)).size(), 4u);
}

TEST_P(QueueTest, ListPagesTheRunningJobsOfAQueueById) {
  // Engines may find running jobs another way than the other states (SQLite: along the
  // expiry index, sorted), so paging is checked on them too.
  std::vector<JobId> a;
  for (int i = 0; i < 6; ++i) {
    a.push_back(enqueue("a"));
    enqueue("b");
  }
  lease("b", 2);
  std::vector<JobId> running;
  for (const auto& job : lease("a", 5)) running.push_back(job.id);
  running = sorted(running);
  ASSERT_EQ(running, std::vector<JobId>(a.begin(), a.begin() + 5));
  ListRequest request;
  request.queue = "a";
  request.state = JobState::kRunning;
  request.limit = 3;
  std::vector<JobId> seen;
  for (const auto& job : ok(q().list(request))) seen.push_back(job.id);
  EXPECT_EQ(seen, std::vector<JobId>(running.begin(), running.begin() + 3));
  request.after_id = seen.back();
  seen.clear();
  for (const auto& job : ok(q().list(request))) {
    seen.push_back(job.id);
    EXPECT_EQ(job.state, JobState::kRunning);
    EXPECT_TRUE(job.lease_token.has_value());
  }
  EXPECT_EQ(seen, std::vector<JobId>(running.begin() + 3, running.end()));
  EXPECT_EQ(stats_of(q(), "a").running, 5);
  EXPECT_EQ(stats_of(q(), "a").available, 1);
  EXPECT_EQ(stats_of(q(), "b").running, 2);
}

TEST_P(QueueTest, ListHonoursTheLimit) {
  for (int i = 0; i < 5; ++i) enqueue("q");
  ListRequest request;
  request.limit = 3;
  EXPECT_EQ(ok(q().list(request)).size(), 3u);
  request.limit = 1;
  EXPECT_EQ(ok(q().list(request)).size(), 1u);
}

TEST_P(QueueTest, GetOfAnUnknownIdIsNotFound) {
  EXPECT_ERROR_CODE(q().get(1), ErrorCode::kNotFound);
  JobId id = enqueue("q");
  EXPECT_ERROR_CODE(q().get(id + 1000), ErrorCode::kNotFound);
  EXPECT_ERROR_CODE(q().get(-1), ErrorCode::kNotFound);
  EXPECT_ERROR_CODE(q().get(0), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace readpast::test
