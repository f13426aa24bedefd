// readpast retry — puts dead or cancelled jobs back to available, attempts reset to 0.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>

#include "cli/arguments.hpp"
#include "cli/job_changes.hpp"
#include "cli/job_text.hpp"
#include "cli/session.hpp"

namespace readpast::cli {
namespace {

struct RetryArgs {
  std::vector<JobId> ids;
  std::optional<std::string> queue;
  std::optional<std::string> state;
};

CliStatus retry(Session& session, const RetryArgs& args) {
  if (args.ids.empty() && !args.queue) {
    return fail_cli(usage_error("give job ids, or --queue QUEUE (with --state dead or cancelled)"));
  }
  if (args.state && !args.queue) {
    return fail_cli(usage_error("--state goes with --queue; job ids are retried in either state"));
  }
  JobState state = JobState::kDead;
  if (args.queue) {
    if (auto ok = check_queue_name(*args.queue); !ok) return ok;
    if (args.state) {
      auto parsed =
          parse_state_arg("--state", *args.state, {JobState::kDead, JobState::kCancelled});
      if (!parsed) return fail_cli(parsed.error());
      state = *parsed;
    }
  }
  auto queue = session.open();
  if (!queue) return fail_cli(queue.error());

  if (args.queue) {
    auto count = queue->retry_all(*args.queue, state);
    if (!count) return fail_cli(failure(count.error()));
    session.console().write_stdout(
        fmt::format("retried {} {} job(s) of queue {}\n", *count, to_string(state), *args.queue));
    return {};
  }
  std::vector<JobId> ids = unique_ids(args.ids);
  auto retried = queue->retry(ids);
  if (!retried) return fail_cli(failure(retried.error()));
  return report_changes(
      session, *queue, "retried", ids, *retried, "only dead or cancelled jobs can be retried",
      [](const Job& job) -> std::optional<std::string> {
        if (!is_finished(job.state) || job.state == JobState::kSucceeded || !job.unique_key) {
          return std::nullopt;
        }
        return fmt::format(
            "its unique key '{}' is held by a live job of queue {} (or by "
            "another of the jobs retried with it)",
            escape_for_terminal(*job.unique_key, 64), job.queue);
      });
}

}  // namespace

Command add_retry_command(CLI::App& parent) {
  auto args = std::make_shared<RetryArgs>();
  auto* app = add_command(
      parent, "retry", "Put dead or cancelled jobs back to available",
      "Put dead or cancelled jobs back to available, to run now with attempts reset to 0: "
      "the jobs ID..., or every job of --queue in --state (default: dead). Exits 1 when a "
      "given job does not exist or is in another state (the others are retried). A job "
      "whose unique key a live job of its queue holds stays where it is (retrying it would "
      "give the key to two live jobs); so do all but the oldest of several retried jobs "
      "that share a key.");
  auto* ids = app->add_option("ID", args->ids, "Job ids");
  auto* queue =
      app->add_option("--queue", args->queue, "Every job of this queue...")->type_name("QUEUE");
  app->add_option("--state", args->state, "...in this state: dead (default) or cancelled")
      ->type_name("STATE");
  ids->excludes(queue);
  return {app, [args](Session& session) { return retry(session, *args); }};
}

}  // namespace readpast::cli
