// Black-box tests of the operational commands: pause/resume, schedule, metrics,
// stats --watch, JSON logs and the worker's retention options.
#include <csignal>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "cli_fixture.hpp"

namespace readpast::test {
namespace {

TEST_F(CliTest, PauseStopsWorkersAndResumeLetsThemGoOn) {
  auto r = rp({"pause", "q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "paused q\n");
  auto id = enqueue("q", "x");
  // A draining worker finds the queue's job available but paused: it must not run it.
  auto worker = start({"work", "q", "--exec", "cat >/dev/null", "--no-progress"});
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  EXPECT_EQ(show(id)["state"], "available");
  EXPECT_EQ(stats("q")["paused"], true);
  ASSERT_EQ(rp({"resume", "q"}).exit_code, 0);
  bool done = false;
  for (int i = 0; i < 200 && !done; ++i) {
    done = show(id)["state"] == "succeeded";
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  EXPECT_TRUE(done) << "the worker did not resume";
  worker->send_signal(SIGTERM);
  EXPECT_EQ(worker->wait(std::chrono::seconds(20)).exit_code, 0);
  EXPECT_EQ(stats("q")["paused"], false);
  EXPECT_EQ(rp({"pause", "bad name"}).exit_code, 2);
}

TEST_F(CliTest, RescueEndsExpiredLeasesAndStatsCountsThemUntilThen) {
  auto id = enqueue("q", "x");
  enqueue("other", "y");
  // The command kills its own worker (its parent) while the job runs: the lease is left to
  // expire, with nobody working on the queue.
  auto died =
      rp({"work", "q", "--exec", "kill -9 $PPID; sleep 1", "--lease", "1s", "--no-progress"});
  EXPECT_NE(died.exit_code, 0);
  EXPECT_EQ(show(id)["state"], "running");
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  auto s = stats("q");
  EXPECT_EQ(s["running"], 1);
  EXPECT_EQ(s["expired"], 1);
  auto table = rp({"stats", "q"});
  EXPECT_NE(table.out.find("EXPIRED"), std::string::npos) << table.out;

  auto rescued = rp({"rescue"});
  ASSERT_EQ(rescued.exit_code, 0) << rescued.err;
  EXPECT_EQ(rescued.out, "rescued 1 job(s)\n");
  auto job = show(id);
  EXPECT_EQ(job["state"], "available");
  EXPECT_EQ(job["last_error"], "lease expired (worker lost)");
  EXPECT_EQ(stats("q")["expired"], 0);
  EXPECT_EQ(stats("other")["available"], 1) << "a queue without expired leases was touched";

  auto again = rp({"rescue", "q"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, "rescued 0 job(s) of queue q\n");

  // Bad input: one line, exit 2, nothing done.
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"rescue", "bad name"}, {"rescue", "q", "extra"}, {"rescue", "--all"}}) {
    auto bad = rp(args);
    EXPECT_EQ(bad.exit_code, 2) << args.back() << ": " << bad.err;
    EXPECT_TRUE(is_one_line_reason(bad.err));
    EXPECT_EQ(bad.out, "");
  }
}

TEST_F(CliTest, SchedulesAreAddedListedRunAndRemoved) {
  auto added = rp({"schedule", "add", "beat", "ticks", "--every", "300ms", "payload"});
  ASSERT_EQ(added.exit_code, 0) << added.err;
  EXPECT_EQ(added.out, "added schedule beat: every 300ms -> queue ticks\n");
  auto replaced = rp({"schedule", "add", "beat", "ticks", "--every", "200ms", "payload"});
  ASSERT_EQ(replaced.exit_code, 0) << replaced.err;
  EXPECT_NE(replaced.out.find("replaced"), std::string::npos);
  ASSERT_EQ(rp({"schedule", "add", "nightly", "reports", "--cron", "0 3 * * *"}).exit_code, 0);

  auto list = rp({"schedule", "list", "--json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  auto schedules = nlohmann::json::parse(list.out);
  ASSERT_EQ(schedules.size(), 2u);
  EXPECT_EQ(schedules[0]["name"], "beat");
  EXPECT_EQ(schedules[0]["spec"], "every 200ms");
  EXPECT_EQ(schedules[1]["spec"], "0 3 * * *");
  auto table = rp({"schedule", "list"});
  EXPECT_NE(table.out.find("nightly  reports  0 3 * * *"), std::string::npos) << table.out;

  // Two workers run the schedule; each tick becomes exactly one job.
  auto w1 = start({"work", "ticks", "--exec", "cat >/dev/null", "--no-progress"});
  auto w2 = start({"work", "ticks", "--exec", "cat >/dev/null", "--no-progress"});
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ASSERT_EQ(rp({"schedule", "remove", "beat"}).exit_code, 0);
  w1->send_signal(SIGTERM);
  w2->send_signal(SIGTERM);
  EXPECT_EQ(w1->wait(std::chrono::seconds(20)).exit_code, 0);
  EXPECT_EQ(w2->wait(std::chrono::seconds(20)).exit_code, 0);
  auto jobs = nlohmann::json::parse(rp({"list", "ticks", "--json", "--limit", "1000"}).out);
  std::set<std::string> keys;
  for (const auto& job : jobs) {
    keys.insert(job["unique_key"].get<std::string>());
    EXPECT_EQ(job["payload"], "payload");
  }
  EXPECT_EQ(keys.size(), jobs.size()) << "a tick was enqueued twice";
  EXPECT_GE(jobs.size(), 4u);

  auto missing = rp({"schedule", "remove", "beat"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(is_one_line_reason(missing.err));
  for (auto args : std::vector<std::vector<std::string>>{
           {"schedule", "add", "x", "q"},
           {"schedule", "add", "x", "q", "--cron", "61 * * * *"},
           {"schedule", "add", "x", "q", "--cron", "* * * * *", "--every", "1s"},
           {"schedule", "add", "x", "q", "--every", "soon"},
           {"schedule", "add", "bad name", "q", "--every", "1s"},
           {"schedule", "add", "x", "bad;queue", "--every", "1s"},
           {"schedule"}}) {
    auto r = rp(args);
    EXPECT_EQ(r.exit_code, 2) << args.back() << ": " << r.err;
    EXPECT_TRUE(is_one_line_reason(r.err)) << r.err;
  }
  EXPECT_EQ(nlohmann::json::parse(rp({"schedule", "list", "--json"}).out).size(), 1u);
}

TEST_F(CliTest, ScheduleRunEnqueuesOneJobNowAndAnUnknownNameChangesNothing) {
  ASSERT_EQ(rp({"schedule", "add", "nightly", "reports", "--cron", "0 3 * * *", "--priority", "7",
                "--max-attempts", "2", "{\"kind\":\"daily\"}"})
                .exit_code,
            0);
  auto ran = rp({"schedule", "run", "nightly"});
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  auto jobs = nlohmann::json::parse(rp({"list", "reports", "--json"}).out);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(ran.out, "enqueued job " + std::to_string(jobs[0]["id"].get<long long>()) +
                         " from schedule nightly\n");
  EXPECT_EQ(jobs[0]["state"], "available");
  EXPECT_EQ(jobs[0]["payload"], "{\"kind\":\"daily\"}");
  EXPECT_EQ(jobs[0]["priority"], 7);
  EXPECT_EQ(jobs[0]["max_attempts"], 2);
  EXPECT_TRUE(jobs[0]["unique_key"].is_null());
  auto schedules = nlohmann::json::parse(rp({"schedule", "list", "--json"}).out);
  EXPECT_TRUE(schedules[0]["last_tick"].is_null()) << "run moved the schedule's ticks";
  EXPECT_TRUE(schedules[0]["last_job_id"].is_null()) << "a run-now job is not a tick's job";

  const std::string before = rp({"list", "--json"}).out;
  auto missing = rp({"schedule", "run", "nighlty"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(is_one_line_reason(missing.err)) << missing.err;
  EXPECT_NE(missing.err.find("no schedule named 'nighlty'"), std::string::npos) << missing.err;
  EXPECT_EQ(missing.out, "");
  for (auto args : std::vector<std::vector<std::string>>{
           {"schedule", "run"}, {"schedule", "run", "bad name"}, {"schedule", "run", "a", "b"}}) {
    auto r = rp(args);
    EXPECT_EQ(r.exit_code, 2) << args.back() << ": " << r.err;
    EXPECT_TRUE(is_one_line_reason(r.err)) << r.err;
  }
  EXPECT_EQ(rp({"list", "--json"}).out, before);
}

TEST_F(CliTest, SchedulesReadCronFieldsInATimeZone) {
  auto added = rp(
      {"schedule", "add", "standup", "team", "--cron", "0 9 * * mon-fri", "--tz", "Europe/Berlin"});
  ASSERT_EQ(added.exit_code, 0) << added.err;
  ASSERT_EQ(rp({"schedule", "add", "nightly", "reports", "--cron", "0 3 * * *"}).exit_code, 0);
  auto schedules = nlohmann::json::parse(rp({"schedule", "list", "--json"}).out);
  ASSERT_EQ(schedules.size(), 2u);
  EXPECT_EQ(schedules[0]["name"], "nightly");
  EXPECT_EQ(schedules[0]["time_zone"], "UTC");
  EXPECT_EQ(schedules[1]["spec"], "CRON_TZ=Europe/Berlin 0 9 * * mon-fri");
  EXPECT_EQ(schedules[1]["time_zone"], "Europe/Berlin");
  auto table = rp({"schedule", "list"});
  EXPECT_NE(table.out.find("standup  team     0 9 * * mon-fri  Europe/Berlin"), std::string::npos)
      << table.out;

  for (auto args : std::vector<std::vector<std::string>>{
           {"schedule", "add", "x", "q", "--cron", "0 9 * * *", "--tz", "Mars/Olympus"},
           {"schedule", "add", "x", "q", "--cron", "0 9 * * *", "--tz", "../../etc/passwd"},
           {"schedule", "add", "x", "q", "--every", "1h", "--tz", "Europe/Berlin"},
           {"schedule", "add", "x", "q", "--cron", "CRON_TZ=UTC 0 9 * * *", "--tz", "UTC"}}) {
    auto r = rp(args);
    EXPECT_EQ(r.exit_code, 2) << args.back() << ": " << r.err;
    EXPECT_TRUE(is_one_line_reason(r.err)) << r.err;
  }
  EXPECT_EQ(nlohmann::json::parse(rp({"schedule", "list", "--json"}).out).size(), 2u);
}

TEST_F(CliTest, MetricsArePrometheusText) {
  enqueue("q", "a");
  enqueue("q", "b", {"--delay", "1h"});
  ASSERT_EQ(rp({"pause", "q"}).exit_code, 0);
  auto r = rp({"metrics"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("# TYPE readpast_jobs gauge\n"), std::string::npos);
  EXPECT_NE(r.out.find("readpast_jobs{queue=\"q\",state=\"available\"} 2\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("readpast_jobs_scheduled{queue=\"q\"} 1\n"), std::string::npos);
  EXPECT_NE(r.out.find("readpast_queue_paused{queue=\"q\"} 1\n"), std::string::npos);
  // The storage, each table by its size: on SQLite the database and its write-ahead log.
  EXPECT_NE(r.out.find("# TYPE readpast_storage_bytes gauge\n"), std::string::npos);
  EXPECT_NE(r.out.find("\nreadpast_storage_bytes{relation=\""), std::string::npos) << r.out;
  if (const char* engine = std::getenv("READPAST_CLI_ENGINE"); engine == nullptr || *engine == 0) {
    EXPECT_NE(r.out.find("readpast_storage_bytes{relation=\"database\"} "), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("readpast_storage_bytes{relation=\"wal\"} "), std::string::npos);
  }
  const std::regex sample(R"([a-z_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? -?[0-9.e+-]+)");
  for (const auto& line : lines_of(r.out)) {
    if (line.starts_with("#")) continue;
    // name{labels} value, or name value
    EXPECT_TRUE(std::regex_match(line, sample)) << line;
  }
}

TEST_F(CliTest, WorkersListRunningProcessesAndMetricsCountTheirJobsPastRetention) {
  for (int i = 0; i < 3; ++i) enqueue("q", "ok");
  enqueue("q", "fail", {"--max-attempts", "1"});
  auto worker = start({"work", "q", "--exec", "grep -q fail && exit 1; sleep 0.4", "--concurrency",
                       "2", "--no-progress"});
  nlohmann::json seen;
  bool busy = false;
  for (int i = 0; i < 200 && !busy; ++i) {
    auto r = rp({"workers", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    seen = nlohmann::json::parse(r.out);
    busy = seen["workers"].size() == 1 && !seen["workers"][0]["jobs"].empty();
    if (!busy) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ASSERT_TRUE(busy) << seen.dump();
  const auto& w = seen["workers"][0];
  EXPECT_EQ(w["queues"], nlohmann::json::array({"q"}));
  EXPECT_EQ(w["threads"], 2);
  EXPECT_LT(w["heartbeat_age_s"].get<double>(), 10.0);
  EXPECT_EQ(w["running"], w["jobs"].size());
  EXPECT_EQ(w["jobs"][0]["queue"], "q");
  auto table = rp({"workers"});
  EXPECT_NE(table.out.find("HEARTBEAT"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find(w["name"].get<std::string>()), std::string::npos) << table.out;

  bool finished = false;
  for (int i = 0; i < 400 && !finished; ++i) {
    auto s = stats("q");
    finished = s["succeeded"] == 3 && s["dead"] == 1;
    if (!finished) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ASSERT_TRUE(finished);
  worker->send_signal(SIGTERM);
  ASSERT_EQ(worker->wait(std::chrono::seconds(20)).exit_code, 0);
  // A clean stop forgets the process and flushes what it counted.
  EXPECT_TRUE(nlohmann::json::parse(rp({"workers", "--json"}).out)["workers"].empty());
  EXPECT_EQ(rp({"workers"}).out, "no worker reported in the last hour\n");
  ASSERT_EQ(rp({"purge", "q", "--state", "succeeded"}).exit_code, 0);
  ASSERT_EQ(rp({"purge", "q", "--state", "dead"}).exit_code, 0);
  auto metrics = rp({"metrics"});
  ASSERT_EQ(metrics.exit_code, 0) << metrics.err;
  EXPECT_EQ(metrics.out.find("readpast_jobs{queue=\"q\""), std::string::npos)
      << "the purged queue has no jobs left to gauge\n"
      << metrics.out;
  EXPECT_NE(metrics.out.find("readpast_jobs_completed_total{queue=\"q\"} 3\n"), std::string::npos)
      << metrics.out;
  EXPECT_NE(metrics.out.find("readpast_jobs_dead_total{queue=\"q\"} 1\n"), std::string::npos);
  EXPECT_NE(metrics.out.find("readpast_job_run_seconds_count{queue=\"q\"} 4\n"), std::string::npos);
  EXPECT_NE(metrics.out.find("# TYPE readpast_job_wait_seconds histogram\n"), std::string::npos);
  auto other = rp({"metrics", "other"});
  EXPECT_EQ(other.out.find("readpast_jobs_completed_total{"), std::string::npos)
      << "QUEUE filters the recorded series too";

  auto bad = rp({"workers", "extra"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_TRUE(is_one_line_reason(bad.err)) << bad.err;
}

TEST_F(CliTest, StatsWatchRefreshesWithRates) {
  for (int i = 0; i < 5; ++i) enqueue("q", "x");
  auto r = rp({"stats", "--watch", "--interval", "200ms", "--count", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::size_t tables = 0;
  for (std::size_t at = 0; (at = r.out.find("DONE/S", at)) != std::string::npos; ++at) ++tables;
  EXPECT_EQ(tables, 3u) << r.out;
  EXPECT_EQ(r.out.find("\x1b["), std::string::npos) << "screen control codes into a pipe";
  EXPECT_NE(r.out.find("q              5"), std::string::npos) << r.out;
  EXPECT_EQ(rp({"stats", "--watch", "--json"}).exit_code, 2);
  EXPECT_EQ(rp({"stats", "--count", "2"}).exit_code, 2);
  EXPECT_EQ(rp({"stats", "--watch", "--interval", "1ms"}).exit_code, 2);
}

TEST_F(CliTest, JsonLogsCarryTheEventsFields) {
  auto id = enqueue("q", "x", {"--max-attempts", "1"});
  auto r = rp({"--log-format", "json", "work", "q", "--exec", "echo nope >&2; exit 3", "--drain"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  bool saw_dead = false;
  for (const auto& line : lines_of(r.err)) {
    if (!line.starts_with("{")) continue;  // the command's own stderr passes through
    auto event = nlohmann::json::parse(line);
    EXPECT_TRUE(event.contains("time"));
    EXPECT_TRUE(event.contains("level"));
    EXPECT_TRUE(event.contains("msg"));
    if (event.value("event", "") == "job_dead") {
      saw_dead = true;
      // Numbers as JSON numbers, text as strings.
      EXPECT_EQ(event["job_id"], id);
      EXPECT_EQ(event["queue"], "q");
      EXPECT_EQ(event["attempt"], 1);
      EXPECT_EQ(event["level"], "error");
      EXPECT_NE(event["error"].get<std::string>().find("exit status 3"), std::string::npos);
    }
  }
  EXPECT_TRUE(saw_dead) << r.err;
  EXPECT_EQ(rp({"--log-format", "xml", "stats"}).exit_code, 2);
}

TEST_F(CliTest, JsonLogsWriteNumbersAsNumbersAndNamesAsText) {
  // A queue and a worker whose names look like numbers stay strings: fields are numbers by
  // what they are, not by how they look.
  auto id = enqueue("42", "x");
  auto r = rp({"--log-format", "json", "-v", "work", "42", "--exec", "true", "--drain",
               "--worker-id", "7"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  bool saw_success = false;
  for (const auto& line : lines_of(r.err)) {
    auto event = nlohmann::json::parse(line);
    if (event.value("event", "") != "job_succeeded") continue;
    saw_success = true;
    EXPECT_TRUE(event["job_id"].is_number_integer()) << line;
    EXPECT_EQ(event["job_id"], id) << line;
    EXPECT_TRUE(event["attempt"].is_number_integer()) << line;
    EXPECT_TRUE(event["duration_ms"].is_number_integer()) << line;
    EXPECT_EQ(event["queue"], "42") << line;
    EXPECT_EQ(event["worker"], "7") << line;
  }
  EXPECT_TRUE(saw_success) << r.err;
}

TEST_F(CliTest, RetainSucceededZeroDeletesJobsAsTheyComplete) {
  auto succeeds = enqueue("q", "ok");
  auto fails = enqueue("q", "bad", {"--max-attempts", "1"});
  // "0", as the help says, not only "0s".
  auto r = rp({"work", "q", "--exec", "test \"$(cat)\" = ok", "--drain", "--retain-succeeded", "0",
               "--retain-dead", "forever"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto gone = rp({"show", std::to_string(succeeds)});
  EXPECT_EQ(gone.exit_code, 1) << "the succeeded job is still there: " << gone.out;
  EXPECT_EQ(stats("q")["succeeded"], 0);
  EXPECT_EQ(show(fails)["state"], "dead") << "only succeeded jobs are deleted";
}

TEST_F(CliTest, WorkerRetentionOptions) {
  auto id = enqueue("q", "x", {"--max-attempts", "1"});
  // The options are accepted (the passes themselves are tested with the Worker), and bad
  // values refused.
  auto r = rp({"work", "q", "--exec", "exit 1", "--drain", "--retain-dead", "forever",
               "--retain-cancelled", "1h", "--retain-succeeded", "0s"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(show(id)["state"], "dead");
  for (auto bad :
       std::vector<std::string>{"--retain-dead", "--retain-cancelled", "--retain-succeeded"}) {
    auto refused = rp({"work", "q", "--exec", "true", "--drain", bad, "later"});
    EXPECT_EQ(refused.exit_code, 2) << bad;
  }
  EXPECT_EQ(
      rp({"work", "q", "--exec", "true", "--drain", "--retain-succeeded", "forever"}).exit_code, 2);
}

TEST_F(CliTest, RetryLeavesAJobWhoseUniqueKeyIsHeldAndSaysWhy) {
  auto dead = enqueue("q", "x", {"--unique", "k", "--max-attempts", "1"});
  drain("q", "exit 1");
  ASSERT_EQ(show(dead)["state"], "dead");
  auto holder = enqueue("q", "y", {"--unique", "k"});
  ASSERT_NE(holder, dead);
  auto r = rp({"retry", std::to_string(dead)});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(is_one_line_reason(r.err));
  EXPECT_NE(r.err.find("unique key 'k' is held"), std::string::npos) << r.err;
  EXPECT_EQ(show(dead)["state"], "dead");
}

}  // namespace
}  // namespace readpast::test
