// core/prometheus.hpp — queue statistics in the Prometheus text exposition format
// (version 0.0.4), for `readpast metrics` and the server's /metrics.
//
//   readpast_jobs{queue="emails",state="available"} 12      (every stored state)
//   readpast_jobs_scheduled{queue="emails"} 3               (available, run_at in the future)
//   readpast_queue_oldest_available_age_seconds{queue="emails"} 4.2
//   readpast_queue_paused{queue="emails"} 0
//   readpast_storage_bytes{relation="live"} 1114112    (prometheus_storage_text)
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "readpast/options.hpp"

namespace readpast::detail {

std::string prometheus_text(const std::vector<QueueStats>& stats);

// The counters and histograms processes recorded and flushed (Queue::metrics), every
// family of core/queue_metrics.hpp with its HELP and TYPE lines; a histogram's _sum, stored
// in microseconds, in seconds.
//   readpast_jobs_completed_total{queue="emails"} 5400
//   readpast_job_run_seconds_bucket{queue="emails",le="0.25"} 5311
std::string prometheus_recorded_text(const std::vector<MetricSample>& samples);

// The storage's health (Queue::storage_health): each table's size, and the oldest snapshot
// that holds back the reclaiming of old row versions (both series left out when there is
// none, or the engine cannot tell).
//   readpast_storage_bytes{relation="live"} 1114112
//   readpast_oldest_snapshot_age_seconds 312.5
//   readpast_oldest_snapshot_transactions 120034
std::string prometheus_storage_text(const StorageHealth& health);

// A label value with \, " and newlines escaped as the format requires.
std::string prometheus_label(std::string_view value);

}  // namespace readpast::detail
