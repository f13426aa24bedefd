// The command line against MariaDB: the same binary, only the URL differs. One pass through
// the main path (the SQLite tests cover the details), an idle worker process woken by its
// polls, and the database password kept from the commands it runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli_runner.hpp"
#include "readpast/queue.hpp"
#include "support/engines/mariadb_server.hpp"
#include "support/temp_dir.hpp"

namespace readpast::test {
namespace {

TEST(CliMariadbTest, InitEnqueueWorkAndInspect) {
  TempDir dir;
  const std::string url = MariadbServer::shared().fresh_database_url();
  auto rp = [&](std::vector<std::string> args, RunOptions options = {}) {
    args.insert(args.begin(), {"--db", url});
    return run_readpast(dir.path(), args, options);
  };
  auto missing = rp({"stats"});
  EXPECT_EQ(missing.exit_code, 1) << "no schema yet: " << missing.err;
  auto init = rp({"init"});
  ASSERT_EQ(init.exit_code, 0) << init.err;
  EXPECT_EQ(rp({"init"}).exit_code, 0) << "init again changes nothing";

  auto good = rp({"enqueue", "mdb", "-"}, input(std::string("bytes\0\xff", 7)));
  ASSERT_EQ(good.exit_code, 0) << good.err;
  auto bad = rp({"enqueue", "mdb", "fail", "--max-attempts", "2"});
  ASSERT_EQ(bad.exit_code, 0) << bad.err;

  auto work =
      rp({"work", "mdb", "--drain", "--concurrency", "2", "--backoff-base", "10ms", "--exec",
          "[ \"$(cat)\" != fail ] || { echo \"no good: $READPAST_ATTEMPT\" >&2; exit 4; }"});
  ASSERT_EQ(work.exit_code, 0) << work.err;

  auto stats = rp({"stats", "mdb", "--json"});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  auto q = nlohmann::json::parse(stats.out)["queues"]["mdb"];
  EXPECT_EQ(q["succeeded"], 1);
  EXPECT_EQ(q["dead"], 1);
  EXPECT_EQ(q["available"], 0);

  auto shown = rp({"show", bad.out.substr(0, bad.out.size() - 1), "--json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  auto job = nlohmann::json::parse(shown.out);
  EXPECT_EQ(job["state"], "dead");
  EXPECT_EQ(job["attempts"], 2);
  EXPECT_EQ(job["last_error"], "exit status 4: no good: 2");

  auto good_job = nlohmann::json::parse(rp({"list", "mdb", "--json"}).out)[0];
  EXPECT_EQ(good_job["payload_encoding"], "base64");
  EXPECT_EQ(good_job["payload"], "Ynl0ZXMA/w==");
}

// An idle `readpast work` process starts a job that another connection enqueued within the
// poll's cap (25 ms) plus the command's own start.
TEST(CliMariadbTest, AnIdleWorkerProcessStartsAJobEnqueuedElsewhereWithin100ms) {
  TempDir dir;
  const std::string url = MariadbServer::shared().fresh_database_url();
  ASSERT_EQ(run_readpast(dir.path(), {"--db", url, "init"}).exit_code, 0);
  const std::string marks = dir.file("started");
  std::filesystem::create_directories(marks);
  ReadpastProcess worker(dir.path(), {"--db", url, "work", "wake", "--no-progress", "--exec",
                                      "date +%s%N > " + marks + "/$READPAST_JOB_ID"});
  auto producer = Queue::open(url);
  ASSERT_TRUE(producer.has_value()) << producer.error().message;
  std::vector<double> latencies_ms;
  for (int round = 0; round < 5; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(round == 0 ? 1500 : 400));  // idle
    const auto enqueued_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
    NewJob job;
    job.queue = "wake";
    job.payload = "x";
    auto enqueued = producer->enqueue(job);
    ASSERT_TRUE(enqueued.has_value()) << enqueued.error().message;
    const auto mark = std::filesystem::path(marks) / std::to_string(enqueued->id);
    for (int i = 0; i < 500 && read_file(mark).empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const std::string started = read_file(mark);
    ASSERT_FALSE(started.empty()) << "job " << enqueued->id << " did not start";
    latencies_ms.push_back(static_cast<double>(std::stoll(started) - enqueued_ns) / 1e6);
  }
  worker.send_signal(SIGTERM);
  EXPECT_EQ(worker.wait(std::chrono::seconds(20)).exit_code, 0);
  std::sort(latencies_ms.begin(), latencies_ms.end());
  std::printf(
      "[ latency  ] enqueue by another connection -> command started by an idle `readpast "
      "work`: min %.1f ms, median %.1f ms, max %.1f ms (5 rounds, including the command's "
      "start)\n",
      latencies_ms.front(), latencies_ms[2], latencies_ms.back());
  EXPECT_LT(latencies_ms[2], 100.0);
}

// Commands get READPAST_DB without the database password unless asked.
TEST(CliMariadbTest, CommandsGetTheDatabaseUrlWithoutItsPasswordUnlessAsked) {
  TempDir dir;
  auto& server = MariadbServer::shared();
  const std::string password = "mdbS3cretPW";
  server.execute("CREATE USER IF NOT EXISTS 'cli_pw'@'%' IDENTIFIED BY '" + password + "'");
  server.execute("GRANT ALL PRIVILEGES ON *.* TO 'cli_pw'@'%'");
  const std::string plain = server.fresh_database_url();
  const std::string rest = plain.substr(plain.find('@') + 1);
  const std::string url = "mariadb://cli_pw:" + password + "@" + rest + "?connect_timeout=5";
  const std::string without = "mariadb://cli_pw@" + rest + "?connect_timeout=5";
  ASSERT_EQ(run_readpast(dir.path(), {"--db", url, "init"}).exit_code, 0);
  auto run = [&](std::vector<std::string> args, RunOptions options, bool pass_password = false) {
    auto enqueued =
        run_readpast(dir.path(), {"--db", url, "enqueue", "q", "x", "--max-attempts", "1"});
    EXPECT_EQ(enqueued.exit_code, 0) << enqueued.err;
    const std::string id = enqueued.out.substr(0, enqueued.out.find('\n'));
    const std::string seen = dir.file("db." + id);
    args.insert(args.end(), {"work", "q", "--drain", "--exec",
                             "printenv READPAST_DB | tee " + seen + " >&2; exit 1"});
    if (pass_password) args.push_back("--pass-db-password");
    auto worked = run_readpast(dir.path(), args, options);
    EXPECT_EQ(worked.exit_code, 0) << worked.err;
    EXPECT_EQ(worked.err.find(password), std::string::npos) << worked.err;
    auto shown = run_readpast(dir.path(), {"--db", url, "show", id, "--json"});
    EXPECT_EQ(shown.exit_code, 0) << shown.err;
    const std::string last_error = nlohmann::json::parse(shown.out)["last_error"];
    EXPECT_EQ(last_error.find(password), std::string::npos) << last_error;
    return read_file(seen);
  };
  EXPECT_EQ(run({"--db", url}, {}), without + "\n");
  EXPECT_EQ(run({}, environment({"READPAST_DB=" + url})), without + "\n");
  EXPECT_EQ(run({"--db", url}, {}, /*pass_password=*/true), url + "\n");
}

}  // namespace
}  // namespace readpast::test
