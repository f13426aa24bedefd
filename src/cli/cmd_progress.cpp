// readpast progress — records a running job's progress, fenced by its lease token (what a
// `work --exec` command calls with $READPAST_JOB_ID and $READPAST_LEASE_TOKEN).
#include <CLI/CLI.hpp>
#include <memory>

#include "cli/input.hpp"
#include "cli/session.hpp"
#include "core/validate.hpp"

namespace readpast::cli {
namespace {

struct ProgressArgs {
  JobId id = 0;
  std::string token;
  std::string json = "-";
};

CliStatus record_progress(Session& session, const ProgressArgs& args) {
  auto token = LeaseToken::from_hex(args.token);
  if (!token) return fail_cli(usage_error("TOKEN: " + token.error().message));
  std::string json = args.json;
  if (json == "-") {
    auto input = read_stdin_payload(kMaxProgressBytes);
    if (!input) return fail_cli(usage_error("JSON: " + input.error().message));
    json = std::move(*input);
  }
  // Checked before the database is opened: bad text is a malformed command line.
  if (auto ok = detail::validate_progress(json); !ok) {
    return fail_cli(usage_error("JSON: " + ok.error().message));
  }
  auto queue = session.open();
  if (!queue) return fail_cli(queue.error());
  if (auto ok = queue->progress(args.id, *token, json); !ok) return fail_cli(failure(ok.error()));
  return {};
}

}  // namespace

Command add_progress_command(CLI::App& parent) {
  auto args = std::make_shared<ProgressArgs>();
  auto* app = add_command(
      parent, "progress", "Record a running job's progress",
      "Record JSON (any JSON value, at most 64 KiB; '-' or absent: stdin) as the progress of "
      "job ID, which must be running under the lease TOKEN: inside `work --exec`, "
      "readpast progress \"$READPAST_JOB_ID\" \"$READPAST_LEASE_TOKEN\" '{\"done\": 3}'. It "
      "replaces what was recorded before; `show` prints it. Exits 1 when the lease is lost "
      "(nothing changed), 2 when JSON is not JSON or too long.");
  app->add_option("ID", args->id, "Job id")->required();
  app->add_option("TOKEN", args->token, "The job's lease token (32 hex digits)")->required();
  app->add_option("JSON", args->json, "The progress, JSON text ('-': stdin, the default)");
  return {app, [args](Session& session) { return record_progress(session, *args); }};
}

}  // namespace readpast::cli
