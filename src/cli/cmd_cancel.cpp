// readpast cancel — cancels available or running jobs.
#include <CLI/CLI.hpp>
#include <memory>

#include "cli/job_changes.hpp"
#include "cli/session.hpp"

namespace readpast::cli {

Command add_cancel_command(CLI::App& parent) {
  auto ids = std::make_shared<std::vector<JobId>>();
  auto* app = add_command(
      parent, "cancel", "Cancel available or running jobs",
      "Cancel jobs that are available or running. A running job's worker learns it at its "
      "next lease extension and kills the command; its result is discarded. Exits 1 when a "
      "given job does not exist or is already finished (the others are cancelled).");
  app->add_option("ID", *ids, "Job ids")->required();
  return {app, [ids](Session& session) -> CliStatus {
            auto queue = session.open();
            if (!queue) return fail_cli(queue.error());
            std::vector<JobId> requested = unique_ids(*ids);
            auto cancelled = queue->cancel(requested);
            if (!cancelled) return fail_cli(failure(cancelled.error()));
            return report_changes(session, *queue, "cancelled", requested, *cancelled,
                                  "only available or running jobs can be cancelled");
          }};
}

}  // namespace readpast::cli
