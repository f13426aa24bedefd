// The fixture of the Worker tests: a fresh database per test on every engine of
// support/engines.hpp, a Queue handle on it, and helpers to drive a Worker on a thread.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "readpast/readpast.hpp"

namespace readpast::test {

using namespace std::chrono_literals;

// Collects log events (thread-safe).
class LogEvents {
 public:
  Logger logger();
  // How many events had the field event=<name>.
  int count(std::string_view event) const;
  std::string all() const;

 private:
  mutable std::mutex mu_;
  std::vector<LogRecord> records_;
};

// A Worker running on its own thread until stopped (or drained); joined on destruction.
class RunningWorker {
 public:
  RunningWorker(Queue& queue, WorkerOptions options,
                const std::function<void(Worker&)>& register_handlers);
  ~RunningWorker();
  RunningWorker(const RunningWorker&) = delete;
  RunningWorker& operator=(const RunningWorker&) = delete;

  Worker& worker() { return worker_; }
  void stop() { worker_.stop(); }
  // Waits for run() to return (up to `patience`); its result.
  Status join(std::chrono::seconds patience = 30s);

 private:
  Worker worker_;
  std::optional<Status> result_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
};

class WorkerTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override;

  // Re-opens q() with these options (same database).
  Queue& reopen(QueueOptions options);
  Queue& q() { return *queue_; }
  Queue open_another(QueueOptions options = {});
  const std::string& url() const { return url_; }

  JobId enqueue(const std::string& queue, std::string payload = "x", int max_attempts = 25,
                std::optional<Duration> delay = std::nullopt);
  Job get(JobId id);
  QueueStats stats(const std::string& queue);
  // Polls until the job is in the state (up to 10 s).
  bool wait_for_state(JobId id, JobState state);
  bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds patience = 10s);

  // Worker options for tests: short leases and waits, drain by default, the test's logger.
  WorkerOptions options(bool drain = true);

  LogEvents log_;

 private:
  std::string url_;
  std::optional<Queue> queue_;
};

// Blocks until `cancel` fires (or 30 s pass); then returns a failure saying so.
JobResult wait_for_cancel(const Job&, std::stop_token cancel);

}  // namespace readpast::test
