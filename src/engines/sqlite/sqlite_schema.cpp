#include "engines/sqlite/sqlite_schema.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "core/schema_policy.hpp"
#include "engines/sqlite/sqlite_sql.hpp"

namespace readpast::detail::sqlite {
namespace {

// [A-Za-z0-9][A-Za-z0-9_.-]{0,127} in SQL: validate_queue_name's rule.
#define READPAST_SQLITE_NAME_CHECK(x)                                 \
  "typeof(" x ") = 'text' AND length(" x ") BETWEEN 1 AND 128 AND " x \
  " GLOB '[A-Za-z0-9]*' AND " x " NOT GLOB '*[^A-Za-z0-9_.-]*'"

// Migration N is kMigrations[N - 1].
constexpr std::array<const char*, kSchemaVersion> kMigrations = {
    // 1: the jobs table and one partial index per hot path.
    R"sql(
CREATE TABLE readpast_jobs (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,  -- increasing, never reused
  queue            TEXT    NOT NULL,
  state            TEXT    NOT NULL DEFAULT 'available'
                   CHECK (state IN ('available', 'running', 'succeeded', 'dead', 'cancelled')),
  priority         INTEGER NOT NULL DEFAULT 100,
  run_at           INTEGER NOT NULL,                   -- microseconds since the Unix epoch
  attempts         INTEGER NOT NULL DEFAULT 0,
  max_attempts     INTEGER NOT NULL DEFAULT 25 CHECK (max_attempts >= 1),
  lease_token      TEXT,
  leased_by        TEXT,
  lease_expires_at INTEGER,
  enqueued_at      INTEGER NOT NULL,
  started_at       INTEGER,
  finished_at      INTEGER,
  unique_key       TEXT,
  last_error       TEXT,
  payload          BLOB    NOT NULL DEFAULT x''
);
-- lease: the next available jobs of a queue in hand-out order.
CREATE INDEX readpast_jobs_lease ON readpast_jobs (queue, priority, run_at, id)
  WHERE state = 'available';
-- rescue: running jobs of a queue by lease expiry.
CREATE INDEX readpast_jobs_expiry ON readpast_jobs (queue, lease_expires_at)
  WHERE state = 'running';
-- unique keys are held only by live jobs.
CREATE UNIQUE INDEX readpast_jobs_unique ON readpast_jobs (queue, unique_key)
  WHERE unique_key IS NOT NULL AND state IN ('available', 'running');
-- purge and retention: finished jobs of a queue by age.
CREATE INDEX readpast_jobs_finished ON readpast_jobs (queue, state, finished_at)
  WHERE state IN ('succeeded', 'dead', 'cancelled');
-- stats and list: counts per queue and state, paging by id.
CREATE INDEX readpast_jobs_queue_state ON readpast_jobs (queue, state, id);
)sql",
    // 2: paused queues, periodic schedules, shared maintenance tasks; and queue names
    // checked by the database too, so that a plain-SQL INSERT cannot create a queue that no
    // worker can name. (A CHECK cannot be added to an existing SQLite table: triggers do it.)
    R"sql(
CREATE TABLE readpast_queues (
  name      TEXT PRIMARY KEY CHECK ()sql" READPAST_SQLITE_NAME_CHECK("name") R"sql(),
  paused_at INTEGER                                   -- NULL: not paused
) WITHOUT ROWID;
CREATE TABLE readpast_schedules (
  name         TEXT    PRIMARY KEY CHECK ()sql" READPAST_SQLITE_NAME_CHECK("name") R"sql(),
  queue        TEXT    NOT NULL CHECK ()sql" READPAST_SQLITE_NAME_CHECK("queue") R"sql(),
  spec         TEXT    NOT NULL,
  payload      BLOB    NOT NULL DEFAULT x'',
  priority     INTEGER NOT NULL DEFAULT 100,
  max_attempts INTEGER NOT NULL DEFAULT 25 CHECK (max_attempts >= 1),
  created_at   INTEGER NOT NULL,
  last_tick_at INTEGER                                -- the latest tick enqueued
) WITHOUT ROWID;
CREATE TABLE readpast_tasks (
  task        TEXT    PRIMARY KEY,
  next_run_at INTEGER NOT NULL,                       -- free to claim from then on
  claimed_by  TEXT,
  claimed_at  INTEGER
) WITHOUT ROWID;
CREATE TRIGGER readpast_jobs_queue_name_insert BEFORE INSERT ON readpast_jobs
  WHEN NOT ()sql" READPAST_SQLITE_NAME_CHECK("NEW.queue") R"sql()
  BEGIN SELECT RAISE(ABORT, 'invalid queue name'); END;
CREATE TRIGGER readpast_jobs_queue_name_update BEFORE UPDATE OF queue ON readpast_jobs
  WHEN NOT ()sql" READPAST_SQLITE_NAME_CHECK("NEW.queue") R"sql()
  BEGIN SELECT RAISE(ABORT, 'invalid queue name'); END;
)sql",
    // 3: the jobs table rebuilt (SQLite cannot alter a CHECK) with every condition on state
    // written with = and OR. SQLite evaluates an IN list of three or more values through an
    // ephemeral table that the statement builds and frees each time; the state CHECK of
    // migration 1 did so on every insert and update of a job, the finished index's
    // condition on every write that touched it, and the churn of that memory cost more than
    // the rest of the statement. The copy keeps every row and id, and the AUTOINCREMENT
    // counter (sqlite_sequence), so that no id is ever handed out twice.
    R"sql(
CREATE TABLE readpast_jobs_v3 (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,  -- increasing, never reused
  queue            TEXT    NOT NULL,
  state            TEXT    NOT NULL DEFAULT 'available'
                   CHECK (state = 'available' OR state = 'running' OR state = 'succeeded'
                          OR state = 'dead' OR state = 'cancelled'),
  priority         INTEGER NOT NULL DEFAULT 100,
  run_at           INTEGER NOT NULL,                   -- microseconds since the Unix epoch
  attempts         INTEGER NOT NULL DEFAULT 0,
  max_attempts     INTEGER NOT NULL DEFAULT 25 CHECK (max_attempts >= 1),
  lease_token      TEXT,
  leased_by        TEXT,
  lease_expires_at INTEGER,
  enqueued_at      INTEGER NOT NULL,
  started_at       INTEGER,
  finished_at      INTEGER,
  unique_key       TEXT,
  last_error       TEXT,
  payload          BLOB    NOT NULL DEFAULT x''
);
-- Before the first row goes in, so that the copy only ever raises the counter.
INSERT INTO sqlite_sequence (name, seq)
  SELECT 'readpast_jobs_v3', seq FROM sqlite_sequence WHERE name = 'readpast_jobs';
INSERT INTO readpast_jobs_v3 (id, queue, state, priority, run_at, attempts, max_attempts,
                              lease_token, leased_by, lease_expires_at, enqueued_at,
                              started_at, finished_at, unique_key, last_error, payload)
  SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
         lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload
  FROM readpast_jobs;
DROP TABLE readpast_jobs;  -- and with it its indexes and triggers, recreated below
ALTER TABLE readpast_jobs_v3 RENAME TO readpast_jobs;  -- renames its sqlite_sequence row too
CREATE INDEX readpast_jobs_lease ON readpast_jobs (queue, priority, run_at, id)
  WHERE state = 'available';
CREATE INDEX readpast_jobs_expiry ON readpast_jobs (queue, lease_expires_at)
  WHERE state = 'running';
CREATE UNIQUE INDEX readpast_jobs_unique ON readpast_jobs (queue, unique_key)
  WHERE unique_key IS NOT NULL AND state IN ('available', 'running');  -- two: no ephemeral
CREATE INDEX readpast_jobs_finished ON readpast_jobs (queue, state, finished_at)
  WHERE state = 'succeeded' OR state = 'dead' OR state = 'cancelled';
CREATE INDEX readpast_jobs_queue_state ON readpast_jobs (queue, state, id);
CREATE TRIGGER readpast_jobs_queue_name_insert BEFORE INSERT ON readpast_jobs
  WHEN NOT ()sql" READPAST_SQLITE_NAME_CHECK("NEW.queue") R"sql()
  BEGIN SELECT RAISE(ABORT, 'invalid queue name'); END;
CREATE TRIGGER readpast_jobs_queue_name_update BEFORE UPDATE OF queue ON readpast_jobs
  WHEN NOT ()sql" READPAST_SQLITE_NAME_CHECK("NEW.queue") R"sql()
  BEGIN SELECT RAISE(ABORT, 'invalid queue name'); END;
)sql",
    // 4: readpast_jobs_queue_state without running jobs. Both state changes of every job
    // that runs (the lease, then the settling) deleted and re-inserted its entry in this
    // index; now the lease only deletes it and the settling only inserts it, two b-tree
    // writes fewer per job. Running jobs of a queue are few (workers hold them), so list
    // and stats find them through readpast_jobs_expiry instead (sqlite_sql.hpp).
    R"sql(
