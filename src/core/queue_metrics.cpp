#include "core/queue_metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

namespace readpast::detail {

namespace {

constexpr std::array<MetricFamily, 8> kFamilies = {{
    {"readpast_jobs_completed_total", "counter",
     "Jobs that succeeded, counted by the process that leased them."},
    {"readpast_jobs_failed_total", "counter",
     "Failed attempts (retried or dead), counted by the process that leased them."},
    {"readpast_jobs_dead_total", "counter",
     "Failed attempts that left the job dead (no attempts left, or discarded)."},
    {"readpast_leases_lost_total", "counter",
     "Settling calls the lease token refused (the job was cancelled or taken over)."},
    {"readpast_jobs_rescued_total", "counter",
     "Running jobs whose lease expired, moved back to available (or dead) by a rescue."},
    {"readpast_job_run_seconds", "histogram",
     "From a job's lease to its settling call, in the process that leased it."},
    {"readpast_job_wait_seconds", "histogram",
     "From when a job was due (enqueued, or its run_at) to its start, on the database's clock."},
    {"readpast_lease_seconds", "histogram", "Round trip of one lease call to the database."},
}};
// Per queue, labelled by the limit (running, rate) that cut the lease short.
constexpr MetricFamily kThrottledFamily = {
    "readpast_lease_throttled_total", "counter",
    "Leases that took fewer jobs than asked because of a queue's limit, while a due job was "
    "left."};
// Not a per-queue family: counted for the whole process.
constexpr MetricFamily kErrorsFamily = {"readpast_database_errors_total", "counter",
                                        "Calls the database failed, by kind."};
constexpr std::array<MetricFamily, kFamilies.size() + 2> kAllFamilies = [] {
  std::array<MetricFamily, kFamilies.size() + 2> all{};
  std::copy(kFamilies.begin(), kFamilies.end(), all.begin());
  all[kFamilies.size()] = kThrottledFamily;
  all.back() = kErrorsFamily;
  return all;
}();

constexpr std::array<std::size_t, kOutcomeCount> kOutcomeFamily = {0, 1, 2, 3, 4};
constexpr std::array<std::size_t, kTimingCount> kTimingFamily = {5, 6, 7};

// A job that was leased here and never settled here is forgotten this long after its lease
// (its worker dropped it, or settled it through another process).
constexpr Duration kForgetUnsettled = std::chrono::hours(1);

std::string bucket_label(std::size_t i) {
  return i < kBucketBounds.size() ? fmt::format("{}", kBucketBounds[i]) : std::string("+Inf");
}

}  // namespace

std::span<const MetricFamily> recorded_metric_families() {
  return kAllFamilies;
}

QueueMetrics::Tally& QueueMetrics::tally_for(std::string_view queue) {
  auto it = tallies_.find(queue);
  if (it == tallies_.end()) it = tallies_.emplace(std::string(queue), Tally{}).first;
  return it->second;
}

void QueueMetrics::observe(Tally& tally, Timing timing, Duration d) {
  const auto t = static_cast<std::size_t>(timing);
  const double seconds = std::chrono::duration<double>(std::max(d, Duration::zero())).count();
  const auto bucket = static_cast<std::size_t>(
      std::lower_bound(kBucketBounds.begin(), kBucketBounds.end(), seconds) -
      kBucketBounds.begin());
  ++tally.buckets[t][bucket];
  tally.sum_us[t] += std::max<std::int64_t>(d.count(), 0);
  ++tally.count[t];
}

void QueueMetrics::leased(std::string_view queue, std::span<const Job> jobs,
                          Duration lease_duration, Duration round_trip) {
  if (!enabled()) return;
  const auto now = Clock::now();
  std::lock_guard lock(mu_);
  Tally& tally = tally_for(queue);
  observe(tally, Timing::kLease, round_trip);
  for (const Job& job : jobs) {
    if (job.started_at) {
      observe(tally, Timing::kWait, *job.started_at - std::max(job.enqueued_at, job.run_at));
    }
    in_hand_.insert_or_assign(job.id, InHand{&tally, now, now + lease_duration + kForgetUnsettled});
  }
}

void QueueMetrics::settled(JobId id, Outcome outcome) {
  if (!enabled()) return;
  const auto now = Clock::now();
  std::lock_guard lock(mu_);
  auto it = in_hand_.find(id);
  if (it == in_hand_.end()) return;
  Tally& tally = *it->second.tally;
  ++tally.outcomes[static_cast<std::size_t>(outcome)];
  // A dead job's attempt failed too: failed counts every failed attempt.
  if (outcome == Outcome::kDead) ++tally.outcomes[static_cast<std::size_t>(Outcome::kFailed)];
  if (outcome != Outcome::kLeaseLost) {
    observe(tally, Timing::kRun, std::chrono::duration_cast<Duration>(now - it->second.leased_at));
  }
  in_hand_.erase(it);
}

void QueueMetrics::forget(JobId id) {
  if (!enabled()) return;
  std::lock_guard lock(mu_);
  in_hand_.erase(id);
}

void QueueMetrics::rescued(std::string_view queue, std::int64_t count) {
  if (!enabled() || count <= 0) return;
  std::lock_guard lock(mu_);
  tally_for(queue).outcomes[static_cast<std::size_t>(Outcome::kRescued)] += count;
}

void QueueMetrics::throttled(std::string_view queue, LimitKind limit) {
  if (!enabled()) return;
  std::lock_guard lock(mu_);
  ++tally_for(queue).throttled[static_cast<std::size_t>(limit)];
}

void QueueMetrics::database_error(ErrorCode code) {
  if (!enabled()) return;
  if (code != ErrorCode::kUnavailable && code != ErrorCode::kSchema &&
      code != ErrorCode::kInternal) {
    return;
  }
  std::lock_guard lock(mu_);
  ++errors_[code];
}

bool QueueMetrics::flush_due() {
  if (!enabled()) return false;
  const auto now = Clock::now();
  std::lock_guard lock(mu_);
  if (now < next_flush_) return false;
  next_flush_ = now + flush_interval_;
  return true;
}

std::vector<MetricSample> QueueMetrics::take() {
  std::vector<MetricSample> rows;
  const auto now = Clock::now();
  std::lock_guard lock(mu_);
  // Whoever takes flushes: the next settling call need not, for another interval.
  next_flush_ = now + flush_interval_;
  rows.swap(unsent_);
  auto add = [&](std::string_view name, const std::string& queue, std::string label,
                 std::string label_value, std::int64_t value) {
    rows.push_back(
        MetricSample{std::string(name), queue, std::move(label), std::move(label_value), value});
  };
  for (auto& [queue, tally] : tallies_) {
    for (std::size_t o = 0; o < kOutcomeCount; ++o) {
      if (tally.outcomes[o] != 0)
        add(kFamilies[kOutcomeFamily[o]].name, queue, "", "", tally.outcomes[o]);
    }
    for (std::size_t l = 0; l < kLimitKindCount; ++l) {
      if (tally.throttled[l] != 0) {
        add(kThrottledFamily.name, queue, "limit", limit_kind_name(static_cast<LimitKind>(l)),
            tally.throttled[l]);
      }
    }
    for (std::size_t t = 0; t < kTimingCount; ++t) {
      if (tally.count[t] == 0) continue;
      const std::string_view family = kFamilies[kTimingFamily[t]].name;
      // Buckets are cumulative (le = "less than or equal"); cumulative counts add up across
      // flushes and processes like any count.
      std::int64_t cumulative = 0;
      for (std::size_t b = 0; b < tally.buckets[t].size(); ++b) {
        cumulative += tally.buckets[t][b];
        add(fmt::format("{}_bucket", family), queue, "le", bucket_label(b), cumulative);
      }
      add(fmt::format("{}_sum", family), queue, "", "", tally.sum_us[t]);
      add(fmt::format("{}_count", family), queue, "", "", tally.count[t]);
    }
    // Zeroed in place, not erased: in_hand_ points at the tallies.
    tally = Tally{};
  }
  for (const auto& [code, count] : errors_) {
    add(kErrorsFamily.name, "", "kind", std::string(to_string(code)), count);
  }
  errors_.clear();
  std::erase_if(in_hand_, [&](const auto& entry) { return entry.second.forget_at < now; });
  // One row per series, in key order: the order every flush writes rows in, so that two
  // processes flushing at once lock them in the same order and cannot deadlock.
  auto key = [](const MetricSample& m) {
    return std::tie(m.name, m.queue, m.label, m.label_value);
  };
  std::sort(rows.begin(), rows.end(),
            [&](const auto& a, const auto& b) { return key(a) < key(b); });
  std::vector<MetricSample> merged;
  for (auto& row : rows) {
    if (!merged.empty() && key(merged.back()) == key(row)) {
      merged.back().value += row.value;
    } else {
      merged.push_back(std::move(row));
    }
  }
  return merged;
}

void QueueMetrics::put_back(std::vector<MetricSample> rows) {
  std::lock_guard lock(mu_);
  for (auto& row : rows) unsent_.push_back(std::move(row));
}

}  // namespace readpast::detail
