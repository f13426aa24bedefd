#include "cli/retention_args.hpp"

#include <CLI/CLI.hpp>

#include "cli/arguments.hpp"

namespace readpast::cli {
namespace {

// DUR, or "forever" (nullopt: kept until purged by hand).
CliResult<std::optional<Duration>> parse_retention_arg(std::string_view option,
                                                       std::string_view text) {
  if (text == "forever") return std::optional<Duration>{};
  auto d = parse_duration_arg(option, text);
  if (!d) return fail_cli(d.error());
  return std::optional<Duration>(*d);
}

}  // namespace

void add_retention_options(CLI::App& app, RetentionArgs& args) {
  app.add_option("--retain-succeeded", args.succeeded,
                 "How long succeeded jobs are kept; 0 deletes them on completion (default: 24h)")
      ->type_name("DUR");
  app.add_option("--retain-cancelled", args.cancelled,
                 "How long cancelled jobs are kept, or 'forever' (default: 7d)")
      ->type_name("DUR");
  app.add_option("--retain-dead", args.dead,
                 "How long dead jobs are kept, or 'forever' (default: 7d)")
      ->type_name("DUR");
}

CliResult<Retention> parse_retention(const RetentionArgs& args) {
  Retention retention;
  if (args.succeeded) {
    auto d = parse_duration_arg("--retain-succeeded", *args.succeeded);
    if (!d) return fail_cli(d.error());
    retention.succeeded = *d;
  }
  if (args.cancelled) {
    auto d = parse_retention_arg("--retain-cancelled", *args.cancelled);
    if (!d) return fail_cli(d.error());
    retention.cancelled = *d;
  }
  if (args.dead) {
    auto d = parse_retention_arg("--retain-dead", *args.dead);
    if (!d) return fail_cli(d.error());
    retention.dead = *d;
  }
  return retention;
}

}  // namespace readpast::cli