DROP INDEX readpast_jobs_queue_state;
CREATE INDEX readpast_jobs_queue_state ON readpast_jobs (queue, state, id)
  WHERE state <> 'running';
)sql",
};

constexpr const char* kCreateVersionTable =
    "CREATE TABLE IF NOT EXISTS readpast_schema_version ("
    "version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL DEFAULT (datetime('now')))";
constexpr const char* kInsertVersion = "INSERT INTO readpast_schema_version (version) VALUES (?1)";
constexpr const char* kHasVersionTable =
    "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = "
    "'readpast_schema_version'";

Result<int> read_version(Connection& connection) {
  auto has_table = connection.prepare(kHasVersionTable);
  if (!has_table) return fail_with(has_table.error());
  auto row = (*has_table)->step();
  if (!row) return fail_with(row.error());
  if ((*has_table)->int64(0) == 0) return 0;
  auto version = connection.prepare(sql::kSchemaVersion);
  if (!version) return fail_with(version.error());
  if (auto ok = (*version)->step(); !ok) return fail_with(ok.error());
  return static_cast<int>((*version)->int64(0));  // max() of no rows is NULL → 0
}

// Migrations as SQLite runs them, in the caller's IMMEDIATE transaction.
class SqliteMigrationSteps final : public MigrationSteps {
 public:
  explicit SqliteMigrationSteps(Connection& connection) : connection_(connection) {}
  Result<int> version() override { return read_version(connection_); }
  Status apply(int number) override {
    if (auto ok = connection_.exec(kMigrations[static_cast<std::size_t>(number - 1)]); !ok) {
      return ok;
    }
    auto insert = connection_.prepare(kInsertVersion);
    if (!insert) return fail_with(insert.error());
    (*insert)->bind(1, number);
    if (auto ok = (*insert)->step(); !ok) return fail_with(ok.error());
    return {};
  }

 private:
  Connection& connection_;
};

}  // namespace

#undef READPAST_SQLITE_NAME_CHECK

Result<int> migrate(Connection& connection, int target) {
  auto transaction = ImmediateTransaction::begin(connection);
  if (!transaction) return fail_with(transaction.error());
  if (auto ok = connection.exec(kCreateVersionTable); !ok) return fail_with(ok.error());
  SqliteMigrationSteps steps(connection);
  auto version = migrate_schema(steps, target, kSchemaVersion);
  if (!version) return version;
  if (auto ok = transaction->commit(); !ok) return fail_with(ok.error());
  return version;
}

Result<int> schema_version(Connection& connection) {
  auto version = read_version(connection);
  if (!version) return version;
  if (auto ok = check_schema_version(*version, kSchemaVersion); !ok) return fail_with(ok.error());
  return version;
}

}  // namespace readpast::detail::sqlite
