// Issue 19: a primary with a synchronous streaming standby; mid-drain the primary is killed
// with SIGKILL and the standby promoted. Workers given libpq's multi-host URL with
// target_session_attrs=read-write follow the new primary: every job ends succeeded, none is
// lost, none completed twice (the history checker reads every process's history).
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "chaos.hpp"
#include "support/engines/postgres_server.hpp"

namespace readpast::test {
namespace {

using namespace std::chrono_literals;

TEST(FailoverTest, WorkersFollowAPromotedSynchronousStandbyAndNothingIsLostOrCompletedTwice) {
  PostgresServer primary;
  primary.execute("CREATE DATABASE failover");
  PostgresServer standby(PostgresServer::StandbyOf{primary});
  // Synchronous: a commit is acknowledged once the standby has it, so the promoted standby
  // has every commit a worker was told of.
  primary.require_synchronous_standby();

  const std::string url = "postgresql://postgres@127.0.0.1:" + std::to_string(primary.port()) +
                          ",127.0.0.1:" + std::to_string(standby.port()) +
                          "/failover?target_session_attrs=read-write";
  // Every commit waits for the standby: a drain here runs at a fraction of its usual speed.
  const int jobs = scaled(2000, 50000);
  ChaosRun run("failover", url, "failover");
  run.enqueue(jobs);
  std::vector<std::unique_ptr<ChildProcess>> workers;
  for (int i = 0; i < 4; ++i) {
    workers.push_back(run.spawn_mp_worker("p" + std::to_string(i), 3s, 100us, 4, 16, "all"));
  }
  const auto deadline = std::chrono::steady_clock::now() + scaled(3min, 20min);
  bool failed_over = false;
  while (!failed_over && std::chrono::steady_clock::now() < deadline) {
    std::int64_t succeeded = 0;
    for (const auto& s : run.stats()) succeeded += s.succeeded;
    if (succeeded >= jobs / 3) {
      const TimePoint t_start = wall_now();
      primary.kill_postmaster();
      // A failover manager takes a moment to decide; workers meanwhile find no writable host.
      std::this_thread::sleep_for(500ms);
      standby.promote();
      run.fault("failover", "", t_start, "primary killed with SIGKILL, standby promoted");
      failed_over = true;
    }
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(failed_over) << "the drain ended before the failover";
  ASSERT_TRUE(ChaosRun::wait_all(workers, deadline + 60s));
  for (const auto& p : workers) EXPECT_TRUE(p->exited_cleanly()) << run.describe(*p);
  const CheckReport report = run.check();
  EXPECT_TRUE(report.ok()) << report.summary();
  EXPECT_EQ(report.lost, 0);
  EXPECT_EQ(report.double_completions, 0);
  EXPECT_EQ(report.succeeded, jobs);
  EXPECT_EQ(report.faults.at("failover"), 1);
}

}  // namespace
}  // namespace readpast::test
