// server/maintenance.hpp — what `readpast serve` does for every queue, whether or not a
// worker handles it: ends expired leases at the interval workers use
// (QueueOptions::rescue_interval), so that a queue whose workers are all gone does not show
// its jobs as running for ever; and takes turns with the workers at retention
// (worker/retention_turn.hpp), so that a queue without workers does not keep its finished
// jobs for ever. What retention deletes is the server's Queue's policy
// (QueueOptions::retention), as a worker's turns delete by its own.
//
// Rescuing is cheap (an index of running jobs, per queue); finding the queues is not (a
// stats() counts every job). So the queues with running jobs are looked up every
// `refresh_interval`, and those are rescued every `rescue_interval`. A queue whose first job
// is leased after a look-up, by a worker that dies, is rescued at the next look-up. The queues
// with finished jobs are looked up once per `retention_interval`.
//
// Thread-safety: start() and stop() from the owner's thread; run_once() from one thread at a
// time (the background thread, or a test that did not start it).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/log.hpp"
#include "readpast/queue.hpp"
#include "worker/outage_log.hpp"

namespace readpast::server {

struct MaintenanceOptions {
  Duration rescue_interval = std::chrono::seconds(1);    // Default: 1s, as workers
  Duration refresh_interval = std::chrono::seconds(10);  // Default: 10s
  // How often each queue's retention turn is tried, as WorkerOptions::retention_interval.
  // nullopt: never.
  std::optional<Duration> retention_interval = std::chrono::minutes(1);  // Default: 1 min
  std::string by = "serve";  // who claims the retention turns (tasks.claimed_by)
  Logger logger;             // Default: nowhere
};

class Maintenance {
 public:
  // REQUIRES: `queue` outlives this object; both intervals > 0.
  Maintenance(Queue& queue, MaintenanceOptions options);
  ~Maintenance();
  Maintenance(const Maintenance&) = delete;
  Maintenance& operator=(const Maintenance&) = delete;

  void start();
  void stop();
  // One round: looks up the queues when due, then rescues their expired leases. Returns how
  // many jobs moved.
  Result<std::int64_t> run_once();
  // Takes the retention turn of each queue with finished jobs whose next try has come (see
  // retention_turn.hpp for when that is). Returns how many jobs were deleted.
  Result<std::int64_t> retention_once();

 private:
  using Clock = std::chrono::steady_clock;
  void loop();
  Status refresh_queues();

  // Constant after construction.
  Queue& queue_;
  const MaintenanceOptions options_;
  const detail::LevelledLogger logger_;
  worker::OutageLog outage_;

  // Used by run_once() only (one thread at a time).
  std::vector<std::string> queues_;  // queues that had running jobs at the last look-up
  Clock::time_point next_refresh_{};
  std::map<std::string, Clock::time_point, std::less<>> next_retention_;  // per queue
  Clock::time_point next_retention_round_{};
  Clock::time_point next_metrics_flush_{};  // used by loop() only

  std::mutex mu_;
  std::condition_variable wake_;  // with mu_: a stop
  bool stopping_ = false;         // guarded by mu_
  std::thread thread_;
};

}  // namespace readpast::server
