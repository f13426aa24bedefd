#include "children.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <iostream>
#include <mutex>
#include <thread>

#include "common.hpp"

namespace readpast::bench {
namespace {

void write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("writing to a child process failed");
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& args) {
  int to_child[2];
  int from_child[2];
  if (::pipe2(to_child, O_CLOEXEC) != 0 || ::pipe2(from_child, O_CLOEXEC) != 0) {
    fail("pipe failed");
  }
  std::vector<std::string> strings{"/proc/self/exe"};
  strings.insert(strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_ = ::fork();
  if (pid_ < 0) fail("fork failed");
  if (pid_ == 0) {
    ::dup2(to_child[0], 0);
    ::dup2(from_child[1], 1);
    ::execv("/proc/self/exe", argv.data());
    ::_exit(127);
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  in_fd_ = to_child[1];
  out_fd_ = from_child[0];
}

ChildProcess::~ChildProcess() {
  if (in_fd_ >= 0) ::close(in_fd_);
  if (out_fd_ >= 0) ::close(out_fd_);
  if (pid_ > 0) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
    }
  }
}

void ChildProcess::send(const std::string& line) {
  write_all(in_fd_, line + "\n");
}

std::vector<std::string> ChildProcess::read_lines() {
  char chunk[4096];
  const ssize_t n = ::read(out_fd_, chunk, sizeof chunk);
  if (n == 0) eof_ = true;
  if (n > 0) buffer_.append(chunk, static_cast<std::size_t>(n));
  std::vector<std::string> lines;
  for (auto nl = buffer_.find('\n'); nl != std::string::npos; nl = buffer_.find('\n')) {
    lines.push_back(buffer_.substr(0, nl));
    buffer_.erase(0, nl + 1);
  }
  return lines;
}

DrainResult drain_with_children(const std::vector<std::string>& child_args, const DrainShape& shape,
                                Subject& subject, std::atomic<std::int64_t>& progress) {
  std::vector<std::unique_ptr<ChildProcess>> children;
  std::vector<std::string> args = child_args;
  args.insert(args.end(),
              {"--threads", std::to_string(shape.threads), "--batch", std::to_string(shape.batch)});
  for (int p = 0; p < shape.processes; ++p) {
    children.push_back(std::make_unique<ChildProcess>(args));
  }
  const std::size_t count = children.size();
  std::vector<std::int64_t> done_so_far(count, 0);
  std::vector<bool> ready(count, false);
  std::vector<bool> finished(count, false);
  DrainResult result;

  // Reads every child's lines until `until()` holds, handling them with on_line.
  auto pump = [&](auto&& until, auto&& on_line, std::chrono::seconds patience) {
    const auto deadline = Clock::now() + patience;
    while (!until()) {
      if (Clock::now() > deadline) fail("drain: the worker processes did not answer in time");
      std::vector<pollfd> fds;
      for (const auto& c : children) fds.push_back(pollfd{c->output_fd(), POLLIN, 0});
      if (::poll(fds.data(), fds.size(), 100) <= 0) continue;
      for (std::size_t i = 0; i < count; ++i) {
        if (fds[i].revents == 0) continue;
        for (const auto& line : children[i]->read_lines()) on_line(i, line);
        if (children[i]->eof() && !finished[i]) fail("drain: a worker process died");
      }
    }
  };
  auto all = [&](const std::vector<bool>& flags) {
    return std::all_of(flags.begin(), flags.end(), [](bool b) { return b; });
  };
  auto on_line = [&](std::size_t i, const std::string& line) {
    if (line == "ready") {
      ready[i] = true;
    } else if (line.starts_with("progress ")) {
      done_so_far[i] = std::stoll(line.substr(9));
      std::int64_t sum = 0;
      for (auto d : done_so_far) sum += d;
      progress.store(sum);
    } else if (line.starts_with("done ")) {
      auto record = nlohmann::json::parse(line.substr(5));
      result.completed += record.value("completed", std::int64_t{0});
      result.children.push_back(std::move(record));
      finished[i] = true;
    } else if (line.starts_with("error ")) {
      fail("drain: worker process: " + line.substr(6));
    }
  };

  pump([&] { return all(ready); }, on_line, std::chrono::seconds(60));
  const auto start = Clock::now();
  for (auto& c : children) c->send("go");
  pump([&] { return all(finished); }, on_line, std::chrono::seconds(1800));
  // The same end condition as the peer harness: the database shows no pending job.
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (subject.unfinished() != 0) {
    if (Clock::now() > deadline) fail("drain: jobs left unfinished after every worker stopped");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  result.seconds = seconds_since(start);
  return result;
}

int child_work_main(Subject& subject, const WorkerSetup& setup_in) {
  auto say = [](const std::string& line) { write_all(STDOUT_FILENO, line + "\n"); };
  try {
    const Memory before = memory_of_self();
    say("ready");
    std::string line;
    if (!std::getline(std::cin, line) || line != "go") return 1;
    std::atomic<std::int64_t> completed{0};
    WorkerSetup setup = setup_in;
    setup.completed = &completed;
    // Wakes at once when stopped: the parent times the drain until every child's "done"
    // line, so a sleeping reporter would round every drain up to its next 200 ms tick.
    std::jthread reporter([&](std::stop_token stop) {
      std::mutex mu;
      std::condition_variable_any tick;
      std::unique_lock lock(mu);
      while (!tick.wait_for(lock, stop, std::chrono::milliseconds(200),
                            [&stop] { return stop.stop_requested(); })) {
        say("progress " + std::to_string(completed.load()));
      }
    });
    const auto start = Clock::now();
    const WorkerCounts counts = subject.work(
        setup, [](std::int64_t, std::string_view) {}, std::stop_token{});
    const double seconds = seconds_since(start);
    reporter.request_stop();
    reporter.join();
    const Memory after = memory_of_self();
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
    nlohmann::json record = {{"completed", counts.completed},
                             {"leases", counts.leases},
                             {"empty_leases", counts.empty_leases},
                             {"lost", counts.lost},
                             {"retries", counts.retries},
                             {"seconds", seconds},
                             {"cpu_s", secs(usage.ru_utime) + secs(usage.ru_stime)},
                             {"rss_ready_kib", before.rss_kib},
                             {"rss_kib", after.rss_kib},
                             {"peak_rss_kib", after.peak_kib}};
    say("done " + record.dump());
    return 0;
  } catch (const std::exception& e) {
    say(std::string("error ") + e.what());
    return 1;
  }
}

}  // namespace readpast::bench
