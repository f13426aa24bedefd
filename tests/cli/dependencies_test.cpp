// enqueue --after: the waiting state from the command line, show's dependencies both ways,
// stats and list of waiting jobs, a chain worked by real `readpast work` processes, and the
// refusals (a job that does not exist, a malformed id, a unique key held by another job).
#include "cli_fixture.hpp"

namespace readpast::test {
namespace {

TEST_F(CliTest, AfterMakesAJobWaitUntilItsDependenciesSucceed) {
  auto first = enqueue("build", "compile");
  auto second = enqueue("build", "link");
  auto deploy = enqueue(
      "deploy", "ship",
      {"--after", std::to_string(first), "--after", std::to_string(second), "--delay", "0s"});
  auto job = show(deploy);
  EXPECT_EQ(job["state"], "waiting");
  ASSERT_EQ(job["after"].size(), 2u);
  EXPECT_EQ(job["after"][0]["id"], first);
  EXPECT_EQ(job["after"][0]["state"], "available");
  EXPECT_EQ(job["after"][0]["met"], false);
  EXPECT_EQ(show(first)["dependents"][0]["id"], deploy);
  EXPECT_EQ(show(first)["dependent_count"], 1);
  EXPECT_EQ(stats("deploy")["waiting"], 1);

  auto text = rp({"show", std::to_string(deploy)});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("waits for:        " + std::to_string(first) + " (available), " +
                          std::to_string(second) + " (available)"),
            std::string::npos)
      << text.out;
  auto listed = rp({"list", "deploy", "--state", "waiting"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("waiting"), std::string::npos) << listed.out;
  auto table = rp({"stats"});
  EXPECT_NE(table.out.find("WAITING"), std::string::npos) << table.out;

  // The build queue is worked to the end: the deploy job becomes available and runs.
  drain("build", "true");
  EXPECT_EQ(show(deploy)["state"], "available");
  EXPECT_EQ(show(deploy)["after"][1]["met"], true);
  drain("deploy", "true");
  EXPECT_EQ(show(deploy)["state"], "succeeded");
}

TEST_F(CliTest, AFailedDependencyCancelsTheChainAndRetryPutsItBackToWaiting) {
  auto first = enqueue("steps", "one", {"--max-attempts", "1"});
  auto second = enqueue("steps", "two", {"--after", std::to_string(first)});
  auto third = enqueue("steps", "three", {"--after", std::to_string(second)});
  drain("steps", "exit 3");
  EXPECT_EQ(show(first)["state"], "dead");
  for (auto id : {second, third}) {
    auto job = show(id);
    EXPECT_EQ(job["state"], "cancelled") << id;
    EXPECT_NE(job["last_error"].get<std::string>().find("dependency"), std::string::npos);
  }
  auto retried = rp({"retry", std::to_string(second)});
  ASSERT_EQ(retried.exit_code, 0) << retried.err;
  EXPECT_EQ(show(second)["state"], "waiting");
  ASSERT_EQ(rp({"retry", std::to_string(first), std::to_string(third)}).exit_code, 0);
  drain("steps", "true");
  for (auto id : {first, second, third}) EXPECT_EQ(show(id)["state"], "succeeded") << id;
}

TEST_F(CliTest, BadDependenciesAreRefusedWithOneLineAndNothingEnqueued) {
  auto first = enqueue("q", "x");
  struct Case {
    std::vector<std::string> args;
    int exit_code;
  };
  const std::vector<Case> cases = {
      {{"enqueue", "q", "y", "--after", "999"}, 1},
      {{"enqueue", "q", "y", "--after", "0"}, 2},
      {{"enqueue", "q", "y", "--after", "x"}, 2},
      {{"enqueue", "q", "y", "--after"}, 2},
      {{"enqueue", "q", "y", "--after", std::to_string(first), "--after", std::to_string(first)},
       1},
  };
  for (const auto& c : cases) {
    auto r = rp(c.args);
    EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
    EXPECT_TRUE(is_one_line_reason(r.err));
  }
  // A unique key that hands back a job not enqueued after these: an error too.
  enqueue("q", "held", {"--unique", "k"});
  auto held = rp({"enqueue", "q", "y", "--unique", "k", "--after", std::to_string(first)});
  EXPECT_EQ(held.exit_code, 1);
  EXPECT_TRUE(is_one_line_reason(held.err));
  EXPECT_NE(held.err.find("unique key"), std::string::npos) << held.err;
  EXPECT_EQ(stats("q")["available"], 2);
  EXPECT_EQ(stats("q")["waiting"], 0);
}

TEST_F(CliTest, AGroupCallbackRunsOnceEveryMemberFinished) {
  auto first = enqueue("mail", "a", {"--group", "newsletter"});
  auto second = enqueue("mail", "b", {"--group", "newsletter", "--max-attempts", "1"});
  auto report = enqueue("reports", "sum up", {"--after-group", "newsletter"});
  EXPECT_EQ(show(report)["state"], "waiting");
  EXPECT_EQ(show(report)["after"][0]["group"], "newsletter");
  EXPECT_EQ(show(first)["group"], "newsletter");
  auto members = rp({"list", "mail", "--group", "newsletter", "--json"});
  ASSERT_EQ(members.exit_code, 0) << members.err;
  EXPECT_EQ(nlohmann::json::parse(members.out).size(), 2u);
  auto counts = rp({"stats", "--group", "newsletter", "--json"});
  ASSERT_EQ(counts.exit_code, 0) << counts.err;
  auto group = nlohmann::json::parse(counts.out)["groups"]["newsletter"];
  EXPECT_EQ(group["available"], 2);
  EXPECT_EQ(group["waiters"], 1);
  // One member succeeds, the other dies: the callback runs all the same.
  drain("mail", "test \"$(cat)\" = a");
  EXPECT_EQ(show(second)["state"], "dead");
  EXPECT_EQ(show(report)["state"], "available");
  auto table = rp({"stats", "--group", "newsletter"});
  EXPECT_NE(table.out.find("CALLBACKS WAITING"), std::string::npos) << table.out;
}

TEST_F(CliTest, BadGroupsAreRefusedWithOneLine) {
  enqueue("q", "x", {"--group", "g"});
  struct Case {
    std::vector<std::string> args;
    int exit_code;
  };
  const std::vector<Case> cases = {
      {{"enqueue", "q", "y", "--after-group", "no-such-group"}, 1},
      {{"enqueue", "q", "y", "--group", "bad name"}, 2},
      {{"enqueue", "q", "y", "--group", "g", "--after-group", "g"}, 2},
      {{"stats", "--group", "no-such-group"}, 1},
      {{"stats", "q", "--group", "g"}, 2},
      {{"list", "q", "--group", "g", "--state", "dead"}, 2},
  };
  for (const auto& c : cases) {
    auto r = rp(c.args);
    EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
    EXPECT_TRUE(is_one_line_reason(r.err));
  }
  EXPECT_EQ(stats("q")["available"], 1);
}

}  // namespace
}  // namespace readpast::test
