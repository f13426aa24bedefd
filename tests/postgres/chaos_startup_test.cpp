// The `readpast` command against a PostgreSQL server that is down, unreachable, or refuses
// the password, and a server that goes away under a running worker: each ends in bounded
// time with exit 1 and a one-line reason (or rides the outage out), never spins on the CPU,
// and never shows the password — not in errors, logs, --help, or the command lines of the
// processes it starts.
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "chaos.hpp"
#include "support/engines/postgres_pgbouncer.hpp"
#include "support/engines/postgres_server.hpp"
#include "support/tcp_proxy.hpp"

namespace readpast::test {
namespace {

constexpr const char* kSecret = "S3cret-Startup-Pa55";

// A port on 127.0.0.1 where nothing listens.
int closed_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

class StartupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PostgresServer& server = PostgresServer::shared();
    const std::string url = server.fresh_database_url();
    open_queue(url);  // the schema
    database_ = url.substr(url.rfind('/') + 1);
    // Only members of readpast_password_auth must give their password (postgres_server.hpp).
    server.execute(std::string("DO $$ BEGIN CREATE ROLE startup_user LOGIN PASSWORD '") + kSecret +
                       "' IN ROLE readpast_password_auth; EXCEPTION WHEN duplicate_object THEN "
                       "NULL; END $$",
                   database_);
    for (const char* grant : {"GRANT ALL ON SCHEMA readpast TO startup_user",
                              "GRANT ALL ON ALL TABLES IN SCHEMA readpast TO startup_user",
                              "GRANT ALL ON ALL SEQUENCES IN SCHEMA readpast TO startup_user"}) {
      server.execute(grant, database_);
    }
  }

  std::string url_at(int port, const std::string& password = kSecret,
                     const std::string& params = "") const {
    return "postgresql://startup_user:" + password + "@127.0.0.1:" + std::to_string(port) + "/" +
           database_ + (params.empty() ? "" : "?" + params);
  }
  std::string good_url() const { return url_at(PostgresServer::shared().port()); }

  // Exit 1, one line on stderr, nothing on stdout, no password anywhere, in bounded time
  // and without spinning.
  void expect_clean_failure(const CliResult& r, std::chrono::seconds bound,
                            const std::string& what) {
    EXPECT_EQ(r.exit_code, 1) << what << ": " << r.how_it_ended << "\n" << r.err;
    EXPECT_TRUE(r.err.starts_with("readpast: ")) << what << ": " << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << what << ": not one line: " << r.err;
    EXPECT_EQ(r.out, "") << what;
    expect_no_secret(r, what);
    EXPECT_LT(r.wall, bound) << what;
    EXPECT_LT(r.cpu, 1s) << what << ": busy while it waited";
    std::cout << "[ startup  ] " << what << ": exit " << r.exit_code << " after "
              << std::chrono::duration_cast<std::chrono::milliseconds>(r.wall).count()
              << " ms, CPU " << r.cpu.count() / 1000 << " ms: " << r.err;
  }
  void expect_no_secret(const CliResult& r, const std::string& what) {
    for (const std::string& secret : {std::string(kSecret), std::string("Wr0ng-Pa55")}) {
      EXPECT_EQ(r.out.find(secret), std::string::npos) << what << ": password in stdout";
      EXPECT_EQ(r.err.find(secret), std::string::npos) << what << ": password in stderr";
    }
  }

  TempDir scratch_;
  std::string database_;
};

const std::vector<std::vector<std::string>> kCommands = {
    {"init"},
    {"enqueue", "q", "x"},
    {"stats"},
    {"list", "q"},
    {"work", "q", "--exec", "true", "--drain"},
    {"work", "q", "--exec", "true"},
};

std::vector<std::string> with_db(const std::string& url, std::vector<std::string> args) {
  args.insert(args.begin(), {"--db", url});
  return args;
}

TEST_F(StartupTest, ADatabaseThatIsDownEndsEveryCommandCleanly) {
  const std::string url = url_at(closed_port());
  for (const auto& args : kCommands) {
    expect_clean_failure(run_cli(scratch_, with_db(url, args)), 15s, "down: " + args[0]);
  }
  // The password may come from the environment instead: same.
  expect_clean_failure(run_cli(scratch_, {"stats"}, {"READPAST_DB=" + url}), 15s,
                       "down, READPAST_DB");
}

