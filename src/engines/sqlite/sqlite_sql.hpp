// engines/sqlite/sqlite_sql.hpp — every SQL statement of the SQLite engine, in one place.
//
// Times are INTEGER microseconds since the Unix epoch (UTC). "now" is always a bound
// parameter read from the clock after BEGIN IMMEDIATE took the write lock, so every
// statement of a transaction sees one consistent time (on one machine, the host clock is
// the database's clock). Each statement numbers its parameters (?1, ?2, ...).
#pragma once

namespace readpast::detail::sqlite::sql {

// The columns of docs/design.md ("The job"), in the order read_job() expects them.
#define READPAST_SQLITE_JOB_COLUMNS                                                      \
  "id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by, " \
  "lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload"

inline constexpr const char* kSchemaVersion = "SELECT max(version) FROM readpast_schema_version";

// A row when the queue named by the parameter is paused.
#define READPAST_SQLITE_PAUSED(param) \
  "SELECT 1 FROM readpast_queues WHERE name = " param " AND paused_at IS NOT NULL"

// ?1 queue, ?2 unique_key
inline constexpr const char* kFindUniqueHolder =
    "SELECT id FROM readpast_jobs WHERE queue = ?1 AND unique_key = ?2 "
    "AND state IN ('available', 'running')";

// ?1 queue, ?2 priority, ?3 run_at, ?4 max_attempts, ?5 now, ?6 unique_key, ?7 payload.
// The new id is read with sqlite3_last_insert_rowid(), not RETURNING: RETURNING buffers
// its rows in an ephemeral table that every execution would build and free.
inline constexpr const char* kInsertJob =
    "INSERT INTO readpast_jobs (queue, state, priority, run_at, attempts, max_attempts, "
    "enqueued_at, unique_key, payload) VALUES (?1, 'available', ?2, ?3, 0, ?4, ?5, ?6, ?7)";

// ?1 worker id, ?2 now, ?3 lease duration, ?4 queue, ?5 max jobs.
// The sub-select walks readpast_jobs_lease in (priority, run_at, id) order. RETURNING
// order is unspecified, so the engine sorts the rows it returns.
#define READPAST_SQLITE_LEASE(id_matches)                                                  \
  "UPDATE readpast_jobs SET state = 'running', attempts = attempts + 1, "                  \
  "lease_token = lower(hex(randomblob(16))), leased_by = ?1, lease_expires_at = ?2 + ?3, " \
  "started_at = ?2 "                                                                       \
  "WHERE id " id_matches                                                                   \
  " (SELECT id FROM readpast_jobs WHERE queue = ?4 "                                       \
  "AND state = 'available' AND run_at <= ?2 AND NOT EXISTS (" READPAST_SQLITE_PAUSED(      \
      "?4") ") ORDER BY priority, run_at, id LIMIT ?5) RETURNING " READPAST_SQLITE_JOB_COLUMNS
inline constexpr const char* kLease = READPAST_SQLITE_LEASE("IN");
// The same for one job. SQLite builds an ephemeral table (a b-tree with a page cache of
// its own, allocated and freed by every execution) for IN (sub-select) and one for the
// UPDATE's row set when it also has RETURNING; `id = (sub-select)` needs neither, which
// leaves the one RETURNING buffers its rows in. ?5 is 1.
inline constexpr const char* kLeaseOne = READPAST_SQLITE_LEASE("=");
#undef READPAST_SQLITE_LEASE

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

// ?3 now, ?4 error, ?5 retry_after (NULL: use the backoff), ?6 base, ?7 cap, ?8 factor,
// ?9 no_retry (1: dead now). The backoff is computed in REAL arithmetic so that
// base * 2^(attempts-1) cannot overflow; the exponent is clamped at 40 like
// Backoff::delay_after.
inline constexpr const char* kFail =
    "UPDATE readpast_jobs SET "
    "state = CASE WHEN attempts >= max_attempts OR ?9 THEN 'dead' ELSE 'available' END, "
    "finished_at = CASE WHEN attempts >= max_attempts OR ?9 THEN ?3 END, "
    "run_at = CASE WHEN attempts >= max_attempts OR ?9 THEN run_at ELSE ?3 + coalesce(?5, "
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

// ?1 id, ?2 now. A job whose unique key a live job of its queue holds now stays where it
// is: it cannot become live again without breaking the key's promise.
inline constexpr const char* kRetry =
    "UPDATE readpast_jobs SET state = 'available', attempts = 0, run_at = ?2, "
    "finished_at = NULL, lease_expires_at = NULL WHERE id = ?1 AND state IN ('dead', 'cancelled') "
    "AND NOT (unique_key IS NOT NULL AND EXISTS (SELECT 1 FROM readpast_jobs h "
    "WHERE h.queue = readpast_jobs.queue AND h.unique_key = readpast_jobs.unique_key "
    "AND h.state IN ('available', 'running')))";

// readpast_jobs_queue_state leaves running jobs out (schema version 4). SQLite uses a
// partial index only for a statement whose WHERE repeats the index's condition word for
// word (state = ?2 alone cannot prove it), hence the `state <> 'running'` below.
#define READPAST_SQLITE_NOT_RUNNING "state <> 'running'"

// ?1 queue, ?2 state (dead or cancelled), ?3 after id, ?4 limit: the next ids retry_all
// goes through, one small transaction at a time, along readpast_jobs_queue_state.
inline constexpr const char* kRetryCandidates =
    "SELECT id FROM readpast_jobs WHERE queue = ?1 AND state = ?2 "
    "AND state IN ('dead', 'cancelled') AND " READPAST_SQLITE_NOT_RUNNING
    " AND id > ?3 ORDER BY id LIMIT ?4";

// ?1 queue, ?2 state, ?3 finished at or before, ?4 limit. Walks readpast_jobs_finished:
// the OR chain repeats the index's condition word for word, which is what lets SQLite use
// a partial index here (state = ?2 alone cannot prove it).
inline constexpr const char* kPurge =
    "DELETE FROM readpast_jobs WHERE id IN (SELECT id FROM readpast_jobs "
    "WHERE queue = ?1 AND state = ?2 "
    "AND (state = 'succeeded' OR state = 'dead' OR state = 'cancelled') "
    "AND finished_at <= ?3 ORDER BY finished_at LIMIT ?4)";

// ?1 now. One row per (queue, state); scheduled and oldest only matter for 'available'.
// Every state but running is counted along readpast_jobs_queue_state, running jobs along
// readpast_jobs_expiry.
#define READPAST_SQLITE_STATS_SELECT                                            \
  "SELECT queue, state, count(*), "                                             \
  "coalesce(sum(run_at > ?1), 0), min(CASE WHEN run_at <= ?1 THEN run_at END) " \
  "FROM readpast_jobs WHERE " READPAST_SQLITE_NOT_RUNNING " "
#define READPAST_SQLITE_STATS_RUNNING \
  "SELECT queue, 'running', count(*), 0, NULL FROM readpast_jobs WHERE state = 'running' "
// Paused queues come as one more row, of state 'paused', so that a paused queue without
// jobs is listed too.
#define READPAST_SQLITE_STATS_PAUSED \
  "SELECT name, 'paused', 0, 0, NULL FROM readpast_queues WHERE paused_at IS NOT NULL "
inline constexpr const char* kStatsAll = READPAST_SQLITE_STATS_SELECT
    "GROUP BY queue, state UNION ALL " READPAST_SQLITE_STATS_RUNNING
    "GROUP BY queue UNION ALL " READPAST_SQLITE_STATS_PAUSED "ORDER BY 1";
// ?2 queue
inline constexpr const char* kStatsQueue = READPAST_SQLITE_STATS_SELECT
    "AND queue = ?2 GROUP BY queue, state UNION ALL " READPAST_SQLITE_STATS_RUNNING
    "AND queue = ?2 GROUP BY queue UNION ALL " READPAST_SQLITE_STATS_PAUSED "AND name = ?2";

// ?1 since (exclusive), ?2 queue (NULL: every queue). Walks readpast_jobs_finished, whose
// condition the OR chain repeats (see kPurge).
inline constexpr const char* kFinishedSince =
    "SELECT queue, coalesce(sum(state = 'succeeded'), 0), coalesce(sum(state = 'dead'), 0) "
    "FROM readpast_jobs WHERE (state = 'succeeded' OR state = 'dead' OR state = 'cancelled') "
    "AND state IN ('succeeded', 'dead') AND finished_at > ?1 "
    "AND (?2 IS NULL OR queue = ?2) GROUP BY queue ORDER BY queue";

// ?1 queue, ?2 now. Pausing keeps the first pause time.
inline constexpr const char* kPause =
    "INSERT INTO readpast_queues (name, paused_at) VALUES (?1, ?2) "
    "ON CONFLICT (name) DO UPDATE SET paused_at = coalesce(paused_at, excluded.paused_at)";
// ?1 queue
inline constexpr const char* kResume =
    "UPDATE readpast_queues SET paused_at = NULL WHERE name = ?1";

// ?1 name, ?2 queue, ?3 spec, ?4 payload, ?5 priority, ?6 max_attempts, ?7 now.
// A replaced schedule keeps its created_at and last tick.
inline constexpr const char* kFindSchedule = "SELECT 1 FROM readpast_schedules WHERE name = ?1";
inline constexpr const char* kUpsertSchedule =
    "INSERT INTO readpast_schedules (name, queue, spec, payload, priority, max_attempts, "
    "created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (name) DO UPDATE SET "
    "queue = excluded.queue, spec = excluded.spec, payload = excluded.payload, "
    "priority = excluded.priority, max_attempts = excluded.max_attempts";
inline constexpr const char* kListSchedules =
    "SELECT name, queue, spec, payload, priority, max_attempts, created_at, last_tick_at "
    "FROM readpast_schedules ORDER BY name";
// ?1 name
inline constexpr const char* kDeleteSchedule = "DELETE FROM readpast_schedules WHERE name = ?1";
// ?1 name, ?2 tick: takes the tick when nobody has yet; returns what the job needs.
inline constexpr const char* kTakeTick =
    "UPDATE readpast_schedules SET last_tick_at = ?2 "
    "WHERE name = ?1 AND coalesce(last_tick_at, created_at) < ?2 "
    "RETURNING queue, payload, priority, max_attempts";

// ?1 task, ?2 now, ?3 interval, ?4 by: claimed when the row is new or its time has come.
inline constexpr const char* kClaimTask =
    "INSERT INTO readpast_tasks (task, next_run_at, claimed_by, claimed_at) "
    "VALUES (?1, ?2 + ?3, ?4, ?2) ON CONFLICT (task) DO UPDATE SET "
    "next_run_at = excluded.next_run_at, claimed_by = excluded.claimed_by, "
    "claimed_at = excluded.claimed_at WHERE readpast_tasks.next_run_at <= ?2";

// list: one statement per filter combination, so that each can use an index.
// ?1 after id, ?2 limit, ?3 queue, ?4 state
#define READPAST_SQLITE_LIST_SELECT "SELECT " READPAST_SQLITE_JOB_COLUMNS " FROM readpast_jobs "
inline constexpr const char* kListAll =
    READPAST_SQLITE_LIST_SELECT "WHERE id > ?1 ORDER BY id LIMIT ?2";
inline constexpr const char* kListQueue =
    READPAST_SQLITE_LIST_SELECT "WHERE id > ?1 AND queue = ?3 ORDER BY id LIMIT ?2";
inline constexpr const char* kListState =
    READPAST_SQLITE_LIST_SELECT "WHERE id > ?1 AND state = ?4 ORDER BY id LIMIT ?2";
// One range of readpast_jobs_queue_state, for every state but running (kListQueueRunning).
inline constexpr const char* kListQueueState = READPAST_SQLITE_LIST_SELECT
    "WHERE id > ?1 AND queue = ?3 AND state = ?4 AND " READPAST_SQLITE_NOT_RUNNING
    " ORDER BY id LIMIT ?2";
// The queue's running jobs (?4 is 'running'), found along readpast_jobs_expiry and sorted:
// there are only as many as its workers hold. The literal is what lets SQLite use that
// partial index.
inline constexpr const char* kListQueueRunning = READPAST_SQLITE_LIST_SELECT
    "WHERE id > ?1 AND queue = ?3 AND state = ?4 AND state = 'running' ORDER BY id LIMIT ?2";

// ?1 id
inline constexpr const char* kGet = READPAST_SQLITE_LIST_SELECT "WHERE id = ?1";

#undef READPAST_SQLITE_LIST_SELECT
#undef READPAST_SQLITE_STATS_SELECT
#undef READPAST_SQLITE_STATS_RUNNING
#undef READPAST_SQLITE_STATS_PAUSED
#undef READPAST_SQLITE_NOT_RUNNING

// wait_for_work: PRAGMA data_version changes when another connection commits.
inline constexpr const char* kDataVersion = "PRAGMA data_version";
// ?1 queue, ?2 now: is a job due (and the queue not paused)?
inline constexpr const char* kHasDueJob =
    "SELECT EXISTS (SELECT 1 FROM readpast_jobs WHERE queue = ?1 AND state = 'available' "
    "AND run_at <= ?2) AND NOT EXISTS (" READPAST_SQLITE_PAUSED("?1") ")";

#undef READPAST_SQLITE_PAUSED

}  // namespace readpast::detail::sqlite::sql
