// readpast metrics — the queues' statistics and recorded counters in Prometheus text format, e.g.
// for a node_exporter textfile collector or a scrape through a small wrapper.
#include <CLI/CLI.hpp>
#include <memory>
#include <optional>

#include "cli/arguments.hpp"
#include "cli/session.hpp"
#include "core/prometheus.hpp"

namespace readpast::cli {

Command add_metrics_command(CLI::App& parent) {
  auto queue_name = std::make_shared<std::optional<std::string>>();
  auto* app = add_command(
      parent, "metrics", "Print queue metrics in Prometheus text format",
      "Print the jobs of every queue (or of QUEUE) per state, the scheduled ones, the age of "
      "the oldest available job and whether the queue is paused, in the Prometheus text "
      "exposition format (gauges readpast_jobs{queue,state}, readpast_jobs_scheduled, "
      "readpast_jobs_expired, "
      "readpast_queue_oldest_available_age_seconds, readpast_queue_paused); then the counters "
      "and histograms that workers and servers recorded and flushed to the database "
      "(readpast_jobs_completed_total, readpast_job_run_seconds and the rest of "
      "docs/metrics.md), which outlive the jobs they count; last, what each table of the "
      "storage takes on disk (readpast_storage_bytes{relation}) and how old the oldest "
      "snapshot is that keeps old rows from being reclaimed "
      "(readpast_oldest_snapshot_age_seconds, readpast_oldest_snapshot_transactions).");
  app->add_option("QUEUE", *queue_name, "Only this queue");
  return {
      app, [queue_name](Session& session) -> CliStatus {
        if (*queue_name) {
          if (auto ok = check_queue_name(**queue_name); !ok) return ok;
        }
        auto queue = session.open_to_read();
        if (!queue) return fail_cli(queue.error());
        auto stats = *queue_name ? queue->stats(std::string_view(**queue_name)) : queue->stats();
        if (!stats) return fail_cli(failure(stats.error()));
        auto recorded = queue->metrics();
        if (!recorded) return fail_cli(failure(recorded.error()));
        if (*queue_name) {
          std::erase_if(*recorded, [&](const MetricSample& m) { return m.queue != **queue_name; });
        }
        auto health = queue->storage_health();
        if (!health) return fail_cli(failure(health.error()));
        session.console().write_stdout(detail::prometheus_text(*stats) +
                                       detail::prometheus_recorded_text(*recorded) +
                                       detail::prometheus_storage_text(*health));
        return {};
      }};
}

}  // namespace readpast::cli
