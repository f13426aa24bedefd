// chaos_job: the command the fault tests give `readpast work --exec`. It records its
// execution (exec_start, exec_end; see support/history.hpp) and behaves as its payload
// (stdin) says:
//   "sleep:MS…"  sleeps MS milliseconds, then succeeds
//   "fail…"      exits 3 (a poison job: it never succeeds)
//   "segv…"      dies of SIGSEGV (a poison job that crashes)
//   "flaky…"     exits 1 on its first attempt, succeeds after
//   anything else succeeds at once
//
//   chaos_job --history FILE --process NAME
//
// The job comes from the environment readpast gives every command: READPAST_JOB_ID,
// READPAST_LEASE_TOKEN, READPAST_ATTEMPT. NAME is the worker process that ran it (the
// test's name for it, which faults target).
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <string>
#include <thread>

#include "support/history.hpp"

namespace readpast::test {
namespace {

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

int run(int argc, char** argv) {
  std::string history_path;
  std::string process;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    if (key == "--history") history_path = argv[i + 1];
    if (key == "--process") process = argv[i + 1];
  }
  if (history_path.empty() || process.empty()) {
    std::fprintf(stderr, "usage: chaos_job --history FILE --process NAME\n");
    return 2;
  }
  const std::string payload((std::istreambuf_iterator<char>(std::cin)),
                            std::istreambuf_iterator<char>());
  HistoryWriter history(history_path);
  ExecEvent event;
  event.job = std::atoll(env_or_empty("READPAST_JOB_ID").c_str());
  event.token = env_or_empty("READPAST_LEASE_TOKEN");
  event.process = process;
  event.worker = process;
  event.attempt = std::atoi(env_or_empty("READPAST_ATTEMPT").c_str());
  event.pid = static_cast<long>(::getpid());
  event.t = wall_now();
  history.record(event);

  auto end = [&](const std::string& result) {
    event.phase = ExecEvent::Phase::kEnd;
    event.result = result;
    event.t = wall_now();
    history.record(event);
  };
  if (payload.starts_with("sleep:")) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::atoll(payload.c_str() + 6)));
  } else if (payload.starts_with("fail")) {
    std::fprintf(stderr, "chaos_job: failing as asked\n");
    end("exit 3");
    return 3;
  } else if (payload.starts_with("segv")) {
    end("signal " + std::to_string(SIGSEGV));
    // A sanitizer would catch the signal and exit instead: die of it for real.
    ::signal(SIGSEGV, SIG_DFL);
    ::raise(SIGSEGV);
    return 99;
  } else if (payload.starts_with("flaky") && event.attempt <= 1) {
    std::fprintf(stderr, "chaos_job: failing the first attempt\n");
    end("exit 1");
    return 1;
  }
  end("ok");
  return 0;
}

}  // namespace
}  // namespace readpast::test

int main(int argc, char** argv) {
  try {
    return readpast::test::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chaos_job: %s\n", e.what());
    return 1;
  }
}
