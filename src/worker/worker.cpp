// worker.cpp — readpast::Worker: validates what it is given, then hands the work to
// worker::Runtime.
#include "readpast/worker.hpp"

#include <unistd.h>

#include <mutex>
#include <set>

#include "core/validate.hpp"
#include "worker/host_name.hpp"
#include "worker/runtime.hpp"

namespace readpast {
namespace {

constexpr int kMaxConcurrency = 1024;
constexpr int kMaxPrefetch = detail::kMaxLeaseBatch;

Status validate(const QueueConfig& config) {
  if (config.concurrency < 1 || config.concurrency > kMaxConcurrency) {
    return fail_with(Error::invalid_argument("concurrency must be between 1 and 1024"));
  }
  if (config.prefetch < 0 || config.prefetch > kMaxPrefetch) {
    return fail_with(Error::invalid_argument("prefetch must be between 0 and 10000"));
  }
  if (config.concurrency + config.prefetch > detail::kMaxLeaseBatch) {
    return fail_with(Error::invalid_argument("concurrency + prefetch must not exceed 10000"));
  }
  if (config.timeout) {
    if (auto ok = detail::validate_positive_duration(*config.timeout, "timeout"); !ok) return ok;
  }
  if (config.max_attempts && *config.max_attempts < 1) {
    return fail_with(Error::invalid_argument("max_attempts must be at least 1"));
  }
  if (config.backoff) {
    if (auto ok = config.backoff->validate(); !ok) return ok;
  }
  return {};
}

Status validate(const WorkerOptions& options) {
  if (options.worker_id.size() > detail::kMaxWorkerIdBytes) {
    return fail_with(Error::invalid_argument("worker id must be at most 256 bytes long"));
  }
  if (auto ok = detail::validate_positive_duration(options.lease_duration, "lease duration"); !ok) {
    return ok;
  }
  if (auto ok = detail::validate_non_negative_duration(options.grace, "grace"); !ok) return ok;
  if (auto ok = detail::validate_positive_duration(options.idle_wait_min, "idle wait"); !ok) {
    return ok;
  }
  if (options.idle_wait_max < options.idle_wait_min || options.idle_wait_max > kMaxDuration) {
    return fail_with(Error::invalid_argument("idle_wait_max must be at least idle_wait_min"));
  }
  if (options.retention_interval) {
    if (auto ok =
            detail::validate_positive_duration(*options.retention_interval, "retention interval");
        !ok) {
      return ok;
    }
  }
  return {};
}

}  // namespace

std::string default_worker_id() {
  return worker::host_name() + "/" + std::to_string(::getpid());
}

struct Worker::State {
  // Constant after construction.
  Queue& queue;
  WorkerOptions options;

  std::mutex mu;
  // Guarded by mu.
  std::vector<worker::LaneSetup> lanes;
  bool started = false;
  bool stop_before_run = false;
  worker::Runtime* runtime = nullptr;  // while run() is going on
  WorkerCounters last_counters;

  State(Queue& q, WorkerOptions o) : queue(q), options(std::move(o)) {}
};

Worker::Worker(Queue& queue, WorkerOptions options)
    : state_(std::make_unique<State>(queue, std::move(options))) {}

Worker::~Worker() = default;

Status Worker::handle(std::string queue, JobHandler handler, QueueConfig config) {
  if (auto ok = validate_queue_name(queue); !ok) return ok;
  if (!handler) return fail_with(Error::invalid_argument("the handler of " + queue + " is empty"));
  if (auto ok = validate(config); !ok) {
    return fail_with(Error::invalid_argument("queue " + queue + ": " + ok.error().message));
  }
  std::lock_guard lock(state_->mu);
  if (state_->started) {
    return fail_with(Error::invalid_argument("handle() must be called before run()"));
  }
  for (const auto& lane : state_->lanes) {
    if (lane.queue == queue) {
      return fail_with(Error::invalid_argument("queue " + queue + " has a handler already"));
    }
  }
  state_->lanes.push_back(
      worker::LaneSetup{std::move(queue), std::move(handler), std::move(config)});
  return {};
}

Status Worker::run() {
  WorkerOptions options = state_->options;
  if (auto ok = validate(options); !ok) return ok;
  if (options.worker_id.empty()) options.worker_id = default_worker_id();
  if (!options.logger) options.logger = state_->queue.options().logger;
  std::vector<worker::LaneSetup> lanes;
  {
    std::lock_guard lock(state_->mu);
    if (state_->started) return fail_with(Error::invalid_argument("run() was called already"));
    state_->started = true;
    if (state_->lanes.empty()) {
      return fail_with(Error::invalid_argument("no queue to work on: call handle() first"));
    }
    if (state_->stop_before_run) return {};
    lanes = std::move(state_->lanes);
  }
  worker::Runtime runtime(state_->queue, std::move(options), std::move(lanes));
  {
    std::lock_guard lock(state_->mu);
    state_->runtime = &runtime;
  }
  Status result = runtime.run();
  std::lock_guard lock(state_->mu);
  state_->last_counters = runtime.counters();
  state_->runtime = nullptr;
  return result;
}

void Worker::stop() {
  std::lock_guard lock(state_->mu);
  if (state_->runtime != nullptr) {
    state_->runtime->request_stop();
  } else {
    state_->stop_before_run = true;
  }
}

WorkerCounters Worker::counters() const {
  std::lock_guard lock(state_->mu);
  return state_->runtime != nullptr ? state_->runtime->counters() : state_->last_counters;
}

}  // namespace readpast
