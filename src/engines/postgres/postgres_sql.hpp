// engines/postgres/postgres_sql.hpp — the PostgreSQL engine's statements, from its .sql files
// (sql/statements.sql, sql/migrations/), ready to prepare for one schema.
//
// The SQL text and what each statement does live in sql/statements.sql; the generated header
// (postgres_statements.hpp, namespace pg::sql) holds each statement's text with its :name
// parameters numbered $1..$N, and one constant per name that code binds by:
//   Params params(sql::lease::param_count);
//   params.text(sql::lease::queue, queue);
// Sql expands the schema's three placeholders once (:"schema", :"channel", :'channel'); the
// schema name is the only text ever written into SQL (SchemaName::parse, then quoted).
//
// Thread-safety: Sql is immutable after construction.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engines/postgres/postgres_statements.hpp"
#include "readpast/error.hpp"

namespace readpast::detail::pg {

// The schema version this build creates and understands: one per migration file.
inline constexpr int kSchemaVersion = sql::migration_count;

// A validated schema name and the identifiers derived from it.
struct SchemaName {
  std::string name;     // as given, e.g. readpast
  std::string quoted;   // "readpast"
  std::string channel;  // readpast.jobs: the LISTEN/NOTIFY channel
  // Schema names follow the queue-name rule ([A-Za-z0-9][A-Za-z0-9_.-]*) and are at most
  // 58 bytes, so that "<schema>.jobs" fits PostgreSQL's 63-byte identifiers.
  static Result<SchemaName> parse(std::string_view name);
};

// One statement of the engine: a stable name, under which each connection prepares it once,
// and the number of parameters it takes.
struct Statement {
  std::string name;
  std::string sql;
  int param_count = 0;
  // Prepared once per session under `name` (its plan cached: after five calls PostgreSQL may
  // keep one generic plan for every value). False: sent with its values each time and
  // planned for them, for a statement whose best plan depends on the values (the lists: a
  // rare state in a queue is an index range, a common one a walk of the primary key).
  bool prepared = true;
};

// The statements of sql/statements.sql for one schema, under the same names.
struct Sql {
  explicit Sql(const SchemaName& schema);

  Statement create_schema;  // a script (Connection::exec_script)
  Statement migrate_lock;
  Statement record_version;
  Statement listen;  // a script, on the listener's connection
  Statement schema_version;
  Statement enqueue_one;
  Statement enqueue_one_timed;
  Statement enqueue_one_keyed;
  Statement enqueue_many;
  Statement enqueue_uniform;
  Statement enqueue_uniform_timed;
  Statement enqueue;
  Statement lease;
  // The lease and the probe of LeaseMode (lease_mode.hpp) while a snapshot is held.
  Statement lease_lanes;
  Statement oldest_snapshot;
  Statement complete;
  Statement complete_delete;
  Statement fail;
  Statement extend;
  Statement held;
  Statement release;
  Statement rescue;
  Statement cancel;
  Statement retry;
  Statement retry_all;
  Statement purge;
  Statement now;
  Statement next_due;
  Statement stats;
  Statement list_all;
  Statement list_queue;
  Statement list_state;
  Statement list_queue_state;
  Statement list_all_desc;
  Statement list_queue_desc;
  Statement list_state_desc;
  Statement list_queue_state_desc;
  Statement id_bounds;
  Statement delete_finished;
  Statement get;
  Statement finished_since;
  Statement lease_limited;
  Statement queue_limits;
  Statement set_limits;
  Statement clear_limits;
  Statement pause;
  Statement resume;
  Statement upsert_schedule;
  Statement list_schedules;
  Statement delete_schedule;
  Statement enqueue_tick;
  Statement enqueue_schedule_now;
  Statement claim_task;
  Statement rotate_running;
  Statement rotation_blocker;
  Statement storage_sizes;
  Statement add_metrics;
  Statement read_metrics;
  Statement upsert_worker;
  Statement delete_worker;
  Statement list_workers;
  // Dependencies (docs/workflows.md).
  Statement lock_dependencies;
  Statement insert_dependent;
  Statement unique_holder;
  Statement insert_dependencies;
  Statement resolve_lock;
  Statement resolve_wait_lock;
  Statement any_notified;
  Statement resolve_succeeded;
  Statement resolve_failed;
  Statement rewait;
  Statement renotify;
  Statement dependencies_of;
  Statement dependents_of;
  Statement join_group;
  Statement find_group;
  Statement group_stats;
  Statement list_group;
  Statement leave_groups;
  Statement release_groups;
  Statement rejoin_groups;
  Statement job_group;
  Statement set_progress;
  Statement job_errors;
  Statement find_unique_windows;
  Statement claim_unique_window;
  Statement window_holder;
  Statement set_window_job;
  Statement forget_closed_windows;

  // migrations[v - 1] upgrades v - 1 → v; scripts, run by migrate() in its transaction.
  std::vector<std::string> migrations;
};

}  // namespace readpast::detail::pg
