// readpast stats — jobs per state, for every queue or one.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <memory>
#include <optional>

#include "cli/arguments.hpp"
#include "cli/output_table.hpp"
#include "cli/session.hpp"
#include "json/job_json.hpp"

namespace readpast::cli {
namespace {

struct StatsArgs {
  std::optional<std::string> queue;
  bool json = false;
};

std::string age_text(Duration age) {
  if (age <= Duration::zero()) return "-";
  // Whole seconds are plenty for an age; below a second, milliseconds.
  if (age >= std::chrono::seconds(1))
    age = std::chrono::duration_cast<std::chrono::seconds>(age);
  else
    age = std::chrono::duration_cast<std::chrono::milliseconds>(age);
  return format_duration(age);
}

CliStatus stats(Session& session, const StatsArgs& args) {
  if (args.queue) {
    if (auto ok = check_queue_name(*args.queue); !ok) return ok;
  }
  auto queue = session.open();
  if (!queue) return fail_cli(queue.error());
  auto result = args.queue ? queue->stats(std::string_view(*args.queue)) : queue->stats();
  if (!result) return fail_cli(failure(result.error()));
  std::vector<QueueStats> stats = std::move(*result);
  // A named queue without jobs is reported with zeros, not left out.
  if (args.queue && stats.empty()) stats.push_back(QueueStats{.queue = *args.queue});

  if (args.json) {
    session.console().write_stdout(json::dump_json(json::stats_to_json(stats)));
    return {};
  }
  using Align = Table::Align;
  Table table({{"QUEUE"},
               {"AVAILABLE", Align::kRight},
               {"SCHEDULED", Align::kRight},
               {"RUNNING", Align::kRight},
               {"SUCCEEDED", Align::kRight},
               {"DEAD", Align::kRight},
               {"CANCELLED", Align::kRight},
               {"OLDEST AVAILABLE", Align::kRight}});
  for (const auto& s : stats) {
    table.add_row({s.queue, std::to_string(s.available), std::to_string(s.scheduled),
                   std::to_string(s.running), std::to_string(s.succeeded), std::to_string(s.dead),
                   std::to_string(s.cancelled), age_text(s.oldest_available_age)});
  }
  session.console().write_stdout(table.render());
  return {};
}

}  // namespace

Command add_stats_command(CLI::App& parent) {
  auto args = std::make_shared<StatsArgs>();
  auto* app = add_command(
      parent, "stats", "Count jobs per state, per queue",
      "Count the jobs of every queue (or of QUEUE) per state. 'available' includes "
      "'scheduled' (run_at still in the future); OLDEST AVAILABLE is the age of the oldest "
      "job that is due and waiting.");
  app->add_option("QUEUE", args->queue, "Only this queue");
  app->add_flag("--json", args->json,
                "Print {\"queues\": {NAME: {available, scheduled, running, succeeded, dead, "
                "cancelled, oldest_available_age_s}}}");
  return {app, [args](Session& session) { return stats(session, *args); }};
}

}  // namespace readpast::cli
