// cli/retention_args.hpp — the --retain-succeeded, --retain-cancelled and --retain-dead
// options, which `work` and `serve` both take: each deletes, on its turns at retention, the
// finished jobs older than these (QueueOptions::retention).
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <optional>
#include <string>

#include "cli/cli_error.hpp"
#include "readpast/options.hpp"

namespace CLI {
class App;
}

namespace readpast::cli {

struct RetentionArgs {
  std::optional<std::string> succeeded;
  std::optional<std::string> cancelled;
  std::optional<std::string> dead;
};

// Adds the three options to `app`, writing into `args` (which must outlive parsing).
void add_retention_options(CLI::App& app, RetentionArgs& args);
// The policy they ask for, from the library's defaults; a usage error names the option.
CliResult<Retention> parse_retention(const RetentionArgs& args);

}  // namespace readpast::cli
