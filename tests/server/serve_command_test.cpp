// `readpast serve` as a user starts it: refuses an address beyond loopback without a token,
// serves until SIGTERM, then exits 0.
#include <gtest/gtest.h>
#include <httplib.h>

#include <csignal>
#include <regex>
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
}

TEST(ServeCommand, ServesUntilSigtermWithTheTokenFromTheEnvironment) {
  TempDir dir;
  std::string db = "--db=sqlite:" + dir.file("q.db");
  ASSERT_EQ(run_readpast(dir.path(), {db, "init"}).exit_code, 0);
  const std::string token = "token-from-the-environment";
  ReadpastProcess server(dir.path(), {db, "serve", "--listen", "127.0.0.1:0"},
                         environment({"READPAST_TOKEN=" + token}));
  std::smatch match;
  std::string log;
  const std::regex serving("serving on http://127\\.0\\.0\\.1:([0-9]+) \\(token required\\)");
  for (int i = 0; i < 500 && !std::regex_search(log, match, serving); ++i) {
    std::this_thread::sleep_for(20ms);
    log = server.err_so_far();
  }
  ASSERT_TRUE(std::regex_search(log, match, serving)) << log;
  // The password-free URL is logged, never the token.
  EXPECT_EQ(log.find(token), std::string::npos);

  httplib::Client client("127.0.0.1", std::stoi(match[1].str()));
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
