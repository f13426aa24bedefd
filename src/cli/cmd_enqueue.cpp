// readpast enqueue — adds one job (payload from the argument or stdin), or one job per
// line of stdin with --lines.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>

#include "cli/arguments.hpp"
#include "cli/input.hpp"
#include "cli/job_text.hpp"
#include "cli/session.hpp"
#include "worker/unique_fd.hpp"

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
  std::vector<JobId> after;
  std::optional<std::string> group;
  std::optional<std::string> after_group;
  std::optional<std::string> unique_for;
  bool lines = false;
  bool stream = false;
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
  for (JobId id : args.after) {
    if (id < 1) return fail_cli(usage_error(fmt::format("--after: {} is not a job id", id)));
  }
  job.after = args.after;
  for (const auto& [flag, name] :
       {std::pair{"--group", &args.group}, std::pair{"--after-group", &args.after_group}}) {
    if (!*name) continue;
    if (auto ok = validate_group_name(**name); !ok) {
      return fail_cli(usage_error(std::string(flag) + ": " + ok.error().message));
    }
  }
  if (args.group && args.after_group && *args.group == *args.after_group) {
    return fail_cli(usage_error("--after-group: a job cannot wait for its own group"));
  }
  job.group = args.group;
  job.after_group = args.after_group;
  if (args.unique_for) {
    if (!args.unique_key) return fail_cli(usage_error("--unique-for goes with --unique KEY"));
    auto window = parse_positive_duration_arg("--unique-for", *args.unique_for);
    if (!window) return fail_cli(window.error());
    job.unique_for = *window;
  }
  if (args.lines && args.payload) {
    return fail_cli(usage_error("--lines reads the payloads from stdin; give no PAYLOAD"));
  }
  if (args.stream && !args.lines) return fail_cli(usage_error("--stream goes with --lines"));
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
    session.log().info("unique key '{}' is held by job {}; nothing enqueued",
                       escape_for_terminal(*job.unique_key, 64), enqueued->id);
  }
  session.console().write_stdout(fmt::format("{}\n", enqueued->id));
  return {};
}

// Sends the jobs of --lines in batches; says how many went before a failure.
class LineBatcher {
 public:
  LineBatcher(Session& session, Queue& queue, const NewJob& prototype)
      : session_(session), queue_(queue), prototype_(prototype) {}

  CliStatus add(std::string&& line) {
    batch_bytes_ += line.size();
    NewJob job = prototype_;
    job.payload = std::move(line);
    batch_.push_back(std::move(job));
    if (batch_.size() >= kBatchJobs || batch_bytes_ >= kBatchBytes) return flush();
    return {};
  }

  CliStatus flush() {
    if (batch_.empty()) return {};
    auto ids = queue_.enqueue_batch(batch_);
    if (!ids) {
      return fail_cli(failure(fmt::format("{} ({} job(s) were enqueued before this batch)",
                                          ids.error().message, enqueued_)));
    }
    std::string out;
    for (const auto& e : *ids) out += fmt::format("{}\n", e.id);
    session_.console().write_stdout(out);
    enqueued_ += batch_.size();
    batch_.clear();
    batch_bytes_ = 0;
    return {};
  }

  std::size_t enqueued() const noexcept { return enqueued_; }

 private:
  Session& session_;
  Queue& queue_;
  const NewJob& prototype_;
  std::vector<NewJob> batch_;
  std::size_t batch_bytes_ = 0;
  std::size_t enqueued_ = 0;
};

struct FileCloser {
  void operator()(std::FILE* file) const noexcept { std::fclose(file); }
};