TEST_F(StartupTest, AnUnreachableDatabaseIsGivenUpAfterTheConnectTimeout) {
  // The proxy accepts nothing and answers nothing: the connection hangs in the handshake.
  TcpProxy proxy(PostgresServer::shared().port());
  proxy.blackhole(/*kernel_drop=*/false);
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"enqueue", "q", "x"}, {"work", "q", "--exec", "true", "--drain"}, {"stats"}}) {
    expect_clean_failure(
        run_cli(scratch_, with_db(url_at(proxy.port(), kSecret, "connect_timeout=2"), args)), 10s,
        "unreachable (connect_timeout=2): " + args[0]);
  }
  // readpast's own connect_timeout (10 s): long run only.
  if (long_run()) {
    expect_clean_failure(run_cli(scratch_, with_db(url_at(proxy.port()), {"stats"})), 20s,
                         "unreachable (default connect_timeout)");
  }
}

// Issue 19's bad input: a pooler on a wrong port, a pooler that refuses clients
// (max_client_conn), a primary that never comes (only a standby, or no host at all, answers a
// URL with target_session_attrs=read-write): one line, exit 1, in bounded time.
TEST_F(StartupTest, APoolerOnAWrongPortOrRefusingClientsEndsCommandsCleanly) {
  const std::string database_path = "/" + database_ + "?pool_mode=transaction";
  const std::string wrong_port =
      "postgresql://postgres@127.0.0.1:" + std::to_string(closed_port()) + database_path;
  for (const auto& args : kCommands) {
    expect_clean_failure(run_cli(scratch_, with_db(wrong_port, args)), 15s,
                         "pooler on a wrong port: " + args[0]);
  }
  PgBouncer pooler(PostgresServer::shared().port(), /*server_pool_size=*/2, /*max_clients=*/1);
  const std::string through =
      "postgresql://postgres@127.0.0.1:" + std::to_string(pooler.port()) + database_path;
  // The one client the pooler allows.
  std::unique_ptr<PGconn, decltype(&PQfinish)> held(
      PQconnectdb(
          ("postgresql://postgres@127.0.0.1:" + std::to_string(pooler.port()) + "/" + database_)
              .c_str()),
      &PQfinish);
  ASSERT_EQ(PQstatus(held.get()), CONNECTION_OK) << PQerrorMessage(held.get());
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"enqueue", "q", "x"}, {"stats"}, {"work", "q", "--exec", "true", "--drain"}}) {
    const CliResult r = run_cli(scratch_, with_db(through, args));
    expect_clean_failure(r, 15s, "pooler refusing clients: " + args[0]);
    EXPECT_NE(r.err.find("max_client_conn"), std::string::npos) << r.err;
  }
}

TEST_F(StartupTest, APrimaryThatNeverComesEndsCommandsCleanly) {
  PostgresServer standby(PostgresServer::StandbyOf{PostgresServer::shared()});
  const std::string only_standby =
      "postgresql://postgres@127.0.0.1:" + std::to_string(standby.port()) + "/" + database_ +
      "?target_session_attrs=read-write";
  const std::string no_host = "postgresql://postgres@127.0.0.1:" + std::to_string(closed_port()) +
                              ",127.0.0.1:" + std::to_string(closed_port()) + "/" + database_ +
                              "?target_session_attrs=read-write";
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"enqueue", "q", "x"}, {"stats"}, {"work", "q", "--exec", "true", "--drain"}}) {
    expect_clean_failure(run_cli(scratch_, with_db(only_standby, args)), 15s,
                         "only a standby: " + args[0]);
    expect_clean_failure(run_cli(scratch_, with_db(no_host, args)), 15s,
                         "no host answers: " + args[0]);
  }
}

TEST_F(StartupTest, AWrongPasswordIsAFailureThatNeverShowsAnyPassword) {
  const std::string url = url_at(PostgresServer::shared().port(), "Wr0ng-Pa55");
  for (const auto& args : kCommands) {
    const CliResult r = run_cli(scratch_, with_db(url, args));
    expect_clean_failure(r, 15s, "wrong password: " + args[0]);
    EXPECT_NE(r.err.find("password authentication failed"), std::string::npos) << r.err;
  }
}

