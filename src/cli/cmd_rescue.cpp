// readpast rescue — ends expired leases now, instead of waiting for a worker of the queue to
// lease (workers rescue their queues' expired leases before leasing, `serve` every second).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>

#include "cli/arguments.hpp"
#include "cli/session.hpp"

namespace readpast::cli {
namespace {

CliStatus rescue(Session& session, const std::optional<std::string>& name) {
  if (name) {
    if (auto ok = check_queue_name(*name); !ok) return ok;
  }
  auto queue = session.open();
  if (!queue) return fail_cli(queue.error());
  auto rescued = name ? queue->rescue_expired(*name) : queue->rescue_expired_all();
  if (!rescued) return fail_cli(failure(rescued.error()));
  session.console().write_stdout(
      name ? fmt::format("rescued {} job(s) of queue {}\n", *rescued, *name)
           : fmt::format("rescued {} job(s)\n", *rescued));
  return {};
}

}  // namespace

Command add_rescue_command(CLI::App& parent) {
  auto name = std::make_shared<std::optional<std::string>>();
  auto* app = add_command(
      parent, "rescue", "End expired leases now",
      "End the expired leases of QUEUE (or of every queue): each running job whose lease has "
      "passed goes back to available, or to dead when its attempts are spent, with last_error "
      "saying so. Prints how many jobs moved. Workers do the same for their queues before they "
      "lease, and 'readpast serve' for every queue; this is for queues nobody works on now. "
      "'stats' counts such jobs as 'expired'.");
  app->add_option("QUEUE", *name, "Only this queue");
  return {app, [name](Session& session) { return rescue(session, *name); }};
}

}  // namespace readpast::cli
