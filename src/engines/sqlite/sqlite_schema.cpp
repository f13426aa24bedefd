#include "engines/sqlite/sqlite_schema.hpp"

#include <array>
#include <string>

#include "engines/sqlite/sqlite_sql.hpp"

namespace readpast::detail::sqlite {
namespace {

// Migration N is kMigrations[N - 1].
//
// No CHECK constraint or index condition tests a column against a list of three or more
// values with IN: SQLite evaluates such an IN through an ephemeral table (a b-tree with its
// own page cache) that every INSERT, UPDATE and DELETE of a job creates and destroys. Under
// glibc that cost ~2 ms per job in a four-process drain; a chain of = and OR costs nothing
// of the kind. (Two-value INs are compiled to plain comparisons and are fine.)
constexpr std::array<const char*, kSchemaVersion> kMigrations = {
    // 1: the jobs table and one partial index per hot path.
    R"sql(
CREATE TABLE readpast_jobs (
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
  WHERE state = 'succeeded' OR state = 'dead' OR state = 'cancelled';
-- stats and list: counts per queue and state, paging by id.
CREATE INDEX readpast_jobs_queue_state ON readpast_jobs (queue, state, id);
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

Error too_new(int version) {
  return Error::schema("database schema version " + std::to_string(version) +
                       " is newer than this readpast understands (" +
                       std::to_string(kSchemaVersion) + "); upgrade readpast");
}

}  // namespace

Result<int> migrate(Connection& connection) {
  auto transaction = ImmediateTransaction::begin(connection);
  if (!transaction) return fail_with(transaction.error());
  if (auto ok = connection.exec(kCreateVersionTable); !ok) return fail_with(ok.error());
  auto version = read_version(connection);
  if (!version) return fail_with(version.error());
  if (*version > kSchemaVersion) return fail_with(too_new(*version));
  for (int next = *version + 1; next <= kSchemaVersion; ++next) {
    if (auto ok = connection.exec(kMigrations[static_cast<std::size_t>(next - 1)]); !ok) {
      return fail_with(
          Error::schema("migration " + std::to_string(next) + " failed: " + ok.error().message));
    }
    auto insert = connection.prepare(kInsertVersion);
    if (!insert) return fail_with(insert.error());
    (*insert)->bind(1, next);
    if (auto ok = (*insert)->step(); !ok) return fail_with(ok.error());
  }
  if (auto ok = transaction->commit(); !ok) return fail_with(ok.error());
  return kSchemaVersion;
}

Result<int> schema_version(Connection& connection) {
  auto version = read_version(connection);
  if (!version) return version;
  if (*version == 0) {
    return fail_with(Error::schema("the database has no readpast schema; run `readpast init`"));
  }
  if (*version > kSchemaVersion) return fail_with(too_new(*version));
  if (*version < kSchemaVersion) {
    return fail_with(Error::schema(
        "database schema version " + std::to_string(*version) + " is older than this readpast's (" +
        std::to_string(kSchemaVersion) + "); run `readpast init` to upgrade it in place"));
  }
  return version;
}

}  // namespace readpast::detail::sqlite
