// readpast metrics — the queues' statistics in Prometheus text format, e.g. for a
// node_exporter textfile collector or a scrape through a small wrapper.
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
      "readpast_queue_oldest_available_age_seconds, readpast_queue_paused).");
  app->add_option("QUEUE", *queue_name, "Only this queue");
  return {app, [queue_name](Session& session) -> CliStatus {
            if (*queue_name) {
              if (auto ok = check_queue_name(**queue_name); !ok) return ok;
            }
            auto queue = session.open_to_read();
            if (!queue) return fail_cli(queue.error());
            auto stats =
                *queue_name ? queue->stats(std::string_view(**queue_name)) : queue->stats();
            if (!stats) return fail_cli(failure(stats.error()));
            session.console().write_stdout(detail::prometheus_text(*stats));
            return {};
          }};
}

}  // namespace readpast::cli
