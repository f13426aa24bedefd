// readpast purge — deletes finished jobs of a queue.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>

#include "cli/arguments.hpp"
#include "cli/session.hpp"

namespace readpast::cli {
namespace {

// Deleted per transaction, so that a big purge never holds SQLite's write lock for long
// and workers keep leasing in between.
constexpr int kPurgeBatch = 5000;

struct PurgeArgs {
  std::string queue;
  std::string state;
  std::optional<std::string> older_than;
};

CliStatus purge(Session& session, const PurgeArgs& args) {
  if (auto ok = check_queue_name(args.queue); !ok) return ok;
  auto state = parse_state_arg("--state", args.state,
                               {JobState::kSucceeded, JobState::kDead, JobState::kCancelled});
  if (!state) return fail_cli(state.error());
  PurgeRequest request;
  request.queue = args.queue;
  request.state = *state;
  request.limit = kPurgeBatch;
  if (args.older_than) {
    auto older = parse_duration_arg("--older-than", *args.older_than);
    if (!older) return fail_cli(older.error());
    request.older_than = *older;
  }
  auto queue = session.open();
  if (!queue) return fail_cli(queue.error());
  std::int64_t total = 0;
  for (;;) {
    auto deleted = queue->purge(request);
    if (!deleted) {
      return fail_cli(failure(
          fmt::format("{} ({} job(s) were purged before)", deleted.error().message, total)));
    }
    total += *deleted;
    if (*deleted < kPurgeBatch) break;
  }
  session.console().write_stdout(
      fmt::format("purged {} {} job(s) of queue {}\n", total, to_string(*state), args.queue));
  return {};
}

}  // namespace

Command add_purge_command(CLI::App& parent) {
  auto args = std::make_shared<PurgeArgs>();
  auto* app = add_command(
      parent, "purge", "Delete finished jobs of a queue",
      "Delete the jobs of QUEUE in --state (succeeded, dead or cancelled; never available or "
      "running), optionally only those finished more than --older-than ago. Prints how many.");
  app->add_option("QUEUE", args->queue, "Queue name")->required();
  app->add_option("--state", args->state, "succeeded, dead or cancelled")
      ->required()
      ->type_name("STATE");
  app->add_option("--older-than", args->older_than, "Only jobs finished more than DUR ago")
      ->type_name("DUR");
  return {app, [args](Session& session) { return purge(session, *args); }};
}

}  // namespace readpast::cli
