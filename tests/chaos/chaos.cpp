#include "chaos.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "core/url.hpp"

extern char** environ;

namespace readpast::test {

bool long_run() {
  const char* value = std::getenv("READPAST_CHAOS_LONG");
  return value != nullptr && *value != '\0' && std::string(value) != "0";
}

const char* mp_worker_path() {
  return READPAST_MP_WORKER;
}
const char* readpast_path() {
  return READPAST_CLI;
}
const char* chaos_job_path() {
  return READPAST_CHAOS_JOB;
}

std::string engine_param_name(const ::testing::TestParamInfo<std::string>& info) {
  return info.param;
}

// --- ChildProcess ---

ChildProcess::ChildProcess(std::string name, const std::vector<std::string>& argv,
                           const Options& options)
    : name_(std::move(name)) {
  std::vector<char*> args;
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env_strings.emplace_back(*e);
  for (const auto& e : options.env) env_strings.push_back(e);
  std::vector<char*> env;
  for (auto& e : env_strings) env.push_back(e.data());
  env.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const std::string in = options.stdin_path.empty() ? "/dev/null" : options.stdin_path;
  const std::string out = options.out_path.empty() ? "/dev/null" : options.out_path;
  const std::string err = options.err_path.empty() ? "/dev/null" : options.err_path;
  posix_spawn_file_actions_addopen(&actions, 0, in.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  // Its own process group, so that a terminal's signals never reach it and the test can
  // tell its descendants apart.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t empty;
  sigemptyset(&empty);
  posix_spawnattr_setsigmask(&attr, &empty);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int s : {SIGPIPE, SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&defaults, s);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  const int rc = ::posix_spawn(&pid_, args[0], &actions, &attr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw std::runtime_error("posix_spawn " + argv[0] + ": " + std::strerror(rc));
}

ChildProcess::~ChildProcess() {
  if (running()) kill_now();
}

bool ChildProcess::poll() {
  if (exited_) return true;
  rusage usage{};
  pid_t rc = ::wait4(pid_, &status_, WNOHANG, &usage);
  if (rc == pid_) {
    exited_ = true;
    cpu_ = std::chrono::seconds(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           std::chrono::microseconds(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
    max_rss_kib_ = usage.ru_maxrss;
  }
  return exited_;
}

bool ChildProcess::wait_until(std::chrono::steady_clock::time_point deadline) {
  while (!poll()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

void ChildProcess::signal(int sig) const {
  if (!exited_) ::kill(pid_, sig);
}

void ChildProcess::kill_now() {
  if (exited_) return;
  ::kill(pid_, SIGCONT);  // a stopped process dies as well, but be explicit
  ::kill(pid_, SIGKILL);
  rusage usage{};
  ::wait4(pid_, &status_, 0, &usage);
  cpu_ = std::chrono::seconds(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         std::chrono::microseconds(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
  max_rss_kib_ = usage.ru_maxrss;
  exited_ = true;
}

std::string ChildProcess::how_it_ended() const {
  if (!exited_) return "still running";
  if (WIFEXITED(status_)) return "exit " + std::to_string(WEXITSTATUS(status_));
  if (WIFSIGNALED(status_)) return "signal " + std::to_string(WTERMSIG(status_));
  return "status " + std::to_string(status_);
}

bool ChildProcess::exited_cleanly() const {
  return exited_ && WIFEXITED(status_) && WEXITSTATUS(status_) == 0;
}

int ChildProcess::exit_code() const {
  return exited_ && WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
}

// --- ChaosRun ---

Queue open_queue(const std::string& url) {
  QueueOptions options;
  options.init_schema = true;
  auto queue = Queue::open(url, options);
  if (!queue) throw std::runtime_error("open " + url + ": " + queue.error().message);
  return std::move(*queue);
}

ChaosRun::ChaosRun(std::string name, std::string url, std::string queue)
    : name_(std::move(name)), url_(std::move(url)), queue_name_(std::move(queue)) {
  queue_.emplace(open_queue(url_));
  own_ = std::make_unique<HistoryWriter>(history_path("test"));
}

std::string ChaosRun::history_path(const std::string& process) const {
  return dir_.file(process + ".jsonl");
}

std::vector<JobId> ChaosRun::enqueue(int count, const std::string& prefix, int max_attempts,
                                     int batch, std::optional<Duration> delay) {
  std::vector<JobId> ids;
  std::vector<NewJob> jobs;
  for (int i = 0; i < count; ++i) {
    NewJob job;
    job.queue = queue_name_;
    job.payload = prefix + "-" + std::to_string(i);
    job.max_attempts = max_attempts;
    job.delay = delay;
    jobs.push_back(std::move(job));
    if (static_cast<int>(jobs.size()) == batch) {
      for (JobId id : enqueue_jobs(jobs)) ids.push_back(id);
      jobs.clear();
    }
  }
  if (!jobs.empty()) {
    for (JobId id : enqueue_jobs(jobs)) ids.push_back(id);
  }
  return ids;
}

std::vector<JobId> ChaosRun::enqueue_jobs(std::vector<NewJob> jobs) {
  std::vector<JobId> ids;
  auto flush = [&] {
    const TimePoint t_start = wall_now();
    auto enqueued = queue_->enqueue_batch(jobs);
    const TimePoint t_end = wall_now();
    if (!enqueued) throw std::runtime_error("enqueue: " + enqueued.error().message);
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      EnqueueEvent e;
      e.job = (*enqueued)[i].id;
      e.payload = jobs[i].payload;
      e.process = "test";
      e.accepted = true;
      e.max_attempts = jobs[i].max_attempts;
      e.t_start = t_start;
      e.t = t_end;
      own_->record(e);
      ids.push_back(e.job);
    }
    jobs.clear();
  };
  if (!jobs.empty()) flush();
  return ids;
}

void ChaosRun::fault(const std::string& kind, const std::string& target, TimePoint t_start,
                     const std::string& detail) {
  FaultEvent f;
  f.kind = kind;
  f.target = target;
  f.detail = detail;
  f.t_start = t_start;
  f.t = wall_now();
  own_->record(f);
  ++faults_;
}

void ChaosRun::fault_now(const std::string& kind, const std::string& target,
                         const std::string& detail) {
  fault(kind, target, wall_now(), detail);
}

std::unique_ptr<ChildProcess> ChaosRun::spawn_mp_worker(const std::string& name, Duration lease,
                                                        Duration exec, int threads, int batch,
                                                        const std::string& ops,
                                                        const std::string& url_override) {
  ChildProcess::Options options;
  options.err_path = dir_.file(name + ".err");
  const std::string url = url_override.empty() ? url_ : url_override;
  return std::make_unique<ChildProcess>(
      name,
      std::vector<std::string>{
          mp_worker_path(),
          "--url",
          url,
          "--queue",
          queue_name_,
          "--name",
          name,
          "--history",
          history_path(name),
          "--threads",
          std::to_string(threads),
          "--batch",
          std::to_string(batch),
          "--lease-ms",
          std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(lease).count()),
          "--exec-us",
          std::to_string(exec.count()),
          "--complete",
          "mixed",
          "--ops",
          ops},
      options);
}

std::string ChaosRun::job_command(const std::string& name) const {
  return std::string(chaos_job_path()) + " --history " + history_path(name) + " --process " + name;
}

std::unique_ptr<ChildProcess> ChaosRun::spawn_cli_worker(const std::string& name,
                                                         const std::vector<std::string>& extra_args,
                                                         const std::vector<std::string>& env,
                                                         const std::string& command) {
  ChildProcess::Options options;
  options.env = env;
  options.out_path = dir_.file(name + ".out");
  options.err_path = dir_.file(name + ".err");
  std::vector<std::string> argv = {readpast_path(),
                                   "--db",
                                   url_,
                                   "work",
                                   queue_name_,
                                   "--exec",
                                   command.empty() ? "exec " + job_command(name) : command,
                                   "--worker-id",
                                   name,
                                   "--no-progress"};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  return std::make_unique<ChildProcess>(name, argv, options);
}

std::string ChaosRun::describe(const ChildProcess& process) const {
  std::string text = process.name() + ": " + process.how_it_ended();
  std::ifstream err(dir_.file(process.name() + ".err"), std::ios::binary);
  std::stringstream buffer;
  buffer << err.rdbuf();
  std::string tail = buffer.str();
  if (tail.size() > 1500) tail = "..." + tail.substr(tail.size() - 1500);
  if (!tail.empty()) text += "; stderr:\n" + tail;
  return text;
}

namespace {

template <class F>
auto patiently(F&& call) {
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (true) {
    auto result = call();
    if (result) return std::move(*result);
    if (!result.error().is_unavailable() || std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("unexpected error: " + result.error().message);
    }
    std::this_thread::sleep_for(20ms);
  }
}

}  // namespace

std::vector<Job> ChaosRun::final_jobs() {
  std::vector<Job> jobs;
  ListRequest request;
  request.queue = queue_name_;
  request.limit = 1000;
  while (true) {
    auto page = patiently([&] { return queue_->list(request); });
    for (auto& job : page) jobs.push_back(std::move(job));
    if (page.size() < static_cast<std::size_t>(request.limit)) return jobs;
    request.after_id = jobs.back().id;
  }
}

std::vector<QueueStats> ChaosRun::stats() {
  return patiently([&] { return queue_->stats(queue_name_); });
}

std::size_t ChaosRun::executions_started(const std::string& name) const {
  History h;
  if (std::filesystem::exists(history_path(name))) read_history_file(history_path(name), h);
  std::size_t starts = 0;
  for (const auto& e : h.execs) starts += e.phase == ExecEvent::Phase::kStart ? 1 : 0;
  return starts;
}

History ChaosRun::read_histories() const {
  History history;
  for (const auto& entry : std::filesystem::directory_iterator(dir_.path())) {
    if (entry.path().extension() == ".jsonl") read_history_file(entry.path().string(), history);
  }
  return history;
}

CheckReport ChaosRun::check(const CheckOptions& options,
                            const std::map<JobId, std::vector<JobId>>& after) {
  const History history = read_histories();
  const std::vector<Job> rows = final_jobs();
  CheckReport report = check_history(history, {}, rows, options);
  if (!after.empty()) check_dependencies(history, rows, after, options.clock_tolerance, report);
  std::cout << "[ history  ] " << name_ << ": " << report.summary(10) << "\n";
  auto url = detail::parse_database_url(url_);
  record_figures(name_, url ? url->engine : "unknown", report);
  return report;
}

void record_figures(const std::string& test, const std::string& engine, const CheckReport& report) {
  const char* path = std::getenv("READPAST_FIGURES");
  if (path == nullptr || *path == '\0') return;
  std::ofstream out(path, std::ios::app);
  out << R"({"test":")" << test << R"(","engine":")" << engine << R"(","long":)"
      << (long_run() ? "true" : "false") << R"(,"figures":)" << report.figures_json() << "}\n";
}

bool ChaosRun::wait_all(std::vector<std::unique_ptr<ChildProcess>>& processes,
                        std::chrono::steady_clock::time_point deadline) {
  bool all_exited = true;
  for (auto& p : processes) {
    if (!p->wait_until(deadline)) {
      all_exited = false;
      p->kill_now();
    }
  }
  return all_exited;
}

// --- processes ---

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace

CliResult run_cli(const TempDir& scratch, const std::vector<std::string>& args,
                  const std::vector<std::string>& env, std::chrono::seconds timeout,
                  const std::string& stdin_path) {
  static int counter = 0;
  const std::string stem = scratch.file("cli-" + std::to_string(counter++));
  ChildProcess::Options options;
  options.env = env;
  options.stdin_path = stdin_path;
  options.out_path = stem + ".out";
  options.err_path = stem + ".err";
  std::vector<std::string> argv = {readpast_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto t0 = std::chrono::steady_clock::now();
  ChildProcess process("readpast", argv, options);
  if (!process.wait_until(t0 + timeout)) process.kill_now();
  CliResult result;
  result.wall = std::chrono::steady_clock::now() - t0;
  result.exit_code = process.exit_code();
  result.how_it_ended = process.how_it_ended();
  result.cpu = process.cpu_time();
  result.max_rss_kib = process.max_rss_kib();
  result.out = read_all(stem + ".out");
  result.err = read_all(stem + ".err");
  return result;
}

std::chrono::microseconds cpu_time_of(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return {};
  const auto close = line.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream fields(line.substr(close + 2));
  std::string field;
  long utime = 0;
  long stime = 0;
  // Fields after the name: state is field 3; utime and stime are fields 14 and 15.
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::stol(field);
    if (i == 15) stime = std::stol(field);
  }
  const long ticks = ::sysconf(_SC_CLK_TCK);
  return std::chrono::microseconds((utime + stime) * 1'000'000 / ticks);
}

std::vector<pid_t> processes_with(const std::string& marker) {
  std::vector<pid_t> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream cmdline(entry.path() / "cmdline", std::ios::binary);
    std::stringstream text;
    text << cmdline.rdbuf();
    if (text.str().find(marker) == std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const auto close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z') continue;
    found.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return found;
}

}  // namespace readpast::test
