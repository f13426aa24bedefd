// `enqueue --unique-for`, `readpast progress`, and what `show` prints of progress and the
// error history (docs/workflows.md).
#include <regex>

#include "cli_fixture.hpp"

namespace readpast::test {
namespace {

const std::regex kTime(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z)");

TEST_F(CliTest, EnqueueUniqueForRefusesTheKeyAfterItsJobSucceeded) {
  const auto first = enqueue("u", "one", {"--unique", "k", "--unique-for", "1h"});
  drain("u", "true");
  EXPECT_EQ(show(first)["state"], "succeeded");
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--unique", "k"},
        std::vector<std::string>{"--unique", "k", "--unique-for", "10m"}}) {
    std::vector<std::string> args = {"enqueue", "u", "two"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = rp(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(std::stoll(r.out), first);
    EXPECT_NE(r.err.find("held by job " + std::to_string(first)), std::string::npos) << r.err;
  }
  // Without a window, a finished job's key is free again, as before.
  const auto plain = enqueue("p", "one", {"--unique", "k"});
  drain("p", "true");
  EXPECT_NE(enqueue("p", "two", {"--unique", "k"}), plain);
}

TEST_F(CliTest, UniqueForWithoutUniqueOrWithABadDurationIsAUsageError) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"enqueue", "u", "x", "--unique-for", "1h"},
        std::vector<std::string>{"enqueue", "u", "x", "--unique", "k", "--unique-for", "soon"},
        std::vector<std::string>{"enqueue", "u", "x", "--unique", "k", "--unique-for", "0"},
        std::vector<std::string>{"enqueue", "u", "x", "--unique", "k", "--unique-for"}}) {
    auto r = rp(args);
    EXPECT_EQ(r.exit_code, 2) << args.back() << ": " << r.err;
    EXPECT_TRUE(is_one_line_reason(r.err));
  }
  auto list = rp({"list", "u", "--json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_TRUE(nlohmann::json::parse(list.out).empty());
}

TEST_F(CliTest, ShowPrintsTheProgressAndEveryFailedAttempt) {
  const auto id = enqueue("w", "job", {"--max-attempts", "2"});
  // Each attempt records its progress, then fails with its own error.
  const std::string command = std::string("'") + readpast_path() +
                              "' progress \"$READPAST_JOB_ID\" \"$READPAST_LEASE_TOKEN\" "
                              "\"{\\\"attempt\\\": $READPAST_ATTEMPT}\" && "
                              "echo \"broke on $READPAST_ATTEMPT\" >&2 && exit 3";
  drain("w", command, {"--worker-id", "cli-worker", "--backoff-base", "10ms"});
  auto job = show(id);
  EXPECT_EQ(job["state"], "dead");
  EXPECT_EQ(job["progress"], nlohmann::json({{"attempt", 2}}));
  ASSERT_TRUE(job["errors"].is_array());
  ASSERT_EQ(job["errors"].size(), 2u) << job.dump();
  for (int i = 0; i < 2; ++i) {
    const auto& e = job["errors"][static_cast<std::size_t>(i)];
    EXPECT_EQ(e["attempt"], i + 1);
    EXPECT_TRUE(std::regex_match(e["at"].get<std::string>(), kTime)) << e["at"];
    EXPECT_TRUE(e["worker"].get<std::string>().starts_with("cli-worker")) << e["worker"];
    EXPECT_NE(e["error"].get<std::string>().find("broke on " + std::to_string(i + 1)),
              std::string::npos)
        << e["error"];
  }
  auto text = rp({"show", std::to_string(id)});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("progress:         {\"attempt\": 2}"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("errors:           2"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("  attempt 1 at "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("broke on 2"), std::string::npos) << text.out;
}

TEST_F(CliTest, ShowOfAJobWithoutProgressOrErrors) {
  const auto id = enqueue("w", "job");
  auto job = show(id);
  EXPECT_TRUE(job["progress"].is_null());
  EXPECT_EQ(job["errors"], nlohmann::json::array());
}

TEST_F(CliTest, ProgressRefusesBadInputWithTwoAndAStaleLeaseWithOne) {
  const auto id = enqueue("w", "job");
  const std::string token(32, 'a');
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"progress", std::to_string(id), "not-a-token", "1"},
        std::vector<std::string>{"progress", std::to_string(id), token, "{not json"},
        std::vector<std::string>{"progress", std::to_string(id), token,
                                 "\"" + std::string(70000, 'x') + "\""},
        std::vector<std::string>{"progress", "x", token, "1"}}) {
    auto r = rp(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(is_one_line_reason(r.err));
  }
  auto stale = rp({"progress", std::to_string(id), token, "{\"done\": 1}"});
  EXPECT_EQ(stale.exit_code, 1) << stale.err;
  EXPECT_NE(stale.err.find("lease lost"), std::string::npos) << stale.err;
  EXPECT_TRUE(show(id)["progress"].is_null());
}

}  // namespace
}  // namespace readpast::test
