// readpast pause / resume — stop and restart the hand-out of a queue's jobs.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>

#include "cli/arguments.hpp"
#include "cli/session.hpp"

namespace readpast::cli {
namespace {

CliStatus set_paused(Session& session, const std::string& name, bool paused) {
  if (auto ok = check_queue_name(name); !ok) return ok;
  auto queue = session.open();
  if (!queue) return fail_cli(queue.error());
  auto done = paused ? queue->pause(name) : queue->resume(name);
  if (!done) return fail_cli(failure(done.error()));
  session.console().write_stdout(fmt::format("{} {}\n", paused ? "paused" : "resumed", name));
  return {};
}

Command add_toggle(CLI::App& parent, bool paused) {
  auto name = std::make_shared<std::string>();
  auto* app = paused
                  ? add_command(parent, "pause", "Stop handing out a queue's jobs",
                                "Pause QUEUE: no worker, on any host, leases its jobs until it is "
                                "resumed (the SQL function lease() too). Running jobs finish "
                                "normally; jobs can still be enqueued. Pausing twice is harmless.")
                  : add_command(parent, "resume", "Hand out a paused queue's jobs again",
                                "Resume QUEUE: its waiting workers are woken and lease its jobs "
                                "again. Resuming a queue that is not paused is harmless.");
  app->add_option("QUEUE", *name, "The queue")->required();
  return {app, [name, paused](Session& session) { return set_paused(session, *name, paused); }};
}

}  // namespace

Command add_pause_command(CLI::App& parent) {
  return add_toggle(parent, true);
}

Command add_resume_command(CLI::App& parent) {
  return add_toggle(parent, false);
}

}  // namespace readpast::cli