TEST_F(StartupTest, PasswordsNeverAppearInHelpLogsOrTheCommandLinesOfChildren) {
  const std::vector<std::string> env = {"READPAST_DB=" + good_url()};
  for (const auto& args : std::vector<std::vector<std::string>>{{"--help"},
                                                                {"work", "--help"},
                                                                {"enqueue", "--help"},
                                                                {"stats", "--help"},
                                                                {"--version"}}) {
    const CliResult r = run_cli(scratch_, args, env);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    expect_no_secret(r, args[0] + " with READPAST_DB");
    const CliResult argv = run_cli(scratch_, with_db(good_url(), args));
    expect_no_secret(argv, args[0] + " with --db");
  }

  // A verbose worker runs a job; meanwhile no process but the worker itself (when the URL
  // is on its command line) shows the password in its command line.
  ChaosRun run("password", good_url(), "pw");
  run.enqueue(2, "sleep:1500");
  ChildProcess::Options options;
  options.env = env;
  options.err_path = run.dir().file("worker.err");
  options.out_path = run.dir().file("worker.out");
  ChildProcess worker(
      "worker",
      {readpast_path(), "-v", "work", "pw", "--exec", "exec " + run.job_command("w"), "--drain",
       "--concurrency", "2", "--no-progress"},
      options);
  const auto give_up = std::chrono::steady_clock::now() + 20s;
  while (run.executions_started("w") < 2 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_EQ(run.executions_started("w"), 2u) << "the jobs never started";
  const std::vector<pid_t> showing = processes_with(kSecret);
  EXPECT_TRUE(showing.empty()) << showing.size() << " processes show the password, e.g. pid "
                               << (showing.empty() ? 0 : showing[0]);
  ASSERT_TRUE(worker.wait_until(std::chrono::steady_clock::now() + 30s));
  EXPECT_TRUE(worker.exited_cleanly()) << run.describe(worker);
  std::ifstream log(run.dir().file("worker.err"));
  std::stringstream text;
  text << log.rdbuf();
  EXPECT_NE(text.str().find("startup_user:***@"), std::string::npos) << text.str();
  EXPECT_EQ(text.str().find(kSecret), std::string::npos) << text.str();
}

// The server goes away while a worker runs a job: the worker logs the outage (once),
// waits without spinning, never prints the password, and finishes the job once the server
// is back.
TEST_F(StartupTest, AnOutageUnderARunningWorkerIsWaitedOutQuietly) {
  ChaosRun run("outage", good_url(), "outage");
  run.enqueue(1, "sleep:3000");
  ChildProcess::Options options;
  options.env = {"READPAST_DB=" + good_url()};
  options.err_path = run.dir().file("worker.err");
  ChildProcess worker("worker",
                      {readpast_path(), "work", "outage", "--exec", "exec " + run.job_command("w"),
                       "--drain", "--lease", "2s", "--no-progress"},
                      options);
  const auto give_up = std::chrono::steady_clock::now() + 20s;
  while (run.executions_started("w") == 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_EQ(run.executions_started("w"), 1u) << "the job never started";
  const TimePoint t_start = wall_now();
  PostgresServer::shared().stop_immediate();
  const auto cpu_before = cpu_time_of(worker.pid());
  std::this_thread::sleep_for(3s);
  const auto cpu_during = cpu_time_of(worker.pid()) - cpu_before;
  PostgresServer::shared().start();
  run.fault("server_down", "", t_start, "pg_ctl stop -m immediate for 3 s");
  EXPECT_LT(cpu_during, 300ms) << "the worker spun while the server was down";
  std::cout << "[ outage   ] worker used " << cpu_during.count() / 1000
            << " ms of CPU in 3 s of outage\n";

  ASSERT_TRUE(worker.wait_until(std::chrono::steady_clock::now() + 60s));
  EXPECT_TRUE(worker.exited_cleanly()) << run.describe(worker);
  std::ifstream log(run.dir().file("worker.err"));
  std::stringstream text;
  text << log.rdbuf();
  EXPECT_EQ(text.str().find(kSecret), std::string::npos) << text.str();
  CheckOptions black_box;
  black_box.black_box = true;
  const CheckReport report = run.check(black_box);
  EXPECT_TRUE(report.ok()) << report.summary();
  EXPECT_EQ(report.succeeded, 1);
}

}  // namespace
}  // namespace readpast::test
