// Dependencies (docs/workflows.md): NewJob::after, the waiting state, release when the last
// dependency succeeds, cancellation down a chain, retry back to waiting.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "conformance/queue_test.hpp"

namespace readpast::test {
namespace {

NewJob after_job(std::string queue, std::vector<JobId> after) {
  NewJob job = new_job(std::move(queue));
  job.after = std::move(after);
  return job;
}

// Leases the jobs of the queue, completes the one with `id` and releases the others.
void complete_one(Queue& queue, const std::string& name, JobId id) {
  auto jobs = ok(queue.lease(LeaseRequest{.queue = name,
                                          .worker_id = "worker-1",
                                          .max_jobs = 100,
                                          .lease_duration = std::chrono::seconds(30)}));
  bool found = false;
  for (const Job& job : jobs) {
    if (job.id == id) {
      ok(queue.complete(job.id, *job.lease_token));
      found = true;
    } else {
      ok(queue.release(job.id, *job.lease_token));
    }
  }
  if (!found) throw UnexpectedError("job " + std::to_string(id) + " was not leasable");
}

// Leases the job (the only available one of its queue) and fails it for good.
void fail_for_good(Queue& queue, const std::string& name, JobId id) {
  auto jobs = ok(queue.lease(LeaseRequest{.queue = name,
                                          .worker_id = "worker-1",
                                          .max_jobs = 1,
                                          .lease_duration = std::chrono::seconds(30)}));
  if (jobs.size() != 1 || jobs[0].id != id) {
    throw UnexpectedError("job " + std::to_string(id) + " was not leasable");
  }
  if (ok(queue.fail(
          id, *jobs[0].lease_token, "broken",
          FailOptions{.retry_after = std::nullopt, .backoff = std::nullopt, .no_retry = true})) !=
      FailOutcome::kDead) {
    throw UnexpectedError("job " + std::to_string(id) + " did not die");
  }
}

// A round skips what another session holds (SKIP LOCKED: the resolver's lock, a finished job's
// row) and reports nothing done; a draining worker took that for "nothing left" and stopped with
// a chain untold (cli.mariadb under CI's load). Queue::resolve_dependencies waits and tries
// again while something is left (src/queue.cpp, resolve_all): when it returns, the chain is told.
TEST_P(QueueTest, AChainIsToldWhenResolvingReturnsThoughAnotherSessionHeldWhatARoundNeeds) {
  using Hold = EngineUnderTest::ResolverHold;
  for (Hold what : {Hold::kFinishedJobRow, Hold::kResolverLock}) {
    const std::string name = what == Hold::kFinishedJobRow ? "row" : "lock";
    JobId first = enqueue(name);
    JobId second = enqueue(after_job(name, {first}));
    JobId third = enqueue(after_job(name, {second}));
    fail_for_good(q(), name, first);
    auto held = engine_named(GetParam()).hold_for_resolver(url(), what, first);
    std::jthread ends([&held] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      held.reset();
    });
    const std::int64_t told = ok(q().resolve_dependencies());
    ends.join();
    EXPECT_GE(told, 2) << "holding the " << name << ": the call returned before the chain was told";
    EXPECT_EQ(get(second).state, JobState::kCancelled) << "holding the " << name;
    EXPECT_EQ(get(third).state, JobState::kCancelled) << "holding the " << name;
  }
}

TEST_P(QueueTest, AJobEnqueuedAfterALiveJobWaitsUntilItSucceeds) {
  JobId a = enqueue("q");
  JobId d = enqueue(after_job("d", {a}));
  EXPECT_EQ(get(d).state, JobState::kWaiting);
  EXPECT_TRUE(lease("d", 10).empty()) << "a waiting job was leased";
  complete_one(q(), "q", a);
  ok(q().resolve_dependencies());
  EXPECT_EQ(get(d).state, JobState::kAvailable);
  EXPECT_EQ(lease_one("d").id, d);
}

TEST_P(QueueTest, AJobWaitingForSeveralBecomesAvailableOnlyWhenTheLastSucceeds) {
  JobId a = enqueue("a");
  JobId b = enqueue("b");
  JobId c = enqueue("c");
  JobId d = enqueue(after_job("d", {a, b, c}));
  complete_one(q(), "b", b);
  ok(q().resolve_dependencies());
  EXPECT_EQ(get(d).state, JobState::kWaiting);
  complete_one(q(), "a", a);
  ok(q().resolve_dependencies());
  EXPECT_EQ(get(d).state, JobState::kWaiting);
  complete_one(q(), "c", c);
  ok(q().resolve_dependencies());
  EXPECT_EQ(get(d).state, JobState::kAvailable);
}

TEST_P(QueueTest, ADependencyThatAlreadySucceededCountsAsMet) {
  JobId a = succeeded_job("q");
  JobId d = enqueue(after_job("d", {a}));
  EXPECT_EQ(get(d).state, JobState::kAvailable);
  EXPECT_EQ(lease_one("d").id, d);
  auto deps = ok(q().dependencies(d));
  ASSERT_EQ(deps.after.size(), 1u);
  EXPECT_EQ(deps.after[0].id, a);
  EXPECT_TRUE(deps.after[0].met);
}

TEST_P(QueueTest, ADependencyThatDoesNotExistIsRefusedAndNothingIsEnqueued) {
  JobId a = enqueue("q");
  const std::string before = snapshot();
  auto result = q().enqueue(after_job("d", {a, a + 1000}));
  EXPECT_ERROR_CODE(result, ErrorCode::kInvalidArgument);
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().message.find(std::to_string(a + 1000)), std::string::npos)
      << result.error().message;
  // All or nothing, also for a batch whose other jobs are fine.
  std::vector<NewJob> batch = {new_job("d"), after_job("d", {a}), after_job("d", {a + 1000})};
  EXPECT_ERROR_CODE(q().enqueue_batch(batch), ErrorCode::kInvalidArgument);
  EXPECT_EQ(snapshot(), before);
}

