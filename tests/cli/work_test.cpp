// readpast work --exec: what the command gets (stdin, environment), what its outcome
// does to the job, timeouts, concurrency.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <regex>
#include <thread>

#include "cli_fixture.hpp"

namespace readpast::test {
namespace {

TEST_F(CliTest, WorkRunsJobsAndRecordsSuccess) {
  auto a = enqueue("q", "alpha");
  auto b = enqueue("q", "beta");
  auto r = drain("q", "cat > " + path("out.") + "$READPAST_JOB_ID; echo ran $READPAST_JOB_ID",
                 {"--worker-id", "tester"});
  EXPECT_EQ(read_file(path("out." + std::to_string(a))), "alpha");
  EXPECT_EQ(read_file(path("out." + std::to_string(b))), "beta");
  // The command's stdout passes through; no progress line when stderr is not a terminal.
  EXPECT_NE(r.out.find("ran " + std::to_string(a) + "\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;

  auto s = stats("q");
  EXPECT_EQ(s["succeeded"], 2);
  EXPECT_EQ(s["available"], 0);
  auto job = show(a);
  EXPECT_EQ(job["state"], "succeeded");
  EXPECT_EQ(job["attempts"], 1);
  EXPECT_EQ(job["leased_by"], "tester");
  EXPECT_FALSE(job["started_at"].is_null());
  EXPECT_FALSE(job["finished_at"].is_null());
  EXPECT_TRUE(job["last_error"].is_null());
}

TEST_F(CliTest, OneWorkerRunsTheJobsOfSeveralQueues) {
  auto a = enqueue("alpha", "1");
  auto b = enqueue("beta", "2");
  auto c = enqueue("gamma", "3");  // not named: left alone
  auto r = drain("alpha,beta", "cat > " + path("out.") + "$READPAST_JOB_ID.$READPAST_QUEUE");
  EXPECT_EQ(read_file(path("out." + std::to_string(a) + ".alpha")), "1");
  EXPECT_EQ(read_file(path("out." + std::to_string(b) + ".beta")), "2");
  EXPECT_NE(r.err.find("on queues alpha,beta"), std::string::npos) << r.err;
  EXPECT_EQ(show(a)["state"], "succeeded");
  EXPECT_EQ(show(b)["state"], "succeeded");
  EXPECT_EQ(show(c)["state"], "available");

  // Bad lists: one line, exit 2, nothing run.
  for (const std::string list :
       {"alpha,,beta", "alpha,alpha", "alpha,bad name", ",alpha", "gamma,"}) {
    auto bad = rp({"work", list, "--exec", "cat >/dev/null", "--drain"});
    EXPECT_EQ(bad.exit_code, 2) << list << ": " << bad.err;
    EXPECT_TRUE(is_one_line_reason(bad.err)) << list;
  }
  EXPECT_EQ(show(c)["state"], "available");
}

TEST_F(CliTest, FailingCommandIsRetriedThenDeadWithTheTailOfItsStderr) {
  auto id = enqueue("q", "x", {"--max-attempts", "2"});
  auto r = drain("q", "echo \"attempt $READPAST_ATTEMPT went wrong\" >&2; exit 3",
                 {"--backoff-base", "10ms"});
  // stderr passes through too.
  EXPECT_NE(r.err.find("attempt 1 went wrong"), std::string::npos) << r.err;
  auto job = show(id);
  EXPECT_EQ(job["state"], "dead");
  EXPECT_EQ(job["attempts"], 2);
  EXPECT_EQ(job["last_error"], "exit status 3: attempt 2 went wrong");
  EXPECT_EQ(stats("q")["dead"], 1);
}

TEST_F(CliTest, LastErrorKeepsOnlyTheLast4KiBOfStderr) {
  auto id = enqueue("q", "x", {"--max-attempts", "1"});
  // 20,000 bytes of 'a', then a marker: only the end survives.
  drain("q", "head -c 20000 /dev/zero | tr '\\0' a >&2; echo THE-END >&2; exit 1");
  auto error = show(id)["last_error"].get<std::string>();
  EXPECT_TRUE(error.starts_with("exit status 1: ...aaa")) << error.substr(0, 40);
  EXPECT_TRUE(error.ends_with("aaaTHE-END")) << error.substr(error.size() - 20);
  EXPECT_LE(error.size(), 4096u + 40u);
  EXPECT_GE(error.size(), 4000u);
}

TEST_F(CliTest, DeathBySignalIsNamed) {
  auto id = enqueue("q", "x", {"--max-attempts", "1"});
  drain("q", "echo dying >&2; kill -USR1 $$");
  EXPECT_EQ(show(id)["last_error"], "killed by signal 10 (SIGUSR1): dying");
}

TEST_F(CliTest, RetryOfADeadJobRunsItAgain) {
  auto id = enqueue("q", "x", {"--max-attempts", "1"});
  const std::string command = "test -f " + path("fixed") + " || { echo not yet >&2; exit 1; }";
  drain("q", command);
  ASSERT_EQ(show(id)["state"], "dead");

  write_file(path("fixed"), "");
  auto r = rp({"retry", std::to_string(id)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto retried = show(id);
  EXPECT_EQ(retried["state"], "available");
  EXPECT_EQ(retried["attempts"], 0);
  drain("q", command);
  auto job = show(id);
  EXPECT_EQ(job["state"], "succeeded");
  EXPECT_EQ(job["attempts"], 1);
}

TEST_F(CliTest, PayloadsReachTheCommandByteExactAndUninterpreted) {
  std::string big(1 << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 7919) % 256);
  const std::vector<std::string> payloads = {
      "plain",
      "it's \"quoted\" `backticked`",
      "$(touch " + path("pwned") + ")",
      "; touch " + path("pwned2") + "; echo",
      "--opt",
      "-",
      "two\nlines\n",
      std::string("nul\0inside\0", 11),
      "invalid \xff\xfe utf-8 \xc3",
      "",
      big,
  };
  std::vector<std::int64_t> ids;
  for (const auto& p : payloads) ids.push_back(enqueue("bytes", p));
  // Also through the command line, for what argv can carry.
  auto argv_job = rp({"enqueue", "bytes", "--", "$(touch " + path("pwned3") + ") --opt"});
  ASSERT_EQ(argv_job.exit_code, 0) << argv_job.err;

  drain("bytes", "cat > " + path("out.") + "$READPAST_JOB_ID");
  for (std::size_t i = 0; i < payloads.size(); ++i) {
    EXPECT_EQ(read_file(path("out." + std::to_string(ids[i]))), payloads[i]) << "payload " << i;
  }
  EXPECT_EQ(read_file(path("out." + std::to_string(std::stoll(argv_job.out)))),
            "$(touch " + path("pwned3") + ") --opt");
  for (const char* f : {"pwned", "pwned2", "pwned3"}) {
    EXPECT_FALSE(std::filesystem::exists(path(f))) << f;
  }
  // What show --json says of the bytes that are not UTF-8.
  auto nul = show(ids[7]);
  EXPECT_EQ(nul["payload_encoding"], "utf8");  // NUL is valid UTF-8
  EXPECT_EQ(nul["payload"].get<std::string>(), payloads[7]);
  auto invalid = show(ids[8]);
  EXPECT_EQ(invalid["payload_encoding"], "base64");
  EXPECT_EQ(invalid["payload"], "aW52YWxpZCD//iB1dGYtOCDD");
}

TEST_F(CliTest, CommandThatDoesNotReadStdinDoesNotBlockTheWorker) {
  auto id = enqueue("q", std::string(4 << 20, 'x'));
  drain("q", "exit 0", {"--timeout", "20s"});
  EXPECT_EQ(show(id)["state"], "succeeded");
}

TEST_F(CliTest, CommandSeesTheJobInItsEnvironment) {
  auto id = enqueue("env-q", "x", {"--max-attempts", "3"});
  // Fails its first attempt, so the second shows READPAST_ATTEMPT=2.
  drain("env-q",
        "env | grep '^READPAST_' | sort > " + path("env.") +
            "$READPAST_ATTEMPT; "
            "[ \"$READPAST_ATTEMPT\" -ge 2 ]",
        {"--backoff-base", "10ms"});
  auto first = read_file(path("env.1"));
  auto second = read_file(path("env.2"));
  EXPECT_NE(first.find("READPAST_JOB_ID=" + std::to_string(id) + "\n"), std::string::npos) << first;
  EXPECT_NE(first.find("READPAST_QUEUE=env-q\n"), std::string::npos) << first;
  EXPECT_NE(first.find("READPAST_ATTEMPT=1\n"), std::string::npos) << first;
  EXPECT_NE(first.find("READPAST_DB=" + db_ + "\n"), std::string::npos) << first;
  EXPECT_NE(second.find("READPAST_ATTEMPT=2\n"), std::string::npos) << second;
  std::smatch token1, token2;
  ASSERT_TRUE(std::regex_search(first, token1, std::regex("READPAST_LEASE_TOKEN=([0-9a-f]{32})\n")))
      << first;
  ASSERT_TRUE(
      std::regex_search(second, token2, std::regex("READPAST_LEASE_TOKEN=([0-9a-f]{32})\n")))
      << second;
  EXPECT_NE(token1[1], token2[1]);  // a fresh token per lease
  EXPECT_EQ(show(id)["state"], "succeeded");
}

TEST_F(CliTest, ConcurrencyRunsThatManyCommandsAtOnce) {
  constexpr int kJobs = 4;
  for (int i = 0; i < kJobs; ++i) enqueue("par", std::to_string(i));
  // Each command marks its start, then waits (up to 10s) until all four have started:
  // they can only all succeed if all four ran at the same time.
  const std::string dir = dir_.path().string();
  // The start mark appears whole (by a rename) and only after its time was taken.
  const std::string mark = dir + "/mark.$READPAST_JOB_ID";
  const std::string command = "date +%s%N > " + mark + "; mv " + mark + " " + dir +
                              "/start.$READPAST_JOB_ID; " + "n=0; while [ $(ls " + dir +
                              " | grep -c '^start\\.') -lt 4 ]; do " +
                              "n=$((n+1)); [ $n -gt 400 ] && exit 1; sleep 0.025; done; " +
                              "date +%s%N > " + dir + "/end.$READPAST_JOB_ID";
  drain("par", command, {"--concurrency", "4"});
  EXPECT_EQ(stats("par")["succeeded"], kJobs);

  auto r = rp({"list", "par", "--json"});
  auto jobs = nlohmann::json::parse(r.out);
  std::vector<long long> starts, ends;
  for (const auto& job : jobs) {
    auto id = std::to_string(job["id"].get<long long>());
    starts.push_back(std::stoll(read_file(path("start." + id))));
    ends.push_back(std::stoll(read_file(path("end." + id))));
  }
  // Every command started before any ended.
  EXPECT_LT(*std::max_element(starts.begin(), starts.end()),
            *std::min_element(ends.begin(), ends.end()));
}

TEST_F(CliTest, PrefetchHoldsThatManyJobsAheadOfTheRunningOne) {
  constexpr int kJobs = 5;
  for (int i = 0; i < kJobs; ++i) enqueue("pf", std::to_string(i));
  // Each command marks its start, then waits for the test's go-ahead.
  const std::string dir = dir_.path().string();
  const std::string command = "touch " + dir + "/start.$READPAST_JOB_ID; n=0; while [ ! -e " + dir +
                              "/go ]; do n=$((n+1)); [ $n -gt 1000 ] && exit 1; " +
                              "sleep 0.01; done";
  auto worker = start({"work", "pf", "--exec", command, "--concurrency", "1", "--prefetch", "2",
                       "--drain", "--no-progress"});
  auto count_started = [&] {
    std::size_t started = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir_.path())) {
      started += entry.path().filename().string().starts_with("start.") ? 1 : 0;
    }
    return started;
  };
  // The three leases commit before the first command has marked its start: wait for both.
  bool held = false;
  for (int i = 0; i < 500 && !(held && count_started() > 0); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    auto counts = stats("pf");
    held = counts["running"] == 3 && counts["available"] == kJobs - 3;
  }
  EXPECT_TRUE(held) << "one running and two held ahead: " << stats("pf").dump();
  // Time for a held job to start, were the worker to run it too early.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(count_started(), 1u) << "the held jobs must not run before a slot is free";
  write_file(path("go"), "");
  auto r = worker->wait(std::chrono::seconds(30));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(stats("pf")["succeeded"], kJobs);
}

TEST_F(CliTest, TimeoutKillsTheWholeProcessGroupAndFailsTheJob) {
  auto id = enqueue("q", "x", {"--max-attempts", "1"});
  // The command leaves a grandchild in the background and waits for it.
  drain("q", "sleep 1000 & echo $! > " + path("grandchild") + "; echo started >&2; wait",
        {"--timeout", "1s"});
  auto job = show(id);
  EXPECT_EQ(job["state"], "dead");
  EXPECT_TRUE(job["last_error"].get<std::string>().starts_with("timed out after 1s"))
      << job["last_error"];
  auto pid = std::stoi(read_file(path("grandchild")));
  EXPECT_TRUE(wait_until_process_gone(pid)) << "grandchild " << pid << " survived";
}

TEST_F(CliTest, TimeoutEscalatesToSigkillWhenSigtermIsIgnored) {
  auto id = enqueue("q", "x", {"--max-attempts", "1"});
  drain("q", "trap '' TERM; sleep 1000 & echo $! > " + path("grandchild") + "; wait; wait",
        {"--timeout", "500ms"});
  EXPECT_TRUE(show(id)["last_error"].get<std::string>().starts_with("timed out after 500ms"));
  EXPECT_TRUE(wait_until_process_gone(std::stoi(read_file(path("grandchild")))));
}

TEST_F(CliTest, BackgroundProcessesDoNotOutliveASucceededJob) {
  auto id = enqueue("q", "x");
  drain("q", "sleep 1000 & echo $! > " + path("straggler"));
  EXPECT_EQ(show(id)["state"], "succeeded");
  EXPECT_TRUE(wait_until_process_gone(std::stoi(read_file(path("straggler")))));
}

// Issue 17: a command's stderr reached last_error and the worker's log with the
// secrets in it. PGPASSWORD is the database password too; READPAST_TOKEN is serve's.
TEST_F(CliTest, KnownSecretsAreScrubbedFromLastErrorAndTheLog) {
  const std::string password = "pgS3cretPW";
  const std::string token = "tok-0123456789abcdef";
  const RunOptions secrets = environment({"PGPASSWORD=" + password, "READPAST_TOKEN=" + token});
  const std::string command = "echo \"pw=$PGPASSWORD token=$READPAST_TOKEN\" >&2; exit 1";
  for (const char* format : {"text", "json"}) {
    auto id = enqueue("q", "x", {"--max-attempts", "1"});
    auto r = rp({"--log-format", format, "work", "q", "--drain", "--exec", command}, secrets);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(show(id)["last_error"], "exit status 1: pw=[redacted] token=[redacted]");
    EXPECT_EQ(r.err.find(password), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find(token), std::string::npos) << r.err;
    // The command's own line, and the log line of its failure.
    EXPECT_NE(r.err.find("pw=[redacted] token=[redacted]\n"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("failed and is dead (no retry): exit status 1: pw=[redacted]"),
              std::string::npos)
        << r.err;
  }
}

// Issue 17: a command's stderr reached the worker's log with its escape sequences raw;
// they are shown escaped, as `list` and `show` show the text of a job.
TEST_F(CliTest, CommandStderrIsEscapedForTheTerminal) {
  auto id = enqueue("q", "x", {"--max-attempts", "1"});
  auto r = drain("q", "printf 'a \\033]0;pwned\\007 b \\033[2J\\tc\\r\\n' >&2; exit 1");
  for (char control : {'\x1b', '\x07', '\r', '\t'}) {
    EXPECT_EQ(r.err.find(control), std::string::npos)
        << "control character " << int{control} << " in: " << r.err;
  }
  const std::string escaped = "a \\x1b]0;pwned\\x07 b \\x1b[2J\\tc";
  EXPECT_NE(r.err.find(escaped + "\\r\n"), std::string::npos) << r.err;  // the command's line
  // The log line of its failure (last_error has no trailing whitespace).
  EXPECT_NE(r.err.find("failed and is dead (no retry): exit status 1: " + escaped + "\n"),
            std::string::npos)
      << r.err;
  // What is stored is what the command wrote (bar the trailing whitespace).
  EXPECT_EQ(show(id)["last_error"], "exit status 1: a \x1b]0;pwned\x07 b \x1b[2J\tc");
}

}  // namespace
}  // namespace readpast::test
