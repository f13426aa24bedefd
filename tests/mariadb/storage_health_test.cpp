// Who holds the oldest InnoDB transaction, as Queue::storage_health reads it on MariaDB
// (information_schema.INNODB_TRX, which needs the PROCESS privilege), and what a role without
// that privilege gets: the tables' sizes, no holder, no error.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "readpast/queue.hpp"
#include "support/engines/mariadb_server.hpp"

namespace readpast {
namespace {

using namespace std::chrono_literals;
using test::MariadbServer;

Queue open_with_schema(const std::string& url) {
  QueueOptions options;
  options.init_schema = true;
  auto queue = Queue::open(url, options);
  if (!queue) throw std::runtime_error(queue.error().message);
  return std::move(*queue);
}

TEST(MariadbStorageHealth, NamesTheConnectionOfTheOldestTransaction) {
  auto& server = MariadbServer::shared();
  const std::string url = server.fresh_database_url();
  Queue queue = open_with_schema(url);
  NewJob job;
  job.queue = "q";
  job.payload = "{}";
  ASSERT_TRUE(queue.enqueue(job));
  MariadbServer::Session holder(server, MariadbServer::database_of(url));
  holder.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT");
  holder.execute("SELECT count(*) FROM readpast_jobs");
  std::this_thread::sleep_for(1100ms);

  auto health = queue.storage_health();
  ASSERT_TRUE(health) << health.error().message;
  ASSERT_TRUE(health->oldest_snapshot) << "the open transaction was not found";
  const SnapshotHolder& oldest = *health->oldest_snapshot;
  EXPECT_EQ(oldest.kind, "connection");
  EXPECT_TRUE(oldest.pid);
  EXPECT_EQ(oldest.client.rfind("root@", 0), 0u) << oldest.client;  // the Session's user
  EXPECT_EQ(oldest.state, "idle in transaction");
  ASSERT_TRUE(oldest.age);
  EXPECT_GE(*oldest.age, 1s);
  EXPECT_LT(*oldest.age, 60s);
  EXPECT_FALSE(oldest.transactions);
  bool jobs_table = false;
  for (const StorageSize& size : health->sizes) jobs_table |= size.relation == "readpast_jobs";
  EXPECT_TRUE(jobs_table);

  holder.execute("COMMIT");
  // INNODB_TRX is a cache that InnoDB refreshes at most every 100 ms.
  std::this_thread::sleep_for(200ms);
  auto after = queue.storage_health();
  ASSERT_TRUE(after) << after.error().message;
  if (after->oldest_snapshot) {
    EXPECT_NE(after->oldest_snapshot->pid, oldest.pid)
        << "still named after it ended: " << after->oldest_snapshot->client << ", "
        << after->oldest_snapshot->state;
  }
}

TEST(MariadbStorageHealth, ARoleWithoutProcessGetsTheSizesAndNoHolder) {
  auto& server = MariadbServer::shared();
  const std::string url = server.fresh_database_url();
  const std::string database = MariadbServer::database_of(url);
  open_with_schema(url);  // the schema, made by the test's own user
  server.execute("CREATE USER IF NOT EXISTS 'no_process'@'%'");
  server.execute("GRANT ALL PRIVILEGES ON `" + database + "`.* TO 'no_process'@'%'");
  MariadbServer::Session holder(server, database);
  holder.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT");

  Queue queue = open_with_schema(server.url(database, "no_process"));
  auto health = queue.storage_health();
  ASSERT_TRUE(health) << health.error().message;
  EXPECT_FALSE(health->oldest_snapshot);
  EXPECT_FALSE(health->sizes.empty());
  holder.execute("COMMIT");
}

}  // namespace
}  // namespace readpast
