// Groups (docs/workflows.md): NewJob::group and after_group, a batch with a callback that
// waits until every member finished, whatever its outcome.
#include <algorithm>
#include <string>
#include <thread>

#include "conformance/queue_test.hpp"

namespace readpast::test {
namespace {

NewJob member(std::string group, std::string queue = "batch") {
  NewJob job = new_job(std::move(queue));
  job.group = std::move(group);
  return job;
}

NewJob callback(std::string group, std::string queue = "callbacks") {
  NewJob job = new_job(std::move(queue));
  job.after_group = std::move(group);
  return job;
}

// Leases the given job of its queue (releasing any other it took) and settles it with `how`.
void settle(Queue& queue, const Job& job, const std::string& how) {
  auto leased = ok(queue.lease(LeaseRequest{.queue = job.queue,
                                            .worker_id = "w",
                                            .max_jobs = 100,
                                            .lease_duration = std::chrono::seconds(30)}));
  for (const Job& held : leased) {
    if (held.id != job.id) {
      ok(queue.release(held.id, *held.lease_token));
    } else if (how == "complete") {
      ok(queue.complete(held.id, *held.lease_token));
    } else {
      ok(queue.fail(
          held.id, *held.lease_token, "broken",
          FailOptions{.retry_after = std::nullopt, .backoff = std::nullopt, .no_retry = true}));
    }
  }
}

TEST_P(QueueTest, AGroupCallbackWaitsUntilEveryMemberFinishedWhateverItsOutcome) {
  std::vector<JobId> members;
  for (int i = 0; i < 3; ++i) members.push_back(enqueue(member("b1")));
  JobId done = enqueue(callback("b1"));
  EXPECT_EQ(get(done).state, JobState::kWaiting);
  settle(q(), get(members[0]), "complete");
  ok(q().resolve_dependencies());
  EXPECT_EQ(get(done).state, JobState::kWaiting);
  settle(q(), get(members[1]), "fail");
  ok(q().resolve_dependencies());
  EXPECT_EQ(get(done).state, JobState::kWaiting);
  ok(q().cancel(std::vector<JobId>{members[2]}));
  ok(q().resolve_dependencies());
  EXPECT_EQ(get(done).state, JobState::kAvailable);
  GroupStats stats = ok(q().group_stats("b1"));
  EXPECT_EQ(stats.succeeded, 1);
  EXPECT_EQ(stats.dead, 1);
  EXPECT_EQ(stats.cancelled, 1);
  EXPECT_EQ(stats.live, 0);
  EXPECT_EQ(stats.waiters, 0);
  EXPECT_EQ(ids_of(ok(q().list_group("b1"))), members);
  auto deps = ok(q().dependencies(done));
  ASSERT_EQ(deps.after.size(), 1u);
  EXPECT_EQ(deps.after[0].group, std::optional<std::string>("b1"));
  EXPECT_TRUE(deps.after[0].met);
  EXPECT_EQ(ok(q().dependencies(members[0])).group, std::optional<std::string>("b1"));
}

TEST_P(QueueTest, AJobEnqueuedAfterAFinishedGroupIsAvailableAtOnce) {
  JobId only = enqueue(member("b2"));
  settle(q(), get(only), "complete");
  ok(q().resolve_dependencies());
  JobId late = enqueue(callback("b2"));
  EXPECT_EQ(get(late).state, JobState::kAvailable);
}

TEST_P(QueueTest, AGroupThatDoesNotExistOrTheJobsOwnGroupIsRefused) {
  enqueue(member("b3"));
  const std::string before = snapshot();
  auto unknown = q().enqueue(callback("no-such-group"));
  EXPECT_ERROR_CODE(unknown, ErrorCode::kInvalidArgument);
  NewJob own = member("b3");
  own.after_group = "b3";
  EXPECT_ERROR_CODE(q().enqueue(own), ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(q().enqueue(callback("bad name!")), ErrorCode::kInvalidArgument);
  std::vector<NewJob> batch = {member("b3"), callback("nope")};
  EXPECT_ERROR_CODE(q().enqueue_batch(batch), ErrorCode::kInvalidArgument);
  EXPECT_EQ(snapshot(), before);
  EXPECT_ERROR_CODE(q().group_stats("nope"), ErrorCode::kNotFound);
}

TEST_P(QueueTest, MembersAndTheirCallbackCanGoInOneBatch) {
  std::vector<NewJob> batch = {member("b4"), member("b4"), callback("b4")};
  auto enqueued = ok(q().enqueue_batch(batch));
  ASSERT_EQ(enqueued.size(), 3u);
  EXPECT_EQ(get(enqueued[2].id).state, JobState::kWaiting);
  settle(q(), get(enqueued[0].id), "complete");
  settle(q(), get(enqueued[1].id), "complete");
  ok(q().resolve_dependencies());
  EXPECT_EQ(get(enqueued[2].id).state, JobState::kAvailable);
}

TEST_P(QueueTest, TheGroupCallbackIsReleasedOnceWhenTheLastMembersFinishAtOnce) {
  constexpr int kMembers = 24;
  std::vector<NewJob> batch(kMembers, member("b5"));
  batch.push_back(callback("b5"));
  batch.push_back(callback("b5"));
  auto enqueued = ok(q().enqueue_batch(batch));
  auto leased = lease("batch", kMembers);
  ASSERT_EQ(leased.size(), static_cast<std::size_t>(kMembers));
  // Four handles complete the members at the same time, each resolving as it goes.
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      Queue other = ok(Queue::open(url()));
      for (int i = t; i < kMembers; i += 4) {
        ok(other.complete(leased[static_cast<std::size_t>(i)].id,
                          *leased[static_cast<std::size_t>(i)].lease_token));
        ok(other.resolve_dependencies());
      }
    });
  }
  for (auto& thread : threads) thread.join();
  ok(q().resolve_dependencies());
  for (std::size_t i = kMembers; i < enqueued.size(); ++i) {
    Job job = get(enqueued[i].id);
    EXPECT_EQ(job.state, JobState::kAvailable);
  }
  EXPECT_EQ(ok(q().group_stats("b5")).live, 0);
  EXPECT_EQ(ok(q().group_stats("b5")).waiters, 0);
}

