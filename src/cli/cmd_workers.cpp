// readpast workers — the worker processes that reported themselves in the last hour (every
// `readpast work` and readpast::Worker does, every few seconds), how long ago each last did,
// and what each runs now: Sidekiq's "Busy" page, on the command line.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "cli/arguments.hpp"
#include "cli/job_text.hpp"
#include "cli/output_table.hpp"
#include "cli/session.hpp"
#include "json/job_json.hpp"
#include "json/worker_json.hpp"

namespace readpast::cli {
namespace {

std::string age(double seconds) {
  return format_duration(
      std::chrono::duration_cast<Duration>(std::chrono::duration<double>(std::max(seconds, 0.0))));
}

CliStatus workers(Session& session, bool as_json) {
  auto queue = session.open_to_read();
  if (!queue) return fail_cli(queue.error());
  auto report = json::workers_report(*queue);
  if (!report) return fail_cli(failure(report.error()));
  if (as_json) {
    session.console().write_stdout(json::dump_json(*report));
    return {};
  }
  const auto& list = (*report)["workers"];
  if (list.empty()) {
    session.console().write_stdout("no worker reported in the last hour\n");
    return {};
  }
  using Align = Table::Align;
  Table table({{"WORKER"},
               {"QUEUES"},
               {"THREADS", Align::kRight},
               {"BUSY", Align::kRight},
               {"STARTED"},
               {"HEARTBEAT", Align::kRight},
               {"RUNNING"}});
  for (const auto& w : list) {
    std::string queues;
    for (const auto& q : w["queues"]) queues += (queues.empty() ? "" : ",") + q.get<std::string>();
    std::string running;
    for (const auto& job : w["jobs"]) {
      if (!running.empty()) running += ", ";
      running +=
          fmt::format("{} ({})", job["id"].get<JobId>(), age(job["running_for_s"].get<double>()));
    }
    table.add_row(
        {escape_for_terminal(w["name"].get<std::string>(), 60), escape_for_terminal(queues, 60),
         std::to_string(w["threads"].get<int>()), std::to_string(w["running"].get<std::size_t>()),
         w["started_at"].get<std::string>(), age(w["heartbeat_age_s"].get<double>()) + " ago",
         running.empty() ? "-" : escape_for_terminal(running, 80)});
  }
  session.console().write_stdout(table.render());
  return {};
}

}  // namespace

Command add_workers_command(CLI::App& parent) {
  auto as_json = std::make_shared<bool>(false);
  auto* app = add_command(
      parent, "workers", "List the worker processes and what they run",
      "List the worker processes that reported themselves in the last hour: name (the worker "
      "id their leases carry), queues, threads, how many jobs they run, when they started, how "
      "long ago their last heartbeat was (they report every 5s; one much older is gone or "
      "stuck) and the jobs they run with how long each has run. Ages are on the database's "
      "clock. A process is forgotten when it stops cleanly, or an hour after its last report.");
  app->add_flag("--json", *as_json, "Print JSON (the body of GET /api/workers)");
  return {app, [as_json](Session& session) { return workers(session, *as_json); }};
}

}  // namespace readpast::cli
