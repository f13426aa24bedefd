// readpast limit — a queue's global limits: at most N jobs running at once, at most N leases
// in any window of DUR (docs/workflows.md "Global limits").
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <memory>
#include <optional>

#include "cli/arguments.hpp"
#include "cli/job_text.hpp"
#include "cli/session.hpp"
#include "json/job_json.hpp"

namespace readpast::cli {
namespace {

struct LimitArgs {
  std::string queue;
  std::optional<std::string> running;
  std::optional<std::string> rate;
  bool clear = false;
  bool json = false;
};

// A whole number from 1 to kMaxRunningLimit, read by hand so that "0", "-1" and "5x" all get
// the same one-line usage error.
CliResult<std::int64_t> parse_running(std::string_view text) {
  std::int64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc{} || end != text.data() + text.size() || n < 1 || n > kMaxRunningLimit) {
    return fail_cli(
        usage_error(fmt::format("--running: expected a whole number from 1 to {}, got '{}'",
                                kMaxRunningLimit, escape_for_terminal(text, 32))));
  }
  return n;
}

CliStatus limit(Session& session, const LimitArgs& args) {
  if (auto ok = check_queue_name(args.queue); !ok) return ok;
  if (args.clear && (args.running || args.rate)) {
    return fail_cli(usage_error("--clear does not go with --running or --rate"));
  }
  QueueLimits limits;
  if (args.running) {
    auto n = parse_running(*args.running);
    if (!n) return fail_cli(n.error());
    limits.running = *n;
  }
  if (args.rate) {
    auto rate = parse_rate(*args.rate);
    if (!rate) return fail_cli(usage_error("--rate: " + rate.error().message));
    limits.rate = *rate;
  }
  const bool changes = args.clear || !limits.empty();
  auto queue = changes ? session.open() : session.open_to_read();
  if (!queue) return fail_cli(queue.error());
  if (args.clear) {
    if (auto done = queue->clear_limits(args.queue); !done) return fail_cli(failure(done.error()));
  } else if (!limits.empty()) {
    if (auto done = queue->set_limits(args.queue, limits); !done) {
      return fail_cli(failure(done.error()));
    }
  }
  auto now = queue->limits(args.queue);
  if (!now) return fail_cli(failure(now.error()));
  if (args.json) {
    session.console().write_stdout(json::dump_json(json::limits_to_json(*now)));
    return {};
  }
  session.console().write_stdout(fmt::format("{}: {}\n", args.queue, limits_text(*now)));
  return {};
}

}  // namespace

Command add_limit_command(CLI::App& parent) {
  auto args = std::make_shared<LimitArgs>();
  auto* app = add_command(
      parent, "limit", "Show or set a queue's global limits",
      "Limits that hold over every worker on every host: --running N (at most N jobs of QUEUE "
      "running at once; expired leases count until rescued) and --rate N/DUR (at most N leases "
      "of QUEUE in any window of DUR, e.g. 100/1s, 5000/1m). A limit never makes a worker wait "
      "for another: a lease returns fewer jobs, or none. Setting one keeps the other; --clear "
      "removes both. Prints the limits now in force (QUEUE alone: only prints them).");
  app->add_option("QUEUE", args->queue, "The queue")->required();
  app->add_option("--running", args->running, "At most N jobs running at once")->type_name("N");
  app->add_option("--rate", args->rate, "At most N leases in any window of DUR")
      ->type_name("N/DUR");
  app->add_flag("--clear", args->clear, "Remove both limits");
  app->add_flag("--json", args->json, "Print {\"running\": N|null, \"rate\": \"N/DUR\"|null}");
  return {app, [args](Session& session) { return limit(session, *args); }};
}

}  // namespace readpast::cli
