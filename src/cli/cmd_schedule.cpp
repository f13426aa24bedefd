// readpast schedule add | list | remove | run — periodic jobs.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>

#include "cli/arguments.hpp"
#include "cli/job_text.hpp"
#include "cli/output_table.hpp"
#include "cli/session.hpp"
#include "core/schedule_spec.hpp"
#include "json/job_json.hpp"

namespace readpast::cli {
namespace {

struct ScheduleArgs {
  // add
  std::string name;
  std::string queue;
  std::optional<std::string> cron;
  std::optional<std::string> every;
  std::optional<std::string> time_zone;
  std::string payload;
  int priority = kDefaultPriority;
  int max_attempts = kDefaultMaxAttempts;
  // list
  bool json = false;
  // remove
  std::string remove_name;
  // run
  std::string run_name;
};

CliStatus add(Session& session, const ScheduleArgs& args) {
  if (auto ok = check_queue_name(args.queue); !ok) return ok;
  if (auto ok = validate_schedule_name(args.name); !ok) {
    return fail_cli(usage_error(ok.error().message));
  }
  Schedule schedule;
  schedule.name = args.name;
  schedule.queue = args.queue;
  schedule.spec = args.cron ? *args.cron : "every " + *args.every;
  if (args.time_zone) {
    if (!args.cron)
      return fail_cli(usage_error("schedule add: --tz goes with --cron, not --every"));
    if (!detail::split_time_zone(*args.cron).zone.empty()) {
      return fail_cli(usage_error("schedule add: give the zone once, with --tz or CRON_TZ="));
    }
    schedule.spec = detail::with_time_zone(*args.time_zone, *args.cron);
  }
  schedule.payload = args.payload;
  schedule.priority = args.priority;
  schedule.max_attempts = args.max_attempts;
  auto queue = session.open();
  if (!queue) return fail_cli(queue.error());
  auto created = queue->add_schedule(schedule);
  if (!created) {
    if (created.error().code == ErrorCode::kInvalidArgument) {
      return fail_cli(usage_error(created.error().message));
    }
    return fail_cli(failure(created.error()));
  }
  session.console().write_stdout(fmt::format("{} schedule {}: {} -> queue {}\n",
                                             *created ? "added" : "replaced", schedule.name,
                                             schedule.spec, schedule.queue));
  return {};
}

// The zone a schedule's cron fields are read in ("UTC" unless its spec names one).
std::string zone_of(const Schedule& schedule) {
  const std::string_view zone = detail::split_time_zone(schedule.spec).zone;
  return zone.empty() ? "UTC" : std::string(zone);
}

CliStatus list(Session& session, const ScheduleArgs& args) {
  auto queue = session.open();
  if (!queue) return fail_cli(queue.error());
  auto schedules = queue->list_schedules();
  if (!schedules) return fail_cli(failure(schedules.error()));
  if (args.json) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const Schedule& s : *schedules) {
      out.push_back({{"name", s.name},
                     {"queue", s.queue},
                     {"spec", s.spec},
                     {"time_zone", zone_of(s)},
                     {"payload", s.payload},
                     {"priority", s.priority},
                     {"max_attempts", s.max_attempts},
                     {"created_at", format_time(s.created_at)},
                     {"last_tick", s.last_tick ? nlohmann::ordered_json(format_time(*s.last_tick))
                                               : nlohmann::ordered_json(nullptr)},
                     {"last_job_id", s.last_job ? nlohmann::ordered_json(*s.last_job)
                                                : nlohmann::ordered_json(nullptr)}});
    }
    session.console().write_stdout(json::dump_json(out));
    return {};
  }
  Table table({{"NAME"}, {"QUEUE"}, {"SCHEDULE"}, {"ZONE"}, {"LAST TICK"}, {"PAYLOAD"}});
  for (const Schedule& s : *schedules) {
    table.add_row({s.name, s.queue,
                   escape_for_terminal(std::string(detail::split_time_zone(s.spec).expression), 60),
                   escape_for_terminal(zone_of(s), 40),
                   s.last_tick ? format_time(*s.last_tick) : "-",
                   escape_for_terminal(s.payload, 40)});
  }
  session.console().write_stdout(table.render());
  return {};
}

