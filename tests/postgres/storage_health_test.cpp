// Who holds the oldest snapshot, as Queue::storage_health reads it on PostgreSQL, and the
// worker's warning about one held for long (WorkerOptions::warn_snapshot_after): the session
// named by its pid, application_name and state, how long its transaction has been open.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "pg_test_util.hpp"
#include "readpast/worker.hpp"

namespace readpast::test {
namespace {

using namespace std::chrono_literals;

class StorageHealthTest : public PostgresTest {};

// A session in a REPEATABLE READ transaction that has read the jobs: the snapshot a report,
// pg_dump or a forgotten psql holds. Returns its backend's pid.
std::string hold_snapshot(SqlConnection& holder) {
  holder.exec("BEGIN ISOLATION LEVEL REPEATABLE READ");
  holder.exec("SET LOCAL application_name = 'nightly-report'");
  holder.scalar("SELECT count(*) FROM readpast.jobs");
  return holder.scalar("SELECT pg_backend_pid()::text");
}

TEST_F(StorageHealthTest, NamesTheSessionThatHoldsTheOldestSnapshot) {
  Queue queue = open();
  must(queue.enqueue(job("q")));
  SqlConnection holder = sql();
  const std::string pid = hold_snapshot(holder);
  std::this_thread::sleep_for(1100ms);

  const StorageHealth health = must(queue.storage_health());
  ASSERT_TRUE(health.oldest_snapshot);
  const SnapshotHolder& oldest = *health.oldest_snapshot;
  EXPECT_EQ(oldest.kind, "session");
  ASSERT_TRUE(oldest.pid);
  EXPECT_EQ(std::to_string(*oldest.pid), pid);
  EXPECT_EQ(oldest.client, "nightly-report");
  EXPECT_EQ(oldest.state, "idle in transaction");
  ASSERT_TRUE(oldest.age);
  EXPECT_GE(*oldest.age, 1s);
  EXPECT_LT(*oldest.age, 60s);
  EXPECT_TRUE(oldest.transactions);

  // The ring's segments are there by name, each with its size.
  bool running_0 = false;
  for (const StorageSize& size : health.sizes) running_0 |= size.relation == "running_0";
  EXPECT_TRUE(running_0);

  holder.exec("COMMIT");
  const StorageHealth after = must(queue.storage_health());
  if (after.oldest_snapshot && after.oldest_snapshot->pid) {
    EXPECT_NE(std::to_string(*after.oldest_snapshot->pid), pid) << "still named after it ended";
  }
}

// A transaction that wrote and sits idle without a snapshot holds the horizon back by its
// transaction id: it is named too.
TEST_F(StorageHealthTest, NamesAnIdleTransactionThatWrote) {
  Queue queue = open();
  SqlConnection holder = sql();
  holder.exec("BEGIN");
  holder.exec("SET LOCAL application_name = 'stuck-writer'");
  holder.scalar("SELECT txid_current()::text");
  const std::string pid = holder.scalar("SELECT pg_backend_pid()::text");
  const StorageHealth health = must(queue.storage_health());
  ASSERT_TRUE(health.oldest_snapshot);
  ASSERT_TRUE(health.oldest_snapshot->pid);
  EXPECT_EQ(std::to_string(*health.oldest_snapshot->pid), pid);
  EXPECT_EQ(health.oldest_snapshot->client, "stuck-writer");
  holder.exec("ROLLBACK");
}

TEST_F(StorageHealthTest, TheWorkerWarnsAboutASnapshotHeldLongerThanItsLimit) {
  Queue queue = open();
  must(queue.enqueue(job("q")));
  SqlConnection holder = sql();
  const std::string pid = hold_snapshot(holder);

  std::mutex mu;
  std::condition_variable cv;
  std::optional<LogRecord> warning;
  WorkerOptions options;
  options.worker_id = "watcher";
  options.run_schedules = false;
  options.retention_interval = std::nullopt;
  options.warn_snapshot_after = 1s;
  options.logger = [&](const LogRecord& record) {
    for (const auto& [name, value] : record.fields) {
      if (name == "event" && value == "snapshot_held") {
        std::lock_guard lock(mu);
        if (!warning) warning = record;
        cv.notify_all();
      }
    }
  };
  Worker worker(queue, options);
  ASSERT_TRUE(worker.handle("q", [](const Job&, std::stop_token) { return JobResult::success(); }));
  std::thread runner([&] { (void)worker.run(); });
  {
    std::unique_lock lock(mu);
    cv.wait_for(lock, 10s, [&] { return warning.has_value(); });
  }
  worker.stop();
  runner.join();
  holder.exec("COMMIT");

  ASSERT_TRUE(warning) << "no snapshot_held event within 10 s";
  EXPECT_EQ(warning->level, LogLevel::kWarn);
  EXPECT_NE(warning->message.find("session " + pid + " (nightly-report, idle in transaction)"),
            std::string::npos)
      << warning->message;
  bool named = false;
  for (const auto& [name, value] : warning->fields) named |= name == "pid" && value == pid;
  EXPECT_TRUE(named) << warning->message;
}

}  // namespace
}  // namespace readpast::test
