// readpast limit: set, print and clear a queue's global limits; stats shows them; bad input is
// a usage error that changes nothing; `work` processes obey them.
#include <algorithm>
#include <fstream>
#include <regex>

#include "cli_fixture.hpp"

namespace readpast::test {
namespace {

TEST_F(CliTest, LimitSetsPrintsAndClearsAQueuesLimits) {
  auto r = rp({"limit", "emails"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "emails: -\n");
  r = rp({"limit", "emails", "--running", "5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "emails: running 5\n");
  r = rp({"limit", "emails", "--rate", "100/1s"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "emails: running 5, rate 100/1s\n")
      << "setting the rate dropped the running limit";
  r = rp({"limit", "emails", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["running"], 5);
  EXPECT_EQ(json["rate"], "100/1s");

  auto stats = rp({"stats", "--json"});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  auto queues = nlohmann::json::parse(stats.out)["queues"];
  ASSERT_TRUE(queues.contains("emails")) << "a limited queue without jobs is not listed";
  EXPECT_EQ(queues["emails"]["limits"]["running"], 5);
  EXPECT_EQ(queues["emails"]["limits"]["rate"], "100/1s");
  auto table = rp({"stats"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("LIMITS"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("running 5, rate 100/1s"), std::string::npos) << table.out;

  r = rp({"limit", "emails", "--clear"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "emails: -\n");
  r = rp({"limit", "emails", "--json"});
  json = nlohmann::json::parse(r.out);
  EXPECT_TRUE(json["running"].is_null());
  EXPECT_TRUE(json["rate"].is_null());
}

TEST_F(CliTest, BadLimitsAreUsageErrorsAndChangeNothing) {
  ASSERT_EQ(rp({"limit", "q", "--running", "3", "--rate", "10/1m"}).exit_code, 0);
  const std::vector<std::vector<std::string>> bad = {{"--running", "0"},
                                                     {"--running", "-1"},
                                                     {"--running", "x"},
                                                     {"--running", "2000000000"},
                                                     {"--rate", "5/0s"},
                                                     {"--rate", "x/1s"},
                                                     {"--rate", "5/"},
                                                     {"--rate", "/1s"},
                                                     {"--rate", "0/1s"},
                                                     {"--rate", "5"},
                                                     {"--rate", "-5/1s"},
                                                     {"--clear", "--running", "2"},
                                                     {"--clear", "--rate", "1/1s"}};
  for (const auto& extra : bad) {
    std::vector<std::string> args = {"limit", "q"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = rp(args);
    std::string shown;
    for (const auto& a : extra) shown += a + " ";
    EXPECT_EQ(r.exit_code, 2) << shown << r.err;
    EXPECT_TRUE(is_one_line_reason(r.err)) << shown;
    EXPECT_TRUE(r.out.empty()) << shown << r.out;
  }
  auto r = rp({"limit", "bad name!", "--running", "1"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  r = rp({"limit", "q"});
  EXPECT_EQ(r.out, "q: running 3, rate 10/1m\n") << "a refused limit changed something";
}

TEST_F(CliTest, StatsTableHasALimitsColumn) {
  enqueue("plain", "1");
  auto r = rp({"stats"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_TRUE(std::regex_search(lines[0], std::regex(R"(PAUSED\s+LIMITS$)"))) << r.out;
  EXPECT_TRUE(std::regex_search(lines[1], std::regex(R"(no\s+-$)"))) << r.out;
}

// Several `readpast work` processes on a queue limited to 2 running jobs: each job's command
// records when it ran (start and end marks, by the same clock), and at no instant did more
// than 2 run, though 3 processes of 2 threads could run 6.
TEST_F(CliTest, WorkProcessesTogetherObeyARunningLimit) {
  for (int i = 0; i < 12; ++i) enqueue("lim", std::to_string(i));
  ASSERT_EQ(rp({"limit", "lim", "--running", "2"}).exit_code, 0);
  const std::string log = path("marks.log");
  // The command's marks: "+ <ns>" then "- <ns>", appended (one write each) to one file.
  const std::string command = "sh -c 'echo \"+ $(date +%s%N)\" >> " + log +
                              "; sleep 0.15; echo \"- $(date +%s%N)\" >> " + log + "'";
  std::vector<std::unique_ptr<ReadpastProcess>> workers;
  for (int i = 0; i < 3; ++i) {
    workers.push_back(start({"work", "lim", "--exec", command, "--concurrency", "2", "--drain"}));
  }
  for (auto& w : workers) {
    auto r = w->wait(std::chrono::seconds(60));
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
  auto counts = stats("lim");
  EXPECT_EQ(counts["succeeded"], 12) << "not every job ran";
  std::ifstream in(log);
  std::vector<std::pair<long long, int>> marks;
  std::string sign;
  long long at = 0;
  while (in >> sign >> at) marks.emplace_back(at, sign == "+" ? 1 : -1);
  ASSERT_EQ(marks.size(), 24u);
  std::sort(marks.begin(), marks.end());
  int running = 0, most = 0;
  for (const auto& [t, delta] : marks) {
    running += delta;
    most = std::max(most, running);
  }
  EXPECT_LE(most, 2) << "more commands ran at once than the running limit";
  EXPECT_EQ(most, 2) << "the workers never ran two at once: the test proves little";
}

}  // namespace
}  // namespace readpast::test
