// core/queue_metrics.hpp and its Prometheus rendering (core/prometheus.hpp): what a Queue
// counts between flushes, and how the stored totals read on /metrics.
#include "core/queue_metrics.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/prometheus.hpp"

namespace readpast::detail {
namespace {

using namespace std::chrono_literals;

Job leased_job(JobId id, TimePoint due, TimePoint started) {
  Job job;
  job.id = id;
  job.queue = "q";
  job.enqueued_at = due;
  job.run_at = due;
  job.started_at = started;
  return job;
}

const MetricSample* find(const std::vector<MetricSample>& rows, std::string_view name,
                         std::string_view le = "") {
  for (const auto& row : rows) {
    if (row.name == name && row.label_value == le) return &row;
  }
  return nullptr;
}

TEST(QueueMetrics, CountsOutcomesOfJobsItLeasedAndTimesThem) {
  QueueMetrics metrics(10s);
  const TimePoint t0{};
  std::vector<Job> jobs = {leased_job(1, t0, t0 + 20ms), leased_job(2, t0, t0 + 3s),
                           leased_job(3, t0, t0 + 400s)};
  metrics.leased("q", jobs, 30s, 2ms);
  metrics.settled(1, Outcome::kCompleted);
  metrics.settled(2, Outcome::kDead);
  metrics.settled(3, Outcome::kLeaseLost);
  metrics.settled(99, Outcome::kCompleted);  // not leased here: not counted
  metrics.settled(1, Outcome::kCompleted);   // already settled: not counted twice
  metrics.rescued("q", 4);
  metrics.database_error(ErrorCode::kUnavailable);
  metrics.database_error(ErrorCode::kLeaseLost);  // the caller's outcome, not the database's

  auto rows = metrics.take();
  ASSERT_NE(find(rows, "readpast_jobs_completed_total"), nullptr);
  EXPECT_EQ(find(rows, "readpast_jobs_completed_total")->value, 1);
  EXPECT_EQ(find(rows, "readpast_jobs_failed_total")->value, 1) << "a dead attempt failed too";
  EXPECT_EQ(find(rows, "readpast_jobs_dead_total")->value, 1);
  EXPECT_EQ(find(rows, "readpast_leases_lost_total")->value, 1);
  EXPECT_EQ(find(rows, "readpast_jobs_rescued_total")->value, 4);
  // Wait: 20ms, 3s and 400s, cumulative per bucket.
  EXPECT_EQ(find(rows, "readpast_job_wait_seconds_bucket", "0.01")->value, 0);
  EXPECT_EQ(find(rows, "readpast_job_wait_seconds_bucket", "0.025")->value, 1);
  EXPECT_EQ(find(rows, "readpast_job_wait_seconds_bucket", "5")->value, 2);
  EXPECT_EQ(find(rows, "readpast_job_wait_seconds_bucket", "300")->value, 2);
  EXPECT_EQ(find(rows, "readpast_job_wait_seconds_bucket", "+Inf")->value, 3);
  EXPECT_EQ(find(rows, "readpast_job_wait_seconds_sum")->value, 403'020'000);
  EXPECT_EQ(find(rows, "readpast_job_wait_seconds_count")->value, 3);
  // Run time: only the two that settled with an answer of their own.
  EXPECT_EQ(find(rows, "readpast_job_run_seconds_count")->value, 2);
  EXPECT_EQ(find(rows, "readpast_lease_seconds_count")->value, 1);
  EXPECT_EQ(find(rows, "readpast_lease_seconds_sum")->value, 2000);
  const MetricSample* errors = find(rows, "readpast_database_errors_total", "unavailable");
  ASSERT_NE(errors, nullptr);
  EXPECT_EQ(errors->value, 1);
  EXPECT_EQ(errors->queue, "");
  EXPECT_EQ(errors->label, "kind");
  EXPECT_EQ(find(rows, "readpast_database_errors_total", "lease_lost"), nullptr);

  // Taken means forgotten: the next take has only what happened since.
  EXPECT_TRUE(metrics.take().empty());
}

TEST(QueueMetrics, RowsAFlushCouldNotWriteComeBackAddedToTheNext) {
  QueueMetrics metrics(10s);
  metrics.rescued("q", 2);
  auto failed_flush = metrics.take();
  metrics.put_back(failed_flush);
  metrics.rescued("q", 3);
  auto rows = metrics.take();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].value, 5);
}

TEST(QueueMetrics, AZeroIntervalRecordsNothing) {
  QueueMetrics metrics(Duration::zero());
  std::vector<Job> jobs = {leased_job(1, TimePoint{}, TimePoint{})};
  metrics.leased("q", jobs, 30s, 1ms);
  metrics.settled(1, Outcome::kCompleted);
  metrics.rescued("q", 1);
  EXPECT_FALSE(metrics.flush_due());
  EXPECT_TRUE(metrics.take().empty());
}

TEST(QueueMetrics, RowsComeSortedBySeriesSoConcurrentFlushesLockInOneOrder) {
  QueueMetrics metrics(10s);
  metrics.rescued("zeta", 1);
  metrics.rescued("alpha", 1);
  metrics.database_error(ErrorCode::kInternal);
  auto rows = metrics.take();
  for (std::size_t i = 1; i < rows.size(); ++i) {
    EXPECT_LT(
        std::tie(rows[i - 1].name, rows[i - 1].queue, rows[i - 1].label, rows[i - 1].label_value),
        std::tie(rows[i].name, rows[i].queue, rows[i].label, rows[i].label_value));
  }
}

TEST(PrometheusRecorded, RendersEveryFamilyWithBucketsInOrderAndSumsInSeconds) {
  std::vector<MetricSample> stored = {
      {"readpast_job_run_seconds_sum", "q", "", "", 1'500'000},
      {"readpast_job_run_seconds_bucket", "q", "le", "+Inf", 3},
      {"readpast_job_run_seconds_bucket", "q", "le", "10", 3},
      {"readpast_job_run_seconds_bucket", "q", "le", "2.5", 2},
      {"readpast_job_run_seconds_count", "q", "", "", 3},
      {"readpast_jobs_completed_total", "q\"x", "", "", 7},
      {"readpast_database_errors_total", "", "kind", "unavailable", 2},
      {"not_ours", "q", "", "", 1},
  };
  const std::string text = prometheus_recorded_text(stored);
  EXPECT_NE(text.find("# TYPE readpast_jobs_completed_total counter\n"
                      "readpast_jobs_completed_total{queue=\"q\\\"x\"} 7\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE readpast_job_run_seconds histogram\n"
                      "readpast_job_run_seconds_bucket{queue=\"q\",le=\"2.5\"} 2\n"
                      "readpast_job_run_seconds_bucket{queue=\"q\",le=\"10\"} 3\n"
                      "readpast_job_run_seconds_bucket{queue=\"q\",le=\"+Inf\"} 3\n"
                      "readpast_job_run_seconds_sum{queue=\"q\"} 1.5\n"
                      "readpast_job_run_seconds_count{queue=\"q\"} 3\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("readpast_database_errors_total{kind=\"unavailable\"} 2\n"),
            std::string::npos);
  EXPECT_EQ(text.find("not_ours"), std::string::npos);
  for (const auto& family : recorded_metric_families()) {
    EXPECT_NE(text.find("# HELP " + std::string(family.name) + " "), std::string::npos)
        << family.name;
  }
}

}  // namespace
}  // namespace readpast::detail
