// engines/postgres/postgres_sql.cpp — the statements of sql/statements.sql for one schema.
// See postgres_sql.hpp; docs/postgres.md explains the schema and docs/sql.md the functions
// that the migrations install.
#include "engines/postgres/postgres_sql.hpp"

namespace readpast::detail::pg {
namespace {

// Expands the schema's placeholders, written as psql variables so that the .sql files run
// in psql as they are: :"schema" and :"channel" (quoted identifiers) and :'channel' (a
// literal). The values are validated (SchemaName::parse): they contain no quotes.
std::string expand(std::string_view text, const SchemaName& schema) {
  const std::string channel_identifier = "\"" + schema.channel + "\"";
  const std::string channel_literal = "'" + schema.channel + "'";
  struct Placeholder {
    std::string_view name;
    const std::string& value;
  };
  const Placeholder placeholders[] = {{":\"schema\"", schema.quoted},
                                      {":\"channel\"", channel_identifier},
                                      {":'channel'", channel_literal}};
  std::string out;
  out.reserve(text.size() + 64);
  for (std::size_t i = 0; i < text.size();) {
    bool replaced = false;
    for (const auto& p : placeholders) {
      if (text.substr(i, p.name.size()) == p.name) {
        out += p.value;
        i += p.name.size();
        replaced = true;
        break;
      }
    }
    if (!replaced) out += text[i++];
  }
  return out;
}

template <class S>
Statement make(const char* name, const SchemaName& schema) {
  return Statement{std::string("readpast_") + name, expand(S::text, schema), S::param_count, true};
}

std::vector<std::string> expand_migrations(const SchemaName& schema) {
  std::vector<std::string> scripts;
  for (const char* script : sql::migrations) scripts.push_back(expand(script, schema));
  return scripts;
}

bool is_alnum(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

// The statement, sent with its values and planned for them on every call (Statement::prepared).
Statement planned_each_call(Statement statement) {
  statement.prepared = false;
  return statement;
}

}  // namespace

Result<SchemaName> SchemaName::parse(std::string_view name) {
  constexpr std::size_t kMaxSchemaBytes = 58;
  auto invalid = [&](std::string_view why) {
    std::string shown;
    for (char c : name.substr(0, 64)) shown += (c >= 0x20 && c < 0x7f) ? c : '?';
    return fail_with(
        Error::invalid_argument("invalid schema name '" + shown + "': " + std::string(why)));
  };
  if (name.empty()) return invalid("it is empty");
  if (name.size() > kMaxSchemaBytes) return invalid("longer than 58 characters");
  if (!is_alnum(name.front())) return invalid("must start with a letter or digit");
  for (char c : name) {
    if (!is_alnum(c) && c != '_' && c != '.' && c != '-') {
      return invalid("only letters, digits, '_', '.' and '-' are allowed");
    }
  }
  if (name.starts_with("pg_")) return invalid("names starting with pg_ are PostgreSQL's");
  SchemaName schema;
  schema.name = std::string(name);
  schema.quoted = "\"" + schema.name + "\"";
  schema.channel = schema.name + ".jobs";
  return schema;
}

Sql::Sql(const SchemaName& schema)
    : create_schema(make<sql::create_schema>("create_schema", schema)),
      migrate_lock(make<sql::migrate_lock>("migrate_lock", schema)),
      record_version(make<sql::record_version>("record_version", schema)),
      listen(make<sql::listen>("listen", schema)),
      schema_version(make<sql::schema_version>("schema_version", schema)),
      enqueue_one(make<sql::enqueue_one>("enqueue_one", schema)),
      enqueue_one_timed(make<sql::enqueue_one_timed>("enqueue_one_timed", schema)),
      enqueue_one_keyed(make<sql::enqueue_one_keyed>("enqueue_one_keyed", schema)),
      enqueue_many(make<sql::enqueue_many>("enqueue_many", schema)),
      enqueue_uniform(make<sql::enqueue_uniform>("enqueue_uniform", schema)),
      enqueue_uniform_timed(make<sql::enqueue_uniform_timed>("enqueue_uniform_timed", schema)),
      enqueue(make<sql::enqueue>("enqueue", schema)),
      lease(make<sql::lease>("lease", schema)),
      lease_lanes(make<sql::lease_lanes>("lease_lanes", schema)),
      oldest_snapshot(make<sql::oldest_snapshot>("oldest_snapshot", schema)),
      complete(make<sql::complete>("complete", schema)),
      complete_delete(make<sql::complete_delete>("complete_delete", schema)),
      fail(make<sql::fail>("fail", schema)),
      extend(make<sql::extend>("extend", schema)),
      held(make<sql::held>("held", schema)),
      release(make<sql::release>("release", schema)),
      rescue(make<sql::rescue>("rescue", schema)),
      cancel(make<sql::cancel>("cancel", schema)),
      retry(make<sql::retry>("retry", schema)),
      retry_all(make<sql::retry_all>("retry_all", schema)),
      purge(make<sql::purge>("purge", schema)),
      now(make<sql::now>("now", schema)),
      next_due(make<sql::next_due>("next_due", schema)),
      stats(make<sql::stats>("stats", schema)),
      list_all(planned_each_call(make<sql::list_all>("list_all", schema))),
      list_queue(planned_each_call(make<sql::list_queue>("list_queue", schema))),
      list_state(planned_each_call(make<sql::list_state>("list_state", schema))),
      list_queue_state(planned_each_call(make<sql::list_queue_state>("list_queue_state", schema))),
      list_all_desc(planned_each_call(make<sql::list_all_desc>("list_all_desc", schema))),
      list_queue_desc(planned_each_call(make<sql::list_queue_desc>("list_queue_desc", schema))),
      list_state_desc(planned_each_call(make<sql::list_state_desc>("list_state_desc", schema))),
      list_queue_state_desc(
          planned_each_call(make<sql::list_queue_state_desc>("list_queue_state_desc", schema))),
      id_bounds(make<sql::id_bounds>("id_bounds", schema)),
      delete_finished(make<sql::delete_finished>("delete_finished", schema)),
      get(make<sql::get>("get", schema)),
      finished_since(make<sql::finished_since>("finished_since", schema)),
      lease_limited(make<sql::lease_limited>("lease_limited", schema)),
      queue_limits(make<sql::queue_limits>("queue_limits", schema)),
      set_limits(make<sql::set_limits>("set_limits", schema)),
      clear_limits(make<sql::clear_limits>("clear_limits", schema)),
      pause(make<sql::pause>("pause", schema)),
      resume(make<sql::resume>("resume", schema)),
      upsert_schedule(make<sql::upsert_schedule>("upsert_schedule", schema)),
      list_schedules(make<sql::list_schedules>("list_schedules", schema)),
      delete_schedule(make<sql::delete_schedule>("delete_schedule", schema)),
      enqueue_tick(make<sql::enqueue_tick>("enqueue_tick", schema)),
      enqueue_schedule_now(make<sql::enqueue_schedule_now>("enqueue_schedule_now", schema)),
      claim_task(make<sql::claim_task>("claim_task", schema)),
      rotate_running(make<sql::rotate_running>("rotate_running", schema)),
      rotation_blocker(make<sql::rotation_blocker>("rotation_blocker", schema)),
      storage_sizes(make<sql::storage_sizes>("storage_sizes", schema)),
      add_metrics(make<sql::add_metrics>("add_metrics", schema)),
      read_metrics(make<sql::read_metrics>("read_metrics", schema)),
      upsert_worker(make<sql::upsert_worker>("upsert_worker", schema)),
      delete_worker(make<sql::delete_worker>("delete_worker", schema)),
      list_workers(make<sql::list_workers>("list_workers", schema)),
      lock_dependencies(make<sql::lock_dependencies>("lock_dependencies", schema)),
      insert_dependent(make<sql::insert_dependent>("insert_dependent", schema)),
      unique_holder(make<sql::unique_holder>("unique_holder", schema)),
      insert_dependencies(make<sql::insert_dependencies>("insert_dependencies", schema)),
      resolve_lock(make<sql::resolve_lock>("resolve_lock", schema)),
      resolve_wait_lock(make<sql::resolve_wait_lock>("resolve_wait_lock", schema)),
      any_notified(make<sql::any_notified>("any_notified", schema)),
      resolve_succeeded(make<sql::resolve_succeeded>("resolve_succeeded", schema)),
      resolve_failed(make<sql::resolve_failed>("resolve_failed", schema)),
      rewait(make<sql::rewait>("rewait", schema)),
      renotify(make<sql::renotify>("renotify", schema)),
      dependencies_of(make<sql::dependencies_of>("dependencies_of", schema)),
      dependents_of(make<sql::dependents_of>("dependents_of", schema)),
      join_group(make<sql::join_group>("join_group", schema)),
      find_group(make<sql::find_group>("find_group", schema)),
      group_stats(make<sql::group_stats>("group_stats", schema)),
      list_group(make<sql::list_group>("list_group", schema)),
      leave_groups(make<sql::leave_groups>("leave_groups", schema)),
      release_groups(make<sql::release_groups>("release_groups", schema)),
      rejoin_groups(make<sql::rejoin_groups>("rejoin_groups", schema)),
      job_group(make<sql::job_group>("job_group", schema)),
      set_progress(make<sql::set_progress>("set_progress", schema)),
      job_errors(make<sql::job_errors>("job_errors", schema)),
      find_unique_windows(make<sql::find_unique_windows>("find_unique_windows", schema)),
      claim_unique_window(make<sql::claim_unique_window>("claim_unique_window", schema)),
      window_holder(make<sql::window_holder>("window_holder", schema)),
      set_window_job(make<sql::set_window_job>("set_window_job", schema)),
      forget_closed_windows(make<sql::forget_closed_windows>("forget_closed_windows", schema)),
      migrations(expand_migrations(schema)) {}

}  // namespace readpast::detail::pg