// --lines: every line is read and checked first, into an unnamed temporary file (memory
// stays bounded however long the input is); only when all are good are they enqueued. A
// line over the limit enqueues nothing at all.
CliStatus enqueue_lines(Session& session, Queue& queue, const NewJob& prototype) {
  std::unique_ptr<std::FILE, FileCloser> spool(std::tmpfile());
  if (!spool) {
    return fail_cli(failure(worker::errno_message("cannot create a temporary file", errno)));
  }
  if (::isatty(0) == 1) {
    session.log().info("reading one payload per line from stdin; end with Ctrl-D");
  }
  std::size_t lines = 0;
  auto read = read_stdin_lines(
      session.max_payload_bytes(), [&](std::string&& line, std::size_t) -> CliStatus {
        const std::uint64_t size = line.size();
        if (std::fwrite(&size, sizeof size, 1, spool.get()) != 1 ||
            std::fwrite(line.data(), 1, line.size(), spool.get()) != line.size()) {
          return fail_cli(failure(worker::errno_message("cannot write the temporary file", errno)));
        }
        ++lines;
        return {};
      });
  if (!read) {
    auto error = read.error();
    error.message += "; nothing was enqueued";
    return fail_cli(error);
  }
  std::rewind(spool.get());
  LineBatcher batcher(session, queue, prototype);
  for (std::size_t i = 0; i < lines; ++i) {
    std::uint64_t size = 0;
    std::string line;
    if (std::fread(&size, sizeof size, 1, spool.get()) == 1) {
      line.resize(size);
      if (size > 0 && std::fread(line.data(), 1, size, spool.get()) != size) size = ~0ULL;
    } else {
      size = ~0ULL;
    }
    if (size == ~0ULL) {
      return fail_cli(
          failure(fmt::format("cannot read back the temporary file ({} job(s) were "
                              "enqueued before)",
                              batcher.enqueued())));
    }
    if (auto ok = batcher.add(std::move(line)); !ok) return ok;
  }
  return batcher.flush();
}

// --lines --stream: batches are sent as lines arrive (for a producer that never ends); a
// line over the limit stops it, after what was sent before.
CliStatus stream_lines(Session& session, Queue& queue, const NewJob& prototype) {
  LineBatcher batcher(session, queue, prototype);
  auto read = read_stdin_lines(
      session.max_payload_bytes(),
      [&](std::string&& line, std::size_t) -> CliStatus { return batcher.add(std::move(line)); });
  if (!read) {
    auto error = read.error();
    if (error.message.find("were enqueued") == std::string::npos) {
      error.message += fmt::format(" ({} job(s) were enqueued before it)", batcher.enqueued());
    }
    return fail_cli(error);
  }
  return batcher.flush();
}

}  // namespace

Command add_enqueue_command(CLI::App& parent) {
  auto args = std::make_shared<EnqueueArgs>();
  auto* app = add_command(
      parent, "enqueue", "Add a job to a queue and print its id",
      "Add a job to QUEUE and print its id. The payload is PAYLOAD, or stdin when PAYLOAD is "
      "'-' or absent (bytes: NUL and invalid UTF-8 allowed). A payload that starts with '-' "
      "goes after '--'. With --lines, every non-empty line of stdin is a job and the ids are "
      "printed one per line, in input order: all lines are read and checked first, and a "
      "line over the payload limit enqueues nothing; then they are sent in batches of 1000. "
      "With --lines --stream, batches are sent as the lines arrive (for a producer that "
      "does not end), and a bad line stops it after what was sent.");
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
      ->check(CLI::Range(1, std::numeric_limits<int>::max()));
  app->add_option("--unique", args->unique_key,
                  "Enqueue nothing when a waiting, available or running job of the queue holds "
                  "KEY; print that job's id")
      ->type_name("KEY");
  app->add_option("--after", args->after,
                  "Wait until job ID has succeeded (repeatable: until all have); the job is "
                  "'waiting' until then, cancelled if one ends dead or cancelled, and its "
                  "--delay counts from the moment it becomes available")
      ->type_name("ID")
      ->allow_extra_args(false);
  app->add_option("--group", args->group,
                  "Make the job a member of group NAME (a batch: see --after-group)")
      ->type_name("NAME");
  app->add_option("--after-group", args->after_group,
                  "Wait until no member of group NAME is waiting, available or running (every "
                  "member finished, whatever its outcome): a batch's callback")
      ->type_name("NAME");
  app->add_option("--unique-for", args->unique_for,
                  "With --unique: KEY refuses every other job of the queue for DUR after this "
                  "one was enqueued, whatever its state since")
      ->type_name("DUR");
  app->add_flag("--lines", args->lines, "One payload per line of stdin; empty lines are skipped");
  app->add_flag("--stream", args->stream,
                "With --lines: send batches as lines arrive instead of after the end of input");

  return {app, [args](Session& session) -> CliStatus {
            auto prototype = job_template(*args);
            if (!prototype) return fail_cli(prototype.error());
            auto queue = session.open();
            if (!queue) return fail_cli(queue.error());
            if (args->stream) return stream_lines(session, *queue, *prototype);
            if (args->lines) return enqueue_lines(session, *queue, *prototype);
            return enqueue_one(session, *queue, std::move(*prototype), args->payload);
          }};
}

}  // namespace readpast::cli
