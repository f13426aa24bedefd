// server/metrics.hpp — Prometheus text exposition (format 0.0.4) for `GET /metrics`.
//
// From the database (one Queue::stats() call), for every queue:
//   readpast_jobs{queue="Q",state="S"}                  gauge: jobs per state; state is one of
//                                                       available (includes scheduled),
//                                                       scheduled, running, succeeded, dead,
//                                                       cancelled
//   readpast_queue_oldest_available_age_seconds{queue}  gauge: age of the oldest due job
//   readpast_queue_paused{queue}                        gauge: 1 when paused, else 0
// From this server:
//   readpast_http_requests_total{code="200"}            counter: responses by status
//   readpast_http_requests_in_flight                    gauge
//
// Thread-safety: render_queue_metrics is a pure function; RequestMetrics is safe to use from
// many threads at once (atomic counters).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "readpast/options.hpp"

namespace readpast::server {

// The database part, with # HELP and # TYPE lines: reusable by anything that has stats.
std::string render_queue_metrics(const std::vector<QueueStats>& stats);

// A label value with \, " and newline escaped.
std::string escape_label_value(std::string_view value);

class RequestMetrics {
 public:
  void record(int status) noexcept;
  std::string render(std::int64_t in_flight) const;

 private:
  static constexpr int kFirstStatus = 100;
  static constexpr int kLastStatus = 599;
  std::array<std::atomic<std::uint64_t>, kLastStatus - kFirstStatus + 1> by_status_{};
};

}  // namespace readpast::server
