#include "report.hpp"

#include <unistd.h>

#include <chrono>
#include <condition_variable>

namespace readpast::bench {

Reporter::Reporter(std::FILE* out, nlohmann::json common) : out_(out), common_(std::move(common)) {}

void Reporter::emit(nlohmann::json line) {
  for (const auto& [key, value] : common_.items()) {
    if (!line.contains(key)) line[key] = value;
  }
  const std::string text = line.dump() + "\n";
  std::lock_guard lock(mu_);
  std::fputs(text.c_str(), out_);
  std::fflush(out_);
}

void Reporter::say(const std::string& text) {
  std::lock_guard lock(mu_);
  std::fprintf(stderr, "%s\n", text.c_str());
}

Progress::Progress(std::string label, std::int64_t total)
    : label_(std::move(label)),
      total_(total),
      tty_(::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()) {
  thread_ = std::jthread([this](std::stop_token stop) {
    std::mutex mu;
    std::condition_variable_any cv;
    auto last_line = std::chrono::steady_clock::now();
    std::unique_lock lock(mu);
    while (true) {
      // Wakes early when stop is requested (the predicate is only there for that).
      cv.wait_for(lock, stop, std::chrono::milliseconds(200), [] { return false; });
      if (stop.stop_requested()) return;
      if (tty_) {
        draw(false);
      } else if (std::chrono::steady_clock::now() - last_line >= std::chrono::seconds(10)) {
        draw(false);
        last_line = std::chrono::steady_clock::now();
      }
    }
  });
}

Progress::~Progress() {
  thread_.request_stop();
  thread_.join();
  draw(true);
}

void Progress::draw(bool final) {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const auto done = done_.load(std::memory_order_relaxed);
  const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
  char line[256];
  if (total_ > 0) {
    std::snprintf(line, sizeof line, "%-44s %9lld/%-9lld %10.0f/s %7.1fs", label_.c_str(),
                  static_cast<long long>(done), static_cast<long long>(total_), rate, elapsed);
  } else {
    std::snprintf(line, sizeof line, "%-44s %9lld %10.0f/s %7.1fs", label_.c_str(),
                  static_cast<long long>(done), rate, elapsed);
  }
  if (tty_) {
    std::fprintf(stderr, "\r\033[K%s%s", line, final ? "\n" : "");
  } else {
    std::fprintf(stderr, "%s\n", line);
  }
  std::fflush(stderr);
}

}  // namespace readpast::bench
