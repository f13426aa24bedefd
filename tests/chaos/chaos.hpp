// What the fault tests share: child processes the test can signal, the size of a run
// (short in CI, long on demand), a run's history files, and reporting the checker's
// figures.
//
// Sizes: every test reads its shape through scaled(); READPAST_CHAOS_LONG=1 (set by
// `scripts/reliability.sh --long`) selects the long shape. READPAST_FIGURES=FILE makes
// every checked run append one JSON line with its figures to FILE.
//
// Thread-safety: none needed; each test drives its processes from its own thread.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "readpast/readpast.hpp"
#include "support/history.hpp"
#include "support/temp_dir.hpp"

namespace readpast::test {

using namespace std::chrono_literals;

// True when READPAST_CHAOS_LONG is set (to anything but "" or "0").
bool long_run();
// `short_value` in CI, `long_value` for the long soak.
template <class T>
T scaled(T short_value, T long_value) {
  return long_run() ? long_value : short_value;
}

// A child process (posix_spawn, no shell), its stdout and stderr in files; SIGKILLed and
// reaped if still running when destroyed.
class ChildProcess {
 public:
  struct Options {
    std::vector<std::string> env;  // extra "NAME=value" entries
    std::string stdin_path;        // default: /dev/null
    std::string out_path;          // default: /dev/null
    std::string err_path;          // default: /dev/null
  };
  ChildProcess(std::string name, const std::vector<std::string>& argv, const Options& options);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  const std::string& name() const { return name_; }
  pid_t pid() const { return pid_; }
  bool running() const { return !exited_; }
  // Reaps the process if it has exited; true when it has.
  bool poll();
  // Waits until it exits or the deadline passes; true when it exited.
  bool wait_until(std::chrono::steady_clock::time_point deadline);
  void signal(int sig) const;
  // SIGKILL and reap.
  void kill_now();
  std::string how_it_ended() const;
  bool exited_cleanly() const;
  int exit_code() const;  // -1 unless it exited by itself
  // How much CPU time it used (user + system), and its peak resident memory, once reaped.
  std::chrono::microseconds cpu_time() const { return cpu_; }
  long max_rss_kib() const { return max_rss_kib_; }

 private:
  std::string name_;
  pid_t pid_ = -1;
  int status_ = 0;
  bool exited_ = false;
  std::chrono::microseconds cpu_{0};
  long max_rss_kib_ = 0;
};

// The files and helpers of one checked run: the test's own history (enqueues and the
// faults it injects), one history per worker process, the final rows and the check.
class ChaosRun {
 public:
  ChaosRun(std::string name, std::string url, std::string queue);

  const std::string& url() const { return url_; }
  const std::string& queue_name() const { return queue_name_; }
  Queue& queue() { return *queue_; }
  const TempDir& dir() const { return dir_; }
  std::string history_path(const std::string& process) const;

  // Enqueues `count` jobs (payload "PREFIX-i") in batches, recording each acknowledged id.
  std::vector<JobId> enqueue(int count, const std::string& prefix = "job", int max_attempts = 25,
                             int batch = 1000, std::optional<Duration> delay = std::nullopt);
  // Enqueues these jobs (of any queue, with dependencies or not) in one batch, recording
  // each acknowledged id; returns the ids in the jobs' order.
  std::vector<JobId> enqueue_jobs(std::vector<NewJob> jobs);
  // Records a fault the test injected: `target` is the process it hit ("" for everyone).
  void fault(const std::string& kind, const std::string& target, TimePoint t_start,
             const std::string& detail = "");
  void fault_now(const std::string& kind, const std::string& target,
                 const std::string& detail = "");
  std::int64_t faults_injected() const { return faults_; }

  // An mp_worker process named `name` writing history_path(name).
  std::unique_ptr<ChildProcess> spawn_mp_worker(const std::string& name, Duration lease,
                                                Duration exec, int threads, int batch,
                                                const std::string& ops = "plain",
                                                const std::string& url_override = "");
  // `readpast work QUEUE --exec "chaos_job ..."`; its jobs record their executions in
  // history_path(name).
  // `command` replaces "exec " + job_command(name) when not empty.
  std::unique_ptr<ChildProcess> spawn_cli_worker(const std::string& name,
                                                 const std::vector<std::string>& extra_args,
                                                 const std::vector<std::string>& env = {},
                                                 const std::string& command = "");
  // "NAME: how it ended; the tail of its stderr", for a failure message.
  std::string describe(const ChildProcess& process) const;
  // The --exec command line of the chaos_job helper for process `name`.
  std::string job_command(const std::string& name) const;

  // Calls `call` while it answers kUnavailable (up to 60 s), then demands success.
  std::vector<Job> final_jobs();
  std::vector<QueueStats> stats();
  // exec_start lines in process `name`'s history so far.
  std::size_t executions_started(const std::string& name) const;
  // Reads every history file of the run.
  History read_histories() const;
  // Runs the checker, prints its summary, appends the figures (READPAST_FIGURES), and
  // returns the report; `test` names the run in the figures.
  // With `after` (each dependent: the jobs it was enqueued after), check_dependencies too.
  CheckReport check(const CheckOptions& options = {},
                    const std::map<JobId, std::vector<JobId>>& after = {});
  // Waits until every process exits (true), or kills the rest at the deadline (false).
  static bool wait_all(std::vector<std::unique_ptr<ChildProcess>>& processes,
                       std::chrono::steady_clock::time_point deadline);

 private:
  std::string name_;
  std::string url_;
  std::string queue_name_;
  TempDir dir_;
  std::optional<Queue> queue_;
  std::unique_ptr<HistoryWriter> own_;  // the test's own events
  std::int64_t faults_ = 0;
};

// `readpast ARGS...` run to completion (or killed at the timeout), as the tests of faults
// at start-up need it: exit code, output, and the wall-clock and CPU time it took.
struct CliResult {
  int exit_code = -1;
  std::string how_it_ended;
  std::string out;
  std::string err;
  std::chrono::steady_clock::duration wall{};
  std::chrono::microseconds cpu{};
  long max_rss_kib = 0;
};
// stdin_path: a file to read stdin from (default: /dev/null).
CliResult run_cli(const TempDir& scratch, const std::vector<std::string>& args,
                  const std::vector<std::string>& env = {},
                  std::chrono::seconds timeout = std::chrono::seconds(60),
                  const std::string& stdin_path = "");

// CPU time (user + system) a running process has used so far; zero when it is gone.
std::chrono::microseconds cpu_time_of(pid_t pid);

// Appends a checked run's figures to READPAST_FIGURES (when set), as ChaosRun::check does.
void record_figures(const std::string& test, const std::string& engine, const CheckReport& report);

// The paths of the binaries under test (compile definitions).
const char* mp_worker_path();
const char* readpast_path();
const char* chaos_job_path();

// Opens `url` (init schema) and fails the test on error.
Queue open_queue(const std::string& url);

// Processes (other than zombies) whose command line contains `marker`.
std::vector<pid_t> processes_with(const std::string& marker);

// The engine name of a parameterised test, for test names.
std::string engine_param_name(const ::testing::TestParamInfo<std::string>& info);

}  // namespace readpast::test
