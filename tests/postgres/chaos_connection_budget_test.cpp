// Issue 19, the connection budget: a worker process uses the connections its URL allows
// (pool_size) whatever its number of threads, and a pool smaller than the threads makes
// them take turns, never run a job twice; the same behind PgBouncer in transaction mode
// with fewer server connections than clients.
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "chaos.hpp"
#include "support/engines/postgres_pgbouncer.hpp"
#include "support/engines/postgres_server.hpp"

namespace readpast::test {
namespace {

using namespace std::chrono_literals;

// Drains `jobs` jobs with `processes` mp_worker processes of 8 threads on `url`, while
// `sample` runs every 20 ms; expects every job done once.
void drain_and_check(const std::string& name, const std::string& url, int processes,
                     const std::function<void()>& sample) {
  const int jobs = scaled(2000, 50000);
  ChaosRun run(name, url, name);
  run.enqueue(jobs);
  std::vector<std::unique_ptr<ChildProcess>> workers;
  for (int i = 0; i < processes; ++i) {
    workers.push_back(run.spawn_mp_worker("p" + std::to_string(i), 3s, 100us, 8, 4, "all"));
  }
  std::atomic<bool> done{false};
  std::thread sampler([&] {
    while (!done) {
      sample();
      std::this_thread::sleep_for(20ms);
    }
  });
  const bool ended =
      ChaosRun::wait_all(workers, std::chrono::steady_clock::now() + scaled(3min, 20min));
  done = true;
  sampler.join();
  ASSERT_TRUE(ended);
  for (const auto& p : workers) EXPECT_TRUE(p->exited_cleanly()) << run.describe(*p);
  const CheckReport report = run.check();
  EXPECT_TRUE(report.ok()) << report.summary();
  EXPECT_EQ(report.lost, 0);
  EXPECT_EQ(report.double_completions, 0);
  EXPECT_EQ(report.duplicate_executions, 0) << "no lease expired: nothing may run twice";
  EXPECT_EQ(report.succeeded, jobs);
}

// Sessions of database `database` on the shared server right now.
int sessions_of(const std::string& database) {
  const auto& server = PostgresServer::shared();
  const std::string conninfo = "host=" + server.directory().string() +
                               " port=" + std::to_string(server.port()) +
                               " user=postgres dbname=postgres";
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn(PQconnectdb(conninfo.c_str()), &PQfinish);
  const char* values[] = {database.c_str()};
  std::unique_ptr<PGresult, decltype(&PQclear)> result(
      PQexecParams(conn.get(), "SELECT count(*) FROM pg_stat_activity WHERE datname = $1", 1,
                   nullptr, values, nullptr, nullptr, 0),
      &PQclear);
  if (PQresultStatus(result.get()) != PGRES_TUPLES_OK) return -1;
  return std::stoi(PQgetvalue(result.get(), 0, 0));
}

TEST(ConnectionBudgetTest, EightThreadsShareOneConnectionAndNoJobRunsTwice) {
  const std::string url = PostgresServer::shared().fresh_database_url();
  const std::string database = url.substr(url.rfind('/') + 1);
  std::atomic<int> most{0};
  drain_and_check("budget", url + "?pool_size=1", 2, [&] {
    const int now = sessions_of(database);
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
  });
  // Two processes with one statement connection and one listener each, and the test's own
  // Queue (one statement connection).
  EXPECT_LE(most.load(), 5);
  EXPECT_GE(most.load(), 2) << "the sampler saw no session at all";
}

TEST(ConnectionBudgetTest, SixteenClientsOnTwoServerConnectionsOfPgBouncer) {
  PgBouncer pooler(PostgresServer::shared().port(), /*server_pool_size=*/2);
  const std::string direct = PostgresServer::shared().fresh_database_url();
  const std::string database = direct.substr(direct.rfind('/') + 1);
  std::atomic<int> most{0};
  drain_and_check("pgbouncer_budget", pooler.through(direct) + "?pool_mode=transaction", 2, [&] {
    const int now = sessions_of(database);
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
  });
  EXPECT_LE(most.load(), 2) << "PgBouncer opened more server connections than its pool";
}

}  // namespace
}  // namespace readpast::test