TEST_P(QueueTest, BadListsOfDependenciesAreRefused) {
  JobId a = enqueue("q");
  const std::string before = snapshot();
  EXPECT_ERROR_CODE(q().enqueue(after_job("d", {a, a})), ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(q().enqueue(after_job("d", {0})), ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(q().enqueue(after_job("d", {-5})), ErrorCode::kInvalidArgument);
  EXPECT_EQ(snapshot(), before);
}

TEST_P(QueueTest, ADeadDependencyCancelsTheWaitingJobNamingIt) {
  JobId a = enqueue("q");
  JobId b = enqueue("b");
  JobId d = enqueue(after_job("d", {b, a}));
  fail_for_good(q(), "q", a);
  ok(q().resolve_dependencies());
  Job job = get(d);
  EXPECT_EQ(job.state, JobState::kCancelled);
  ASSERT_TRUE(job.last_error.has_value());
  EXPECT_NE(job.last_error->find("dependency " + std::to_string(a) + " is dead"), std::string::npos)
      << *job.last_error;
  EXPECT_TRUE(job.finished_at.has_value());
}

TEST_P(QueueTest, ACancellationCascadesToTheEndOfAChain) {
  JobId first = enqueue("q");
  std::vector<JobId> chain = {first};
  for (int i = 0; i < 5; ++i) chain.push_back(enqueue(after_job("q", {chain.back()})));
  // Another branch from the middle of the chain.
  JobId branch = enqueue(after_job("other", {chain[2]}));
  EXPECT_EQ(ok(q().cancel(std::vector<JobId>{first})), std::vector<JobId>{first});
  // cancel() tells the whole chain before it returns.
  for (std::size_t i = 1; i < chain.size(); ++i) {
    Job job = get(chain[i]);
    EXPECT_EQ(job.state, JobState::kCancelled) << "link " << i;
    ASSERT_TRUE(job.last_error.has_value());
    EXPECT_NE(job.last_error->find(std::to_string(chain[i - 1])), std::string::npos)
        << *job.last_error;
  }
  EXPECT_EQ(get(branch).state, JobState::kCancelled);
}

TEST_P(QueueTest, AJobEnqueuedAfterADeadOrCancelledJobIsCancelledAtOnce) {
  JobId dead = dead_job("q");
  JobId cancelled = cancelled_job("q");
  JobId d1 = enqueue(after_job("d", {dead}));
  JobId d2 = enqueue(after_job("d", {cancelled}));
  EXPECT_EQ(get(d1).state, JobState::kCancelled);
  EXPECT_EQ(get(d2).state, JobState::kCancelled);
  EXPECT_NE(get(d2).last_error->find("is cancelled"), std::string::npos);
}

TEST_P(QueueTest, RetryOfAJobCancelledByADependencyPutsItBackToWaiting) {
  JobId a = enqueue("q");
  JobId b = enqueue("b");
  JobId d = enqueue(after_job("d", {a, b}));
  complete_one(q(), "b", b);
  fail_for_good(q(), "q", a);
  ok(q().resolve_dependencies());
  ASSERT_EQ(get(d).state, JobState::kCancelled);
  // Its dependency is still dead: it waits (for a alone: b has succeeded).
  EXPECT_EQ(ok(q().retry(std::vector<JobId>{d})), std::vector<JobId>{d});
  EXPECT_EQ(get(d).state, JobState::kWaiting);
  ok(q().resolve_dependencies());
  EXPECT_EQ(get(d).state, JobState::kWaiting) << "re-cancelled while its dependency stayed dead";
  // The dependency is retried and succeeds: the job runs.
  EXPECT_EQ(ok(q().retry(std::vector<JobId>{a})), std::vector<JobId>{a});
  complete_one(q(), "q", a);
  ok(q().resolve_dependencies());
  EXPECT_EQ(get(d).state, JobState::kAvailable);
}

TEST_P(QueueTest, RetryOfADependentWhoseDependenciesHaveAllSucceededMakesItAvailable) {
  JobId a = enqueue("q");
  JobId b = enqueue("b");
  JobId d = enqueue(after_job("d", {a, b}));
  fail_for_good(q(), "q", a);
  ok(q().resolve_dependencies());
  ASSERT_EQ(get(d).state, JobState::kCancelled);
  ok(q().retry(std::vector<JobId>{a}));
  complete_one(q(), "q", a);
  complete_one(q(), "b", b);
  ok(q().resolve_dependencies());
  EXPECT_EQ(get(d).state, JobState::kCancelled) << "a cancelled job ran by itself";
  EXPECT_EQ(ok(q().retry_all("d", JobState::kCancelled)), 1);
  EXPECT_EQ(get(d).state, JobState::kAvailable);
}

TEST_P(QueueTest, TheDelayOfAWaitingJobCountsFromTheMomentItBecomesAvailable) {
  JobId a = enqueue("q");
  NewJob spec = after_job("d", {a});
  spec.delay = std::chrono::hours(1);
  JobId d = enqueue(spec);
  complete_one(q(), "q", a);
  TimePoint before = now();
  ok(q().resolve_dependencies());
  TimePoint after = now();
  Job job = get(d);
  EXPECT_EQ(job.state, JobState::kAvailable);
  EXPECT_TIME_WITHIN(job.run_at, before + std::chrono::hours(1), after + std::chrono::hours(1));
  EXPECT_TRUE(lease("d", 1).empty()) << "a delayed dependent ran at once";
  EXPECT_EQ(ok(q().stats("d"))[0].scheduled, 1);
}

TEST_P(QueueTest, AWaitingJobHoldsItsUniqueKey) {
  JobId a = enqueue("q");
  NewJob waiting = after_job("d", {a});
  waiting.unique_key = "k";
  JobId d = enqueue(waiting);
  NewJob again = new_job("d");
  again.unique_key = "k";
  Enqueued second = ok(q().enqueue(again));
  EXPECT_FALSE(second.inserted);
  EXPECT_EQ(second.id, d);
}

TEST_P(QueueTest, AfterWithAUniqueKeyThatHandsBackAnotherJobIsAnError) {
  JobId a = enqueue("q");
  NewJob holder = new_job("d");
  holder.unique_key = "k";
  JobId h = enqueue(holder);
  const std::string before = snapshot();
  NewJob dependent = after_job("d", {a});
  dependent.unique_key = "k";
  auto result = q().enqueue(dependent);
  EXPECT_ERROR_CODE(result, ErrorCode::kInvalidArgument);
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().message.find(std::to_string(h)), std::string::npos)
      << result.error().message;
  EXPECT_EQ(snapshot(), before);
}

TEST_P(QueueTest, StatsCountWaitingJobs) {
  JobId a = enqueue("q");
  enqueue(after_job("d", {a}));
  enqueue(after_job("d", {a}));
  QueueStats stats = ok(q().stats("d"))[0];
  EXPECT_EQ(stats.waiting, 2);
  EXPECT_EQ(stats.available, 0);
}

TEST_P(QueueTest, DependenciesListsBothDirections) {
  JobId a = succeeded_job("q");
  JobId b = enqueue("q");
  JobId d = enqueue(after_job("d", {b, a}));
  JobId e = enqueue(after_job("e", {d}));
  auto of_d = ok(q().dependencies(d));
  ASSERT_EQ(of_d.after.size(), 2u);
  EXPECT_EQ(of_d.after[0].id, a);
  EXPECT_TRUE(of_d.after[0].met);
  EXPECT_EQ(of_d.after[0].state, JobState::kSucceeded);
  EXPECT_EQ(of_d.after[1].id, b);
  EXPECT_FALSE(of_d.after[1].met);
  EXPECT_EQ(of_d.after[1].state, JobState::kAvailable);
  ASSERT_EQ(of_d.dependents.size(), 1u);
  EXPECT_EQ(of_d.dependents[0].id, e);
  EXPECT_EQ(of_d.dependents[0].state, JobState::kWaiting);
  EXPECT_EQ(of_d.dependent_count, 1);
  auto plain = ok(q().dependencies(b));
  EXPECT_TRUE(plain.after.empty());
  EXPECT_EQ(plain.dependent_count, 1);
  EXPECT_ERROR_CODE(q().dependencies(e + 100), ErrorCode::kNotFound);
}

TEST_P(QueueTest, AJobWithDependentsIsKeptWhenRetentionDeletesCompletedJobs) {
  QueueOptions options;
  options.retention.succeeded = Duration::zero();
  Queue& queue = open(options);
  JobId a = enqueue("q");
  JobId plain = enqueue("q");
  JobId d = enqueue(after_job("d", {a}));
  complete_one(queue, "q", plain);
  EXPECT_ERROR_CODE(queue.get(plain), ErrorCode::kNotFound) << "retention zero kept a job";
  complete_one(queue, "q", a);
  EXPECT_EQ(get(a).state, JobState::kSucceeded);
  ok(queue.resolve_dependencies());
  EXPECT_EQ(get(d).state, JobState::kAvailable);
}

TEST_P(QueueTest, ManyDependentsOfOneJobAreAllReleased) {
  JobId a = enqueue("q");
  constexpr int kDependents = 1200;  // more than two of resolve's chunks
  std::vector<NewJob> batch(kDependents, after_job("d", {a}));
  auto enqueued = ok(q().enqueue_batch(batch));
  ASSERT_EQ(enqueued.size(), static_cast<std::size_t>(kDependents));
  EXPECT_EQ(ok(q().dependencies(a)).dependent_count, kDependents);
  complete_one(q(), "q", a);
  ok(q().resolve_dependencies());
  QueueStats stats = ok(q().stats("d"))[0];
  EXPECT_EQ(stats.available, kDependents);
  EXPECT_EQ(stats.waiting, 0);
}

// Jobs told in the same round: a dependent counts down by every edge the round meets, and
// becomes available only if those were its last.
TEST_P(QueueTest, DependentsOfJobsThatSucceedTogetherCountDownByEachEdgeMet) {
  JobId a = enqueue("q");
  JobId b = enqueue("q");
  JobId c = enqueue("c");
  JobId both = enqueue(after_job("d", {a, b}));
  JobId three = enqueue(after_job("d", {a, b, c}));
  JobId one = enqueue(after_job("d", {b}));
  auto jobs = lease("q", 2);
  ASSERT_EQ(jobs.size(), 2u);
  for (const Job& job : jobs) ok(q().complete(job.id, *job.lease_token));
  ok(q().resolve_dependencies());
  EXPECT_EQ(get(both).state, JobState::kAvailable);
  EXPECT_EQ(get(one).state, JobState::kAvailable);
  EXPECT_EQ(get(three).state, JobState::kWaiting);
  complete_one(q(), "c", c);
  ok(q().resolve_dependencies());
  EXPECT_EQ(get(three).state, JobState::kAvailable);
}

TEST_P(QueueTest, ManyDependentsOfADeadJobAreAllCancelledNamingIt) {
  JobId a = enqueue("q");
  constexpr int kDependents = 1200;  // more than two of resolve's chunks
  std::vector<NewJob> batch(kDependents, after_job("d", {a}));
  ok(q().enqueue_batch(batch));
  fail_for_good(q(), "q", a);
  ok(q().resolve_dependencies());
  QueueStats stats = ok(q().stats("d"))[0];
  EXPECT_EQ(stats.cancelled, kDependents);
  EXPECT_EQ(stats.waiting, 0);
  const std::string cause = "dependency " + std::to_string(a) + " is dead";
  ListRequest page;
  page.queue = "d";
  page.limit = 50;
  for (const Job& job : ok(q().list(page))) {
    ASSERT_TRUE(job.last_error.has_value());
    EXPECT_NE(job.last_error->find(cause), std::string::npos) << *job.last_error;
  }
}

TEST_P(QueueTest, LeaseReleasesDependentsByItself) {
  JobId a = enqueue("q");
  JobId d = enqueue(after_job("d", {a}));
  complete_one(q(), "q", a);
  // No explicit resolve: a worker's leases do it, at most every Queue::kResolveInterval.
  std::optional<JobId> leased;
  EXPECT_TRUE(eventually([&] {
    auto jobs = lease("d", 1);
    if (!jobs.empty()) leased = jobs[0].id;
    return leased.has_value();
  }));
  EXPECT_EQ(leased, d);
}

TEST_P(QueueTest, AWaitingJobCanBeCancelled) {
  JobId a = enqueue("q");
  JobId d = enqueue(after_job("d", {a}));
  EXPECT_EQ(ok(q().cancel(std::vector<JobId>{d})), std::vector<JobId>{d});
  EXPECT_EQ(get(d).state, JobState::kCancelled);
  complete_one(q(), "q", a);
  ok(q().resolve_dependencies());
  EXPECT_EQ(get(d).state, JobState::kCancelled);
}

}  // namespace
}  // namespace readpast::test
