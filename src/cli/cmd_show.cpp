// readpast show — every column of one job.
#include <CLI/CLI.hpp>
#include <chrono>
#include <memory>

#include "cli/job_text.hpp"
#include "cli/session.hpp"
#include "json/job_json.hpp"

namespace readpast::cli {
namespace {

struct ShowArgs {
  JobId id = 0;
  bool json = false;
};

CliStatus show(Session& session, const ShowArgs& args) {
  auto queue = session.open_to_read();
  if (!queue) return fail_cli(queue.error());
  auto job = queue->get(args.id);
  if (!job) return fail_cli(failure(job.error()));
  auto dependencies = queue->dependencies(args.id);
  if (!dependencies) return fail_cli(failure(dependencies.error()));
  if (args.json) {
    auto object = json::job_details_to_json(*job);
    object.update(json::dependencies_to_json(*dependencies));
    session.console().write_stdout(json::dump_json(object));
    return {};
  }
  const auto now = std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
  session.console().write_stdout(job_details(*job, now, *dependencies));
  return {};
}

}  // namespace

Command add_show_command(CLI::App& parent) {
  auto args = std::make_shared<ShowArgs>();
  auto* app = add_command(
      parent, "show", "Show every column of one job",
      "Show every column of job ID. As text, the payload is escaped (\\n, \\xNN, ...) so "
      "that control bytes cannot disturb the terminal.");
  app->add_option("ID", args->id, "Job id")->required();
  app->add_flag("--json", args->json,
                "Print a JSON object: id, queue, state, priority, run_at, attempts, "
                "max_attempts, lease_token, leased_by, lease_expires_at, enqueued_at, "
                "started_at, finished_at, unique_key, last_error (null when absent; times in "
                "RFC 3339), payload (text when valid UTF-8, else base64), payload_encoding "
                "(\"utf8\" or \"base64\"), progress (the JSON value the job recorded, or null), "
                "errors (every failed attempt, oldest first: attempt, at, worker, error), "
                "group, after and dependents (what the job waits for and what waits for it: "
                "{id, state, met} each, or {group, met}) and dependent_count");
  return {app, [args](Session& session) { return show(session, *args); }};
}

}  // namespace readpast::cli
