// cli/session.hpp — what every command gets once the command line has parsed: the
// global options (validated), the console and the logger, and a way to open the database.
//
// Thread-safety: a Session lives on the main thread; its console and logger are
// thread-safe and may be handed to other threads.
#pragma once

#include <spdlog/logger.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "cli/cli_error.hpp"
#include "cli/console.hpp"
#include "cli/logging.hpp"
#include "core/secret_scrubber.hpp"
#include "readpast/queue.hpp"

namespace CLI {
class App;
}

namespace readpast::cli {

inline constexpr std::string_view kDefaultDatabaseUrl = "sqlite:readpast.db";

// The global options as written on the command line.
struct GlobalOptions {
  std::string db_url;               // --db, else READPAST_DB, else kDefaultDatabaseUrl
  std::string max_payload;          // --max-payload; empty: the library's default
  int verbose = 0;                  // -v
  bool quiet = false;               // -q
  std::string log_format = "text";  // --log-format text|json
};

class Session {
 public:
  // REQUIRES: db_url has been checked (check_database_url).
  Session(std::string db_url, std::size_t max_payload_bytes, int verbosity, bool json_logs);

  const std::string& db_url() const noexcept { return db_url_; }
  // The URL with any password replaced by "***": the only form that may be printed.
  std::string printable_db_url() const;
  std::size_t max_payload_bytes() const noexcept { return max_payload_bytes_; }
  int verbosity() const noexcept { return verbosity_; }
  Console& console() noexcept { return console_; }
  spdlog::logger& log() noexcept { return *logger_; }
  // Switches the log lines to the worker's timestamped form.
  void use_worker_log_style();
  // The secrets scrubbed from every log line and from the last line of a failure: the
  // database password (of the URL, and PGPASSWORD) and the HTTP API token
  // (READPAST_TOKEN).
  const detail::SecretScrubber& secrets() const noexcept { return secrets_; }
  // Adds a secret (a token given on the command line). REQUIRES: no library_logger()
  // handed out yet; log() is replaced.
  void add_secret(std::string_view secret);

  // Opens the database with the logger and payload limit filled in. A missing database
  // file or schema is a failure (exit 1) that says to run `readpast init`.
  CliResult<Queue> open(QueueOptions options = {});
  // The same, for commands that only read (stats, list, show, metrics): a SQLite file that
  // cannot be written, or whose directory or file system cannot, is still read
  // (QueueOptions::read_only).
  CliResult<Queue> open_to_read();
  // The library's logger, forwarding to log() (or, for JSON logs, to the console).
  Logger library_logger();

 private:
  std::string db_url_;
  std::size_t max_payload_bytes_;
  int verbosity_;
  LogStyle style_;
  detail::SecretScrubber secrets_;
  Console console_;
  std::shared_ptr<spdlog::logger> logger_;
};

// A subcommand and what it does once parsing is complete.
struct Command {
  CLI::App* app = nullptr;
  std::function<CliStatus(Session&)> run;
};

// Adds a subcommand: `summary` (one line) is listed by 'readpast --help', `details` opens
// 'readpast NAME --help' (wrapped to the width of a terminal).
CLI::App* add_command(CLI::App& parent, const std::string& name, const std::string& summary,
                      const std::string& details);

// One per file cmd_NAME.cpp; each adds its subcommand to `parent`.
Command add_init_command(CLI::App& parent);
Command add_enqueue_command(CLI::App& parent);
Command add_work_command(CLI::App& parent);
Command add_stats_command(CLI::App& parent);
Command add_list_command(CLI::App& parent);
Command add_show_command(CLI::App& parent);
Command add_progress_command(CLI::App& parent);
Command add_retry_command(CLI::App& parent);
Command add_cancel_command(CLI::App& parent);
Command add_purge_command(CLI::App& parent);
Command add_rescue_command(CLI::App& parent);
Command add_pause_command(CLI::App& parent);
Command add_limit_command(CLI::App& parent);
Command add_resume_command(CLI::App& parent);
Command add_schedule_command(CLI::App& parent);
Command add_metrics_command(CLI::App& parent);
Command add_workers_command(CLI::App& parent);
Command add_serve_command(CLI::App& parent);

// The whole program: parses argv, runs the command, prints "readpast: <reason>" on
// failure. Returns the exit code.
int run_cli(int argc, char** argv);

}  // namespace readpast::cli
