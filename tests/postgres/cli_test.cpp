// The command line against PostgreSQL: the same binary, only the URL differs. One pass
// through the main path (the SQLite tests cover the details) to show that nothing in the
// CLI or the worker assumes SQLite.
#include <gtest/gtest.h>
#include <httplib.h>
#include <libpq-fe.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli_fixture.hpp"
#include "cli_runner.hpp"
#include "support/engines/postgres_pgbouncer.hpp"
#include "support/engines/postgres_server.hpp"
#include "support/temp_dir.hpp"

namespace readpast::test {
namespace {

// Commands do not get the password, and there is no URL without it to give them.
TEST_F(CliTest, AUrlOfNothingButAPasswordNeedsPassDbPassword) {
  auto r =
      run_readpast(dir_.path(), {"--db", "password=pgS3cretPW", "work", "q", "--exec", "true"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(is_one_line_reason(r.err));
  EXPECT_NE(r.err.find("--pass-db-password"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("pgS3cretPW"), std::string::npos) << r.err;
}

// Every command the README shows, on the database at `url` (which has no schema yet).
void init_enqueue_work_and_inspect(const std::string& url) {
  TempDir dir;
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

TEST(CliPostgresTest, InitEnqueueWorkAndInspect) {
  init_enqueue_work_and_inspect(PostgresServer::shared().fresh_database_url());
}

// Issue 19: behind PgBouncer in transaction mode every command failed with 'prepared
// statement "readpast_schema_version" already exists'. With pool_mode=transaction nothing
// depends on the server session outliving a transaction.
TEST(CliPostgresTest, EveryCommandWorksThroughPgBouncerInTransactionMode) {
  init_enqueue_work_and_inspect(
      PgBouncer::shared().through(PostgresServer::shared().fresh_database_url()) +
      "?pool_mode=transaction");
}

// Without pool_mode=transaction, a command that lands on a server session where another
// client prepared our statements says what to add to the URL, in one line.
TEST(CliPostgresTest, ThroughPgBouncerWithoutPoolModeTheErrorSaysWhatToAdd) {
  TempDir dir;
  const std::string url =
      PgBouncer::shared().through(PostgresServer::shared().fresh_database_url());
  ASSERT_EQ(run_readpast(dir.path(), {"--db", url + "?pool_mode=transaction", "init"}).exit_code,
            0);
  int refused = 0;
  for (int i = 0; i < 4; ++i) {
    auto r = run_readpast(dir.path(), {"--db", url, "enqueue", "q", "x"});
    if (r.exit_code == 0) continue;
    ++refused;
    EXPECT_NE(r.err.find("add pool_mode=transaction to the URL"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  // PgBouncer hands the same idle server session to the next client: from the second
  // command on, our statement names are taken there.
  EXPECT_GE(refused, 3);
}

// Enqueues by another process (libpq on `producer_url`, the server directly) start as
// commands of an idle `readpast work` on `worker_url`: the latencies, sorted, in ms.
std::vector<double> idle_worker_latencies_ms(const std::string& worker_url,
                                             const std::string& producer_url) {
  TempDir dir;
  EXPECT_EQ(run_readpast(dir.path(), {"--db", worker_url, "init"}).exit_code, 0);
  const std::string marks = dir.file("started");
  std::filesystem::create_directories(marks);
  ReadpastProcess worker(dir.path(), {"--db", worker_url, "work", "wake", "--no-progress", "--exec",
                                      "date +%s%N > " + marks + "/$READPAST_JOB_ID"});
  std::unique_ptr<PGconn, decltype(&PQfinish)> producer(PQconnectdb(producer_url.c_str()),
                                                        &PQfinish);
  EXPECT_EQ(PQstatus(producer.get()), CONNECTION_OK);
  std::vector<double> latencies_ms;
  for (int round = 0; round < 5; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(round == 0 ? 1500 : 400));  // idle
    const auto enqueued_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
    std::unique_ptr<PGresult, decltype(&PQclear)> result(
        PQexec(producer.get(), "SELECT readpast.enqueue('wake', 'x')"), &PQclear);
    EXPECT_EQ(PQresultStatus(result.get()), PGRES_TUPLES_OK);
    if (PQresultStatus(result.get()) != PGRES_TUPLES_OK) break;
    const std::string id = PQgetvalue(result.get(), 0, 0);
    const auto mark = std::filesystem::path(marks) / id;
    for (int i = 0; i < 500 && read_file(mark).empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const std::string started = read_file(mark);
    EXPECT_FALSE(started.empty()) << "job " << id << " did not start";
    if (started.empty()) break;
    latencies_ms.push_back(static_cast<double>(std::stoll(started) - enqueued_ns) / 1e6);
  }
  worker.send_signal(SIGTERM);
  EXPECT_EQ(worker.wait(std::chrono::seconds(20)).exit_code, 0);
  std::sort(latencies_ms.begin(), latencies_ms.end());
  if (latencies_ms.size() == 5) {
    std::printf(
        "[ latency  ] enqueue by another process -> command started by an idle `readpast work`: "
        "min %.1f ms, median %.1f ms, max %.1f ms (5 rounds, including the command's start)\n",
        latencies_ms.front(), latencies_ms[2], latencies_ms.back());
  }
  return latencies_ms;
}

// `url` with every byte but the unreserved ones percent-encoded, to stand as a URL parameter.
std::string percent_encoded(const std::string& url) {
  std::string out;
  for (unsigned char c : url) {
    if (std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char escape[4];
      std::snprintf(escape, sizeof escape, "%%%02X", c);
      out += escape;
    }
  }
  return out;
}

// An idle `readpast work` process starts a job that another process enqueued within
// 100 ms: LISTEN/NOTIFY wakes it, no poll interval in between.
// A snapshot held for a minute (the note's threshold; the test waits it out once): `readpast
// stats` names its session on stderr below the table, `readpast metrics` gives its age, and
// `readpast work` warns about it.
TEST(CliPostgresTest, StatsNamesASnapshotHeldForAMinuteAndMetricsGiveItsAge) {
  const std::string url = PostgresServer::shared().fresh_database_url();
  TempDir dir;
  auto rp = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"--db", url});
    return run_readpast(dir.path(), args);
  };
  ASSERT_EQ(rp({"init"}).exit_code, 0);
  ASSERT_EQ(rp({"enqueue", "q", "x"}).exit_code, 0);
  std::unique_ptr<PGconn, decltype(&PQfinish)> holder(PQconnectdb(url.c_str()), &PQfinish);
  ASSERT_EQ(PQstatus(holder.get()), CONNECTION_OK);
  for (const char* sql :
       {"BEGIN ISOLATION LEVEL REPEATABLE READ", "SET LOCAL application_name = 'nightly-report'",
        "SELECT count(*) FROM readpast.jobs"}) {
    std::unique_ptr<PGresult, decltype(&PQclear)> done(PQexec(holder.get(), sql), &PQclear);
    ASSERT_NE(PQresultStatus(done.get()), PGRES_FATAL_ERROR) << PQerrorMessage(holder.get());
  }
  auto young = rp({"stats"});
  ASSERT_EQ(young.exit_code, 0) << young.err;
  EXPECT_EQ(young.err, "") << "a note about a snapshot held for less than a minute";

  std::this_thread::sleep_for(std::chrono::seconds(61));
  auto stats = rp({"stats"});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_NE(stats.out.find("QUEUE"), std::string::npos) << stats.out;
  EXPECT_EQ(stats.err.rfind("note: a snapshot held by session ", 0), 0u) << stats.err;
  EXPECT_NE(stats.err.find("(nightly-report, idle in transaction), open for 1m"), std::string::npos)
      << stats.err;
  EXPECT_EQ(std::count(stats.err.begin(), stats.err.end(), '\n'), 1) << stats.err;

  auto metrics = rp({"metrics"});
  ASSERT_EQ(metrics.exit_code, 0) << metrics.err;
  const std::string series = "\nreadpast_oldest_snapshot_age_seconds ";
  const auto at = metrics.out.find(series);
  ASSERT_NE(at, std::string::npos) << metrics.out;
  EXPECT_GE(std::stod(metrics.out.substr(at + series.size())), 60.0);
  EXPECT_NE(metrics.out.find("\nreadpast_storage_bytes{relation=\"running_0\"} "),
            std::string::npos);
  // The worker warns at its first look, with --warn-snapshot-after; not with off.
  // (A job of three seconds: the drain outlasts the worker's first look, a second after its
  // start.)
  auto work = rp({"work", "q", "--drain", "--no-progress", "--warn-snapshot-after", "1s", "--exec",
                  "sleep 3"});
  ASSERT_EQ(work.exit_code, 0) << work.err;
  EXPECT_NE(work.err.find("a snapshot held by session "), std::string::npos) << work.err;
  ASSERT_EQ(rp({"enqueue", "q", "y"}).exit_code, 0);
  auto quiet = rp(
      {"work", "q", "--drain", "--no-progress", "--warn-snapshot-after", "off", "--exec", "true"});
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.err.find("snapshot"), std::string::npos) << quiet.err;
  std::unique_ptr<PGresult, decltype(&PQclear)> done(PQexec(holder.get(), "COMMIT"), &PQclear);
}

TEST(CliPostgresTest, AnIdleWorkerProcessStartsAJobEnqueuedElsewhereWithin100ms) {
  const std::string url = PostgresServer::shared().fresh_database_url();
  auto latencies = idle_worker_latencies_ms(url, url);
  ASSERT_EQ(latencies.size(), 5u);
  EXPECT_LT(latencies[2], 100.0);
}

// Through PgBouncer in transaction mode, with a direct listen_url for LISTEN: as fast.
TEST(CliPostgresTest, ThroughPgBouncerAListenUrlWakesAnIdleWorkerWithin100ms) {
  const std::string direct = PostgresServer::shared().fresh_database_url();
  const std::string pooled = PgBouncer::shared().through(direct) +
                             "?pool_mode=transaction&listen_url=" + percent_encoded(direct);
  auto latencies = idle_worker_latencies_ms(pooled, direct);
  ASSERT_EQ(latencies.size(), 5u);
  EXPECT_LT(latencies[2], 100.0);
}

// Through PgBouncer in transaction mode without a listen_url, an idle worker looks every
// poll_interval: a job waits at most that long (plus the command's start).
TEST(CliPostgresTest, ThroughPgBouncerWithoutListenUrlAnIdleWorkerPolls) {
  const std::string direct = PostgresServer::shared().fresh_database_url();
  const std::string pooled =
      PgBouncer::shared().through(direct) + "?pool_mode=transaction&poll_interval=200ms";
  auto latencies = idle_worker_latencies_ms(pooled, direct);
  ASSERT_EQ(latencies.size(), 5u);
  EXPECT_LT(latencies.back(), 450.0) << "longer than the poll interval and a command's start";
}

// Issue 17: commands got READPAST_DB with the database password in it, and one that
// printed it put the password into last_error and the worker's log.
TEST(CliPostgresTest, CommandsGetTheDatabaseUrlWithoutItsPasswordUnlessAsked) {
  TempDir dir;
  const std::string password = "pgS3cretPW";
  const std::string plain = PostgresServer::shared().fresh_database_url();  // no password
  // The server trusts this user: the password is carried, never checked.
  const std::string url = "postgresql://postgres:" + password + "@" +
                          plain.substr(plain.find('@') + 1) + "?connect_timeout=5";
  const std::string without = plain + "?connect_timeout=5";
  ASSERT_EQ(run_readpast(dir.path(), {"--db", url, "init"}).exit_code, 0);
  // One job per run; the command shows what it got and fails.
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
  // An inherited READPAST_DB is replaced too.
  EXPECT_EQ(run({}, environment({"READPAST_DB=" + url})), without + "\n");
  // Asked for, the password reaches the command, and is still scrubbed from what it prints.
  EXPECT_EQ(run({"--db", url}, {}, /*pass_password=*/true), url + "\n");
}

// Issue 19: `readpast serve` and the commands, given every host with
// target_session_attrs=read-write, follow a synchronous standby promoted after the primary
// died: serve answers again without a restart, and nothing enqueued before is lost.
TEST(CliPostgresTest, ServeAndCommandsFollowAPromotedStandby) {
  PostgresServer primary;
  primary.execute("CREATE DATABASE jobs");
  PostgresServer standby(PostgresServer::StandbyOf{primary});
  primary.require_synchronous_standby();
  const std::string db = "--db=postgresql://postgres@127.0.0.1:" + std::to_string(primary.port()) +
                         ",127.0.0.1:" + std::to_string(standby.port()) +
                         "/jobs?target_session_attrs=read-write";
  TempDir dir;
  ASSERT_EQ(run_readpast(dir.path(), {db, "init"}).exit_code, 0);
  const std::string token = "failover-token-0123456789";
  ReadpastProcess server(dir.path(), {db, "serve", "--listen", "127.0.0.1:0"},
                         environment({"READPAST_TOKEN=" + token}));
  const Serving serving = wait_until_serving(server);
  ASSERT_TRUE(serving.port) << serving.log;
  httplib::Client client("127.0.0.1", *serving.port);
  const httplib::Headers auth = {{"Authorization", "Bearer " + token}};
  auto enqueue = [&] { return client.Post("/api/queues/q/jobs", auth, "{}", "application/json"); };
  auto before = enqueue();
  ASSERT_TRUE(before);
  ASSERT_EQ(before->status, 201) << before->body;

  primary.kill_postmaster();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  standby.promote();

  // serve reconnects on demand: an enqueue succeeds again within seconds.
  const auto promoted = std::chrono::steady_clock::now();
  int status = 0;
  while (status != 201 && std::chrono::steady_clock::now() - promoted < std::chrono::seconds(30)) {
    auto after = enqueue();
    status = after ? after->status : 0;
    if (status != 201) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(status, 201) << "serve did not follow the promoted standby";
  std::printf("[ failover ] serve enqueued again %lld ms after the promotion\n",
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                         std::chrono::steady_clock::now() - promoted)
                                         .count()));
  // The command line, a new process, connects to the new primary, which has both jobs.
  auto stats = run_readpast(dir.path(), {db, "stats", "q", "--json"});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_EQ(nlohmann::json::parse(stats.out)["queues"]["q"]["available"], 2) << stats.out;
  server.send_signal(SIGTERM);
  EXPECT_EQ(server.wait(std::chrono::seconds(10)).exit_code, 0);
}

}  // namespace
}  // namespace readpast::test
