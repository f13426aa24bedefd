// readpast work — runs the jobs of a queue as shell commands until stopped or drained.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "cli/arguments.hpp"
#include "cli/job_text.hpp"
#include "cli/logging.hpp"
#include "cli/progress.hpp"
#include "cli/retention_args.hpp"
#include "cli/session.hpp"
#include "core/url.hpp"
#include "core/validate.hpp"
#include "readpast/worker.hpp"
#include "worker/exec_handler.hpp"

namespace readpast::cli {
namespace {

constexpr int kMaxConcurrency = 1024;
// The library's limit on concurrency + prefetch: the most jobs one lease may take.
constexpr int kMaxHeld = detail::kMaxLeaseBatch;
constexpr auto kMinLease = std::chrono::seconds(1);
// The library's limit on leased_by.
constexpr std::size_t kMaxWorkerIdBytes = detail::kMaxWorkerIdBytes;

struct WorkArgs {
  std::string queue;
  std::string command;
  int concurrency = 1;
  int prefetch = 0;
  std::string lease = "30s";
  std::optional<std::string> timeout;
  std::string grace = "30s";
  bool drain = false;
  std::optional<std::string> worker_id;
  std::optional<std::string> backoff_base;
  std::optional<std::string> backoff_cap;
  RetentionArgs retention;
  bool no_schedules = false;
  std::string warn_snapshot_after = "1m";
  bool no_progress = false;
  bool pass_db_password = false;
};

// What the command line asks of the Worker and of the Queue it works on.
struct WorkPlan {
  std::vector<std::string> queues;  // QUEUE split at its commas, in the order given
  WorkerOptions worker;
  QueueConfig config;
  QueueOptions queue;
};

// "Q1,Q2,...": every name valid (a comma is never part of one), none twice.
CliResult<std::vector<std::string>> split_queues(std::string_view list) {
  std::vector<std::string> queues;
  for (std::size_t start = 0;;) {
    const std::size_t comma = list.find(',', start);
    std::string name(list.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (auto ok = check_queue_name(name); !ok) return fail_cli(ok.error());
    if (std::find(queues.begin(), queues.end(), name) != queues.end()) {
      return fail_cli(usage_error(fmt::format("queue '{}' is named twice", name)));
    }
    queues.push_back(std::move(name));
    if (comma == std::string_view::npos) return queues;
    start = comma + 1;
  }
}

CliResult<WorkPlan> plan(const WorkArgs& args) {
  WorkPlan plan;
  auto queues = split_queues(args.queue);
  if (!queues) return fail_cli(queues.error());
  plan.queues = std::move(*queues);
  if (args.command.empty()) return fail_cli(usage_error("--exec: the command is empty"));
  plan.config.concurrency = args.concurrency;
  if (args.concurrency + args.prefetch > kMaxHeld) {
    return fail_cli(usage_error(
        fmt::format("--prefetch: --concurrency plus --prefetch must not exceed {}", kMaxHeld)));
  }
  plan.config.prefetch = args.prefetch;
  auto lease = parse_duration_arg("--lease", args.lease);
  if (!lease) return fail_cli(lease.error());
  if (*lease < kMinLease) return fail_cli(usage_error("--lease: must be at least 1s"));
  plan.worker.lease_duration = *lease;
  if (args.timeout) {
    auto timeout = parse_positive_duration_arg("--timeout", *args.timeout);
    if (!timeout) return fail_cli(timeout.error());
    plan.config.timeout = *timeout;
  }
  auto grace = parse_duration_arg("--grace", args.grace);
  if (!grace) return fail_cli(grace.error());
  plan.worker.grace = *grace;
  plan.worker.drain = args.drain;
  plan.worker.run_schedules = !args.no_schedules;
  plan.worker.worker_id = args.worker_id ? *args.worker_id : default_worker_id();
  if (plan.worker.worker_id.empty() || plan.worker.worker_id.size() > kMaxWorkerIdBytes) {
    return fail_cli(
        usage_error(fmt::format("--worker-id: must be 1 to {} bytes long", kMaxWorkerIdBytes)));
  }
  if (args.backoff_base || args.backoff_cap) {
    Backoff backoff;
    if (args.backoff_base) {
      auto base = parse_positive_duration_arg("--backoff-base", *args.backoff_base);
      if (!base) return fail_cli(base.error());
      backoff.base = *base;
    }
    if (args.backoff_cap) {
      auto cap = parse_positive_duration_arg("--backoff-cap", *args.backoff_cap);
      if (!cap) return fail_cli(cap.error());
      backoff.cap = *cap;
    }
    if (backoff.cap < backoff.base) {
      if (args.backoff_cap) {
        return fail_cli(usage_error("--backoff-cap: must not be less than --backoff-base"));
      }
      backoff.cap = backoff.base;
    }
    plan.config.backoff = backoff;
  }
  auto retention = parse_retention(args.retention);
  if (!retention) return fail_cli(retention.error());
  plan.queue.retention = *retention;
  if (args.warn_snapshot_after == "off") {
    plan.worker.warn_snapshot_after = std::nullopt;
  } else {
    auto after = parse_positive_duration_arg("--warn-snapshot-after", args.warn_snapshot_after);
    if (!after) return fail_cli(after.error());
    if (*after < std::chrono::seconds(1)) {
      return fail_cli(usage_error("--warn-snapshot-after: at least 1s, or off"));
    }
    plan.worker.warn_snapshot_after = *after;
  }
  return plan;
}

// READPAST_DB for the commands, so that `readpast enqueue` inside one reaches the same
// database: without its password unless asked (a command that prints its environment
// would put it in its output and last_error); the command then needs PGPASSWORD or
// ~/.pgpass, as any libpq client.
CliResult<std::string> database_url_for_commands(const Session& session, bool pass_password) {
  if (pass_password) return session.db_url();
  std::string url = detail::url_without_password(session.db_url());
  if (url.empty()) {
    return fail_cli(
        usage_error("the database URL holds nothing but a password, and commands do not get "
                    "passwords: give --pass-db-password, or put the password in PGPASSWORD"));
  }
  return url;
}

// A piece of a command's stderr (a line, or a piece of a long one) for the worker's
// stderr: escaped like any text from outside, so that it cannot rewrite the screen.
std::string terminal_safe(std::string_view piece) {
  const bool ends_line = piece.ends_with('\n');
  if (ends_line) piece.remove_suffix(1);
  std::string text = escape_for_terminal(piece);
  if (ends_line) text += '\n';
  return text;
}

CliStatus work(Session& session, const WorkArgs& args) {
  auto planned = plan(args);
  if (!planned) return fail_cli(planned.error());
  auto commands_db = database_url_for_commands(session, args.pass_db_password);
  if (!commands_db) return fail_cli(commands_db.error());
  session.use_worker_log_style();

  // Commands may exit without reading their stdin: writing to them must give EPIPE, not
  // kill the worker. (Commands get SIGPIPE back at its default; see child_process.hpp.)
  ::signal(SIGPIPE, SIG_IGN);
  // An inherited "ignore SIGCHLD" would have the kernel reap commands before the worker
  // reads their exit status.
  ::signal(SIGCHLD, SIG_DFL);
  // Before any thread exists, so that every thread inherits the blocked signals.
  ShutdownSignals signals;
  if (auto ok = signals.status(); !ok) return fail_cli(failure(ok.error()));

  auto queue = session.open(std::move(planned->queue));
  if (!queue) return fail_cli(queue.error());

  Console& console = session.console();
  worker::ExecOptions exec;
  exec.command = args.command;
  // Replaces an inherited READPAST_DB too, which may hold the password.
  exec.extra_env.push_back("READPAST_DB=" + *commands_db);
  exec.stdout_sink = [&console](std::string_view bytes) { console.write_stdout(bytes); };
  exec.stderr_sink = [&console](std::string_view line) {
    console.write_stderr(terminal_safe(line));
  };
  exec.secrets = session.secrets();

  WorkerOptions worker_options = std::move(planned->worker);
  worker_options.logger = session.library_logger();
  // The console logger's threshold, so that the debug events of every job are not built
  // just to be dropped.
  worker_options.log_level = lowest_level_shown(session.verbosity());
  const std::string worker_id = worker_options.worker_id;
  Worker worker(*queue, std::move(worker_options));
  // One lane per queue, each with --concurrency commands at once; the commands share one
  // ExecHandler's settings.
  const worker::ExecHandler handler(std::move(exec));
  for (const std::string& name : planned->queues) {
    if (auto ok = worker.handle(name, handler, planned->config); !ok) {
      return fail_cli(usage_error(ok.error().message));
    }
  }

  session.log().info("worker {} on {} {} of {}: {} at once{} ({} held ahead), running: {}",
                     worker_id, planned->queues.size() > 1 ? "queues" : "queue", args.queue,
                     session.printable_db_url(), args.concurrency,
                     planned->queues.size() > 1 ? " per queue" : "", args.prefetch,
                     escape_for_terminal(args.command, 200));
  signals.on_signal([&worker](int) { worker.stop(); });
  std::optional<ProgressLine> progress;
  if (!args.no_progress && console.stderr_is_terminal()) {
    progress.emplace(console, [&worker] { return worker.counters(); });
  }

  Status result = worker.run();

  progress.reset();
  signals.on_signal(nullptr);
  auto totals = worker.counters();
  session.log().info("stopped: {} done, {} failed ({} dead), {} released, {} lost",
                     totals.succeeded, totals.failed, totals.dead, totals.released, totals.lost);
  if (!result) return fail_cli(failure(result.error()));
  return {};
}

}  // namespace

Command add_work_command(CLI::App& parent) {
  auto args = std::make_shared<WorkArgs>();
  auto* app = add_command(
      parent, "work", "Run the jobs of a queue (or of several) as shell commands",
      "Run the jobs of QUEUE (or of Q1,Q2,...: one process for several queues, --concurrency "
      "commands at once for each): each one as '/bin/sh -c CMD', with the payload on its stdin "
      "(never on its command line) and READPAST_JOB_ID, READPAST_QUEUE, READPAST_ATTEMPT "
      "(from 1), READPAST_LEASE_TOKEN and READPAST_DB (without its password unless "
      "--pass-db-password is given) in its environment (with which it can record its "
      "progress: readpast progress \"$READPAST_JOB_ID\" \"$READPAST_LEASE_TOKEN\" JSON). "
      "Its stderr is shown a line at a "
      "time, escaped, with the known secrets (the database password, PGPASSWORD, "
      "READPAST_TOKEN) replaced by [redacted]. Exit 0 completes the job; another exit "
      "status, death by a signal or --timeout fails it, with the last 4 KiB of its stderr "
      "as last_error; a failed job is retried with backoff until its "
      "attempts are spent, then it is dead. Leases are extended while commands run; a job "
      "cancelled meanwhile has its command killed. SIGTERM/SIGINT: stop leasing, let "
      "running commands finish within --grace, then kill them and release their jobs (no "
      "attempt spent) and exit 0; a second signal skips the grace period. The worker also "
      "enqueues the ticks of periodic schedules (see 'readpast schedule') and, taking turns "
      "with other workers, deletes finished jobs of QUEUE past their retention.");
  app->add_option("QUEUE", args->queue,
                  "Queue to work on, or several separated by commas (Q1,Q2): one worker process "
                  "for all of them, each with its own --concurrency")
      ->required();
  app->add_option("--exec", args->command, "Shell command to run for each job")
      ->required()
      ->type_name("CMD");
  app->add_option("--concurrency", args->concurrency, "Jobs run at once, per queue (default: 1)")
      ->type_name("N")
      ->check(CLI::Range(1, kMaxConcurrency));
  app->add_option("--prefetch", args->prefetch,
                  "Jobs leased ahead of free slots, their leases extended until one is free: "
                  "fewer round trips for short jobs (default: 0)")
      ->type_name("N")
      ->check(CLI::Range(0, kMaxHeld));
  app->add_option("--lease", args->lease,
                  "Lease length, extended every third of it while a job runs (default: 30s)")
      ->type_name("DUR");
  app->add_option("--timeout", args->timeout,
                  "Kill a command (its whole process group) that runs longer, and fail the job")
      ->type_name("DUR");
  app->add_option("--grace", args->grace,
                  "At SIGTERM/SIGINT, how long running commands may finish (default: 30s)")
      ->type_name("DUR");
  app->add_flag("--drain", args->drain,
                "Exit once the queue (every queue given) holds no available (even scheduled or "
                "retrying) and no "
                "running job");
  app->add_option("--worker-id", args->worker_id, "Name in leased_by (default: HOST/PID)")
      ->type_name("ID");
  app->add_option("--backoff-base", args->backoff_base,
                  "Delay before the first retry, doubling each time (default: 1s)")
      ->type_name("DUR");
  app->add_option("--backoff-cap", args->backoff_cap, "Longest delay between retries (default: 1h)")
      ->type_name("DUR");
  add_retention_options(*app, args->retention);
  app->add_flag("--no-schedules", args->no_schedules,
                "Do not enqueue the ticks of periodic schedules in this worker");
  app->add_option("--warn-snapshot-after", args->warn_snapshot_after,
                  "Warn (event snapshot_held) while a transaction has held the oldest snapshot "
                  "this long, naming it: the database cannot reclaim old rows meanwhile; one "
                  "worker of all looks, once per DUR; 'off': never (default: 1m)")
      ->type_name("DUR|off");
  app->add_flag("--no-progress", args->no_progress,
                "No live progress line (shown only when stderr is a terminal)");
  app->add_flag("--pass-db-password", args->pass_db_password,
                "Leave the database password in the commands' READPAST_DB (default: it is "
                "taken out; a command that needs it uses PGPASSWORD or ~/.pgpass)");
  return {app, [args](Session& session) { return work(session, *args); }};
}

}  // namespace readpast::cli
