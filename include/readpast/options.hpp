// readpast/options.hpp — options of a Queue and of the calls that take more than an id.
//
// Thread-safety: plain values; distinct objects may be used from different threads freely.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "readpast/job.hpp"
#include "readpast/time.hpp"

namespace readpast {

// Exponential backoff with jitter and a cap, for failed attempts:
//   delay(n) = min(cap, base * 2^(n-1)), then scaled by a random factor in [1 - jitter, 1]
// where n is the attempt that just failed (1 for the first).
struct Backoff {                            // base <= cap <= 100 years
  Duration base = std::chrono::seconds(1);  // Default: 1s
  Duration cap = std::chrono::hours(1);     // Default: 1h
  double jitter = 0.2;                      // Default: 0.2 (0 = none, 1 = full jitter)

  // The delay before attempt n + 1 for a random draw r in [0, 1).
  Duration delay_after(int failed_attempt, double r) const;
  Status validate() const;
};

// Receives the library's log lines; the library itself never prints.
enum class LogLevel { kDebug, kInfo, kWarn, kError };
using Logger = std::function<void(LogLevel, const std::string&)>;

struct QueueOptions {
  // Payloads larger than this are rejected before anything reaches the database.
  std::size_t max_payload_bytes = 16u << 20;  // Default: 16 MiB
  // How long succeeded jobs are kept; zero deletes them on completion. Workers remove
  // older ones in small batches (see Queue::remove_expired_succeeded).
  Duration succeeded_retention = std::chrono::hours(24);  // Default: 24h
  // The default backoff, and one per queue name that overrides it.
  Backoff backoff;
  std::map<std::string, Backoff, std::less<>> queue_backoff;
  // How often lease() first returns jobs with expired leases to available (or dead).
  Duration rescue_interval = std::chrono::seconds(1);  // Default: 1s
  // Create or upgrade the schema when opening. Default: false (run `readpast init`).
  bool init_schema = false;
  // Where warnings go (e.g. "database busy, retrying"). Default: nowhere.
  Logger logger;
};

// What lease takes. Default: one job, 30s lease.
struct LeaseRequest {
  std::string queue;
  std::string worker_id;
  int max_jobs = 1;  // 1 to 10,000
  Duration lease_duration = std::chrono::seconds(30);
};

// Options of fail(). retry_after overrides the backoff; backoff overrides the queue's.
struct FailOptions {
  std::optional<Duration> retry_after;
  std::optional<Backoff> backoff;
};

// Where a failed job went.
enum class FailOutcome { kRetrying, kDead };

struct ListRequest {
  std::optional<std::string> queue;  // Default: every queue
  std::optional<JobState> state;     // Default: every state
  std::optional<JobId> after_id;     // keyset paging: only ids greater than this
  int limit = 100;
};

struct PurgeRequest {
  std::string queue;
  JobState state = JobState::kSucceeded;  // succeeded, dead or cancelled only
  std::optional<Duration> older_than;     // measured from finished_at
  std::optional<int> limit;               // delete at most this many (small batches)
};

struct QueueStats {
  std::string queue;
  std::int64_t available = 0;  // includes scheduled
  std::int64_t scheduled = 0;  // available with run_at in the future
  std::int64_t running = 0;
  std::int64_t succeeded = 0;
  std::int64_t dead = 0;
  std::int64_t cancelled = 0;
  // Age of the oldest available job whose run_at has come; zero when there is none.
  Duration oldest_available_age{0};
};

}  // namespace readpast
