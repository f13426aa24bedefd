#include "worker/exec_handler.hpp"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <optional>

#include "worker/child_process.hpp"
#include "worker/scrubbed_lines.hpp"
#include "worker/tail_buffer.hpp"
#include "worker/unique_fd.hpp"

extern char** environ;

namespace readpast::worker {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kChunk = 64 * 1024;
// Without a pidfd, how often to look whether the command has exited.
constexpr auto kExitPollInterval = std::chrono::milliseconds(50);
// After the command exited and its group was killed, how long to wait for the end of its
// output (only something that left the group, e.g. with setsid, can hold a pipe open).
constexpr auto kOutputDrainLimit = std::chrono::seconds(1);

constexpr std::array<std::string_view, 4> kJobVariables = {
    "READPAST_JOB_ID", "READPAST_QUEUE", "READPAST_ATTEMPT", "READPAST_LEASE_TOKEN"};

std::string_view variable_name(std::string_view entry) {
  return entry.substr(0, entry.find('='));
}

void write_to_fd(int fd, std::string_view bytes) {
  // A closed stdout (EPIPE) must not stop the job: the output is dropped.
  (void)write_all(fd, bytes.data(), bytes.size());
}

// write() to the command's stdin. A command may exit without reading it all: the write
// then fails with EPIPE and the kernel raises SIGPIPE, which by default kills the whole
// process. The CLI ignores SIGPIPE, but a library must not rely on its host doing so:
// SIGPIPE is blocked in this thread around the write, and one raised by it is taken off
// the thread's pending set before it is unblocked again.
ssize_t write_without_sigpipe(int fd, const char* data, std::size_t size) {
  sigset_t pipe_only;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  sigset_t previous;
  pthread_sigmask(SIG_BLOCK, &pipe_only, &previous);
  ssize_t n = ::write(fd, data, size);
  int saved_errno = errno;
  if (n < 0 && saved_errno == EPIPE) {
    const timespec no_wait{0, 0};
    while (::sigtimedwait(&pipe_only, nullptr, &no_wait) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  errno = saved_errno;
  return n;
}

int poll_timeout_ms(std::optional<Clock::time_point> deadline) {
  if (!deadline) return -1;
  auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now());
  return static_cast<int>(std::clamp<std::int64_t>(left.count(), 0, 60'000));
}

// One output pipe of the command, and where what is read from it goes.
struct OutputStream {
  UniqueFd fd;
  OutputSink consume;

  // Reads what is there. Returns false once the stream has ended (and closes it).
  bool read_some(std::vector<char>& buffer) {
    for (;;) {
      ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
      if (n > 0) {
        consume(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
        return true;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
      fd.reset();  // EOF or an error: either way nothing more will come
      return false;
    }
  }
};

}  // namespace

ExecHandler::ExecHandler(ExecOptions options) : options_(std::move(options)) {
  if (!options_.stdout_sink) options_.stdout_sink = [](std::string_view b) { write_to_fd(1, b); };
  if (!options_.stderr_sink) options_.stderr_sink = [](std::string_view b) { write_to_fd(2, b); };
  auto overridden = [&](std::string_view name) {
    if (std::find(kJobVariables.begin(), kJobVariables.end(), name) != kJobVariables.end()) {
      return true;
    }
    return std::any_of(options_.extra_env.begin(), options_.extra_env.end(),
                       [&](const std::string& e) { return variable_name(e) == name; });
  };
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    if (!overridden(variable_name(text))) base_env_.emplace_back(text);
  }
}

std::vector<std::string> ExecHandler::environment_for(const Job& job) const {
  std::vector<std::string> env = base_env_;
  env.insert(env.end(), options_.extra_env.begin(), options_.extra_env.end());
  env.push_back("READPAST_JOB_ID=" + std::to_string(job.id));
  env.push_back("READPAST_QUEUE=" + job.queue);
  env.push_back("READPAST_ATTEMPT=" + std::to_string(job.attempts));
  env.push_back("READPAST_LEASE_TOKEN=" + (job.lease_token ? job.lease_token->hex() : ""));
  return env;
}

JobResult ExecHandler::operator()(const Job& job, std::stop_token stop) const {
  if (stop.stop_requested()) return JobResult::failure("stopped before it started");

  // Wakes the poll loop below when the stop token fires (from another thread).
  UniqueFd wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake) return JobResult::failure(errno_message("cannot run command: eventfd", errno));
  std::stop_callback on_stop(stop, [fd = wake.get()] {
    std::uint64_t one = 1;
    (void)::write(fd, &one, sizeof one);
  });

  auto stdin_pipe = make_pipe();
  auto stdout_pipe = make_pipe();
  auto stderr_pipe = make_pipe();
  if (!stdin_pipe || !stdout_pipe || !stderr_pipe) {
    const Error& e = !stdin_pipe    ? stdin_pipe.error()
                     : !stdout_pipe ? stdout_pipe.error()
                                    : stderr_pipe.error();
    return JobResult::failure("cannot run command: " + e.message);
  }
  auto child = ChildProcess::spawn(SpawnRequest{
      .path = "/bin/sh",
      .argv = {"sh", "-c", options_.command},
      .env = environment_for(job),
      .stdin_fd = stdin_pipe->read_end.get(),
      .stdout_fd = stdout_pipe->write_end.get(),
      .stderr_fd = stderr_pipe->write_end.get(),
  });
  // The child holds its own copies now; ours would keep its stdin open and its output
  // from ever reaching end-of-file.
  stdin_pipe->read_end.reset();
  stdout_pipe->write_end.reset();
  stderr_pipe->write_end.reset();
  if (!child) return JobResult::failure("cannot run command: " + child.error().message);

  UniqueFd stdin_fd = std::move(stdin_pipe->write_end);
  // stdout passes through as it comes; stderr, a line at a time and scrubbed, goes to its
  // sink and to the tail kept for last_error.
  TailBuffer tail(options_.stderr_tail_bytes);
  ScrubbedLines stderr_lines(options_.secrets, [this, &tail](std::string_view line) {
    options_.stderr_sink(line);
    tail.append(line);
  });
  OutputStream out{std::move(stdout_pipe->read_end), options_.stdout_sink};
  OutputStream err{std::move(stderr_pipe->read_end),
                   [&stderr_lines](std::string_view bytes) { stderr_lines.append(bytes); }};
  for (int fd : {stdin_fd.get(), out.fd.get(), err.fd.get()}) {
    if (auto ok = set_nonblocking(fd); !ok) {
      return JobResult::failure("cannot run command: " + ok.error().message);
    }
  }

  std::string_view payload = job.payload;
  if (payload.empty()) stdin_fd.reset();
  std::vector<char> buffer(kChunk);
  bool stopping = false;                         // we signalled the group
  std::optional<Clock::time_point> escalate_at;  // when SIGTERM becomes SIGKILL

  for (;;) {
    if (!stopping && stop.stop_requested()) {
      stopping = true;
      child->signal_group(SIGTERM);
      escalate_at = Clock::now() + options_.kill_wait;
      stdin_fd.reset();
    }
    if (escalate_at && Clock::now() >= *escalate_at) {
      child->signal_group(SIGKILL);
      escalate_at.reset();
    }
    if (child->has_exited()) break;

    std::array<pollfd, 5> fds{};
    nfds_t count = 0;
    auto watch = [&](int fd, short events) -> pollfd* {
      if (fd < 0) return nullptr;
      fds[count] = pollfd{fd, events, 0};
      return &fds[count++];
    };
    pollfd* in_poll = watch(stdin_fd.get(), POLLOUT);
    pollfd* out_poll = watch(out.fd.get(), POLLIN);
    pollfd* err_poll = watch(err.fd.get(), POLLIN);
    watch(child->exit_fd(), POLLIN);
    pollfd* wake_poll = watch(wake.get(), POLLIN);
    std::optional<Clock::time_point> deadline = escalate_at;
    if (child->exit_fd() < 0) {
      auto next_check = Clock::now() + kExitPollInterval;
      deadline = deadline ? std::min(*deadline, next_check) : next_check;
    }
    int rc = ::poll(fds.data(), count, poll_timeout_ms(deadline));
    if (rc < 0 && errno != EINTR) {
      return JobResult::failure(errno_message("cannot run command: poll", errno));
    }
    if (rc <= 0) continue;

    if (wake_poll->revents != 0) {
      std::uint64_t ignored;
      (void)::read(wake.get(), &ignored, sizeof ignored);
    }
    if (in_poll != nullptr && in_poll->revents != 0) {
      ssize_t n =
          write_without_sigpipe(stdin_fd.get(), payload.data(), std::min(payload.size(), kChunk));
      if (n > 0) {
        payload.remove_prefix(static_cast<std::size_t>(n));
        if (payload.empty()) stdin_fd.reset();  // end of input for the command
      } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        stdin_fd.reset();  // EPIPE: the command does not read the rest, which is its right
      }
    }
    if (out_poll != nullptr && out_poll->revents != 0) out.read_some(buffer);
    if (err_poll != nullptr && err_poll->revents != 0) err.read_some(buffer);
  }

  // The leader has exited. Anything it left behind in its group goes too; the leader is
  // still unreaped, so the group id cannot belong to anyone else yet.
  child->signal_group(SIGKILL);
  const std::optional<int> status = child->reap();
  stdin_fd.reset();
  const auto drain_until = Clock::now() + kOutputDrainLimit;
  while ((out.fd || err.fd) && Clock::now() < drain_until) {
    std::array<pollfd, 2> fds{};
    nfds_t count = 0;
    if (out.fd) fds[count++] = pollfd{out.fd.get(), POLLIN, 0};
    if (err.fd) fds[count++] = pollfd{err.fd.get(), POLLIN, 0};
    int rc = ::poll(fds.data(), count, poll_timeout_ms(drain_until));
    if (rc < 0 && errno != EINTR) break;
    for (nfds_t i = 0; i < count; ++i) {
      if (fds[i].revents == 0) continue;
      (fds[i].fd == out.fd.get() ? out : err).read_some(buffer);
    }
  }
  stderr_lines.finish();

  std::string tail_text = tail.text();
  if (stopping) return JobResult::failure(std::move(tail_text));
  if (!status) {
    // Never report success for a command whose exit status nobody saw.
    return JobResult::failure("exit status unknown: the command was reaped elsewhere");
  }
  if (WIFEXITED(*status) && WEXITSTATUS(*status) == 0) return JobResult::success();
  std::string error = describe_wait_status(*status);
  if (!tail_text.empty()) error += ": " + tail_text;
  return JobResult::failure(std::move(error));
}

}  // namespace readpast::worker
