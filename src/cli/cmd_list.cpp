// readpast list — the jobs of a queue, oldest id first (or newest first), filtered by state,
// view or search text.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <memory>
#include <optional>

#include "cli/arguments.hpp"
#include "cli/job_text.hpp"
#include "cli/output_table.hpp"
#include "cli/session.hpp"
#include "json/job_json.hpp"

namespace readpast::cli {
namespace {

constexpr int kMaxLimit = 10000;
constexpr std::size_t kPreviewChars = 40;

struct ListArgs {
  std::string queue;
  std::optional<std::string> state;
  int limit = 100;
  std::optional<JobId> after;
  std::optional<JobId> before;
  bool newest_first = false;
  std::optional<std::string> view;
  std::optional<std::string> search;
  std::optional<std::string> group;
  bool json = false;
};

// The members of the group that are in the queue, in id order after `after`, at most
// `limit`: Queue::list_group pages through the whole group (every queue) to find them.
Result<std::vector<Job>> group_members(Queue& queue, const std::string& group,
                                       const std::string& queue_name, JobId after, int limit) {
  std::vector<Job> found;
  while (static_cast<int>(found.size()) < limit) {
    auto page = queue.list_group(group, after, 1000);
    if (!page) return fail_with(page.error());
    for (auto& job : *page) {
      if (job.queue == queue_name && static_cast<int>(found.size()) < limit) {
        found.push_back(std::move(job));
      }
    }
    if (page->size() < 1000) break;
    after = page->back().id;
  }
  return found;
}

CliStatus list(Session& session, const ListArgs& args) {
  if (auto ok = check_queue_name(args.queue); !ok) return ok;
  ListRequest request;
  request.queue = args.queue;
  request.limit = args.limit;
  request.after_id = args.after;
  if (args.state) {
    auto state = parse_state_arg("--state", *args.state,
                                 {JobState::kAvailable, JobState::kRunning, JobState::kSucceeded,
                                  JobState::kDead, JobState::kCancelled, JobState::kWaiting});
    if (!state) return fail_cli(state.error());
    request.state = *state;
  }
  request.before_id = args.before;
  if (args.newest_first) request.order = ListOrder::kNewestFirst;
  if (args.view) {
    auto view = parse_list_view(*args.view);
    if (!view) {
      return fail_cli(
          usage_error("--view: '" + *args.view + "' is not one of scheduled, retrying, expired"));
    }
    const JobState part_of =
        *view == ListView::kExpired ? JobState::kRunning : JobState::kAvailable;
    if (request.state && *request.state != part_of) {
      return fail_cli(usage_error("--view " + *args.view + " is part of state " +
                                  std::string(to_string(part_of)) + ", not " +
                                  std::string(to_string(*request.state))));
    }
    request.view = *view;
  }
  if (args.search) {
    if (args.search->empty() || args.search->size() > kMaxListSearchBytes) {
      return fail_cli(usage_error("--search: the text must be 1 to " +
                                  std::to_string(kMaxListSearchBytes) + " bytes"));
    }
    request.search = *args.search;
  }
  if (args.group) {
    if (args.state || args.view || args.search || args.before || args.newest_first) {
      return fail_cli(usage_error("--group goes with --after, --limit and --json only"));
    }
    if (auto ok = validate_group_name(*args.group); !ok) {
      return fail_cli(usage_error("--group: " + ok.error().message));
    }
  }
  auto queue = session.open_to_read();
  if (!queue) return fail_cli(queue.error());
  auto jobs = args.group ? group_members(*queue, *args.group, args.queue, args.after.value_or(0),
                                         args.limit)
                         : queue->list(request);
  if (!jobs) return fail_cli(failure(jobs.error()));

  if (args.json) {
    auto array = nlohmann::ordered_json::array();
    for (const auto& job : *jobs) array.push_back(json::job_to_json(job));
    session.console().write_stdout(json::dump_json(array));
    return {};
  }
  using Align = Table::Align;
  Table table({{"ID", Align::kRight},
               {"STATE"},
               {"PRIORITY", Align::kRight},
               {"ATTEMPTS", Align::kRight},
               {"RUN AT"},
               {"PAYLOAD"},
               {"LAST ERROR"}});
  const auto now = std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
  for (const auto& job : *jobs) {
    table.add_row({std::to_string(job.id), display_state(job, now), std::to_string(job.priority),
                   fmt::format("{}/{}", job.attempts, job.max_attempts), short_time(job.run_at),
                   escape_for_terminal(job.payload, kPreviewChars),
                   job.last_error ? escape_for_terminal(*job.last_error, kPreviewChars) : ""});
  }
  session.console().write_stdout(table.render());
  if (static_cast<int>(jobs->size()) == args.limit) {
    session.log().info("showing the first {} job(s); for the next ones: {} {}", args.limit,
                       args.newest_first ? "--before" : "--after", jobs->back().id);
  }
  return {};
}

}  // namespace

Command add_list_command(CLI::App& parent) {
  auto args = std::make_shared<ListArgs>();
  auto* app = add_command(
      parent, "list", "List the jobs of a queue",
      "List the jobs of QUEUE in id order, oldest first (--newest-first for the other way). "
      "The STATE column shows 'scheduled' for available jobs not due yet and 'retrying' for "
      "available jobs that failed before; --view lists only those, or 'expired' running jobs "
      "whose lease has passed. --search reads the queue's jobs (of the state or view) until it "
      "has found N: on a large queue a search that finds little reads many.");
  app->add_option("QUEUE", args->queue, "Queue name")->required();
  app->add_option("--state", args->state,
                  "Only jobs in this stored state: available, running, succeeded, dead, "
                  "cancelled, waiting")
      ->type_name("STATE");
  app->add_option("--limit", args->limit, "At most N jobs (default: 100)")
      ->type_name("N")
      ->check(CLI::Range(1, kMaxLimit));
  app->add_option("--after", args->after, "Only jobs with an id greater than ID (paging)")
      ->type_name("ID");
  app->add_option("--before", args->before, "Only jobs with an id less than ID (paging)")
      ->type_name("ID");
  app->add_flag("--newest-first", args->newest_first, "Newest (highest id) first");
  app->add_option("--view", args->view,
                  "Only scheduled or retrying (available) jobs, or expired (running) ones")
      ->type_name("VIEW");
  app->add_option("--group", args->group,
                  "Only the members of group NAME (enqueue --group), in id order")
      ->type_name("NAME");
  app->add_option("--search", args->search,
                  "Only jobs whose payload, worker, unique key or last error contains TEXT "
                  "(ASCII letters in any case; no wildcards)")
      ->type_name("TEXT");
  app->add_flag("--json", args->json,
                "Print a JSON array of jobs with every column (see 'readpast show --help')");
  return {app, [args](Session& session) { return list(session, *args); }};
}

}  // namespace readpast::cli