CliStatus remove(Session& session, const ScheduleArgs& args) {
  if (auto ok = validate_schedule_name(args.remove_name); !ok) {
    return fail_cli(usage_error(ok.error().message));
  }
  auto queue = session.open();
  if (!queue) return fail_cli(queue.error());
  if (auto ok = queue->remove_schedule(args.remove_name); !ok) {
    return fail_cli(failure(ok.error()));
  }
  session.console().write_stdout(fmt::format("removed schedule {}\n", args.remove_name));
  return {};
}

// "Run now": one job from the schedule's definition, its ticks left alone.
CliStatus run_now(Session& session, const ScheduleArgs& args) {
  if (auto ok = validate_schedule_name(args.run_name); !ok) {
    return fail_cli(usage_error(ok.error().message));
  }
  auto queue = session.open();
  if (!queue) return fail_cli(queue.error());
  auto id = queue->run_schedule(args.run_name);
  if (!id) return fail_cli(failure(id.error()));
  session.console().write_stdout(
      fmt::format("enqueued job {} from schedule {}\n", *id, args.run_name));
  return {};
}

}  // namespace

Command add_schedule_command(CLI::App& parent) {
  auto args = std::make_shared<ScheduleArgs>();
  auto* app = add_command(
      parent, "schedule", "Manage periodic jobs (add, list, remove, run)",
      "Periodic jobs: at every tick of a schedule one job is enqueued, exactly once however "
      "many workers on however many hosts run (every `readpast work` does, unless started "
      "with --no-schedules). A tick missed while no worker ran is enqueued once when one "
      "starts, not once per missed period. Cron expressions are in UTC unless given --tz; "
      "see docs/schedules.md.");
  app->require_subcommand(1);

  auto* add_app = app->add_subcommand("add", "Add a schedule, or replace the one of that name");
  add_app->add_option("NAME", args->name, "The schedule's name (like a queue name)")->required();
  add_app->add_option("QUEUE", args->queue, "Where its jobs go")->required();
  add_app->add_option("PAYLOAD", args->payload, "The payload of every job (default: empty)");
  auto* cron = add_app
                   ->add_option("--cron", args->cron,
                                "Cron expression: 5 fields (minute hour day month weekday) or 6 "
                                "(seconds first), or @hourly, @daily, @weekly, @monthly, @yearly")
                   ->type_name("EXPR");
  auto* every =
      add_app->add_option("--every", args->every, "A fixed interval, ticking at its multiples")
          ->type_name("DUR");
  cron->excludes(every);
  add_app
      ->add_option("--tz", args->time_zone,
                   "Read the cron fields in this IANA time zone (e.g. Europe/Berlin; "
                   "daylight-saving changes handled; default UTC)")
      ->type_name("ZONE");
  add_app->add_option("--priority", args->priority, "Priority of its jobs (default: 100)")
      ->type_name("N");
  add_app->add_option("--max-attempts", args->max_attempts, "Attempts of its jobs (default: 25)")
      ->type_name("N")
      ->check(CLI::Range(1, 1000000));

  auto* list_app = app->add_subcommand("list", "List the schedules");
  list_app->add_flag("--json", args->json, "Print a JSON array");

  auto* remove_app = app->add_subcommand("remove", "Remove a schedule");
  remove_app->add_option("NAME", args->remove_name, "The schedule")->required();

  auto* run_app =
      app->add_subcommand("run", "Enqueue one job of a schedule now (its ticks are not moved)");
  run_app->add_option("NAME", args->run_name, "The schedule")->required();

  return {app, [args, add_app, list_app, run_app, cron, every](Session& session) -> CliStatus {
            if (add_app->parsed()) {
              if (cron->count() == 0 && every->count() == 0) {
                return fail_cli(usage_error("schedule add: give --cron EXPR or --every DUR"));
              }
              return add(session, *args);
            }
            if (list_app->parsed()) return list(session, *args);
            if (run_app->parsed()) return run_now(session, *args);
            return remove(session, *args);
          }};
}

}  // namespace readpast::cli
