// Fault tests of a drain: worker processes killed with SIGKILL at random, a worker stopped
// (SIGSTOP) past its lease and resumed, the PostgreSQL server crashing again and again.
// Each run's history goes through the checker (support/history.hpp).
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "chaos.hpp"
#include "support/engines.hpp"

namespace readpast::test {
namespace {

class DrainTest : public ::testing::TestWithParam<std::string> {
 protected:
  const EngineUnderTest& engine() const { return engine_named(GetParam()); }
  std::string fresh_url() { return engine().fresh_url(); }
};

std::int64_t pending(ChaosRun& run) {
  std::int64_t n = 0;
  for (const auto& s : run.stats()) n += s.available + s.running + s.waiting;
  return n;
}

void expect_headline(const CheckReport& report) {
  EXPECT_TRUE(report.ok()) << report.summary();
  EXPECT_EQ(report.lost, 0);
  EXPECT_EQ(report.double_completions, 0);
}

// 16 worker threads (4 processes x 4) drain the queue while a random process is killed
// with SIGKILL every interval and replaced by a fresh one. Jobs fail once (1 in 5) and are
// extended (1 in 5) along the way, so every fenced call meets the kills.
TEST_P(DrainTest, RandomWorkersKilledWithSigkillWhileSixteenThreadsDrain) {
  const int jobs = scaled(6000, 100000);
  const auto kill_every = scaled<Duration>(500ms, 3s);
  const Duration lease = scaled<Duration>(1500ms, 3s);
  const auto deadline = std::chrono::steady_clock::now() + scaled(3min, 20min);
  ChaosRun run("sigkill_drain", fresh_url(), "drain");
  run.enqueue(jobs);

  std::mt19937 random(std::random_device{}());
  std::vector<std::unique_ptr<ChildProcess>> all;
  std::vector<ChildProcess*> live;
  int next_name = 0;
  auto spawn = [&] {
    all.push_back(
        run.spawn_mp_worker("p" + std::to_string(next_name++), lease, 200us, 4, 16, "all"));
    live.push_back(all.back().get());
  };
  for (int i = 0; i < 4; ++i) spawn();

  int kills = 0;
  auto next_kill = std::chrono::steady_clock::now() + kill_every;
  while (std::chrono::steady_clock::now() < deadline) {
    std::erase_if(live, [](ChildProcess* p) { return p->poll(); });
    if (live.empty()) break;
    // A kill is due when its interval has passed, or when the drain has gone a quarter of the
    // way further without one: on a fast machine the whole drain can take less than three
    // intervals, and the test needs its three kills spread over the drain however fast it is.
    // (The queue's counts are read only while one of the two can make a kill due.)
    const bool timer_due = std::chrono::steady_clock::now() >= next_kill;
    const std::int64_t left = timer_due || kills < 3 ? pending(run) : 0;
    const bool progress_due = kills < 3 && left < std::int64_t{jobs} * (3 - kills) / 4;
    if ((timer_due || progress_due) && left > 0) {
      ChildProcess* victim = live[random() % live.size()];
      const TimePoint t_start = wall_now();
      victim->kill_now();
      run.fault("sigkill", victim->name(), t_start, "SIGKILL of a worker process mid-drain");
      ++kills;
      std::erase(live, victim);
      spawn();
      std::uniform_int_distribution<int> jitter(-200, 200);
      next_kill =
          std::chrono::steady_clock::now() + kill_every + std::chrono::milliseconds(jitter(random));
    }
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(ChaosRun::wait_all(all, deadline + 30s)) << "workers did not finish in time";
  for (const auto& p : all) {
    if (p->how_it_ended() != "signal " + std::to_string(SIGKILL)) {
      EXPECT_TRUE(p->exited_cleanly()) << run.describe(*p);
    }
  }
  EXPECT_GE(kills, 3) << "the drain ended before three kills; make it longer";

  const CheckReport report = run.check();
  expect_headline(report);
  EXPECT_EQ(report.succeeded, jobs);
  EXPECT_EQ(report.faults.at("sigkill"), kills);
  EXPECT_GT(report.settles_accepted.count("fail"), 0u) << report.summary();
  EXPECT_GT(report.settles_accepted.count("extend"), 0u) << report.summary();
}

// The same SIGKILL drain on a queue with global limits (docs/workflows.md "Global limits"):
// 16 threads could run 64 jobs at once, the running limit allows 6 and the rate 100 leases a
// second (six running jobs on MariaDB on a loaded CI machine reached 131 leases in their
// busiest second, short of a rate of 300, which then was never pressed). The checker's
// running-limit rule (check_running_limit) finds no instant with more certainly running — the jobs
// of a killed worker counted until their leases expire — and its rate rule (check_rate_limit) no
// second with more leases, while every job still succeeds once.
TEST_P(DrainTest, ARunningLimitHoldsWhileRandomWorkersAreKilledWithSigkill) {
  constexpr int kLimit = 6;
  const int jobs = scaled(1500, 20000);
  const auto kill_every = scaled<Duration>(700ms, 3s);
  const Duration lease = scaled<Duration>(1500ms, 3s);
  const auto deadline = std::chrono::steady_clock::now() + scaled(3min, 20min);
  ChaosRun run("sigkill_running_limit", fresh_url(), "drain");
  run.enqueue(jobs);
  const RateLimit rate{100, std::chrono::seconds(1)};
  QueueLimits limits;
  limits.running = kLimit;
  limits.rate = rate;
  ASSERT_TRUE(run.queue().set_limits(run.queue_name(), limits));

  std::mt19937 random(std::random_device{}());
  std::vector<std::unique_ptr<ChildProcess>> all;
  std::vector<ChildProcess*> live;
  int next_name = 0;
  auto spawn = [&] {
    all.push_back(run.spawn_mp_worker("p" + std::to_string(next_name++), lease, 2ms, 4, 16, "all"));
    live.push_back(all.back().get());
  };
  for (int i = 0; i < 4; ++i) spawn();

  int kills = 0;
  auto next_kill = std::chrono::steady_clock::now() + kill_every;
  while (std::chrono::steady_clock::now() < deadline) {
    std::erase_if(live, [](ChildProcess* p) { return p->poll(); });
    if (live.empty()) break;
    if (std::chrono::steady_clock::now() >= next_kill && pending(run) > 0) {
      ChildProcess* victim = live[random() % live.size()];
      const TimePoint t_start = wall_now();
      victim->kill_now();
      run.fault("sigkill", victim->name(), t_start, "SIGKILL of a worker on a limited queue");
      ++kills;
      std::erase(live, victim);
      spawn();
      next_kill = std::chrono::steady_clock::now() + kill_every;
    }
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(ChaosRun::wait_all(all, deadline + 30s)) << "workers did not finish in time";
  EXPECT_GE(kills, 2) << "the drain ended before two kills; make it longer";

  CheckOptions options;
  options.running_limit = kLimit;
  options.rate_limit = rate;
  const CheckReport report = run.check(options);
  expect_headline(report);
  EXPECT_EQ(report.succeeded, jobs);
  const History history = run.read_histories();
  const int most = check_running_limit(history, options, nullptr);
  EXPECT_GE(most, kLimit - 2) << "the workers never pressed against the limit";
  // A lease's call is a few milliseconds: the busiest second sees nearly the whole rate.
  EXPECT_GE(check_rate_limit(history, options, nullptr), rate.count / 2)
      << "the workers never pressed against the rate";
}

// Two workers are stopped (SIGSTOP) in the middle of a job; their leases expire, other
// workers take the jobs and finish them; then they are resumed (SIGCONT). Every call they
// make for those jobs — complete, fail, extend, release — is refused as lease lost and
// changes nothing. Each victim has one thread and is stopped while it "executes" (between
// its exec_start and exec_end lines), never inside a database call: a process frozen
// inside an SQLite write transaction would hold the database's write lock (see
// docs/reliability.md).
TEST_P(DrainTest, WorkersStoppedPastTheirLeaseAreFencedOffWhenResumed) {
  const int jobs = scaled(300, 3000);
  const Duration lease = 1500ms;
  ChaosRun run("sigstop", fresh_url(), "stop");
  run.enqueue(jobs);

  // victim_fail is stopped in a job it will fail (id 1 mod 5, first attempt),
  // victim_extend in one it will extend and then complete (id 2 mod 5).
  struct Victim {
    std::string name;
    int residue;
    std::unique_ptr<ChildProcess> process;
    TimePoint stopped_at{};
    std::set<JobId> held;
  };
  std::vector<Victim> victims;
  victims.push_back({"victim_fail", 1, nullptr, {}, {}});
  victims.push_back({"victim_extend", 2, nullptr, {}, {}});
  for (auto& v : victims) v.process = run.spawn_mp_worker(v.name, lease, 100ms, 1, 8, "all");

  auto history_of = [&](const std::string& name) {
    History h;
    if (std::filesystem::exists(run.history_path(name))) {
      read_history_file(run.history_path(name), h);
    }
    return h;
  };
  // The job the victim is executing now, if its last line is an exec_start.
  auto executing = [&](const std::string& name) -> std::optional<ExecEvent> {
    const History h = history_of(name);
    if (h.execs.empty() || h.execs.back().phase != ExecEvent::Phase::kStart) return std::nullopt;
    const ExecEvent& last = h.execs.back();
    for (const auto& s : h.settles) {
      if (s.t > last.t) return std::nullopt;
    }
    for (const auto& c : h.completions) {
      if (c.t > last.t) return std::nullopt;
    }
    return last;
  };
  const auto give_up = std::chrono::steady_clock::now() + 60s;
  for (auto& v : victims) {
    while (std::chrono::steady_clock::now() < give_up) {
      auto job = executing(v.name);
      if (job && job->job % 5 == v.residue && job->attempt == 1) {
        const TimePoint t = wall_now();
        v.process->signal(SIGSTOP);
        std::this_thread::sleep_for(20ms);
        auto still = executing(v.name);
        // Held: leased and not yet settled; more than the job it runs, so that the rest
        // of its batch gets released (refused) once it is resumed.
        const History h = history_of(v.name);
        std::set<JobId> held;
        for (const auto& l : h.leases) held.insert(l.job);
        for (const auto& c : h.completions) held.erase(c.job);
        for (const auto& s : h.settles) {
          if (s.kind != SettleEvent::Kind::kExtend) held.erase(s.job);
        }
        if (still && still->job == job->job && held.size() > 1) {
          v.stopped_at = t;
          v.held = std::move(held);
          break;
        }
        v.process->signal(SIGCONT);  // it had moved on: try again
      }
      std::this_thread::sleep_for(2ms);
    }
    ASSERT_NE(v.stopped_at, TimePoint{}) << v.name << " was never caught in the right job";
  }

  // Other workers take over every job the victims held, once their leases expired.
  std::vector<std::unique_ptr<ChildProcess>> others;
  for (int i = 0; i < 2; ++i) {
    others.push_back(run.spawn_mp_worker("p" + std::to_string(i), lease, 2ms, 2, 8, "all"));
  }
  auto taken_over = [&](const std::set<JobId>& held) {
    History h;
    for (const auto& p : others) {
      if (std::filesystem::exists(run.history_path(p->name()))) {
        read_history_file(run.history_path(p->name()), h);
      }
    }
    std::set<JobId> settled;
    for (const auto& c : h.completions) {
      if (c.accepted && held.count(c.job)) settled.insert(c.job);
    }
    return settled.size() == held.size();
  };
  for (auto& v : victims) {
    while (!taken_over(v.held) && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(20ms);
    }
    ASSERT_TRUE(taken_over(v.held)) << "the other workers did not finish " << v.name << "'s jobs";
  }
  const TimePoint resumed_at = wall_now();
  for (auto& v : victims) {
    v.process->signal(SIGCONT);
    run.fault("sigstop", v.name, v.stopped_at, "SIGSTOP past the lease, then SIGCONT");
  }

  std::vector<std::unique_ptr<ChildProcess>> all;
  for (auto& v : victims) all.push_back(std::move(v.process));
  for (auto& p : others) all.push_back(std::move(p));
  ASSERT_TRUE(ChaosRun::wait_all(all, std::chrono::steady_clock::now() + 2min));
  for (const auto& p : all) {
    EXPECT_TRUE(p->exited_cleanly()) << run.describe(*p);
  }

  // What the victims did for the jobs they held, once resumed: all refused.
  std::map<std::string, int> refused;
  for (const auto& v : victims) {
    const History h = history_of(v.name);
    for (const auto& c : h.completions) {
      if (!v.held.count(c.job) || c.t_start < resumed_at) continue;
      EXPECT_FALSE(c.accepted) << "job " << c.job << ": a stale completion was accepted";
      refused["complete"] += c.accepted ? 0 : 1;
    }
    for (const auto& s : h.settles) {
      if (!v.held.count(s.job) || s.t_start < resumed_at) continue;
      EXPECT_FALSE(s.accepted) << "job " << s.job << ": a stale " << to_string(s.kind)
                               << " was accepted";
      refused[std::string(to_string(s.kind))] += s.accepted ? 0 : 1;
    }
  }
  std::string kinds;
  for (const auto& [kind, n] : refused) kinds += " " + kind + "=" + std::to_string(n);
  std::cout << "[ sigstop  ] refused after SIGCONT:" << kinds << "\n";
  for (const char* kind : {"complete", "fail", "extend", "release"}) {
    EXPECT_GT(refused[kind], 0) << "no stale " << kind << " was tried:" << kinds;
  }

  const CheckReport report = run.check();
  expect_headline(report);
  EXPECT_EQ(report.succeeded, jobs);
}

// PostgreSQL crashes (`pg_ctl restart -m immediate`: every connection drops, transactions
// in flight are lost) several times during a drain; the workers reconnect and carry on.
TEST_P(DrainTest, ServerCrashesAndRestartsSeveralTimesMidDrain) {
  if (!engine().crash_and_restart) GTEST_SKIP() << "an embedded database has no server to crash";
  const int jobs = scaled(5000, 100000);
  const int restarts = scaled(3, 10);
  ChaosRun run("pg_restarts", fresh_url(), "restarts");
  run.enqueue(jobs);
  std::vector<std::unique_ptr<ChildProcess>> workers;
  for (int i = 0; i < 4; ++i) {
    workers.push_back(run.spawn_mp_worker("p" + std::to_string(i), 3s, 100us, 4, 16, "all"));
  }
  const auto deadline = std::chrono::steady_clock::now() + scaled(3min, 20min);
  int done = 0;
  while (done < restarts && std::chrono::steady_clock::now() < deadline) {
    std::int64_t succeeded = 0;
    for (const auto& s : run.stats()) succeeded += s.succeeded;
    if (succeeded >= static_cast<std::int64_t>(jobs) * (done + 1) / (restarts + 1)) {
      const TimePoint t_start = wall_now();
      const std::string how = engine().crash_and_restart();
      run.fault("restart", "", t_start, how);
      ++done;
    }
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(done, restarts) << "the drain ended before every restart";
  ASSERT_TRUE(ChaosRun::wait_all(workers, deadline + 60s));
  for (const auto& p : workers) EXPECT_TRUE(p->exited_cleanly()) << run.describe(*p);
  const CheckReport report = run.check();
  expect_headline(report);
  EXPECT_EQ(report.succeeded, jobs);
  EXPECT_EQ(report.faults.at("restart"), restarts);
}

// Drains the run's queue with `readpast work --exec` processes (4 x --concurrency 4), one
// killed (SIGKILL) every `kill_every` while jobs are pending and replaced; waits for them all
// and expects every process that was not killed to have exited cleanly. Returns the kills.
int drain_with_cli_workers_killed(ChaosRun& run, Duration kill_every,
                                  std::chrono::steady_clock::time_point deadline) {
  std::mt19937 random(std::random_device{}());
  std::vector<std::unique_ptr<ChildProcess>> all;
  std::vector<ChildProcess*> live;
  int next_name = 0;
  auto spawn = [&] {
    all.push_back(run.spawn_cli_worker("w" + std::to_string(next_name++),
                                       {"--concurrency", "4", "--lease", "2s", "--drain"}));
    live.push_back(all.back().get());
  };
  for (int i = 0; i < 4; ++i) spawn();
  int kills = 0;
  auto next_kill = std::chrono::steady_clock::now() + kill_every;
  while (std::chrono::steady_clock::now() < deadline) {
    std::erase_if(live, [](ChildProcess* p) { return p->poll(); });
    if (live.empty()) break;
    if (std::chrono::steady_clock::now() >= next_kill && pending(run) > 0) {
      ChildProcess* victim = live[random() % live.size()];
      const TimePoint t_start = wall_now();
      victim->kill_now();
      run.fault("sigkill", victim->name(), t_start, "SIGKILL of `readpast work` mid-drain");
      ++kills;
      std::erase(live, victim);
      spawn();
      next_kill = std::chrono::steady_clock::now() + kill_every;
    }
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(ChaosRun::wait_all(all, deadline + 30s)) << "workers did not finish in time";
  for (const auto& p : all) {
    if (p->how_it_ended() != "signal " + std::to_string(SIGKILL)) {
      EXPECT_TRUE(p->exited_cleanly()) << run.describe(*p);
    }
  }
  return kills;
}

// The same kills through the real command line: `readpast work --exec` processes (4 x
// --concurrency 4) killed at random; the commands record their executions (black box).
TEST_P(DrainTest, RandomCommandLineWorkersKilledWithSigkill) {
  const int jobs = scaled(200, 20000);
  const auto kill_every = scaled<Duration>(1500ms, 3s);
  const auto deadline = std::chrono::steady_clock::now() + scaled(3min, 30min);
  ChaosRun run("sigkill_cli", fresh_url(), "cli");
  run.enqueue(jobs);
  // Some long jobs: a killed worker's command runs on (it is not the worker's to stop once
  // the worker is gone), so its rerun may overlap it (see docs/reliability.md).
  run.enqueue(scaled(8, 200), "sleep:2500");
  const int kills = drain_with_cli_workers_killed(run, kill_every, deadline);
  EXPECT_GE(kills, 2);
  CheckOptions options;
  options.black_box = true;
  const CheckReport report = run.check(options);
  expect_headline(report);
  EXPECT_EQ(report.succeeded, jobs + scaled(8, 200));
}

// Dependencies under the same kills: chains of three jobs, each link enqueued after the one
// before, and a group callback after every first link, worked by `readpast work --exec`
// processes killed at random. Every link starts only after the one before it finished, the
// callback only after every member (check_dependencies), and all of them succeed once.
TEST_P(DrainTest, ChainsOfDependentJobsHoldWhileCommandLineWorkersAreKilled) {
  const int chains = scaled(60, 3000);
  const auto kill_every = scaled<Duration>(1500ms, 3s);
  const auto deadline = std::chrono::steady_clock::now() + scaled(3min, 30min);
  ChaosRun run("sigkill_cli_dependencies", fresh_url(), "cli");
  // Each command sleeps 300 ms (chaos_job), so that the drain outlasts a kill or two. The
  // first links are the members of a group, which one more job waits for.
  std::vector<NewJob> firsts;
  for (int i = 0; i < chains; ++i) {
    NewJob job;
    job.queue = run.queue_name();
    job.payload = "sleep:300-first-" + std::to_string(i);
    job.group = "chaos-firsts";
    firsts.push_back(std::move(job));
  }
  std::vector<JobId> links = run.enqueue_jobs(firsts);
  NewJob callback;
  callback.queue = run.queue_name();
  callback.payload = "sleep:1-callback";
  callback.after_group = "chaos-firsts";
  const JobId callback_id = run.enqueue_jobs({callback}).front();
  std::map<JobId, std::vector<JobId>> after;
  after[callback_id] = links;
  for (int step = 0; step < 2; ++step) {
    std::vector<NewJob> next;
    for (int i = 0; i < chains; ++i) {
      NewJob job;
      job.queue = run.queue_name();
      job.payload = "sleep:300-" + std::to_string(step) + "-" + std::to_string(i);
      job.after = {links[static_cast<std::size_t>(i)]};
      next.push_back(std::move(job));
    }
    std::vector<JobId> ids = run.enqueue_jobs(next);
    for (int i = 0; i < chains; ++i) {
      after[ids[static_cast<std::size_t>(i)]] = {links[static_cast<std::size_t>(i)]};
    }
    links = std::move(ids);
  }
  const int kills = drain_with_cli_workers_killed(run, kill_every, deadline);
  EXPECT_GE(kills, 1);
  CheckOptions options;
  options.black_box = true;
  const CheckReport report = run.check(options, after);
  expect_headline(report);
  EXPECT_EQ(report.succeeded, 3 * chains + 1);
}

INSTANTIATE_TEST_SUITE_P(Chaos, DrainTest, ::testing::ValuesIn(engine_names()), engine_param_name);

}  // namespace
}  // namespace readpast::test
