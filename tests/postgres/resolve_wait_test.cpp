// Queue::resolve_dependencies does not stop while another session holds what a round needs
// (src/queue.cpp, resolve_all): a round skips a finished job whose row is locked (SKIP
// LOCKED) and the whole round when another session has the resolver's advisory lock, and
// reports nothing done. A draining worker took that for "nothing left" and stopped with a
// chain untold. Here another session holds each of them for a moment; the chain must be told
// when the call returns.
#include <chrono>
#include <string>
#include <thread>

#include "pg_test_util.hpp"

namespace readpast::test {
namespace {

using namespace std::chrono_literals;

// What the other session holds.
enum class Hold { kTheDeadJobsRow, kTheResolversLock };

std::string hold_name(const ::testing::TestParamInfo<Hold>& param) {
  return param.param == Hold::kTheDeadJobsRow ? "TheDeadJobsRow" : "TheResolversLock";
}

class ResolveWaitTest : public PostgresTest, public ::testing::WithParamInterface<Hold> {};

TEST_P(ResolveWaitTest, AChainIsToldWhenTheCallReturns) {
  Queue queue = open();
  const JobId first = must(queue.enqueue(job("steps"))).id;
  NewJob second_job = job("steps");
  second_job.after = {first};
  const JobId second = must(queue.enqueue(second_job)).id;
  NewJob third_job = job("steps");
  third_job.after = {second};
  const JobId third = must(queue.enqueue(third_job)).id;
  auto leased = must(queue.lease(LeaseRequest{.queue = "steps", .worker_id = "w"}));
  ASSERT_EQ(leased.size(), 1u);
  ASSERT_EQ(
      must(queue.fail(
          first, *leased.front().lease_token, "broken",
          FailOptions{.retry_after = std::nullopt, .backoff = std::nullopt, .no_retry = true})),
      FailOutcome::kDead);

  SqlConnection other = sql();
  other.exec("BEGIN");
  if (GetParam() == Hold::kTheDeadJobsRow) {
    other.query("SELECT id FROM readpast.done WHERE id = $1::bigint FOR UPDATE",
                {std::to_string(first)});
  } else {
    other.exec("SELECT pg_advisory_xact_lock(hashtext('readpast.jobs.dependencies'))");
  }
  std::jthread ends([&] {
    std::this_thread::sleep_for(300ms);
    other.exec("COMMIT");
  });
  auto told = queue.resolve_dependencies();
  ends.join();
  ASSERT_TRUE(told.has_value()) << told.error().message;
  EXPECT_GE(*told, 2) << "the call returned before the chain was told";
  for (JobId id : {second, third}) {
    EXPECT_EQ(to_string(must(queue.get(id)).state), "cancelled") << "job " << id;
  }
}

INSTANTIATE_TEST_SUITE_P(WhileAnotherSessionHolds, ResolveWaitTest,
                         ::testing::Values(Hold::kTheDeadJobsRow, Hold::kTheResolversLock),
                         hold_name);

}  // namespace
}  // namespace readpast::test
