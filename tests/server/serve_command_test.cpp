// `readpast serve` as a user starts it: refuses an address beyond loopback without a token,
// serves until SIGTERM, then exits 0.
#include <gtest/gtest.h>
#include <httplib.h>

#include <csignal>
#include <thread>

#include "cli/cli_runner.hpp"
#include "support/temp_dir.hpp"

namespace readpast::test {
namespace {

using namespace std::chrono_literals;

TEST(ServeCommand, RefusesAnAddressBeyondLoopbackWithoutAToken) {
  TempDir dir;
  std::string db = "--db=sqlite:" + dir.file("q.db");
  ASSERT_EQ(run_readpast(dir.path(), {db, "init"}).exit_code, 0);
  RunResult refused = run_readpast(dir.path(), {db, "serve", "--listen", "0.0.0.0:0"});
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("token"), std::string::npos) << refused.err;
  RunResult bad = run_readpast(dir.path(), {db, "serve", "--listen", "nowhere"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  RunResult short_token = run_readpast(dir.path(), {db, "serve", "--listen", "0.0.0.0:0"},
                                       environment({"READPAST_TOKEN=abc"}));
  EXPECT_EQ(short_token.exit_code, 2) << short_token.err;
  RunResult bad_retention = run_readpast(dir.path(), {db, "serve", "--retain-dead", "sometimes"});
  EXPECT_EQ(bad_retention.exit_code, 2) << bad_retention.err;
  EXPECT_NE(bad_retention.err.find("--retain-dead"), std::string::npos) << bad_retention.err;
}

TEST(ServeCommand, ServesUntilSigtermWithTheTokenFromTheEnvironment) {
  TempDir dir;
  std::string db = "--db=sqlite:" + dir.file("q.db");
  ASSERT_EQ(run_readpast(dir.path(), {db, "init"}).exit_code, 0);
  const std::string token = "token-from-the-environment";
  ReadpastProcess server(dir.path(), {db, "serve", "--listen", "127.0.0.1:0"},
                         environment({"READPAST_TOKEN=" + token}));
  const Serving serving = wait_until_serving(server);
  ASSERT_TRUE(serving.port) << serving.log;
  const std::string& log = serving.log;
  EXPECT_NE(log.find("serving on http://127.0.0.1:" + std::to_string(*serving.port) +
                     " (token required)"),
            std::string::npos)
      << log;
  // The password-free URL is logged, never the token.
  EXPECT_EQ(log.find(token), std::string::npos);

  httplib::Client client("127.0.0.1", *serving.port);
  auto unauthorized = client.Get("/healthz");
  ASSERT_TRUE(unauthorized);
  EXPECT_EQ(unauthorized->status, 401);
  auto health = client.Get("/healthz", {{"Authorization", "Bearer " + token}});
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200) << health->body;

  server.send_signal(SIGTERM);
  RunResult result = server.wait(10s);
  EXPECT_EQ(result.exit_code, 0) << result.err;
}

}  // namespace
}  // namespace readpast::test