TEST_P(QueueTest, AMemberThatJoinsBeforeTheGroupFinishedHoldsEveryCallback) {
  JobId first = enqueue(member("b6"));
  JobId early = enqueue(callback("b6"));
  // A second member joins while the group still has a live one: the group is not done.
  JobId second = enqueue(member("b6"));
  settle(q(), get(first), "complete");
  ok(q().resolve_dependencies());
  EXPECT_EQ(get(early).state, JobState::kWaiting);
  settle(q(), get(second), "complete");
  ok(q().resolve_dependencies());
  EXPECT_EQ(get(early).state, JobState::kAvailable);
  // Once every member finished, the group is done: a later member opens it again, and only
  // the callbacks enqueued after that wait for it.
  JobId third = enqueue(member("b6"));
  JobId late = enqueue(callback("b6"));
  EXPECT_EQ(get(late).state, JobState::kWaiting);
  EXPECT_EQ(get(early).state, JobState::kAvailable);
  settle(q(), get(third), "complete");
  ok(q().resolve_dependencies());
  EXPECT_EQ(get(late).state, JobState::kAvailable);
}

TEST_P(QueueTest, RetryOfAFinishedMemberOpensItsGroupAgain) {
  JobId only = enqueue(member("b7"));
  settle(q(), get(only), "fail");
  ok(q().resolve_dependencies());
  EXPECT_EQ(ok(q().group_stats("b7")).live, 0);
  ok(q().retry(std::vector<JobId>{only}));
  EXPECT_EQ(ok(q().group_stats("b7")).live, 1);
  JobId waits = enqueue(callback("b7"));
  EXPECT_EQ(get(waits).state, JobState::kWaiting);
  settle(q(), get(only), "complete");
  ok(q().resolve_dependencies());
  EXPECT_EQ(get(waits).state, JobState::kAvailable);
}

}  // namespace
}  // namespace readpast::test
