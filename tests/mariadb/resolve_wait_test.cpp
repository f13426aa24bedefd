// Queue::resolve_dependencies does not stop while another session holds what a round needs
// (src/queue.cpp, resolve_all): a round skips a finished job whose row is locked and the
// resolver's lock row when another session has it (SKIP LOCKED), and reports nothing done.
// A draining worker took that for "nothing left" and stopped with a chain untold (cli.mariadb
// under CI's load). Here another session holds each of them for a moment; the chain must be
// told when the call returns.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "readpast/queue.hpp"
#include "support/engines/mariadb_server.hpp"

namespace readpast {
namespace {

using test::MariadbServer;
using namespace std::chrono_literals;

NewJob step(std::string queue, std::string payload, std::vector<JobId> after = {}) {
  NewJob job;
  job.queue = std::move(queue);
  job.payload = std::move(payload);
  job.after = std::move(after);
  return job;
}

// What the other session holds.
enum class Hold { kTheDeadJobsRow, kTheResolversLock };

std::string hold_name(const ::testing::TestParamInfo<Hold>& param) {
  return param.param == Hold::kTheDeadJobsRow ? "TheDeadJobsRow" : "TheResolversLock";
}

class MariadbResolveWait : public ::testing::TestWithParam<Hold> {};

TEST_P(MariadbResolveWait, AChainIsToldWhenTheCallReturns) {
  auto& server = MariadbServer::shared();
  const std::string url = server.fresh_database_url();
  QueueOptions options;
  options.init_schema = true;
  auto queue = Queue::open(url, options);
  ASSERT_TRUE(queue.has_value()) << queue.error().message;
  auto first = queue->enqueue(step("steps", "one"));
  ASSERT_TRUE(first.has_value()) << first.error().message;
  auto second = queue->enqueue(step("steps", "two", {first->id}));
  ASSERT_TRUE(second.has_value()) << second.error().message;
  auto third = queue->enqueue(step("steps", "three", {second->id}));
  ASSERT_TRUE(third.has_value()) << third.error().message;
  auto leased = queue->lease(LeaseRequest{.queue = "steps", .worker_id = "w"});
  ASSERT_TRUE(leased.has_value() && leased->size() == 1u);
  auto failed = queue->fail(
      first->id, *leased->front().lease_token, "broken",
      FailOptions{.retry_after = std::nullopt, .backoff = std::nullopt, .no_retry = true});
  ASSERT_TRUE(failed.has_value() && *failed == FailOutcome::kDead);

  MariadbServer::Session other(server, MariadbServer::database_of(url));
  other.execute("START TRANSACTION");
  other.execute(GetParam() == Hold::kTheDeadJobsRow
                    ? "SELECT id FROM readpast_jobs WHERE id = " + std::to_string(first->id) +
                          " FOR UPDATE"
                    : "SELECT name FROM readpast_locks WHERE name = 'dependencies' FOR UPDATE");
  std::jthread ends([&] {
    std::this_thread::sleep_for(300ms);
    other.execute("COMMIT");
  });
  auto told = queue->resolve_dependencies();
  ends.join();
  ASSERT_TRUE(told.has_value()) << told.error().message;
  EXPECT_GE(*told, 2) << "the call returned before the chain was told";
  for (JobId id : {second->id, third->id}) {
    auto job = queue->get(id);
    ASSERT_TRUE(job.has_value()) << job.error().message;
    EXPECT_EQ(to_string(job->state), "cancelled") << "job " << id;
  }
}

INSTANTIATE_TEST_SUITE_P(WhileAnotherSessionHolds, MariadbResolveWait,
                         ::testing::Values(Hold::kTheDeadJobsRow, Hold::kTheResolversLock),
                         hold_name);

}  // namespace
}  // namespace readpast
