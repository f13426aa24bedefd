// readpast work under signals and cancellation: graceful shutdown, the grace period,
// a second signal, cancel of a running job; and the progress line on a terminal.
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <unistd.h>

#include <regex>
#include <thread>

#include "cli_fixture.hpp"

namespace readpast::test {
namespace {

using namespace std::chrono_literals;

// A command that says it started (and its shell's pid), then runs for `seconds`.
std::string slow_command(const std::string& dir, int seconds) {
  return "echo $$ > " + dir + "/pid.$READPAST_JOB_ID; touch " + dir +
         "/started.$READPAST_JOB_ID; sleep " + std::to_string(seconds) + "; touch " + dir +
         "/finished.$READPAST_JOB_ID";
}

TEST_F(CliTest, SigtermLetsARunningJobFinishWithinTheGracePeriod) {
  auto id = enqueue("q", "x");
  auto other = enqueue("q", "not started: leasing stops at the signal");
  auto worker = start({"work", "q", "--exec", slow_command(dir_.path(), 1), "--grace", "20s"});
  ASSERT_TRUE(wait_for_file(path("started." + std::to_string(id))));
  worker->send_signal(SIGTERM);
  auto r = worker->wait(15s);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(path("finished." + std::to_string(id))));
  EXPECT_EQ(show(id)["state"], "succeeded");
  auto untouched = show(other);
  EXPECT_EQ(untouched["state"], "available");
  EXPECT_EQ(untouched["attempts"], 0);
}

TEST_F(CliTest, PastTheGracePeriodTheCommandIsKilledAndTheJobReleased) {
  auto id = enqueue("q", "x");
  auto worker = start({"work", "q", "--exec", slow_command(dir_.path(), 60), "--grace", "300ms"});
  ASSERT_TRUE(wait_for_file(path("started." + std::to_string(id))));
  const auto signalled = std::chrono::steady_clock::now();
  worker->send_signal(SIGTERM);
  auto r = worker->wait(15s);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - signalled, 10s);
  auto job = show(id);
  EXPECT_EQ(job["state"], "available");
  EXPECT_EQ(job["attempts"], 0) << "a release spends no attempt";
  EXPECT_FALSE(std::filesystem::exists(path("finished." + std::to_string(id))));
  EXPECT_TRUE(wait_until_process_gone(std::stoi(read_file(path("pid." + std::to_string(id))))));
}

TEST_F(CliTest, ASecondSignalSkipsTheGracePeriod) {
  auto id = enqueue("q", "x");
  auto worker = start({"work", "q", "--exec", slow_command(dir_.path(), 60), "--grace", "60s"});
  ASSERT_TRUE(wait_for_file(path("started." + std::to_string(id))));
  worker->send_signal(SIGTERM);
  // Wait until the first signal was taken, so that the two are not merged into one.
  for (int i = 0; i < 500 && worker->err_so_far().find("stopping") == std::string::npos; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  const auto signalled = std::chrono::steady_clock::now();
  worker->send_signal(SIGINT);
  auto r = worker->wait(20s);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - signalled, 10s);
  auto job = show(id);
  EXPECT_EQ(job["state"], "available");
  EXPECT_EQ(job["attempts"], 0);
}

TEST_F(CliTest, CancelOfARunningJobKillsItsCommandAtTheNextExtension) {
  auto id = enqueue("q", "x");
  auto worker =
      start({"work", "q", "--exec", slow_command(dir_.path(), 60), "--lease", "1s", "--drain"});
  ASSERT_TRUE(wait_for_file(path("started." + std::to_string(id))));
  auto cancel = rp({"cancel", std::to_string(id)});
  ASSERT_EQ(cancel.exit_code, 0) << cancel.err;
  // Nothing is left to run: the draining worker ends once it has stopped the command.
  auto r = worker->wait(15s);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("lease lost"), std::string::npos) << r.err;
  auto job = show(id);
  EXPECT_EQ(job["state"], "cancelled");
  EXPECT_FALSE(std::filesystem::exists(path("finished." + std::to_string(id))));
  EXPECT_TRUE(wait_until_process_gone(std::stoi(read_file(path("pid." + std::to_string(id))))));
}

TEST_F(CliTest, LeasesAreExtendedWhileALongCommandRuns) {
  auto id = enqueue("q", "x");
  // Runs for two lease lengths: without extensions the job would be rescued and run twice, or
  // its completion refused. A lease of 2 s, extended every third of it, leaves more than a
  // second for an extension to get through on a loaded machine (behind PgBouncer, under ASan):
  // with 1 s it ran twice once in CI.
  drain("q", "echo run >> " + path("runs") + "; sleep 4", {"--lease", "2s", "--concurrency", "2"});
  EXPECT_EQ(read_file(path("runs")), "run\n");
  auto job = show(id);
  EXPECT_EQ(job["state"], "succeeded");
  EXPECT_EQ(job["attempts"], 1);
}

TEST_F(CliTest, ProgressLineIsDrawnOnATerminal) {
  for (int i = 0; i < 3; ++i) enqueue("q", "x");
  int master = -1;
  int slave = -1;
  ASSERT_EQ(::openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  ::fcntl(master, F_SETFD, FD_CLOEXEC);
  ::fcntl(slave, F_SETFD, FD_CLOEXEC);
  // A thread drains the terminal, so that the worker never blocks writing to it.
  std::string screen;
  std::thread reader([&] {
    char buffer[4096];
    for (;;) {
      ssize_t n = ::read(master, buffer, sizeof buffer);
      if (n <= 0) break;  // EIO once no one holds the other side
      screen.append(buffer, static_cast<std::size_t>(n));
    }
  });
  RunOptions on_terminal;
  on_terminal.stderr_fd = slave;
  auto r = rp({"work", "q", "--exec", "sleep 0.2", "--drain"}, on_terminal);
  ::close(slave);
  reader.join();
  ::close(master);
  EXPECT_EQ(r.exit_code, 0) << screen;
  // Redrawn in place: carriage return, the counters, erase to the end of the line.
  EXPECT_TRUE(std::regex_search(
      screen, std::regex("\r[0-9]+ done, [0-9]+ failed, [0-9]+ running, [0-9.]+ jobs/s\x1b\\[K")))
      << screen;
  EXPECT_EQ(stats("q")["succeeded"], 3);
}

}  // namespace
}  // namespace readpast::test
