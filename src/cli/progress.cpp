#include "cli/progress.hpp"

#include <fmt/format.h>

#include <chrono>
#include <deque>
#include <utility>

namespace readpast::cli {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kRedrawInterval = std::chrono::milliseconds(250);
constexpr auto kRateWindow = std::chrono::seconds(5);

}  // namespace

std::string format_progress(const WorkerCounters& c, double rate) {
  std::string line = fmt::format("{} done, {} failed", c.succeeded, c.failed);
  if (c.dead > 0) line += fmt::format(" ({} dead)", c.dead);
  line += fmt::format(", {} running, {:.1f} jobs/s", c.running, rate);
  if (c.lost > 0) line += fmt::format(", {} lost", c.lost);
  if (c.released > 0) line += fmt::format(", {} released", c.released);
  return line;
}

ProgressLine::ProgressLine(Console& console, std::function<WorkerCounters()> read)
    : console_(console), read_(std::move(read)) {
  console_.enable_status();
  if (!console_.stderr_is_terminal()) return;
  thread_ = std::jthread([this](std::stop_token stop) { loop(std::move(stop)); });
}

ProgressLine::~ProgressLine() {
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
  console_.clear_status();
}

void ProgressLine::loop(std::stop_token stop) {
  // (time, jobs finished) samples over the last kRateWindow, for a rate that follows
  // changes without jumping around on every redraw.
  std::deque<std::pair<Clock::time_point, std::int64_t>> samples;
  std::unique_lock lock(mu_);
  while (!stop.stop_requested()) {
    auto counters = read_();
    auto now = Clock::now();
    samples.emplace_back(now, counters.succeeded + counters.failed + counters.lost);
    while (samples.size() > 2 && now - samples.front().first > kRateWindow) samples.pop_front();
    double rate = 0;
    auto span = std::chrono::duration<double>(now - samples.front().first).count();
    if (span > 0) rate = static_cast<double>(samples.back().second - samples.front().second) / span;
    console_.show_status(format_progress(counters, rate));
    cv_.wait_for(lock, stop, kRedrawInterval, [] { return false; });
  }
}

}  // namespace readpast::cli
