#include "worker/child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace readpast::worker {
namespace {

// posix_spawn's attribute and file-action objects, destroyed on every path.
class SpawnAttributes {
 public:
  SpawnAttributes() { ok_ = ::posix_spawnattr_init(&attr_) == 0; }
  ~SpawnAttributes() {
    if (ok_) ::posix_spawnattr_destroy(&attr_);
  }
  SpawnAttributes(const SpawnAttributes&) = delete;
  SpawnAttributes& operator=(const SpawnAttributes&) = delete;
  bool ok() const noexcept { return ok_; }
  posix_spawnattr_t* get() noexcept { return &attr_; }

 private:
  posix_spawnattr_t attr_{};
  bool ok_ = false;
};

class SpawnFileActions {
 public:
  SpawnFileActions() { ok_ = ::posix_spawn_file_actions_init(&actions_) == 0; }
  ~SpawnFileActions() {
    if (ok_) ::posix_spawn_file_actions_destroy(&actions_);
  }
  SpawnFileActions(const SpawnFileActions&) = delete;
  SpawnFileActions& operator=(const SpawnFileActions&) = delete;
  bool ok() const noexcept { return ok_; }
  posix_spawn_file_actions_t* get() noexcept { return &actions_; }

 private:
  posix_spawn_file_actions_t actions_{};
  bool ok_ = false;
};

int open_pidfd(pid_t pid) noexcept {
#ifdef SYS_pidfd_open
  // The pidfd is close-on-exec by default.
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

Error spawn_error(std::string_view what, int err) {
  return Error::internal(errno_message(what, err));
}

}  // namespace

Result<ChildProcess> ChildProcess::spawn(const SpawnRequest& request) {
  if (request.stdin_fd <= 2 || request.stdout_fd <= 2 || request.stderr_fd <= 2) {
    return fail_with(Error::internal("spawn: the child's standard descriptors must be above 2"));
  }
  SpawnAttributes attributes;
  SpawnFileActions actions;
  if (!attributes.ok() || !actions.ok()) return fail_with(spawn_error("posix_spawn setup", ENOMEM));

  // A new process group (pgid = the child's pid), so that the whole command — a pipeline,
  // background jobs — can be signalled at once, and so that a Ctrl-C at the terminal goes
  // to the worker, which decides what happens to its commands.
  sigset_t empty_mask;
  sigemptyset(&empty_mask);
  sigset_t defaults;
  sigemptyset(&defaults);
  // The worker ignores SIGPIPE (it writes into pipes of commands that may not read) and
  // blocks SIGTERM/SIGINT for its signal thread; a command must start with neither.
  sigaddset(&defaults, SIGPIPE);
  short flags = POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  int rc = ::posix_spawnattr_setflags(attributes.get(), flags);
  if (rc == 0) rc = ::posix_spawnattr_setpgroup(attributes.get(), 0);
  if (rc == 0) rc = ::posix_spawnattr_setsigmask(attributes.get(), &empty_mask);
  if (rc == 0) rc = ::posix_spawnattr_setsigdefault(attributes.get(), &defaults);
  if (rc == 0) rc = ::posix_spawn_file_actions_adddup2(actions.get(), request.stdin_fd, 0);
  if (rc == 0) rc = ::posix_spawn_file_actions_adddup2(actions.get(), request.stdout_fd, 1);
  if (rc == 0) rc = ::posix_spawn_file_actions_adddup2(actions.get(), request.stderr_fd, 2);
  // Every descriptor of ours is O_CLOEXEC already; this also covers ones opened by
  // libraries without it.
  if (rc == 0) rc = ::posix_spawn_file_actions_addclosefrom_np(actions.get(), 3);
  if (rc != 0) return fail_with(spawn_error("posix_spawn setup", rc));

  std::vector<char*> argv;
  argv.reserve(request.argv.size() + 1);
  for (const auto& arg : request.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  envp.reserve(request.env.size() + 1);
  for (const auto& entry : request.env) envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);

  pid_t pid = -1;
  rc = ::posix_spawn(&pid, request.path.c_str(), actions.get(), attributes.get(), argv.data(),
                     envp.data());
  if (rc != 0) return fail_with(spawn_error("cannot run " + request.path, rc));
  return ChildProcess(pid, UniqueFd(open_pidfd(pid)));
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), pidfd_(std::move(other.pidfd_)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    kill_and_reap();
    pid_ = std::exchange(other.pid_, -1);
    pidfd_ = std::move(other.pidfd_);
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  kill_and_reap();
}

void ChildProcess::kill_and_reap() noexcept {
  if (pid_ < 0) return;
  signal_group(SIGKILL);
  reap();
}

void ChildProcess::signal_group(int signal) noexcept {
  if (pid_ < 0) return;
  // ESRCH (nobody left) is fine; the leader, even as a zombie, keeps the group id reserved.
  ::kill(-pid_, signal);
}

bool ChildProcess::has_exited() noexcept {
  if (pid_ < 0) return true;
  siginfo_t info{};
  for (;;) {
    int rc = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
    if (rc == 0) return info.si_pid == pid_;
    if (errno != EINTR) return true;  // ECHILD: not ours to wait for any more
  }
}

std::optional<int> ChildProcess::reap() noexcept {
  if (pid_ < 0) return std::nullopt;
  int status = 0;
  pid_t rc;
  do {
    rc = ::waitpid(pid_, &status, 0);
  } while (rc < 0 && errno == EINTR);
  pid_ = -1;
  pidfd_.reset();
  if (rc < 0) return std::nullopt;
  return status;
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int signal = WTERMSIG(status);
    std::string text = "killed by signal " + std::to_string(signal);
    if (const char* abbrev = ::sigabbrev_np(signal)) {
      text += " (SIG";
      text += abbrev;
      text += ')';
    }
    return text;
  }
  return "ended with wait status " + std::to_string(status);
}

}  // namespace readpast::worker
