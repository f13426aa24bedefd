// readpast init — creates the database and its schema, or upgrades the schema in place.
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "cli/session.hpp"

namespace readpast::cli {

Command add_init_command(CLI::App& parent) {
  auto* app = add_command(
      parent, "init", "Create the database and its schema, or upgrade the schema",
      "Create the database (SQLite: the file) and its schema, or upgrade the schema in place; "
      "safe to run again. Prints the schema version.");
  return {app, [](Session& session) -> CliStatus {
            QueueOptions options;
            options.init_schema = true;
            auto queue = session.open(std::move(options));
            if (!queue) return fail_cli(queue.error());
            // Opening migrated already; init() is then a no-op that reports the version.
            auto version = queue->init();
            if (!version) return fail_cli(failure(version.error()));
            session.console().write_stdout(
                fmt::format("{}: schema version {}\n", session.printable_db_url(), *version));
            return {};
          }};
}

}  // namespace readpast::cli
