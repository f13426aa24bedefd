// The `readpast` command and the SQL interface on one PostgreSQL database: jobs enqueued
// with SQL are worked by `readpast work`, jobs enqueued by `readpast enqueue` are worked
// with SQL, and the command never prints a password.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>

#include "pg_test_util.hpp"
#include "support/temp_dir.hpp"

extern char** environ;

namespace readpast::test {
namespace {

struct Ran {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string slurp(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs the readpast binary with READPAST_DB set, stdin from /dev/null; kills it after
// `timeout`.
Ran run_readpast(const TempDir& scratch, const std::string& db, std::vector<std::string> args,
                 std::chrono::seconds timeout = 60s) {
  static int counter = 0;
  const auto out_path = scratch.path() / ("out-" + std::to_string(counter));
  const auto err_path = scratch.path() / ("err-" + std::to_string(counter++));
  std::string program = READPAST_CLI;
  std::vector<char*> argv{program.data()};
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The environment, with READPAST_DB replaced, built before fork (the child may only make
  // async-signal-safe calls).
  std::vector<std::string> env_strings{"READPAST_DB=" + db};
  for (char** e = environ; *e != nullptr; ++e) {
    if (!std::string_view(*e).starts_with("READPAST_DB=")) env_strings.emplace_back(*e);
  }
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  const int out_fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int in_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(in_fd, 0);
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    ::execve(READPAST_CLI, argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(out_fd);
  ::close(err_fd);
  ::close(in_fd);
  Ran ran;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      ADD_FAILURE() << "readpast " << args[1] << " did not finish in time";
      break;
    }
    std::this_thread::sleep_for(10ms);
  }
  if (WIFEXITED(status)) ran.exit_code = WEXITSTATUS(status);
  ran.out = slurp(out_path);
  ran.err = slurp(err_path);
  return ran;
}

class CliInteropTest : public PostgresTest {
 protected:
  TempDir scratch_;
};

TEST_F(CliInteropTest, JobsEnqueuedWithSqlAreWorkedByReadpastWork) {
  auto db = sql();
  std::set<std::string> ids;
  for (int i = 0; i < 20; ++i) {
    ids.insert(
        db.scalar("SELECT readpast.enqueue('sql-jobs', $1)", {"payload-" + std::to_string(i)}));
  }
  const auto seen = scratch_.file("seen");
  // Each command records its job id, its lease token and its payload (from stdin).
  auto ran =
      run_readpast(scratch_, url(),
                   {"work", "sql-jobs", "--drain", "--concurrency", "4", "--exec",
                    "{ echo \"$READPAST_JOB_ID $READPAST_LEASE_TOKEN $(cat)\"; } >> " + seen});
  ASSERT_EQ(ran.exit_code, 0) << ran.err;

  std::istringstream lines(slurp(seen));
  std::string id, token, payload;
  int count = 0;
  while (lines >> id >> token >> payload) {
    ++count;
    EXPECT_TRUE(ids.contains(id)) << id;
    // The token the command saw is the one the table records, in the API's hex form.
    EXPECT_EQ(db.scalar("SELECT replace(lease_token::text, '-', '') FROM readpast.jobs "
                        "WHERE id = $1",
                        {id}),
              token);
    EXPECT_EQ(
        db.scalar("SELECT convert_from(payload, 'UTF8') FROM readpast.jobs WHERE id = $1", {id}),
        payload);
  }
  EXPECT_EQ(count, 20);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.jobs WHERE state = 'succeeded'"), "20");
}

TEST_F(CliInteropTest, JobsEnqueuedByReadpastAreWorkedWithSql) {
  auto ran = run_readpast(scratch_, url(), {"enqueue", "cli-jobs", "hello from the cli"});
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  std::string id = ran.out;
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();

  auto db = sql();
  auto rows = db.query(
      "SELECT id, lease_token, convert_from(payload, 'UTF8') FROM readpast.lease('cli-jobs', "
      "'sql-worker')");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][0], id);
  EXPECT_EQ(rows[0][2], "hello from the cli");
  EXPECT_EQ(db.scalar("SELECT readpast.complete($1, $2)", {*rows[0][0], *rows[0][1]}), "t");

  auto shown = run_readpast(scratch_, url(), {"show", id, "--json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("succeeded"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("sql-worker"), std::string::npos) << shown.out;
}

TEST_F(CliInteropTest, TheCommandNeverPrintsThePassword) {
  const std::string secret = "Cli-S3cret-Pa55";
  const std::string bad = "postgresql://someone:" + secret + "@127.0.0.1:1/nowhere";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"stats"}, std::vector<std::string>{"init"},
        std::vector<std::string>{"enqueue", "q", "x"}, std::vector<std::string>{"--help"},
        std::vector<std::string>{"work", "--help"}}) {
    auto ran = run_readpast(scratch_, bad, args);
    EXPECT_EQ(ran.out.find(secret), std::string::npos) << args[0] << ": " << ran.out;
    EXPECT_EQ(ran.err.find(secret), std::string::npos) << args[0] << ": " << ran.err;
    if (args.back() != "--help") {
      EXPECT_EQ(ran.exit_code, 1) << args[0] << ": " << ran.err;
      EXPECT_NE(ran.err.find("***"), std::string::npos) << "the redacted URL: " << ran.err;
    }
  }
}

}  // namespace
}  // namespace readpast::test
