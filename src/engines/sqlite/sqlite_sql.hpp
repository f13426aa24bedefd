// engines/sqlite/sqlite_sql.hpp — every SQL statement of the SQLite engine, in one place.
//
// Times are INTEGER microseconds since the Unix epoch (UTC). "now" is always a bound
// parameter read from the clock after BEGIN IMMEDIATE took the write lock, so every
// statement of a transaction sees one consistent time (on one machine, the host clock is
// the database's clock). Each statement numbers its parameters (?1, ?2, ...).
#pragma once

namespace readpast::detail::sqlite::sql {

// The columns of DESIGN.md, in the order read_job() expects them.
#define READPAST_SQLITE_JOB_COLUMNS                                                      \
  "id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by, " \
  "lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload"

inline constexpr const char* kSchemaVersion = "SELECT max(version) FROM readpast_schema_version";

// ?1 queue, ?2 unique_key
inline constexpr const char* kFindUniqueHolder =
    "SELECT id FROM readpast_jobs WHERE queue = ?1 AND unique_key = ?2 "
    "AND state IN ('available', 'running')";

// No statement that runs for every job uses RETURNING or an IN (sub-select): SQLite
// buffers RETURNING rows, and materialises such a list, in an ephemeral table, which is a
// b-tree with its own page cache, created and destroyed by every execution. Under glibc
// that memory (~100-300 KB) is handed back to the system at each statement end and faulted
// in again at the next, and that churn cost ~2 ms per job in a four-process drain (about
// 15x the rest of the work). Ids come from sqlite3_last_insert_rowid() instead, and a lease
// is a SELECT followed by one-row UPDATEs, in one IMMEDIATE transaction.

// ?1 queue, ?2 priority, ?3 run_at, ?4 max_attempts, ?5 now, ?6 unique_key, ?7 payload.
// The new id is sqlite3_last_insert_rowid().
inline constexpr const char* kInsertJob =
    "INSERT INTO readpast_jobs (queue, state, priority, run_at, attempts, max_attempts, "
    "enqueued_at, unique_key, payload) VALUES (?1, 'available', ?2, ?3, 0, ?4, ?5, ?6, ?7)";

// The lease, in one IMMEDIATE transaction: the write lock is held from the SELECT on, so
// no other connection can take the same jobs in between.
// ?1 queue, ?2 now, ?3 max jobs: the next available jobs, walking readpast_jobs_lease in
// (priority, run_at, id) order.
inline constexpr const char* kLeaseSelect =
    "SELECT " READPAST_SQLITE_JOB_COLUMNS
    " FROM readpast_jobs "
    "WHERE queue = ?1 AND state = 'available' AND run_at <= ?2 "
    "ORDER BY priority, run_at, id LIMIT ?3";
// Then each of them: ?1 id, ?2 token, ?3 worker id, ?4 now, ?5 lease expiry. The state test
// is a second line of defence (the lock makes it always true).
inline constexpr const char* kLeaseUpdate =
    "UPDATE readpast_jobs SET state = 'running', attempts = attempts + 1, lease_token = ?2, "
    "leased_by = ?3, lease_expires_at = ?5, started_at = ?4 "
    "WHERE id = ?1 AND state = 'available'";

// ?1 queue, ?2 now
inline constexpr const char* kRescueExpired =
    "UPDATE readpast_jobs SET "
    "state = CASE WHEN attempts >= max_attempts THEN 'dead' ELSE 'available' END, "
    "finished_at = CASE WHEN attempts >= max_attempts THEN ?2 END, "
    "run_at = CASE WHEN attempts >= max_attempts THEN run_at ELSE ?2 END, "
    "last_error = CASE WHEN attempts >= max_attempts "
    "THEN 'lease expired after ' || attempts || ' attempts (worker lost)' "
    "ELSE 'lease expired (worker lost)' END, "
    "lease_expires_at = NULL "
    "WHERE queue = ?1 AND state = 'running' AND lease_expires_at <= ?2";

// Fenced settling: ?1 id, ?2 token, then the statement's own parameters.
// ?3 now
inline constexpr const char* kComplete =
    "UPDATE readpast_jobs SET state = 'succeeded', finished_at = ?3, lease_expires_at = NULL "
    "WHERE id = ?1 AND state = 'running' AND lease_token = ?2";
inline constexpr const char* kCompleteDelete =
    "DELETE FROM readpast_jobs WHERE id = ?1 AND state = 'running' AND lease_token = ?2";

// ?3 now, ?4 error, ?5 retry_after (NULL: use the backoff), ?6 base, ?7 cap, ?8 factor.
// The backoff is computed in REAL arithmetic so that base * 2^(attempts-1) cannot
// overflow; the exponent is clamped at 40 like Backoff::delay_after.
inline constexpr const char* kFail =
    "UPDATE readpast_jobs SET "
    "state = CASE WHEN attempts >= max_attempts THEN 'dead' ELSE 'available' END, "
    "finished_at = CASE WHEN attempts >= max_attempts THEN ?3 END, "
    "run_at = CASE WHEN attempts >= max_attempts THEN run_at ELSE ?3 + coalesce(?5, "
    "CAST(min(?7 * 1.0, ?6 * 1.0 * (1 << min(max(attempts - 1, 0), 40))) * ?8 AS INTEGER)) END, "
    "last_error = ?4, lease_expires_at = NULL "
    "WHERE id = ?1 AND state = 'running' AND lease_token = ?2 RETURNING state";

// ?3 now, ?4 duration
inline constexpr const char* kExtend =
    "UPDATE readpast_jobs SET lease_expires_at = ?3 + ?4 "
    "WHERE id = ?1 AND state = 'running' AND lease_token = ?2";

// ?3 now, ?4 delay. Gives back the attempt the lease spent.
inline constexpr const char* kRelease =
    "UPDATE readpast_jobs SET state = 'available', run_at = ?3 + ?4, "
    "attempts = max(attempts - 1, 0), lease_expires_at = NULL "
    "WHERE id = ?1 AND state = 'running' AND lease_token = ?2";

// ?1 id, ?2 now
inline constexpr const char* kCancel =
    "UPDATE readpast_jobs SET state = 'cancelled', finished_at = ?2, lease_expires_at = NULL "
    "WHERE id = ?1 AND state IN ('available', 'running')";

// ?1 id, ?2 now
inline constexpr const char* kRetry =
    "UPDATE readpast_jobs SET state = 'available', attempts = 0, run_at = ?2, "
    "finished_at = NULL, lease_expires_at = NULL WHERE id = ?1 AND state IN ('dead', 'cancelled')";

// ?1 queue, ?2 state, ?3 now
inline constexpr const char* kRetryAll =
    "UPDATE readpast_jobs SET state = 'available', attempts = 0, run_at = ?3, "
    "finished_at = NULL, lease_expires_at = NULL WHERE queue = ?1 AND state = ?2";

// ?1 queue, ?2 state, ?3 finished at or before, ?4 limit. Walks readpast_jobs_finished.
inline constexpr const char* kPurge =
    "DELETE FROM readpast_jobs WHERE id IN (SELECT id FROM readpast_jobs "
    "WHERE queue = ?1 AND state = ?2 AND finished_at <= ?3 ORDER BY finished_at LIMIT ?4)";

// ?1 now. One row per (queue, state); scheduled and oldest only matter for 'available'.
#define READPAST_SQLITE_STATS_SELECT                                            \
  "SELECT queue, state, count(*), "                                             \
  "coalesce(sum(run_at > ?1), 0), min(CASE WHEN run_at <= ?1 THEN run_at END) " \
  "FROM readpast_jobs "
inline constexpr const char* kStatsAll =
    READPAST_SQLITE_STATS_SELECT "GROUP BY queue, state ORDER BY queue";
// ?2 queue
inline constexpr const char* kStatsQueue =
    READPAST_SQLITE_STATS_SELECT "WHERE queue = ?2 GROUP BY queue, state";

// list: one statement per filter combination, so that each can use an index.
// ?1 after id, ?2 limit, ?3 queue, ?4 state
#define READPAST_SQLITE_LIST_SELECT "SELECT " READPAST_SQLITE_JOB_COLUMNS " FROM readpast_jobs "
inline constexpr const char* kListAll =
    READPAST_SQLITE_LIST_SELECT "WHERE id > ?1 ORDER BY id LIMIT ?2";
inline constexpr const char* kListQueue =
    READPAST_SQLITE_LIST_SELECT "WHERE id > ?1 AND queue = ?3 ORDER BY id LIMIT ?2";
inline constexpr const char* kListState =
    READPAST_SQLITE_LIST_SELECT "WHERE id > ?1 AND state = ?4 ORDER BY id LIMIT ?2";
inline constexpr const char* kListQueueState =
    READPAST_SQLITE_LIST_SELECT "WHERE id > ?1 AND queue = ?3 AND state = ?4 ORDER BY id LIMIT ?2";

// ?1 id
inline constexpr const char* kGet = READPAST_SQLITE_LIST_SELECT "WHERE id = ?1";

#undef READPAST_SQLITE_LIST_SELECT
#undef READPAST_SQLITE_STATS_SELECT

}  // namespace readpast::detail::sqlite::sql
