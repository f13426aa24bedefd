// cli/progress.hpp — the live progress line of `readpast work` on a terminal: done,
// failed, running and the recent rate, redrawn about four times a second. Nothing is
// drawn when stderr is not a terminal (Console decides).
//
// Thread-safety: owns one drawing thread, started by the constructor and stopped by the
// destructor; `read` is called on that thread and must be thread-safe.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "cli/console.hpp"
#include "readpast/worker.hpp"

namespace readpast::cli {

class ProgressLine {
 public:
  ProgressLine(Console& console, std::function<WorkerCounters()> read);
  ~ProgressLine();  // stops drawing and erases the line
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

 private:
  void loop(std::stop_token stop);

  // Constant after construction.
  Console& console_;
  std::function<WorkerCounters()> read_;

  std::mutex mu_;                   // only for waiting on cv_
  std::condition_variable_any cv_;  // woken by the jthread's stop request
  std::jthread thread_;             // last: started once the members above exist
};

// "12 done, 1 failed, 4 running, 35.2 jobs/s"
std::string format_progress(const WorkerCounters& counters, double rate);

}  // namespace readpast::cli
