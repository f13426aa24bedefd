// The command line against PostgreSQL: the same binary, only the URL differs. One pass
// through the main path (the SQLite tests cover the details) to show that nothing in the
// CLI or the worker assumes SQLite.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "support/postgres_server.hpp"
#include "support/temp_dir.hpp"

namespace readpast::test {
namespace {

TEST(CliPostgresTest, InitEnqueueWorkAndInspect) {
  TempDir dir;
  const std::string url = PostgresServer::shared().fresh_database_url();
  auto rp = [&](std::vector<std::string> args, RunOptions options = {}) {
    args.insert(args.begin(), {"--db", url});
    return run_readpast(dir.path(), args, options);
  };
  auto missing = rp({"stats"});
  EXPECT_EQ(missing.exit_code, 1) << "no schema yet: " << missing.err;
  auto init = rp({"init"});
  ASSERT_EQ(init.exit_code, 0) << init.err;

  auto good = rp({"enqueue", "pg", "-"}, input(std::string("bytes\0\xff", 7)));
  ASSERT_EQ(good.exit_code, 0) << good.err;
  auto bad = rp({"enqueue", "pg", "fail", "--max-attempts", "2"});
  ASSERT_EQ(bad.exit_code, 0) << bad.err;

  auto work =
      rp({"work", "pg", "--drain", "--concurrency", "2", "--backoff-base", "10ms", "--exec",
          "[ \"$(cat)\" != fail ] || { echo \"no good: $READPAST_ATTEMPT\" >&2; exit 4; }"});
  ASSERT_EQ(work.exit_code, 0) << work.err;

  auto stats = rp({"stats", "pg", "--json"});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  auto pg = nlohmann::json::parse(stats.out)["queues"]["pg"];
  EXPECT_EQ(pg["succeeded"], 1);
  EXPECT_EQ(pg["dead"], 1);
  EXPECT_EQ(pg["available"], 0);

  auto shown = rp({"show", bad.out.substr(0, bad.out.size() - 1), "--json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  auto job = nlohmann::json::parse(shown.out);
  EXPECT_EQ(job["state"], "dead");
  EXPECT_EQ(job["attempts"], 2);
  EXPECT_EQ(job["last_error"], "exit status 4: no good: 2");

  auto good_job = nlohmann::json::parse(rp({"list", "pg", "--json"}).out)[0];
  EXPECT_EQ(good_job["payload_encoding"], "base64");
  EXPECT_EQ(good_job["payload"], "Ynl0ZXMA/w==");
}

}  // namespace
}  // namespace readpast::test
