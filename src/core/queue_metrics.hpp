// core/queue_metrics.hpp — what one Queue counts and times between two flushes to the
// database (docs/metrics.md): job outcomes per queue, histograms of run time, queue wait and
// lease round trips, and database errors by kind. The database keeps the sums
// (readpast_metrics), so that they outlive the jobs they count and add up over every
// process.
//
// Settling calls carry only ids and tokens: the queue of a job and when it was leased come
// from the lease this Queue handed out. A job leased by another process (or another Queue
// object) is not counted when it settles here.
//
// Thread-safety: every member may be called from many threads at once (one mutex).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/limits.hpp"
#include "readpast/error.hpp"
#include "readpast/job.hpp"
#include "readpast/options.hpp"

namespace readpast::detail {

enum class Outcome : std::uint8_t { kCompleted, kFailed, kDead, kLeaseLost, kRescued };
inline constexpr std::size_t kOutcomeCount = 5;
enum class Timing : std::uint8_t { kRun, kWait, kLease };
inline constexpr std::size_t kTimingCount = 3;

// Upper bounds of the histograms' buckets in seconds; +Inf follows.
inline constexpr std::array<double, 15> kBucketBounds = {
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};

// One metric family as /metrics shows it.
struct MetricFamily {
  std::string_view name;  // without _bucket/_sum/_count for histograms
  std::string_view type;  // "counter" or "histogram"
  std::string_view help;
};
// Every family a Queue records, in the order /metrics shows them.
std::span<const MetricFamily> recorded_metric_families();

class QueueMetrics {
 public:
  using Clock = std::chrono::steady_clock;

  explicit QueueMetrics(Duration flush_interval)
      : flush_interval_(flush_interval), next_flush_(Clock::now() + flush_interval) {}

  // False when the Queue records nothing (metrics_interval zero).
  bool enabled() const noexcept { return flush_interval_ > Duration::zero(); }

  // Jobs a lease handed out: remembered until they settle, each observed for its queue wait
  // (from when it became due to its start, on the database's clock); the round trip is
  // observed once for the call.
  void leased(std::string_view queue, std::span<const Job> jobs, Duration lease_duration,
              Duration round_trip);
  // A settling call's answer for one job this Queue leased: its outcome is counted in its
  // queue and its run time (lease to settle) observed; then it is forgotten.
  void settled(JobId id, Outcome outcome);
  // A release: the job is forgotten without an outcome.
  void forget(JobId id);
  void rescued(std::string_view queue, std::int64_t count);
  // A lease of the queue that the limit cut short while a due job was left behind.
  void throttled(std::string_view queue, LimitKind limit);
  // A call the database failed (unavailable, schema, internal); other codes are the
  // caller's, not the database's, and are ignored.
  void database_error(ErrorCode code);

  // True at most once per interval: the caller that gets it flushes.
  bool flush_due();
  // Everything recorded since the last take, as rows to add to the database, and forgets
  // it (with the leased jobs that never settled here long after their lease).
  std::vector<MetricSample> take();
  // Rows a flush could not write, added again to the next take.
  void put_back(std::vector<MetricSample> rows);

 private:
  struct Tally {
    std::array<std::int64_t, kOutcomeCount> outcomes{};
    std::array<std::int64_t, kLimitKindCount> throttled{};
    // Per timing: non-cumulative bucket counts (the last is +Inf), the sum in microseconds.
    std::array<std::array<std::int64_t, kBucketBounds.size() + 1>, kTimingCount> buckets{};
    std::array<std::int64_t, kTimingCount> sum_us{};
    std::array<std::int64_t, kTimingCount> count{};
  };
  struct InHand {
    Tally* tally;  // points into tallies_ (std::map nodes never move)
    Clock::time_point leased_at;
    Clock::time_point forget_at;
  };

  Tally& tally_for(std::string_view queue);  // REQUIRES: mu_ held
  static void observe(Tally& tally, Timing timing, Duration d);

  const Duration flush_interval_;
  std::mutex mu_;
  // Guarded by mu_.
  std::map<std::string, Tally, std::less<>> tallies_;
  std::unordered_map<JobId, InHand> in_hand_;
  std::map<ErrorCode, std::int64_t> errors_;
  std::vector<MetricSample> unsent_;
  Clock::time_point next_flush_;
};

}  // namespace readpast::detail
