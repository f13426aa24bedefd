// pause and resume: a paused queue hands out nothing, to any client; running jobs finish.
#include <thread>

#include "conformance/queue_test.hpp"

namespace readpast::test {
namespace {

TEST_P(QueueTest, APausedQueueHandsOutNoJobsAndResumeHandsThemOutAgain) {
  JobId first = enqueue("q");
  JobId second = enqueue("q");
  enqueue("other");
  ok(q().pause("q"));
  EXPECT_TRUE(lease("q", 10).empty()) << "a paused queue handed out jobs";
  EXPECT_EQ(lease("other", 10).size(), 1u) << "pausing one queue stopped another";
  Queue other_client = open_another();
  EXPECT_TRUE(ok(other_client.lease(LeaseRequest{"q", "w2", 10})).empty())
      << "the pause is not in the database for every client";
  ok(q().resume("q"));
  auto jobs = lease("q", 10);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].id, first);
  EXPECT_EQ(jobs[1].id, second);
}

TEST_P(QueueTest, RunningJobsOfAPausedQueueFinishNormally) {
  enqueue("q");
  enqueue("q");
  auto jobs = lease("q", 2);
  ASSERT_EQ(jobs.size(), 2u);
  ok(q().pause("q"));
  ok(q().complete(jobs[0].id, *jobs[0].lease_token));
  EXPECT_EQ(ok(q().fail(jobs[1].id, *jobs[1].lease_token, "boom")), FailOutcome::kRetrying);
  EXPECT_EQ(get(jobs[0].id).state, JobState::kSucceeded);
  EXPECT_EQ(get(jobs[1].id).state, JobState::kAvailable);
}

TEST_P(QueueTest, PauseAndResumeAreIdempotentAndShowInStats) {
  ok(q().pause("empty"));
  ok(q().pause("empty"));
  auto stats = ok(q().stats());
  ASSERT_EQ(stats.size(), 1u) << "a paused queue without jobs is not listed";
  EXPECT_EQ(stats[0].queue, "empty");
  EXPECT_TRUE(stats[0].paused);
  EXPECT_EQ(stats[0].available, 0);
  enqueue("empty");
  auto one = ok(q().stats("empty"));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_TRUE(one[0].paused);
  EXPECT_EQ(one[0].available, 1);
  ok(q().resume("empty"));
  ok(q().resume("empty"));
  ok(q().resume("never-paused"));
  one = ok(q().stats("empty"));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_FALSE(one[0].paused);
  EXPECT_TRUE(ok(q().stats("never-paused")).empty());
}

TEST_P(QueueTest, WaitForWorkDoesNotReportJobsOfAPausedQueueButWakesOnResume) {
  enqueue("q");
  ok(q().pause("q"));
  const auto started = std::chrono::steady_clock::now();
  EXPECT_FALSE(ok(q().wait_for_work("q", std::chrono::milliseconds(400))))
      << "a waiting worker would spin on a paused queue";
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(350));

  Queue resumer = open_another();
  std::thread resume([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ok(resumer.resume("q"));
  });
  const auto waiting = std::chrono::steady_clock::now();
  const bool woken = ok(q().wait_for_work("q", std::chrono::seconds(5)));
  const auto waited = std::chrono::steady_clock::now() - waiting;
  resume.join();
  EXPECT_TRUE(woken);
  EXPECT_LT(waited, std::chrono::seconds(2)) << "resume did not wake the waiting worker";
}

TEST_P(QueueTest, PauseRejectsBadQueueNamesAndChangesNothing) {
  const std::string before = snapshot();
  EXPECT_ERROR_CODE(q().pause("bad name"), ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(q().resume(""), ErrorCode::kInvalidArgument);
  EXPECT_EQ(snapshot(), before);
}

}  // namespace
}  // namespace readpast::test
