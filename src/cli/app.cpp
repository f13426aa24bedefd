// cli/app.cpp — the command line as a whole: global options, the subcommands, parsing,
// and turning every way a command can end into an exit code and one line on stderr.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/arguments.hpp"
#include "cli/session.hpp"
#include "cli/usage_errors.hpp"
#include "core/url.hpp"
#include "readpast/version.hpp"

namespace readpast::cli {
namespace {

// The URLs line names what every engine of this build takes (engines/engine_registry.hpp).
std::string footer() {
  std::string urls;
  for (const detail::UrlScheme* scheme : detail::registered_url_schemes()) {
    urls += (urls.empty() ? "" : ", ") + std::string(scheme->forms);
  }
  return "Database: --db URL, else $READPAST_DB, else sqlite:readpast.db.\nURLs: " + urls +
         R"(.
DUR: 500ms, 30s, 5m, 2h, 7d, 1.5s, 1m30s, 0. TIME: RFC 3339, e.g. 2026-11-22T10:00:00Z.

Exit status: 0 success; 2 malformed command line (nothing was done);
1 any other failure. The reason is one line on stderr, after "readpast: ".

Run 'readpast COMMAND --help' for the options of a command.)";
}

// CLI11's messages may span lines; the contract is one line.
std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

void print_error(const std::string& message) {
  std::cerr << "readpast: " << one_line(message) << std::endl;
}

// Wraps at spaces so that no line is longer than `width` (longer words stay whole).
std::string wrap(const std::string& text, std::size_t width) {
  std::string out;
  std::size_t line_length = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(start, end - start);
    if (line_length > 0 && line_length + 1 + word.size() > width) {
      out += '\n';
      line_length = 0;
    } else if (line_length > 0) {
      out += ' ';
      ++line_length;
    }
    out += word;
    line_length += word.size();
    start = end + 1;
  }
  return out;
}

}  // namespace

CLI::App* add_command(CLI::App& parent, const std::string& name, const std::string& summary,
                      const std::string& details) {
  auto* app = parent.add_subcommand(name, summary);
  // The subcommand's help shows its summary first; the details and the common notes
  // (database URL, DUR, exit codes) come after the options.
  app->footer(wrap(details, 88) + "\n\n" + parent.get_footer());
  return app;
}

int run_cli(int argc, char** argv) {
  GlobalOptions global;
  CLI::App app("readpast: a durable work queue in the database you already run.", "readpast");
  app.set_version_flag("--version", std::string("readpast ") + kVersion, "Print the version");
  app.set_help_flag("-h,--help", "Print this help");
  app.require_subcommand(1);
  // Global options are accepted after the subcommand too: readpast stats --db URL.
  app.fallthrough();
  app.footer(footer());
  app.add_option("--db", global.db_url,
                 "Database URL (default: $READPAST_DB, else sqlite:readpast.db)")
      ->envname("READPAST_DB")
      ->type_name("URL");
  app.add_option("--max-payload", global.max_payload,
                 "Largest payload accepted, e.g. 1MiB, 64KB (default: 16MiB)")
      ->type_name("SIZE");
  auto* verbose = app.add_flag("-v,--verbose", global.verbose, "Log more (debug lines)");
  app.add_flag("-q,--quiet", global.quiet, "Log only warnings and errors")->excludes(verbose);
  app.add_option("--log-format", global.log_format,
                 "Log lines as text (default) or one JSON object per line, with the event's "
                 "fields (job_id, queue, attempt, worker, error, ...) as keys")
      ->type_name("text|json")
      ->check(CLI::IsMember({"text", "json"}));

  std::vector<Command> commands = {
      add_init_command(app),     add_enqueue_command(app),  add_work_command(app),
      add_stats_command(app),    add_list_command(app),     add_show_command(app),
      add_retry_command(app),    add_cancel_command(app),   add_purge_command(app),
      add_pause_command(app),    add_resume_command(app),   add_limit_command(app),
      add_schedule_command(app), add_metrics_command(app),  add_rescue_command(app),
      add_workers_command(app),  add_progress_command(app),
  };
  commands.push_back(add_serve_command(app));

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    print_error(usage_error_message(e, app));
    return kExitUsage;
  }

  if (global.db_url.empty()) global.db_url = std::string(kDefaultDatabaseUrl);
  if (auto ok = check_database_url(global.db_url); !ok) {
    print_error(ok.error().message);
    return ok.error().exit_code;
  }
  std::size_t max_payload = QueueOptions{}.max_payload_bytes;
  if (!global.max_payload.empty()) {
    auto size = parse_size_arg("--max-payload", global.max_payload);
    if (!size) {
      print_error(size.error().message);
      return size.error().exit_code;
    }
    max_payload = *size;
  }

  Session session(global.db_url, max_payload, global.quiet ? -1 : global.verbose,
                  global.log_format == "json");
  for (auto& command : commands) {
    if (!command.app->parsed()) continue;
    CliStatus status;
    try {
      status = command.run(session);
    } catch (const std::exception& e) {
      status = fail_cli(failure(fmt::format("internal error: {}", e.what())));
    }
    if (!status) {
      session.console().clear_status();
      print_error(session.secrets().scrub(status.error().message));
      return status.error().exit_code;
    }
    return kExitOk;
  }
  print_error("no command given (see 'readpast --help')");
  return kExitUsage;
}

}  // namespace readpast::cli
