// readpast stats — jobs per state, for every queue or one.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "cli/arguments.hpp"
#include "cli/job_text.hpp"
#include "cli/output_table.hpp"
#include "cli/session.hpp"
#include "core/snapshot_holder_text.hpp"
#include "json/job_json.hpp"
#include "readpast/worker.hpp"

namespace readpast::cli {
namespace {

struct StatsArgs {
  std::optional<std::string> queue;
  std::optional<std::string> group;
  bool json = false;
  bool watch = false;
  std::string interval = "1s";
  std::optional<int> count;
};

constexpr auto kMinInterval = std::chrono::milliseconds(100);

std::string age_text(Duration age) {
  if (age <= Duration::zero()) return "-";
  // Whole seconds are plenty for an age; below a second, milliseconds.
  if (age >= std::chrono::seconds(1))
    age = std::chrono::duration_cast<std::chrono::seconds>(age);
  else
    age = std::chrono::duration_cast<std::chrono::milliseconds>(age);
  return format_duration(age);
}

using Align = Table::Align;

// A snapshot held this long gets a note below the table (the worker's default warning age,
// WorkerOptions::warn_snapshot_after).
constexpr auto kSnapshotNoteAfter = std::chrono::minutes(1);

// The note about the oldest snapshot when it has been held for long, else empty. A failure to
// read it leaves the note out: the counts above it are what was asked for, and a role without
// the rights to the catalog views still gets them.
std::string snapshot_note(Queue& queue) {
  auto health = queue.storage_health();
  if (!health || !health->oldest_snapshot || !health->oldest_snapshot->age ||
      *health->oldest_snapshot->age < kSnapshotNoteAfter) {
    return {};
  }
  return "note: " + detail::snapshot_held_message(*health->oldest_snapshot) + "\n";
}

std::string rate_text(std::optional<double> rate) {
  if (!rate) return "-";
  return fmt::format("{:.1f}", *rate);
}

// One snapshot: the stats, and the jobs finished since the previous one (for rates).
struct Sample {
  std::vector<QueueStats> stats;
  TimePoint at{};
  std::map<std::string, FinishedCounts> finished;  // since the previous sample
  std::optional<double> seconds;                   // since the previous sample
};

CliResult<Sample> take_sample(Queue& queue, const StatsArgs& args,
                              std::optional<TimePoint> previous) {
  Sample sample;
  auto at = queue.now();
  if (!at) return fail_cli(failure(at.error()));
  sample.at = *at;
  auto stats = args.queue ? queue.stats(std::string_view(*args.queue)) : queue.stats();
  if (!stats) return fail_cli(failure(stats.error()));
  sample.stats = std::move(*stats);
  // A named queue without jobs is reported with zeros, not left out.
  if (args.queue && sample.stats.empty()) sample.stats.push_back(QueueStats{.queue = *args.queue});
  if (previous) {
    auto finished = args.queue ? queue.finished_since(*previous, std::string_view(*args.queue))
                               : queue.finished_since(*previous);
    if (!finished) return fail_cli(failure(finished.error()));
    for (auto& f : *finished) sample.finished[f.queue] = f;
    sample.seconds = std::chrono::duration<double>(sample.at - *previous).count();
  }
  return sample;
}

std::string render_watch(const Sample& sample) {
  Table table({{"QUEUE"},
               {"AVAILABLE", Align::kRight},
               {"SCHEDULED", Align::kRight},
               {"RUNNING", Align::kRight},
               {"DONE/S", Align::kRight},
               {"DEAD/S", Align::kRight},
               {"DEAD", Align::kRight},
               {"OLDEST AVAILABLE", Align::kRight},
               {"PAUSED"}});
  for (const auto& s : sample.stats) {
    std::optional<double> done, died;
    if (sample.seconds && *sample.seconds > 0) {
      auto it = sample.finished.find(s.queue);
      const FinishedCounts counts = it == sample.finished.end() ? FinishedCounts{} : it->second;
      done = static_cast<double>(counts.succeeded) / *sample.seconds;
      died = static_cast<double>(counts.dead) / *sample.seconds;
    }
    table.add_row({s.queue, std::to_string(s.available), std::to_string(s.scheduled),
                   std::to_string(s.running), rate_text(done), rate_text(died),
                   std::to_string(s.dead), age_text(s.oldest_available_age),
                   s.paused ? "yes" : "no"});
  }
  return table.render();
}

CliStatus watch(Session& session, const StatsArgs& args) {
  auto interval = parse_positive_duration_arg("--interval", args.interval);
  if (!interval) return fail_cli(interval.error());
  if (*interval < kMinInterval) return fail_cli(usage_error("--interval: at least 100ms"));
  // Ctrl-C ends the watch cleanly (exit 0), between two refreshes. Before the database is
  // opened: no thread may exist yet that could receive the signal instead.
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  ShutdownSignals signals([&](int) {
    std::lock_guard lock(mu);
    stop = true;
    cv.notify_all();
  });
  if (auto ok = signals.status(); !ok) return fail_cli(failure(ok.error()));
  auto opened = session.open_to_read();
  if (!opened) return fail_cli(opened.error());
  Queue& queue = *opened;
  Console& console = session.console();
  const bool terminal = console.stdout_is_terminal();
  std::optional<TimePoint> previous;
  for (int refreshes = 0; !args.count || refreshes < *args.count; ++refreshes) {
    auto sample = take_sample(queue, args, previous);
    if (!sample) return fail_cli(sample.error());
    previous = sample->at;
    std::string header = fmt::format("readpast stats of {} at {}  (every {}; Ctrl-C to quit)\n\n",
                                     session.printable_db_url(), format_time(sample->at),
                                     format_duration(*interval));
    // On a terminal the table is redrawn in place; into a pipe, one after the other.
    console.write_stdout((terminal ? "\x1b[H\x1b[2J" : std::string(refreshes > 0 ? "\n" : "")) +
                         header + render_watch(*sample) + snapshot_note(queue));
    std::unique_lock lock(mu);
    if (cv.wait_for(lock, *interval, [&] { return stop; })) break;
  }
  return {};
}

// stats --group NAME: the members of one group by state, and the jobs waiting for it.
CliStatus group_stats(Session& session, const StatsArgs& args) {
  if (args.queue || args.watch) {
    return fail_cli(usage_error("--group goes without QUEUE and --watch"));
  }
  if (auto ok = validate_group_name(*args.group); !ok) {
    return fail_cli(usage_error("--group: " + ok.error().message));
  }
  auto queue = session.open_to_read();
  if (!queue) return fail_cli(queue.error());
  auto stats = queue->group_stats(*args.group);
  if (!stats) return fail_cli(failure(stats.error()));
  if (args.json) {
    session.console().write_stdout(json::dump_json(json::group_stats_to_json(*stats)));
    return {};
  }
  Table table({{"GROUP"},
               {"WAITING", Align::kRight},
               {"AVAILABLE", Align::kRight},
               {"RUNNING", Align::kRight},
               {"SUCCEEDED", Align::kRight},
               {"DEAD", Align::kRight},
               {"CANCELLED", Align::kRight},
               {"CALLBACKS WAITING", Align::kRight}});
  table.add_row({stats->name, std::to_string(stats->waiting), std::to_string(stats->available),
                 std::to_string(stats->running), std::to_string(stats->succeeded),
                 std::to_string(stats->dead), std::to_string(stats->cancelled),
                 std::to_string(stats->waiters)});
  session.console().write_stdout(table.render());
  return {};
}

CliStatus stats(Session& session, const StatsArgs& args) {
  if (args.queue) {
    if (auto ok = check_queue_name(*args.queue); !ok) return ok;
  }
  if (args.watch && args.json)
    return fail_cli(usage_error("--watch and --json do not go together"));
  if (args.count && !args.watch) return fail_cli(usage_error("--count needs --watch"));
  if (args.group) return group_stats(session, args);
  if (args.watch) return watch(session, args);
  auto queue = session.open_to_read();
  if (!queue) return fail_cli(queue.error());
  auto sample = take_sample(*queue, args, std::nullopt);
  if (!sample) return fail_cli(sample.error());
  const std::vector<QueueStats>& stats = sample->stats;

  if (args.json) {
    session.console().write_stdout(json::dump_json(json::stats_to_json(stats)));
    return {};
  }
  Table table({{"QUEUE"},
               {"AVAILABLE", Align::kRight},
               {"SCHEDULED", Align::kRight},
               {"RUNNING", Align::kRight},
               {"EXPIRED", Align::kRight},
               {"SUCCEEDED", Align::kRight},
               {"DEAD", Align::kRight},
               {"CANCELLED", Align::kRight},
               {"WAITING", Align::kRight},
               {"OLDEST AVAILABLE", Align::kRight},
               {"PAUSED"},
               {"LIMITS"}});
  for (const auto& s : stats) {
    table.add_row({s.queue, std::to_string(s.available), std::to_string(s.scheduled),
                   std::to_string(s.running), std::to_string(s.expired),
                   std::to_string(s.succeeded), std::to_string(s.dead), std::to_string(s.cancelled),
                   std::to_string(s.waiting), age_text(s.oldest_available_age),
                   s.paused ? "yes" : "no", limits_text(s.limits)});
  }
  session.console().write_stdout(table.render());
  if (auto note = snapshot_note(*queue); !note.empty()) session.console().write_stderr(note);
  return {};
}

}  // namespace

Command add_stats_command(CLI::App& parent) {
  auto args = std::make_shared<StatsArgs>();
  auto* app = add_command(
      parent, "stats", "Count jobs per state, per queue",
      "Count the jobs of every queue (or of QUEUE) per state. 'available' includes "
      "'scheduled' (run_at still in the future); 'running' includes 'expired' (the lease has "
      "passed and no rescue has moved the job yet: its worker is probably gone; see 'readpast "
      "rescue'); 'waiting' jobs wait for other jobs to succeed (enqueue --after); OLDEST "
      "AVAILABLE is the age of the oldest job that is due and waiting; LIMITS are the queue's "
      "global limits ('readpast limit'). --watch "
      "redraws the table every --interval with the rates "
      "of jobs that succeeded and died per second (jobs deleted on completion, with a zero "
      "retention, are not counted), until Ctrl-C. When a transaction has held the oldest "
      "snapshot for a minute or more, a note names it (on stderr; below the table with "
      "--watch): the database cannot reclaim old rows meanwhile.");
  app->add_option("QUEUE", args->queue, "Only this queue");
  app->add_flag("--json", args->json,
                "Print {\"queues\": {NAME: {available, scheduled, running, expired, succeeded, "
                "dead, cancelled, waiting, oldest_available_age_s, paused, limits: {running, "
                "rate}}}}");
  app->add_option("--group", args->group,
                  "Count the members of group NAME per state instead, and the jobs enqueued "
                  "--after-group NAME that still wait (--json: {\"groups\": {NAME: {waiting, "
                  "available, running, succeeded, dead, cancelled, live, waiters}}})")
      ->type_name("NAME");
  app->add_flag("--watch", args->watch, "Refresh a live table with rates until Ctrl-C");
  app->add_option("--interval", args->interval, "With --watch: how often (default: 1s)")
      ->type_name("DUR");
  app->add_option("--count", args->count, "With --watch: stop after N refreshes")
      ->type_name("N")
      ->check(CLI::Range(1, 1000000));
  return {app, [args](Session& session) { return stats(session, *args); }};
}

}  // namespace readpast::cli
