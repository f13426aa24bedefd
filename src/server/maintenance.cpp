#include "server/maintenance.hpp"

#include <algorithm>

#include "worker/retention_turn.hpp"

namespace readpast::server {

Maintenance::Maintenance(Queue& queue, MaintenanceOptions options)
    : queue_(queue),
      options_(std::move(options)),
      logger_(options_.logger, LogLevel::kDebug),
      outage_(logger_) {}

Maintenance::~Maintenance() {
  stop();
}

void Maintenance::start() {
  thread_ = std::thread([this] { loop(); });
}

void Maintenance::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Maintenance::loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    if (auto done = run_once(); !done) {
      if (done.error().is_unavailable()) {
        outage_.failed("rescuing expired leases", done.error());
      } else {
        logger_.emit(LogLevel::kWarn, "cannot rescue expired leases: " + done.error().message,
                     {{"event", "rescue_error"}, {"error", done.error().message}});
      }
    } else {
      outage_.recovered("rescuing expired leases");
    }
    if (options_.retention_interval && Clock::now() >= next_retention_round_) {
      if (auto done = retention_once(); done) {
        outage_.recovered("retention");
      } else {
        // Tried again at the next round, one interval later.
        next_retention_round_ = Clock::now() + *options_.retention_interval;
        if (done.error().is_unavailable()) {
          outage_.failed("retention", done.error());
        } else {
          logger_.emit(LogLevel::kWarn, "retention stopped: " + done.error().message,
                       {{"event", "retention_error"}, {"error", done.error().message}});
        }
      }
    }
    // Jobs that finished (through the API, or by workers that stopped) tell the jobs that
    // wait for them; the workers' leases do it too, this is for when none runs.
    if (auto told = queue_.resolve_dependencies(); !told && !told.error().is_unavailable()) {
      logger_.emit(LogLevel::kWarn, "cannot resolve dependencies: " + told.error().message,
                   {{"event", "dependencies_error"}, {"error", told.error().message}});
    }
    // What the server's Queue counted (rescues, HTTP workers' jobs) joins the database's
    // totals; a failed flush keeps its counts for the next one.
    if (Clock::now() >= next_metrics_flush_) {
      (void)queue_.flush_metrics();
      next_metrics_flush_ = Clock::now() + queue_.options().metrics_interval;
    }
    lock.lock();
    // A zero rescue interval means "every lease" to a Queue; here it must not mean a spin.
    wake_.wait_for(lock,
                   std::max<Duration>(options_.rescue_interval, std::chrono::milliseconds(10)),
                   [this] { return stopping_; });
  }
  lock.unlock();
  (void)queue_.flush_metrics();
}

Status Maintenance::refresh_queues() {
  auto stats = queue_.stats();
  if (!stats) return fail_with(stats.error());
  queues_.clear();
  for (const QueueStats& s : *stats) {
    if (s.running > 0) queues_.push_back(s.queue);
  }
  return {};
}

Result<std::int64_t> Maintenance::run_once() {
  const auto now = Clock::now();
  if (now >= next_refresh_) {
    if (auto ok = refresh_queues(); !ok) return fail_with(ok.error());
    next_refresh_ = now + options_.refresh_interval;
  }
  std::int64_t total = 0;
  for (const std::string& name : queues_) {
    auto rescued = queue_.rescue_expired(name);
    if (!rescued) return fail_with(rescued.error());
    if (*rescued > 0) {
      logger_.emit(LogLevel::kInfo,
                   "queue " + name + ": " + std::to_string(*rescued) +
                       " job(s) whose lease expired went back to available (or dead)",
                   {{"event", "rescued"}, {"queue", name}, {"count", std::to_string(*rescued)}});
    }
    total += *rescued;
  }
  return total;
}

Result<std::int64_t> Maintenance::retention_once() {
  const Duration interval = options_.retention_interval.value_or(std::chrono::minutes(1));
  auto stats = queue_.stats();
  if (!stats) return fail_with(stats.error());
  auto pause = [this](Duration d) {
    std::unique_lock lock(mu_);
    return !wake_.wait_for(lock, d, [this] { return stopping_; });
  };
  std::int64_t total = 0;
  Clock::time_point next_round = Clock::now() + interval;
  for (const QueueStats& s : *stats) {
    if (s.succeeded + s.dead + s.cancelled == 0) continue;
    auto next = next_retention_.find(s.queue);
    if (next != next_retention_.end() && Clock::now() < next->second) {
      next_round = std::min(next_round, next->second);
      continue;
    }
    auto turn = worker::take_retention_turn(queue_, s.queue, interval, options_.by, pause);
    if (!turn) return fail_with(turn.error());
    next_retention_.insert_or_assign(s.queue, turn->claim_returned + interval);
    next_round = std::min(next_round, turn->claim_returned + interval);
    if (turn->removed > 0) {
      logger_.emit(
          LogLevel::kInfo,
          "retention: removed " + std::to_string(turn->removed) + " finished job(s) of " + s.queue,
          {{"event", "retention"}, {"queue", s.queue}, {"removed", std::to_string(turn->removed)}});
    }
    total += turn->removed;
  }
  next_retention_round_ = next_round;
  return total;
}

}  // namespace readpast::server
