// The one-shot commands: init, enqueue, stats, list, show, retry, cancel, purge; their
// text and JSON output; and how malformed input is refused.
#include <regex>

#include "cli_fixture.hpp"

namespace readpast::test {
namespace {

const std::vector<std::string> kJobFields = {
    "id",          "queue",           "state",       "priority",   "run_at",
    "attempts",    "max_attempts",    "lease_token", "leased_by",  "lease_expires_at",
    "enqueued_at", "started_at",      "finished_at", "unique_key", "last_error",
    "payload",     "payload_encoding"};

const std::regex kRfc3339(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z)");

TEST_F(CliTest, InitIsIdempotentAndPrintsTheSchemaVersion) {
  auto r = rp({"init"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("schema version [0-9]+\n$"))) << r.out;
}

TEST_F(CliTest, EnqueuePrintsIncreasingIdsFromArgumentAndStdin) {
  auto a = rp({"enqueue", "mail", "first"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  auto b = rp({"enqueue", "mail"}, input("second"));  // no PAYLOAD: stdin
  ASSERT_EQ(b.exit_code, 0) << b.err;
  auto c = rp({"enqueue", "mail", "--", "--looks-like-an-option"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_LT(std::stoll(a.out), std::stoll(b.out));
  EXPECT_LT(std::stoll(b.out), std::stoll(c.out));
  EXPECT_EQ(show(std::stoll(a.out))["payload"], "first");
  EXPECT_EQ(show(std::stoll(b.out))["payload"], "second");
  EXPECT_EQ(show(std::stoll(c.out))["payload"], "--looks-like-an-option");
}

TEST_F(CliTest, EnqueueOptionsLandInTheColumns) {
  auto id = enqueue("mail", "{}",
                    {"--priority", "7", "--max-attempts", "3", "--unique", "k1", "--delay", "1h"});
  auto job = show(id);
  EXPECT_EQ(job["priority"], 7);
  EXPECT_EQ(job["max_attempts"], 3);
  EXPECT_EQ(job["unique_key"], "k1");
  EXPECT_EQ(job["state"], "available");
  auto s = stats("mail");
  EXPECT_EQ(s["available"], 1);
  EXPECT_EQ(s["scheduled"], 1);

  // The key is held: the same id comes back and nothing is added.
  auto again = rp({"enqueue", "mail", "other", "--unique", "k1"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(std::stoll(again.out), id);
  EXPECT_EQ(stats("mail")["available"], 1);

  auto at = enqueue("mail", "x", {"--run-at", "2099-01-02T03:04:05Z"});
  EXPECT_EQ(show(at)["run_at"], "2099-01-02T03:04:05.000000Z");
}

TEST_F(CliTest, GlobalOptionsAreAcceptedAfterTheCommandAndFromTheEnvironment) {
  auto r = run_readpast(dir_.path(), {"enqueue", "q", "x", "--db", db_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto s = run_readpast(dir_.path(), {"stats", "q", "--json"}, environment({"READPAST_DB=" + db_}));
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(nlohmann::json::parse(s.out)["queues"]["q"]["available"], 1);
}

TEST_F(CliTest, StatsAsTableAndJson) {
  enqueue("alpha", "1");
  enqueue("alpha", "2");
  enqueue("beta", "3", {"--delay", "1h"});

  auto table = rp({"stats"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  auto lines = lines_of(table.out);
  ASSERT_EQ(lines.size(), 3u) << table.out;
  EXPECT_TRUE(lines[0].starts_with("QUEUE")) << table.out;
  EXPECT_TRUE(std::regex_search(lines[1], std::regex(R"(^alpha\s+2\s+0\s+0\s+0\s+0\s+0\s)")))
      << table.out;
  EXPECT_TRUE(std::regex_search(
      lines[2], std::regex(R"(^beta\s+1\s+1\s+0\s+0\s+0\s+0\s+0\s+0\s+-\s+no\s+-$)")))
      << table.out;

  auto json = rp({"stats", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  auto all = nlohmann::json::parse(json.out);
  ASSERT_TRUE(all.contains("queues"));
  for (const char* name : {"alpha", "beta"}) {
    const auto& q = all["queues"][name];
    for (const char* field : {"available", "scheduled", "running", "expired", "succeeded", "dead",
                              "cancelled", "oldest_available_age_s"}) {
      EXPECT_TRUE(q.contains(field)) << name << " lacks " << field;
    }
  }
  EXPECT_EQ(all["queues"]["alpha"]["available"], 2);
  EXPECT_GT(all["queues"]["alpha"]["oldest_available_age_s"].get<double>(), 0.0);
  EXPECT_EQ(all["queues"]["beta"]["scheduled"], 1);

  // A named queue without jobs is reported with zeros.
  auto empty = rp({"stats", "nothing-here", "--json"});
  ASSERT_EQ(empty.exit_code, 0) << empty.err;
  EXPECT_EQ(nlohmann::json::parse(empty.out)["queues"]["nothing-here"]["available"], 0);
}

TEST_F(CliTest, ListAndShowPrintEveryColumn) {
  auto a = enqueue("q", "{\"n\":1}");
  auto b = enqueue("q", std::string("bin\xff\x00", 5));
  enqueue("other", "not listed");

  auto r = rp({"list", "q", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto jobs = nlohmann::json::parse(r.out);
  ASSERT_TRUE(jobs.is_array());
  ASSERT_EQ(jobs.size(), 2u);
  for (const auto& job : jobs) {
    for (const auto& field : kJobFields) EXPECT_TRUE(job.contains(field)) << field;
    EXPECT_EQ(job.size(), kJobFields.size());
    EXPECT_TRUE(std::regex_match(job["run_at"].get<std::string>(), kRfc3339)) << job["run_at"];
    EXPECT_TRUE(std::regex_match(job["enqueued_at"].get<std::string>(), kRfc3339));
    EXPECT_TRUE(job["started_at"].is_null());
    EXPECT_TRUE(job["lease_token"].is_null());
    EXPECT_TRUE(job["last_error"].is_null());
  }
  EXPECT_EQ(jobs[0]["id"], a);
  EXPECT_EQ(jobs[0]["queue"], "q");
  EXPECT_EQ(jobs[0]["state"], "available");
  EXPECT_EQ(jobs[0]["priority"], 100);
  EXPECT_EQ(jobs[0]["attempts"], 0);
  EXPECT_EQ(jobs[0]["max_attempts"], 25);
  EXPECT_EQ(jobs[0]["payload"], "{\"n\":1}");
  EXPECT_EQ(jobs[0]["payload_encoding"], "utf8");
  EXPECT_EQ(jobs[1]["id"], b);
  EXPECT_EQ(jobs[1]["payload"], "Ymlu/wA=");  // base64 of "bin\xff\0"
  EXPECT_EQ(jobs[1]["payload_encoding"], "base64");

  auto one = show(a);
  for (const auto& field : kJobFields) EXPECT_TRUE(one.contains(field)) << field;

  auto table = rp({"list", "q"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  auto lines = lines_of(table.out);
  ASSERT_EQ(lines.size(), 3u) << table.out;
  EXPECT_NE(lines[2].find("bin\\xff\\x00"), std::string::npos) << table.out;

  auto limited = rp({"list", "q", "--limit", "1", "--json"});
  ASSERT_EQ(limited.exit_code, 0) << limited.err;
  EXPECT_EQ(nlohmann::json::parse(limited.out).size(), 1u);
  auto after = rp({"list", "q", "--after", std::to_string(a), "--json"});
  ASSERT_EQ(after.exit_code, 0) << after.err;
  EXPECT_EQ(nlohmann::json::parse(after.out)[0]["id"], b);
  auto by_state = rp({"list", "q", "--state", "dead", "--json"});
  ASSERT_EQ(by_state.exit_code, 0) << by_state.err;
  EXPECT_TRUE(nlohmann::json::parse(by_state.out).empty());
}

TEST_F(CliTest, ListNewestFirstWithAViewOrASearch) {
  auto a = enqueue("q", "{\"to\":\"Ann\"}");
  auto b = enqueue("q", "{\"to\":\"bob\"}");
  auto c = enqueue("q", "{\"to\":\"ann-marie\"}");
  ASSERT_EQ(rp({"enqueue", "q", "later", "--delay", "1h"}).exit_code, 0);
  auto ids = [](const RunResult& r) {
    std::vector<std::int64_t> v;
    for (const auto& job : nlohmann::json::parse(r.out)) v.push_back(job["id"]);
    return v;
  };
  auto newest = rp({"list", "q", "--newest-first", "--limit", "3", "--json"});
  ASSERT_EQ(newest.exit_code, 0) << newest.err;
  EXPECT_EQ(ids(newest), (std::vector<std::int64_t>{c + 1, c, b}));
  auto table = rp({"list", "q", "--newest-first", "--limit", "3"});
  EXPECT_NE(table.err.find("--before " + std::to_string(b)), std::string::npos) << table.err;
  auto older = rp({"list", "q", "--newest-first", "--before", std::to_string(b), "--json"});
  EXPECT_EQ(ids(older), (std::vector<std::int64_t>{a}));
  auto found = rp({"list", "q", "--search", "ANN", "--json"});
  ASSERT_EQ(found.exit_code, 0) << found.err;
  EXPECT_EQ(ids(found), (std::vector<std::int64_t>{a, c}));
  auto scheduled = rp({"list", "q", "--view", "scheduled", "--json"});
  ASSERT_EQ(scheduled.exit_code, 0) << scheduled.err;
  EXPECT_EQ(ids(scheduled), (std::vector<std::int64_t>{c + 1}));
  EXPECT_TRUE(nlohmann::json::parse(rp({"list", "q", "--view", "expired", "--json"}).out).empty());
}

TEST_F(CliTest, ShowEscapesControlBytesAsText) {
  auto id = enqueue("q",
                    "line1\nline2\x1b]0;pwned\x07\r\xc2\x9b"
                    "31m\\");
  auto r = rp({"show", std::to_string(id)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("state:"), std::string::npos);
  EXPECT_NE(r.out.find("line1\\nline2\\x1b]0;pwned\\x07\\r\\u009b31m\\\\"), std::string::npos)
      << r.out;
  for (char c : r.out) {
    auto u = static_cast<unsigned char>(c);
    EXPECT_TRUE(u == '\n' || u >= 0x20) << "control byte " << int(u) << " in: " << r.out;
    EXPECT_NE(u, 0x7f);
  }
  EXPECT_EQ(r.out.find("\xc2\x9b"), std::string::npos);
}

TEST_F(CliTest, LinesEnqueuesOneJobPerNonEmptyLineInBatches) {
  std::string text;
  const int kJobs = 2500;
  for (int i = 0; i < kJobs; ++i) {
    text += "line " + std::to_string(i) + "\n";
    if (i % 100 == 0) text += "\n";  // empty lines are skipped
  }
  text += "last line without newline";
  auto r = rp({"enqueue", "bulk", "--lines", "--priority", "5"}, input(text));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto ids = lines_of(r.out);
  ASSERT_EQ(ids.size(), static_cast<std::size_t>(kJobs + 1));
  for (std::size_t i = 1; i < ids.size(); ++i)
    EXPECT_LT(std::stoll(ids[i - 1]), std::stoll(ids[i]));
  EXPECT_EQ(stats("bulk")["available"], kJobs + 1);
  auto first = show(std::stoll(ids.front()));
  EXPECT_EQ(first["payload"], "line 0");
  EXPECT_EQ(first["priority"], 5);
  EXPECT_EQ(show(std::stoll(ids.back()))["payload"], "last line without newline");
}

TEST_F(CliTest, PayloadOverTheLimitIsRefusedBeforeTheDatabase) {
  auto big = std::string(2000, 'x');
  auto r = rp({"--max-payload", "1KiB", "enqueue", "q", "-"}, input(big));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(is_one_line_reason(r.err));
  EXPECT_NE(r.err.find("limit"), std::string::npos) << r.err;
  auto arg = rp({"enqueue", "q", big, "--max-payload", "1000"});
  EXPECT_EQ(arg.exit_code, 1);
  EXPECT_TRUE(is_one_line_reason(arg.err));
  auto lines = rp({"enqueue", "q", "--lines", "--max-payload", "1KiB"}, input("ok\n" + big + "\n"));
  EXPECT_EQ(lines.exit_code, 1);
  EXPECT_TRUE(is_one_line_reason(lines.err));
  EXPECT_NE(lines.err.find("line 2"), std::string::npos) << lines.err;
  EXPECT_EQ(stats("q")["available"], 0);
  // A bad line far past the first batch still enqueues nothing: all lines are checked first.
  std::string many;
  for (int i = 0; i < 1500; ++i) many += "job " + std::to_string(i) + "\n";
  auto late = rp({"enqueue", "q", "--lines", "--max-payload", "1KiB"}, input(many + big + "\n"));
  EXPECT_EQ(late.exit_code, 1);
  EXPECT_TRUE(is_one_line_reason(late.err));
  EXPECT_NE(late.err.find("line 1501"), std::string::npos) << late.err;
  EXPECT_NE(late.err.find("nothing was enqueued"), std::string::npos) << late.err;
  EXPECT_EQ(late.out, "");
  EXPECT_EQ(stats("q")["available"], 0);
  // --stream sends as it reads: what came before the bad line is in, and it says how much.
  auto streamed = rp({"enqueue", "q", "--lines", "--stream", "--max-payload", "1KiB"},
                     input(many + big + "\n"));
  EXPECT_EQ(streamed.exit_code, 1);
  EXPECT_NE(streamed.err.find("1000 job(s) were enqueued"), std::string::npos) << streamed.err;
  EXPECT_EQ(stats("q")["available"], 1000);
  EXPECT_EQ(rp({"enqueue", "q", "--stream"}).exit_code, 2);
  // Exactly at the limit is fine.
  auto fits = rp({"enqueue", "q", "-", "--max-payload", "2000"}, input(big));
  EXPECT_EQ(fits.exit_code, 0) << fits.err;
}

struct BadInvocation {
  const char* name;
  std::vector<std::string> args;  // after --db DB, unless they start with "--db"
  int exit_code;
};

class CliBadInputTest : public CliTest, public ::testing::WithParamInterface<BadInvocation> {};

TEST_P(CliBadInputTest, IsRefusedWithOneLineAndChangesNothing) {
  enqueue("q", "already there");
  const auto& bad = GetParam();
  RunResult r = !bad.args.empty() && bad.args.front() == "--db"
                    ? run_readpast(dir_.path(), bad.args)
                    : rp(bad.args);
  EXPECT_EQ(r.exit_code, bad.exit_code) << r.err;
  EXPECT_TRUE(is_one_line_reason(r.err));
  EXPECT_EQ(r.out, "");
  auto s = stats("q");
  EXPECT_EQ(s["available"], 1);
  EXPECT_EQ(s["running"], 0);
  EXPECT_FALSE(std::filesystem::exists(path("missing.db")));
}

INSTANTIATE_TEST_SUITE_P(
    Cli, CliBadInputTest,
    ::testing::Values(
        BadInvocation{"BadQueueName", {"enqueue", "no spaces", "x"}, 2},
        BadInvocation{"QueueNameTooLong", {"enqueue", std::string(129, 'a'), "x"}, 2},
        BadInvocation{"BadQueueNameForWork", {"work", "-bad", "--exec", "true", "--drain"}, 2},
        BadInvocation{"BadDuration", {"enqueue", "q", "x", "--delay", "10 parsecs"}, 2},
        BadInvocation{"BadLease", {"work", "q", "--exec", "true", "--lease", "soon"}, 2},
        BadInvocation{"BadTimeout", {"work", "q", "--exec", "true", "--timeout", "0s"}, 2},
        BadInvocation{"BadSnapshotWarning",
                      {"work", "q", "--exec", "true", "--warn-snapshot-after", "never"},
                      2},
        BadInvocation{"SnapshotWarningBelowASecond",
                      {"work", "q", "--exec", "true", "--warn-snapshot-after", "500ms"},
                      2},
        BadInvocation{"BadRunAt", {"enqueue", "q", "x", "--run-at", "tomorrow"}, 2},
        BadInvocation{"DelayWithRunAt",
                      {"enqueue", "q", "x", "--delay", "1s", "--run-at", "2030-01-01T00:00:00Z"},
                      2},
        BadInvocation{"BadUrl", {"--db", "mysql://nope", "stats"}, 2},
        BadInvocation{"BadSize", {"--max-payload", "lots", "enqueue", "q", "x"}, 2},
        BadInvocation{"BadState", {"list", "q", "--state", "sleeping"}, 2},
        BadInvocation{"BadView", {"list", "q", "--view", "waiting"}, 2},
        BadInvocation{
            "ViewOfAnotherState", {"list", "q", "--view", "expired", "--state", "dead"}, 2},
        BadInvocation{"EmptySearch", {"list", "q", "--search", ""}, 2},
        BadInvocation{"PurgeOfAvailable", {"purge", "q", "--state", "available"}, 2},
        BadInvocation{"RetryOfRunningState", {"retry", "--queue", "q", "--state", "running"}, 2},
        BadInvocation{"UnknownOption", {"stats", "--frobnicate"}, 2},
        BadInvocation{"UnknownCommand", {"frobnicate"}, 2}, BadInvocation{"NoCommand", {}, 2},
        BadInvocation{"MissingQueue", {"enqueue"}, 2},
        BadInvocation{"MissingExec", {"work", "q"}, 2},
        BadInvocation{"NotANumber", {"enqueue", "q", "x", "--priority", "high"}, 2},
        BadInvocation{"ZeroConcurrency", {"work", "q", "--exec", "true", "--concurrency", "0"}, 2},
        BadInvocation{"NegativePrefetch", {"work", "q", "--exec", "true", "--prefetch", "-1"}, 2},
        BadInvocation{"PrefetchPastTheLeaseLimit",
                      {"work", "q", "--exec", "true", "--concurrency", "2", "--prefetch", "9999"},
                      2},
        BadInvocation{"LinesWithUnique", {"enqueue", "q", "--lines", "--unique", "k"}, 2},
        BadInvocation{"MissingDatabaseFile", {"--db", "sqlite:MISSING", "enqueue", "q", "x"}, 1},
        BadInvocation{"NoSuchJob", {"show", "999999"}, 1},
        BadInvocation{"CancelOfNoSuchJob", {"cancel", "999999"}, 1}),
    [](const ::testing::TestParamInfo<BadInvocation>& param_info) {
      return param_info.param.name;
    });

// The missing-file case needs the temporary path, known only at run time.
TEST_F(CliTest, MissingDatabaseFileIsNotCreated) {
  auto missing = "sqlite:" + path("missing.db");
  for (auto args : std::vector<std::vector<std::string>>{
           {"enqueue", "q", "x"}, {"stats"}, {"work", "q", "--exec", "true", "--drain"}}) {
    args.insert(args.begin(), {"--db", missing});
    auto r = run_readpast(dir_.path(), args);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_TRUE(is_one_line_reason(r.err));
    EXPECT_NE(r.err.find("readpast init"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(path("missing.db")));
}

TEST_F(CliTest, HelpAndVersionExitZero) {
  for (auto args : std::vector<std::vector<std::string>>{{"--help"}, {"--version"}}) {
    auto r = run_readpast(dir_.path(), args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_FALSE(r.out.empty());
  }
  // Every command has a help of its own, listed in the top-level help.
  const auto top = run_readpast(dir_.path(), {"--help"}).out;
  for (const std::string command :
       {"init", "enqueue", "work", "stats", "list", "show", "retry", "cancel", "purge", "pause",
        "resume", "schedule", "metrics", "rescue", "workers"}) {
    EXPECT_NE(top.find("  " + command), std::string::npos) << command << " is not listed";
    auto r = run_readpast(dir_.path(), {command, "--help"});
    EXPECT_EQ(r.exit_code, 0) << command << ": " << r.err;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << command << ": " << r.out;
  }
  for (const std::string sub : {"add", "list", "remove"}) {
    auto r = run_readpast(dir_.path(), {"schedule", sub, "--help"});
    EXPECT_EQ(r.exit_code, 0) << sub << ": " << r.err;
  }
  auto help = run_readpast(dir_.path(), {"work", "--help"});
  EXPECT_NE(help.out.find("--concurrency"), std::string::npos);
  EXPECT_NE(help.out.find("--grace"), std::string::npos);
}

TEST_F(CliTest, CancelRetryAndPurge) {
  auto a = enqueue("q", "a");
  auto b = enqueue("q", "b");
  auto r = rp({"cancel", std::to_string(a), std::to_string(b)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(show(a)["state"], "cancelled");
  EXPECT_EQ(stats("q")["cancelled"], 2);

  // Cancelling again: nothing to do, and it says why.
  auto again = rp({"cancel", std::to_string(a)});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_TRUE(is_one_line_reason(again.err));
  EXPECT_NE(again.err.find("cancelled"), std::string::npos) << again.err;

  auto one = rp({"retry", std::to_string(a)});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(show(a)["state"], "available");
  auto all = rp({"retry", "--queue", "q", "--state", "cancelled"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_NE(all.out.find("retried 1 "), std::string::npos) << all.out;
  EXPECT_EQ(stats("q")["available"], 2);

  auto retry_available = rp({"retry", std::to_string(a)});
  EXPECT_EQ(retry_available.exit_code, 1);
  EXPECT_TRUE(is_one_line_reason(retry_available.err));

  ASSERT_EQ(rp({"cancel", std::to_string(a)}).exit_code, 0);
  auto young = rp({"purge", "q", "--state", "cancelled", "--older-than", "1h"});
  ASSERT_EQ(young.exit_code, 0) << young.err;
  EXPECT_NE(young.out.find("purged 0 "), std::string::npos) << young.out;
  auto purged = rp({"purge", "q", "--state", "cancelled"});
  ASSERT_EQ(purged.exit_code, 0) << purged.err;
  EXPECT_NE(purged.out.find("purged 1 "), std::string::npos) << purged.out;
  auto gone = rp({"show", std::to_string(a)});
  EXPECT_EQ(gone.exit_code, 1);
  EXPECT_TRUE(is_one_line_reason(gone.err));
  EXPECT_EQ(stats("q")["available"], 1);
}

// Issue 17: the last line of a failure has the known secrets scrubbed out, like a log
// line (PGPASSWORD is the database password too).
TEST_F(CliTest, TheReasonOfAFailureIsScrubbedToo) {
  const std::string missing = "sqlite:" + path("pgS3cretPW") + "/jobs.db";
  auto r =
      run_readpast(dir_.path(), {"--db", missing, "stats"}, environment({"PGPASSWORD=pgS3cretPW"}));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(is_one_line_reason(r.err));
  EXPECT_EQ(r.err.find("pgS3cretPW"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/[redacted]/jobs.db"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace readpast::test
