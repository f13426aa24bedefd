#include "server/throughput.hpp"

namespace readpast::server {

Throughput::Throughput(Queue& queue, Duration interval, Duration history)
    : queue_(queue), interval_(interval), history_(history) {}

Throughput::~Throughput() {
  stop();
}

void Throughput::start() {
  thread_ = std::thread([this] { loop(); });
}

void Throughput::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Throughput::loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    // A database that is down leaves a gap in the chart; /healthz reports it.
    (void)sample_once();
    lock.lock();
    wake_.wait_for(lock, interval_, [this] { return stopping_; });
  }
}

Status Throughput::sample_once() {
  auto now = queue_.now();
  if (!now) return fail_with(now.error());
  const TimePoint end = *now - kSettle;
  std::optional<TimePoint> previous;
  {
    std::lock_guard lock(mu_);
    previous = last_tick_;
  }
  if (!previous) {
    std::lock_guard lock(mu_);
    last_tick_ = end;
    return {};
  }
  if (end <= *previous) return {};
  auto since_previous = queue_.finished_since(*previous);
  if (!since_previous) return fail_with(since_previous.error());
  auto since_end = queue_.finished_since(end);
  if (!since_end) return fail_with(since_end.error());

  Sample sample{end, end - *previous, {}};
  for (const auto& c : *since_previous) sample.counts[c.queue] = {c.succeeded, c.dead};
  for (const auto& c : *since_end) {
    auto& counts = sample.counts[c.queue];
    counts.first = std::max<std::int64_t>(0, counts.first - c.succeeded);
    counts.second = std::max<std::int64_t>(0, counts.second - c.dead);
  }
  std::lock_guard lock(mu_);
  last_tick_ = end;
  samples_.push_back(std::move(sample));
  while (!samples_.empty() && samples_.front().end < end - history_) samples_.pop_front();
  return {};
}

std::vector<Throughput::Point> Throughput::points(std::optional<std::string_view> queue) const {
  std::lock_guard lock(mu_);
  std::vector<Point> points;
  points.reserve(samples_.size());
  for (const auto& sample : samples_) {
    Point point{sample.end, sample.length, 0, 0};
    for (const auto& [name, counts] : sample.counts) {
      if (queue && name != *queue) continue;
      point.succeeded += counts.first;
      point.dead += counts.second;
    }
    points.push_back(point);
  }
  return points;
}

Throughput::Rate Throughput::rate(std::string_view queue, Duration window) const {
  std::lock_guard lock(mu_);
  if (samples_.empty()) return {};
  const TimePoint from = samples_.back().end - window;
  std::int64_t succeeded = 0;
  std::int64_t dead = 0;
  Duration covered{0};
  for (auto it = samples_.rbegin(); it != samples_.rend() && it->end > from; ++it) {
    covered += it->length;
    if (auto found = it->counts.find(queue); found != it->counts.end()) {
      succeeded += found->second.first;
      dead += found->second.second;
    }
  }
  double seconds = std::chrono::duration<double>(covered).count();
  if (seconds <= 0) return {};
  return {static_cast<double>(succeeded) / seconds, static_cast<double>(dead) / seconds};
}

}  // namespace readpast::server
