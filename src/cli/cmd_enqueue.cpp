// readpast enqueue — adds one job (payload from the argument or stdin), or one job per
// line of stdin with --lines.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>

#include "cli/arguments.hpp"
#include "cli/input.hpp"
#include "cli/job_text.hpp"
#include "cli/session.hpp"

namespace readpast::cli {
namespace {

// --lines sends a batch once it holds this many jobs or this many payload bytes: one
// transaction each, short enough not to hold SQLite's write lock for long.
constexpr std::size_t kBatchJobs = 1000;
constexpr std::size_t kBatchBytes = 8u << 20;

struct EnqueueArgs {
  std::string queue;
  std::optional<std::string> payload;
  int priority = kDefaultPriority;
  std::optional<std::string> delay;
  std::optional<std::string> run_at;
  int max_attempts = kDefaultMaxAttempts;
  std::optional<std::string> unique_key;
  bool lines = false;
};

// The job every payload gets, with the options checked.
CliResult<NewJob> job_template(const EnqueueArgs& args) {
  if (auto ok = check_queue_name(args.queue); !ok) return fail_cli(ok.error());
  NewJob job;
  job.queue = args.queue;
  job.priority = args.priority;
  job.max_attempts = args.max_attempts;
  if (args.delay) {
    auto delay = parse_duration_arg("--delay", *args.delay);
    if (!delay) return fail_cli(delay.error());
    job.delay = *delay;
  }
  if (args.run_at) {
    auto run_at = parse_time_arg("--run-at", *args.run_at);
    if (!run_at) return fail_cli(run_at.error());
    job.run_at = *run_at;
  }
  if (args.unique_key) {
    if (args.lines) {
      return fail_cli(
          usage_error("--unique cannot be used with --lines (every line would "
                      "share the key)"));
    }
    if (args.unique_key->empty()) return fail_cli(usage_error("--unique: the key is empty"));
    job.unique_key = *args.unique_key;
  }
  if (args.lines && args.payload) {
    return fail_cli(usage_error("--lines reads the payloads from stdin; give no PAYLOAD"));
  }
  return job;
}

CliStatus enqueue_one(Session& session, Queue& queue, NewJob job,
                      const std::optional<std::string>& payload) {
  if (payload && *payload != "-") {
    job.payload = *payload;
  } else {
    if (::isatty(0) == 1) session.log().info("reading the payload from stdin; end it with Ctrl-D");
    auto input = read_stdin_payload(session.max_payload_bytes());
    if (!input) return fail_cli(input.error());
    job.payload = std::move(*input);
  }
  auto enqueued = queue.enqueue(job);
  if (!enqueued) return fail_cli(failure(enqueued.error()));
  if (!enqueued->inserted) {
    session.log().info("unique key '{}' is already held by job {}; nothing enqueued",
                       escape_for_terminal(*job.unique_key, 64), enqueued->id);
  }
  session.console().write_stdout(fmt::format("{}\n", enqueued->id));
  return {};
}

CliStatus enqueue_lines(Session& session, Queue& queue, const NewJob& prototype) {
  std::vector<NewJob> batch;
  std::size_t batch_bytes = 0;
  std::size_t enqueued = 0;
  auto flush = [&]() -> CliStatus {
    if (batch.empty()) return {};
    auto ids = queue.enqueue_batch(batch);
    if (!ids) {
      return fail_cli(failure(fmt::format("{} ({} job(s) were enqueued before this batch)",
                                          ids.error().message, enqueued)));
    }
    std::string out;
    for (const auto& e : *ids) out += fmt::format("{}\n", e.id);
    session.console().write_stdout(out);
    enqueued += batch.size();
    batch.clear();
    batch_bytes = 0;
    return {};
  };
  if (::isatty(0) == 1) {
    session.log().info("reading one payload per line from stdin; end with Ctrl-D");
  }
  auto read = read_stdin_lines(session.max_payload_bytes(),
                               [&](std::string&& line, std::size_t) -> CliStatus {
                                 batch_bytes += line.size();
                                 NewJob job = prototype;
                                 job.payload = std::move(line);
                                 batch.push_back(std::move(job));
                                 if (batch.size() >= kBatchJobs || batch_bytes >= kBatchBytes)
                                   return flush();
                                 return {};
                               });
  if (!read) {
    auto error = read.error();
    if (enqueued > 0 && error.message.find("were enqueued") == std::string::npos) {
      error.message += fmt::format(" ({} job(s) were enqueued before it)", enqueued);
    }
    return fail_cli(error);
  }
  return flush();
}

}  // namespace

Command add_enqueue_command(CLI::App& parent) {
  auto args = std::make_shared<EnqueueArgs>();
  auto* app = add_command(
      parent, "enqueue", "Add a job to a queue and print its id",
      "Add a job to QUEUE and print its id. The payload is PAYLOAD, or stdin when PAYLOAD is "
      "'-' or absent (bytes: NUL and invalid UTF-8 allowed). A payload that starts with '-' "
      "goes after '--'. With --lines, every non-empty line of stdin is a job (sent in "
      "batches of 1000) and the ids are printed one per line, in input order.");
  app->add_option("QUEUE", args->queue, "Queue name: [A-Za-z0-9][A-Za-z0-9_.-]{0,127}")->required();
  app->add_option("PAYLOAD", args->payload, "The payload, or '-' for stdin (the default)");
  app->add_option("--priority", args->priority, "Smaller runs sooner (default: 100)")
      ->type_name("N");
  auto* delay =
      app->add_option("--delay", args->delay, "Run no sooner than DUR from now")->type_name("DUR");
  auto* run_at =
      app->add_option("--run-at", args->run_at, "Run no sooner than TIME")->type_name("TIME");
  delay->excludes(run_at);
  app->add_option("--max-attempts", args->max_attempts,
                  "Attempts before the job is dead (default: 25)")
      ->type_name("N")
      ->check(CLI::PositiveNumber);
  app->add_option("--unique", args->unique_key,
                  "Enqueue nothing when an available or running job of the queue holds KEY; "
                  "print that job's id")
      ->type_name("KEY");
  app->add_flag("--lines", args->lines, "One payload per line of stdin; empty lines are skipped");

  return {app, [args](Session& session) -> CliStatus {
            auto prototype = job_template(*args);
            if (!prototype) return fail_cli(prototype.error());
            auto queue = session.open();
            if (!queue) return fail_cli(queue.error());
            if (args->lines) return enqueue_lines(session, *queue, *prototype);
            return enqueue_one(session, *queue, std::move(*prototype), args->payload);
          }};
}

}  // namespace readpast::cli
