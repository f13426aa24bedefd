// bench/report.hpp — where results go: JSON lines (one measurement per line, the peer
// harness' format) and a progress display for the person watching.
//
// Thread-safety: Reporter::emit may be called from any thread. A Progress is created and
// destroyed by one thread; its counter may be advanced from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

namespace readpast::bench {

class Reporter {
 public:
  // Lines go to `out` (stdout or a file), each with the fields of `common` added.
  Reporter(std::FILE* out, nlohmann::json common);

  // Writes one line. Every line has "system", "metric", "value", "unit", "n" and
  // "concurrency", as the peer harness expects; the caller supplies them.
  void emit(nlohmann::json line);
  // A one-line human summary on stderr (kept apart from the JSON on stdout).
  void say(const std::string& text);

 private:
  std::mutex mu_;
  std::FILE* out_;
  const nlohmann::json common_;
};

// Shows "label  done/total  rate/s" on stderr while a measurement runs: redrawn in place
// five times a second on a terminal, or one line every 10 seconds otherwise (a log).
class Progress {
 public:
  Progress(std::string label, std::int64_t total);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void add(std::int64_t n) { done_.fetch_add(n, std::memory_order_relaxed); }
  void set(std::int64_t n) { done_.store(n, std::memory_order_relaxed); }
  std::atomic<std::int64_t>& counter() { return done_; }

 private:
  void draw(bool final);

  const std::string label_;
  const std::int64_t total_;
  const bool tty_;
  const std::chrono::steady_clock::time_point start_;
  std::atomic<std::int64_t> done_{0};
  std::jthread thread_;
};

}  // namespace readpast::bench
