// MariaDB-specific behaviour: what a bad login, an unknown database or a server that is down
// says (one line, password redacted), and that the engine comes back after a restart.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "readpast/queue.hpp"
#include "support/engines/mariadb_server.hpp"

namespace readpast {
namespace {

using test::MariadbServer;

constexpr std::string_view kSecret = "s3cr3tPW";

QueueOptions init_options() {
  QueueOptions options;
  options.init_schema = true;
  return options;
}

void expect_one_line_without_secret(const Error& error) {
  EXPECT_EQ(error.message.find(kSecret), std::string::npos) << error.message;
  EXPECT_EQ(error.message.find('\n'), std::string::npos) << error.message;
}

TEST(MariadbEngine, WrongPasswordIsOneLineWithoutThePassword) {
  auto& server = MariadbServer::shared();
  server.execute("CREATE USER IF NOT EXISTS 'pw_user'@'%' IDENTIFIED BY 'right-one'");
  server.execute("GRANT ALL PRIVILEGES ON *.* TO 'pw_user'@'%'");
  const std::string url = "mariadb://pw_user:" + std::string(kSecret) +
                          "@127.0.0.1:" + std::to_string(server.port()) + "/mysql";
  auto queue = Queue::open(url, init_options());
  ASSERT_FALSE(queue.has_value());
  EXPECT_EQ(queue.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(queue.error().message.find("Access denied"), std::string::npos)
      << queue.error().message;
  expect_one_line_without_secret(queue.error());
}

TEST(MariadbEngine, RightPasswordWorks) {
  auto& server = MariadbServer::shared();
  server.execute("CREATE USER IF NOT EXISTS 'pw_user2'@'%' IDENTIFIED BY 'p@ss/w:rd'");
  server.execute("GRANT ALL PRIVILEGES ON *.* TO 'pw_user2'@'%'");
  server.execute("CREATE DATABASE IF NOT EXISTS pw_db");
  const std::string url =
      "mariadb://pw_user2:p%40ss%2Fw%3Ard@127.0.0.1:" + std::to_string(server.port()) + "/pw_db";
  auto queue = Queue::open(url, init_options());
  ASSERT_TRUE(queue.has_value()) << queue.error().message;
}

TEST(MariadbEngine, UnknownDatabaseIsOneLine) {
  auto& server = MariadbServer::shared();
  auto queue = Queue::open(server.url("no_such_database"), init_options());
  ASSERT_FALSE(queue.has_value());
  EXPECT_NE(queue.error().message.find("no_such_database"), std::string::npos)
      << queue.error().message;
  expect_one_line_without_secret(queue.error());
}

TEST(MariadbEngine, ServerDownIsUnavailable) {
  const std::string url = "mariadb://u:" + std::string(kSecret) + "@127.0.0.1:1/jobs";
  auto queue = Queue::open(url, init_options());
  ASSERT_FALSE(queue.has_value());
  EXPECT_EQ(queue.error().code, ErrorCode::kUnavailable);
  expect_one_line_without_secret(queue.error());
}

TEST(MariadbEngine, SchemaMissingWithoutInit) {
  auto& server = MariadbServer::shared();
  auto queue = Queue::open(server.fresh_database_url(), QueueOptions{});
  ASSERT_FALSE(queue.has_value());
  EXPECT_EQ(queue.error().code, ErrorCode::kSchema) << queue.error().message;
}

TEST(MariadbEngine, ANewerSchemaIsRefusedAndLeftAlone) {
  auto& server = MariadbServer::shared();
  const std::string url = server.fresh_database_url();
  ASSERT_TRUE(Queue::open(url, init_options()).has_value());
  const std::string database = url.substr(url.rfind('/') + 1);
  server.execute("INSERT INTO readpast_schema_version (version) VALUES (99)", database);
  for (const QueueOptions& options : {QueueOptions{}, init_options()}) {
    auto opened = Queue::open(url, options);
    ASSERT_FALSE(opened.has_value());
    EXPECT_EQ(opened.error().code, ErrorCode::kSchema) << opened.error().message;
    EXPECT_NE(opened.error().message.find("newer"), std::string::npos) << opened.error().message;
    expect_one_line_without_secret(opened.error());
  }
}

TEST(MariadbEngine, ComesBackAfterTheServerIsKilled) {
  auto& server = MariadbServer::shared();
  auto queue = Queue::open(server.fresh_database_url(), init_options());
  ASSERT_TRUE(queue.has_value()) << queue.error().message;
  NewJob job;
  job.queue = "q";
  job.payload = "before";
  ASSERT_TRUE(queue->enqueue(job).has_value());
  server.restart_immediate();
  // The pooled connection is stale: the first call after the restart may fail once with
  // kUnavailable, never lose the job.
  Result<std::vector<Job>> leased = fail_with(Error::unavailable("not yet"));
  for (int i = 0; i < 100 && !leased; ++i) {
    leased = queue->lease(LeaseRequest{.queue = "q", .worker_id = "w"});
    if (!leased) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(leased.has_value()) << leased.error().message;
  ASSERT_EQ(leased->size(), 1u);
  EXPECT_EQ(leased->front().payload, "before");
}

}  // namespace
}  // namespace readpast
