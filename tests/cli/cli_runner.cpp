#include "cli_runner.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace readpast::test {
namespace {

std::atomic<int> run_counter{0};

std::vector<std::string> child_environment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry(*e);
    // Tests say which database they mean; an inherited one must not leak in.
    if (entry.starts_with("READPAST_")) continue;
    env.emplace_back(entry);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

}  // namespace

const char* readpast_path() {
  return READPAST_CLI_PATH;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

ReadpastProcess::ReadpastProcess(const std::filesystem::path& scratch,
                                 const std::vector<std::string>& args, const RunOptions& options) {
  const std::string tag = "run-" + std::to_string(run_counter++);
  const auto in_path = scratch / (tag + ".stdin");
  out_path_ = scratch / (tag + ".stdout");
  err_path_ = scratch / (tag + ".stderr");
  write_file(in_path, options.stdin_bytes);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, in_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  if (options.stderr_fd >= 0) {
    write_file(err_path_, "");
    posix_spawn_file_actions_adddup2(&actions, options.stderr_fd, 2);
  } else {
    posix_spawn_file_actions_addopen(&actions, 2, err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
  }
  std::vector<std::string> argv_storage = {readpast_path()};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  auto env_storage = child_environment(options.env);
  std::vector<char*> envp;
  for (auto& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);
  int rc = ::posix_spawn(&pid_, readpast_path(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start readpast: " + std::to_string(rc));
}

ReadpastProcess::~ReadpastProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

void ReadpastProcess::send_signal(int signal) const {
  if (pid_ > 0) ::kill(pid_, signal);
}

std::string ReadpastProcess::err_so_far() const {
  return read_file(err_path_);
}

Serving wait_until_serving(const ReadpastProcess& server) {
  const std::regex serving("serving on http://127\\.0\\.0\\.1:([0-9]+)");
  Serving result;
  std::smatch match;
  for (int i = 0; i < 500; ++i) {
    result.log = server.err_so_far();
    if (std::regex_search(result.log, match, serving)) {
      result.port = std::stoi(match[1].str());
      return result;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return result;
}

RunResult ReadpastProcess::wait(std::chrono::milliseconds timeout) {
  RunResult result;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  for (;;) {
    pid_t rc = ::waitpid(pid_, &status, WNOHANG);
    if (rc == pid_) break;
    if (rc < 0 && errno != EINTR) throw std::runtime_error("waitpid failed");
    if (std::chrono::steady_clock::now() >= deadline) {
      result.timed_out = true;
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  pid_ = -1;
  if (WIFEXITED(status) && !result.timed_out) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  result.out = read_file(out_path_);
  result.err = read_file(err_path_);
  return result;
}

RunResult run_readpast(const std::filesystem::path& scratch, const std::vector<std::string>& args,
                       const RunOptions& options) {
  ReadpastProcess process(scratch, args, options);
  return process.wait(options.timeout);
}

bool wait_for_file(const std::filesystem::path& path, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!std::filesystem::exists(path)) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

bool wait_until_process_gone(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
    // A zombie has exited; only its parent (init, here) has yet to collect it.
    std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
    auto close_paren = stat.rfind(')');
    if (close_paren != std::string::npos && close_paren + 2 < stat.size() &&
        stat[close_paren + 2] == 'Z') {
      return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace readpast::test
