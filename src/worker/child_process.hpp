// worker/child_process.hpp — a child process in its own process group, killed and reaped
// by its owner's destructor.
//
// Thread-safety: a ChildProcess is owned by one thread; it is movable, not copyable. The
// only state it shares with the rest of the program is the kernel's process table, and it
// never calls wait on any process but its own, so several may run in several threads.
//
// Invariant: until reap(), the child is not waited for, so even after it exits it stays a
// zombie and its pid — which is also its process group id — cannot be reused. That is what
// makes signal_group() safe: it can never hit an unrelated group. The invariant needs
// SIGCHLD at its default action (a process that ignores SIGCHLD has its children reaped by
// the kernel); `readpast work` makes sure of it.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "readpast/error.hpp"
#include "worker/unique_fd.hpp"

namespace readpast::worker {

struct SpawnRequest {
  std::string path;               // the program, e.g. "/bin/sh" (no PATH search)
  std::vector<std::string> argv;  // argv[0] included
  std::vector<std::string> env;   // "NAME=value" entries: the child's whole environment
  // Duplicated onto the child's 0, 1 and 2. Must not be 0, 1 or 2 themselves; every other
  // descriptor of this process is closed in the child.
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
};

class ChildProcess {
 public:
  // Starts the program with posix_spawn (safe in a multi-threaded program: the child runs
  // only async-signal-safe code before exec) as the leader of a new process group, with an
  // empty signal mask and SIGPIPE back at its default action.
  static Result<ChildProcess> spawn(const SpawnRequest& request);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  // Unless reaped: SIGKILL to the whole group, then waits for the leader.
  ~ChildProcess();

  pid_t pid() const noexcept { return pid_; }
  // Readable once the child has exited (a pidfd); -1 where the kernel has no pidfds, in
  // which case callers poll has_exited() instead.
  int exit_fd() const noexcept { return pidfd_.get(); }

  // Sends `signal` to every process of the child's group. A no-op once reaped.
  void signal_group(int signal) noexcept;
  // True once the leader has exited. Does not reap it (see the invariant above).
  bool has_exited() noexcept;
  // Waits for the leader to exit, collects it and returns its wait status; nullopt when
  // the kernel had already collected it (SIGCHLD ignored by the process, see below).
  std::optional<int> reap() noexcept;

 private:
  ChildProcess(pid_t pid, UniqueFd pidfd) : pid_(pid), pidfd_(std::move(pidfd)) {}
  void kill_and_reap() noexcept;

  pid_t pid_ = -1;  // -1 once reaped or moved from
  UniqueFd pidfd_;
};

// "exit status 3", "killed by signal 11 (SIGSEGV)".
std::string describe_wait_status(int status);

}  // namespace readpast::worker
