// Faults met by `readpast work --exec` (driven through the real binary, so that these
// tests hold whatever the worker runtime looks like inside): poison jobs, SIGTERM during a
// lease and during execution, and clock jumps on a worker (libfaketime). The commands are
// chaos_job, which records every execution; the checker judges the run as a black box.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "chaos.hpp"
#include "support/engines.hpp"

namespace readpast::test {
namespace {

class WorkerFaultTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::string fresh_url() { return engine_named(GetParam()).fresh_url(); }
  bool server_clock() const { return engine_named(GetParam()).server_clock; }
};

std::map<JobId, Job> rows_by_id(ChaosRun& run) {
  std::map<JobId, Job> rows;
  for (auto& job : run.final_jobs()) rows[job.id] = std::move(job);
  return rows;
}

// Poison jobs next to normal ones: a command that always fails, one that dies of SIGSEGV,
// one that fails only its first attempt. The poison ends dead after max_attempts, with the
// reason; every other job succeeds; nothing runs more often than max_attempts.
TEST_P(WorkerFaultTest, PoisonJobsEndDeadAfterMaxAttemptsAndNormalJobsNever) {
  ChaosRun run("poison", fresh_url(), "poison");
  constexpr int kMaxAttempts = 3;
  const auto normal = run.enqueue(scaled(40, 2000), "job", kMaxAttempts);
  const auto failing = run.enqueue(scaled(4, 100), "fail", kMaxAttempts);
  const auto crashing = run.enqueue(scaled(4, 100), "segv", kMaxAttempts);
  const auto flaky = run.enqueue(scaled(4, 100), "flaky", kMaxAttempts);
  std::vector<std::unique_ptr<ChildProcess>> workers;
  for (int i = 0; i < 2; ++i) {
    workers.push_back(run.spawn_cli_worker("w" + std::to_string(i),
                                           {"--concurrency", "4", "--lease", "5s", "--drain",
                                            "--backoff-base", "50ms", "--backoff-cap", "200ms"}));
  }
  ASSERT_TRUE(ChaosRun::wait_all(workers, std::chrono::steady_clock::now() + scaled(2min, 20min)));
  for (const auto& w : workers) EXPECT_TRUE(w->exited_cleanly()) << run.describe(*w);

  CheckOptions options;
  options.black_box = true;
  const CheckReport report = run.check(options);
  EXPECT_TRUE(report.ok()) << report.summary();
  EXPECT_EQ(report.lost, 0);
  EXPECT_EQ(report.duplicate_executions, 0) << "no fault was injected: retries only";
  EXPECT_EQ(report.dead, static_cast<std::int64_t>(failing.size() + crashing.size()));

  auto rows = rows_by_id(run);
  for (JobId id : normal) {
    EXPECT_EQ(rows[id].state, JobState::kSucceeded) << "normal job " << id;
    EXPECT_EQ(rows[id].attempts, 1) << "normal job " << id;
  }
  for (JobId id : flaky) {
    EXPECT_EQ(rows[id].state, JobState::kSucceeded) << "flaky job " << id;
    EXPECT_EQ(rows[id].attempts, 2) << "flaky job " << id;
  }
  for (JobId id : failing) {
    EXPECT_EQ(rows[id].state, JobState::kDead) << "failing job " << id;
    EXPECT_EQ(rows[id].attempts, kMaxAttempts);
    EXPECT_NE(rows[id].last_error.value_or("").find("failing as asked"), std::string::npos)
        << rows[id].last_error.value_or("(none)");
  }
  for (JobId id : crashing) {
    EXPECT_EQ(rows[id].state, JobState::kDead) << "crashing job " << id;
    EXPECT_EQ(rows[id].attempts, kMaxAttempts);
    EXPECT_NE(rows[id].last_error.value_or("").find("SIGSEGV"), std::string::npos)
        << rows[id].last_error.value_or("(none)");
  }
}

// SIGTERM while commands run (past the grace period, with a background process of their
// own) and at random moments while the worker starts and leases: each time the worker
// exits 0, no command or descendant is left running, and no job is left `running` (the
// jobs it held go back to available without spending an attempt); a final drain runs
// everything, each job completed once.
TEST_P(WorkerFaultTest, SigtermDuringLeaseAndExecutionLeavesNothingRunningOrOrphaned) {
  ChaosRun run("sigterm", fresh_url(), "shutdown");
  const auto jobs = run.enqueue(scaled(12, 60), "sleep:1500");
  // A marker for the background process each command starts: it must die with the group.
  const std::string marker = "61." + std::to_string(::getpid());
  auto command = [&](const std::string& name) {
    return "sleep " + marker + " & exec " + run.job_command(name);
  };
  auto running_jobs = [&] {
    std::int64_t n = 0;
    for (const auto& s : run.stats()) n += s.running;
    return n;
  };
  auto executions_of = [&](const std::string& name) { return run.executions_started(name); };
  auto expect_nothing_left = [&](const std::string& name) {
    EXPECT_TRUE(processes_with(run.history_path(name)).empty())
        << "commands of " << name << " still running after it exited";
    EXPECT_TRUE(processes_with(marker).empty())
        << "a background process of a command of " << name << " outlived the worker";
    EXPECT_EQ(running_jobs(), 0) << name << " left jobs running";
  };

  // During execution: four commands running, SIGTERM, a short grace period.
  {
    auto worker = run.spawn_cli_worker("exec", {"--concurrency", "4", "--grace", "200ms"}, {},
                                       command("exec"));
    const auto give_up = std::chrono::steady_clock::now() + 20s;
    while (executions_of("exec") < 4 && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(10ms);
    }
    ASSERT_EQ(executions_of("exec"), 4u);
    const TimePoint t_start = wall_now();
    worker->signal(SIGTERM);
    ASSERT_TRUE(worker->wait_until(std::chrono::steady_clock::now() + 10s))
        << "the worker did not exit after SIGTERM";
    run.fault("sigterm", "exec", t_start, "SIGTERM while 4 commands run; grace 200ms");
    EXPECT_TRUE(worker->exited_cleanly()) << run.describe(*worker);
    expect_nothing_left("exec");
    int released = 0;
    for (const auto& [id, row] : rows_by_id(run)) {
      EXPECT_EQ(row.attempts, 0) << "job " << id << ": a release gives the attempt back";
      released += row.state == JobState::kAvailable ? 1 : 0;
    }
    EXPECT_EQ(released, static_cast<int>(jobs.size()));
  }

  // During start-up and leasing: SIGTERM after a random 0-150 ms, again and again.
  std::mt19937 random(std::random_device{}());
  const int rounds = scaled(6, 40);
  int killed_before_handler = 0;
  for (int round = 0; round < rounds; ++round) {
    const std::string name = "lease" + std::to_string(round);
    auto worker =
        run.spawn_cli_worker(name, {"--concurrency", "4", "--grace", "100ms"}, {}, command(name));
    std::this_thread::sleep_for(std::chrono::milliseconds(random() % 150));
    const TimePoint t_start = wall_now();
    worker->signal(SIGTERM);
    ASSERT_TRUE(worker->wait_until(std::chrono::steady_clock::now() + 10s))
        << name << " did not exit after SIGTERM";
    run.fault("sigterm", name, t_start, "SIGTERM while starting or leasing");
    // A SIGTERM in its first milliseconds, before `readpast work` has set up its signal
    // handling, ends it by the signal's default action: it holds nothing yet (which
    // expect_nothing_left checks). Later ones end it with exit 0.
    if (worker->how_it_ended() == "signal " + std::to_string(SIGTERM)) {
      ++killed_before_handler;
    } else {
      EXPECT_TRUE(worker->exited_cleanly()) << run.describe(*worker);
    }
    expect_nothing_left(name);
  }

  std::cout << "[ sigterm  ] " << rounds << " rounds during start-up and leasing; "
            << killed_before_handler << " ended by SIGTERM's default action before the worker "
            << "had set up its handler\n";

  // Everything still runs, once each to completion.
  auto drain = run.spawn_cli_worker("drain", {"--concurrency", "12", "--drain"});
  ASSERT_TRUE(drain->wait_until(std::chrono::steady_clock::now() + 2min));
  EXPECT_TRUE(drain->exited_cleanly()) << run.describe(*drain);
  CheckOptions options;
  options.black_box = true;
  const CheckReport report = run.check(options);
  EXPECT_TRUE(report.ok()) << report.summary();
  EXPECT_EQ(report.succeeded, static_cast<std::int64_t>(jobs.size()));
}

// libfaketime's library, if installed (Debian: libfaketime).
std::string faketime_library() {
  for (const char* path : {"/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
                           "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1",
                           "/usr/lib/faketime/libfaketimeMT.so.1"}) {
    if (std::filesystem::exists(path)) return path;
  }
  return "";
}

// One worker's wall clock jumps (libfaketime: ahead, behind, back), next to a worker with
// the true time. PostgreSQL (+2 h, -1 h): the database's clock decides, so no job runs
// before its run_at and nothing runs twice. SQLite (+5 s, -5 s): the worker's clock is the
// database's clock (there is no server), so the jumps move leases and run_at for everyone:
// jobs may run early or twice; fencing still holds: no job lost, none completed twice.
TEST_P(WorkerFaultTest, ClockJumpsOnAWorker) {
  const std::string library = faketime_library();
  if (library.empty()) GTEST_SKIP() << "libfaketime is not installed (apt-get install libfaketime)";
  ChaosRun run("clock", fresh_url(), "clock");
  // Enough work for the jumps to land mid-run (about 4 s), and jobs that come due then.
  const auto now_jobs = run.enqueue(scaled(40, 400), "sleep:300");
  const auto later_jobs = run.enqueue(scaled(20, 200), "later", 25, 1000, 2s);
  std::map<JobId, TimePoint> run_at;
  for (const auto& job : run.final_jobs()) run_at[job.id] = job.run_at;

  const std::string clock_file = run.dir().file("fake-clock");
  auto set_clock = [&](const std::string& offset) {
    std::ofstream(clock_file, std::ios::trunc) << offset << "\n";
  };
  set_clock("+0");
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::vector<std::string> fake_env = {
      "LD_PRELOAD=" + library, "FAKETIME_TIMESTAMP_FILE=" + clock_file, "FAKETIME_NO_CACHE=1",
      // An NTP step moves the wall clock, never CLOCK_MONOTONIC.
      "FAKETIME_DONT_FAKE_MONOTONIC=1",
      std::string("ASAN_OPTIONS=") + (asan ? std::string(asan) + ":" : "") +
          "verify_asan_link_order=0"};
  // The commands get the true clock, so that exec times are comparable with run_at.
  const std::string true_clock_job =
      "exec env -u LD_PRELOAD -u FAKETIME_TIMESTAMP_FILE " + run.job_command("jumpy");
  std::vector<std::unique_ptr<ChildProcess>> workers;
  workers.push_back(run.spawn_cli_worker(
      "jumpy", {"--concurrency", "2", "--lease", "2s", "--drain"}, fake_env, true_clock_job));
  workers.push_back(
      run.spawn_cli_worker("steady", {"--concurrency", "2", "--lease", "2s", "--drain"}));
  // SQLite: a job the jumpy worker rescues or fails while ahead gets a run_at that far in
  // the future (`run_at = now` by its clock): keep the jumps short there, or the drain waits
  // for hours (see docs/reliability.md).
  const std::vector<std::pair<std::string, std::string>> jumps =
      server_clock()
          ? std::vector<std::pair<
                std::string, std::string>>{{"+2h", "wall clock of worker 'jumpy' jumps 2 h ahead"},
                                           {"-1h", "wall clock of worker 'jumpy' jumps 1 h behind"},
                                           {"+0",
                                            "wall clock of worker 'jumpy' back to the true time"}}
          : std::vector<std::pair<std::string, std::string>>{
                {"+5s", "wall clock of worker 'jumpy' jumps 5 s ahead"},
                {"-5s", "wall clock of worker 'jumpy' jumps 5 s behind"},
                {"+0", "wall clock of worker 'jumpy' back to the true time"}};
  const std::vector<Duration> before_jump = {500ms, 1000ms, 1500ms};
  for (std::size_t i = 0; i < jumps.size(); ++i) {
    const auto& [offset, detail] = jumps[i];
    std::this_thread::sleep_for(before_jump[i]);
    const TimePoint t_start = wall_now();
    set_clock(offset);
    // On SQLite a worker's clock moves every lease it grants or rescues: the fault hits all.
    run.fault("clock_jump", "", t_start, detail);
  }
  ASSERT_TRUE(ChaosRun::wait_all(workers, std::chrono::steady_clock::now() + 2min));
  for (const auto& w : workers) EXPECT_TRUE(w->exited_cleanly()) << run.describe(*w);

  CheckOptions options;
  options.black_box = true;
  const CheckReport report = run.check(options);
  EXPECT_TRUE(report.ok()) << report.summary();
  EXPECT_EQ(report.lost, 0);
  EXPECT_EQ(report.double_completions, 0);
  EXPECT_EQ(report.succeeded, static_cast<std::int64_t>(now_jobs.size() + later_jobs.size()));

  // Did any job start before its run_at (by the true clock)?
  const History history = run.read_histories();
  std::set<JobId> early;
  for (const auto& e : history.execs) {
    if (e.phase == ExecEvent::Phase::kStart && e.t + 50ms < run_at[e.job]) early.insert(e.job);
  }
  std::cout << "[ clock    ] " << early.size() << " of " << later_jobs.size()
            << " scheduled jobs started before their run_at; " << report.duplicate_executions
            << " duplicate executions\n";
  if (server_clock()) {
    EXPECT_TRUE(early.empty()) << "the database's clock decides run_at";
    EXPECT_EQ(report.duplicate_executions, 0) << "a worker's clock moves no lease";
  }
}

INSTANTIATE_TEST_SUITE_P(Chaos, WorkerFaultTest, ::testing::ValuesIn(engine_names()),
                         engine_param_name);

}  // namespace
}  // namespace readpast::test
