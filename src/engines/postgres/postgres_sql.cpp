// engines/postgres/postgres_sql.cpp — the SQL text of the PostgreSQL engine and its schema.
// See postgres_sql.hpp for the placeholders and the conventions; docs/postgres.md explains
// the schema and docs/sql.md the functions that migration 1 installs.
#include "engines/postgres/postgres_sql.hpp"

#include <array>

namespace readpast::detail::pg {
namespace {

// Replaces {S} and {CHANNEL}; the values are validated (SchemaName::parse), so they
// cannot contain quotes or braces.
std::string expand(std::string_view text, const SchemaName& schema) {
  std::string out;
  out.reserve(text.size() + 64);
  const std::string channel_literal = "'" + schema.channel + "'";
  for (std::size_t i = 0; i < text.size();) {
    if (text.substr(i, 3) == "{S}") {
      out += schema.quoted;
      i += 3;
    } else if (text.substr(i, 9) == "{CHANNEL}") {
      out += channel_literal;
      i += 9;
    } else {
      out += text[i++];
    }
  }
  return out;
}

#define READPAST_PG_JOB_COLUMNS                                                               \
  "j.id, j.queue, j.state, j.priority, j.run_at, j.attempts, j.max_attempts, j.lease_token, " \
  "j.leased_by, j.lease_expires_at, j.enqueued_at, j.started_at, j.finished_at, "             \
  "j.unique_key, j.last_error, j.payload"

constexpr std::string_view kSchemaVersionSql = "SELECT max(version) FROM {S}.schema_version";

// Enqueue without unique keys, the common case: a plain INSERT, so that the server does
// none of the work below for matching inputs to unique-key holders. One job binds scalars
// (the cheapest statement to plan and run); a batch unnests arrays in input order, and the
// identity column draws its ids in that order, so the ids that come back, sorted, are the
// inputs' ids in order (see pg_jobs.cpp). (For one job, the general statement below cost
// 45 µs more server time per call: 6,830 against 9,814 calls/s on one connection.)
constexpr std::string_view kEnqueueOneSql = R"sql(
INSERT INTO {S}.jobs (queue, payload, priority, run_at, max_attempts)
VALUES ($1::text, $2::bytea, $3::integer,
        coalesce($4::timestamptz,
                 statement_timestamp() + coalesce($5::bigint, 0) * interval '1 microsecond'),
        $6::integer)
RETURNING id
)sql";

constexpr std::string_view kEnqueueManySql = R"sql(
INSERT INTO {S}.jobs (queue, payload, priority, run_at, max_attempts)
SELECT t.queue, t.payload, t.priority,
       coalesce(t.run_at,
                statement_timestamp() + coalesce(t.delay_us, 0) * interval '1 microsecond'),
       t.max_attempts
FROM unnest($1::text[], $2::bytea[], $3::integer[], $4::timestamptz[], $5::bigint[],
            $6::integer[])
     WITH ORDINALITY AS t(queue, payload, priority, run_at, delay_us, max_attempts, ord)
ORDER BY t.ord
RETURNING id
)sql";

// The same for a batch whose jobs differ only in their payloads (one queue, priority, time
// and max_attempts: what a producer sends most), as one array and five scalars. Measured
// against kEnqueueManySql with the same jobs: the server unnests one array instead of six
// and the client encodes one (readpast_bench, docs/benchmarks.md run 7).
constexpr std::string_view kEnqueueUniformSql = R"sql(
INSERT INTO {S}.jobs (queue, payload, priority, run_at, max_attempts)
SELECT $1::text, t.payload, $3::integer,
       coalesce($4::timestamptz,
                statement_timestamp() + coalesce($5::bigint, 0) * interval '1 microsecond'),
       $6::integer
FROM unnest($2::bytea[]) WITH ORDINALITY AS t(payload, ord)
ORDER BY t.ord
RETURNING id
)sql";

// Batch enqueue with unique keys, in one statement. Ids are drawn from the table's sequence up
// front, in input order, so that each input row can be matched to what the INSERT did: an input
// whose new_id comes back from RETURNING was inserted; otherwise its unique key was held,
// and the holder is either an earlier row of this same batch (found in `inserted`) or a
// row visible to this statement's snapshot. A holder committed by another transaction
// after the snapshot was taken is invisible here (ON CONFLICT still saw it): id is then
// NULL and the engine looks again with a new statement (see pg_jobs.cpp).
constexpr std::string_view kEnqueueSql = R"sql(
WITH input AS (
  SELECT t.ord, t.queue, t.payload, t.priority, t.run_at, t.delay_us, t.max_attempts,
         t.unique_key, nextval('{S}.jobs_id_seq') AS new_id
  FROM unnest($1::text[], $2::bytea[], $3::integer[], $4::timestamptz[], $5::bigint[],
              $6::integer[], $7::text[])
       WITH ORDINALITY AS t(queue, payload, priority, run_at, delay_us, max_attempts,
                            unique_key, ord)
  ORDER BY t.ord
), inserted AS (
  INSERT INTO {S}.jobs AS j (id, queue, payload, priority, run_at, max_attempts, unique_key)
  OVERRIDING SYSTEM VALUE
  SELECT i.new_id, i.queue, i.payload, i.priority,
         coalesce(i.run_at,
                  statement_timestamp() + coalesce(i.delay_us, 0) * interval '1 microsecond'),
         i.max_attempts, i.unique_key
  FROM input i
  ORDER BY i.ord
  ON CONFLICT (queue, unique_key)
    WHERE unique_key IS NOT NULL AND state IN ('available', 'running')
    DO NOTHING
  RETURNING j.id, j.queue, j.unique_key
)
SELECT i.ord, coalesce(ins.id, batch_holder.id, holder.id) AS id, ins.id IS NOT NULL AS inserted
FROM input i
LEFT JOIN inserted ins ON ins.id = i.new_id
LEFT JOIN LATERAL (
  SELECT b.id FROM inserted b
  WHERE ins.id IS NULL AND b.queue = i.queue AND b.unique_key = i.unique_key
  LIMIT 1
) batch_holder ON true
LEFT JOIN LATERAL (
  SELECT h.id FROM {S}.jobs h
  WHERE ins.id IS NULL AND h.queue = i.queue AND h.unique_key = i.unique_key
    AND h.state IN ('available', 'running')
  LIMIT 1
) holder ON true
ORDER BY i.ord
)sql";

// The lease: ONE statement. The inner query walks jobs_lease_idx in hand-out order and locks
// up to max_jobs rows, skipping rows that another transaction has locked (another worker leasing or
// settling them) instead of waiting for it. Under READ COMMITTED, FOR UPDATE re-checks the
// WHERE clause against the newest version of each row it locks, so a row that another
// worker leased (and committed) after this statement's snapshot is not taken again. The
// UPDATE then changes exactly the rows this statement holds locks on; it repeats the state
// test only as a second line of defence. RETURNING order is unspecified: the engine sorts.
//
// The uncorrelated min() is evaluated once, before the walk, as a probe of jobs_due_idx:
// when no job is due it stops the statement at once, instead of walking past every
// scheduled job. It is a min() and not an EXISTS because PostgreSQL always plans min() over
// an index as an ordered index scan that stops at its first live entry, while an EXISTS was
// planned as a sequential scan whenever the statistics promised an early match (a freshly
// analysed queue of available jobs) — a scan that then stepped over every dead row version
// at the head of the table, so that each lease of a long drain cost more than the last.
//
// Lease tokens come from the caller ($4: 128 random bits per job the lease may take, from
// the operating system's random source) and are handed out in pick order (row_number).
// Generating them in the server (new_lease_token(): two gen_random_uuid() and a SHA-256)
// cost about 12 µs per job, more than the rest of the lease.
//
// {LIMIT} is either the parameter $5 or a number written into the text (see
// Sql::lease_with_limit): with LIMIT $5, PostgreSQL's generic plan assumes a tenth of the
// table is taken and turns the UPDATE into a hash join over a sequential scan, so it never
// uses that plan and plans the statement anew on every call (~0.2 ms, as much as running
// it); with a literal LIMIT it caches a plan after five calls.
//
// The NOT EXISTS (one probe of the queues table's primary key) hands out nothing of a
// paused queue.
//
// `j.id = ANY (ARRAY(SELECT …))` repeats the join condition so that the rows to update are
// found by one probe of the primary key each: with a literal LIMIT of a few hundred the
// planner otherwise joins `picked` to a sequential scan of the whole table (a hash join,
// cheaper in its cost model while the table holds a few thousand pages), and a lease of 500
// jobs from a queue of 20,000 spent half its time reading every row (docs/postgres.md).
constexpr std::string_view kLeaseSql = R"sql(
WITH picked AS (
  SELECT p.id, row_number() OVER () AS n FROM (
    SELECT j.id FROM {S}.jobs j
    WHERE j.queue = $1::text AND j.state = 'available' AND j.run_at <= statement_timestamp()
      AND (SELECT min(d.run_at) FROM {S}.jobs d
           WHERE d.queue = $1::text AND d.state = 'available') <= statement_timestamp()
      AND NOT EXISTS (SELECT 1 FROM {S}.queues q
                      WHERE q.name = $1::text AND q.paused_at IS NOT NULL)
    ORDER BY j.priority, j.run_at, j.id
    LIMIT {LIMIT}
    FOR UPDATE SKIP LOCKED
  ) p
)
UPDATE {S}.jobs j
SET state = 'running',
    attempts = j.attempts + 1,
    lease_token = ($4::uuid[])[picked.n::integer],
    leased_by = $2::text,
    lease_expires_at = statement_timestamp() + $3::bigint * interval '1 microsecond',
    started_at = statement_timestamp()
FROM picked
WHERE j.id = ANY (ARRAY(SELECT x.id FROM picked x)) AND j.id = picked.id
  AND j.state = 'available'
RETURNING )sql" READPAST_PG_JOB_COLUMNS;

// Every settling statement is fenced: it changes a row only while the row is running
// under the given token. This is what makes a re-sent complete or fail (after a dropped
// connection left its outcome unknown) safe: the first one that committed ended the lease,
// so the re-sent one matches no row and reports the lease lost; it can neither complete
// the job twice nor touch a later attempt that another worker holds.
constexpr std::string_view kCompleteSql = R"sql(
UPDATE {S}.jobs j
SET state = 'succeeded', finished_at = statement_timestamp(), lease_expires_at = NULL
FROM unnest($1::bigint[], $2::uuid[]) AS r(id, token)
WHERE j.id = r.id AND j.state = 'running' AND j.lease_token = r.token
RETURNING j.id, r.token
)sql";

constexpr std::string_view kCompleteDeleteSql = R"sql(
DELETE FROM {S}.jobs j
USING unnest($1::bigint[], $2::uuid[]) AS r(id, token)
WHERE j.id = r.id AND j.state = 'running' AND j.lease_token = r.token
RETURNING j.id, r.token
)sql";

// A dead job keeps its run_at; a retried one gets now + retry_after, or the backoff of the
// attempt that just failed (j.attempts, read under the fence). no_retry sends it to dead
// whatever attempts it has left.
constexpr std::string_view kFailSql = R"sql(
UPDATE {S}.jobs j
SET state = CASE WHEN j.attempts >= j.max_attempts OR r.no_retry THEN 'dead' ELSE 'available' END,
    finished_at = CASE WHEN j.attempts >= j.max_attempts OR r.no_retry
                       THEN statement_timestamp() END,
    run_at = CASE WHEN j.attempts >= j.max_attempts OR r.no_retry THEN j.run_at
                  ELSE statement_timestamp()
                       + coalesce(r.retry_after_us * interval '1 microsecond',
                                  {S}.backoff_delay(j.attempts, r.base_us, r.cap_us, r.factor))
             END,
    last_error = r.error,
    lease_expires_at = NULL
FROM unnest($1::bigint[], $2::uuid[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[],
            $7::double precision[], $8::boolean[])
     AS r(id, token, error, retry_after_us, base_us, cap_us, factor, no_retry)
WHERE j.id = r.id AND j.state = 'running' AND j.lease_token = r.token
RETURNING j.id, r.token, j.state
)sql";

constexpr std::string_view kExtendSql = R"sql(
UPDATE {S}.jobs j
SET lease_expires_at = statement_timestamp() + $3::bigint * interval '1 microsecond'
FROM unnest($1::bigint[], $2::uuid[]) AS r(id, token)
WHERE j.id = r.id AND j.state = 'running' AND j.lease_token = r.token
RETURNING j.id, r.token
)sql";

// Gives back the attempt the lease spent.
constexpr std::string_view kReleaseSql = R"sql(
UPDATE {S}.jobs j
SET state = 'available',
    run_at = statement_timestamp() + $3::bigint * interval '1 microsecond',
    attempts = greatest(j.attempts - 1, 0),
    lease_expires_at = NULL
FROM unnest($1::bigint[], $2::uuid[]) AS r(id, token)
WHERE j.id = r.id AND j.state = 'running' AND j.lease_token = r.token
RETURNING j.id, r.token
)sql";

// Expired leases of one queue, oldest first, at most $2 per statement: walks
// jobs_expiry_idx, which holds running jobs only, so it costs the same with ten or ten
// million jobs waiting. SKIP LOCKED: a row locked right now is being settled by its
// worker, which is the better outcome. Shared with the SQL function rescue_expired().
constexpr std::string_view kRescueSql = R"sql(
WITH expired AS (
  SELECT j.id FROM {S}.jobs j
  WHERE j.queue = $1::text AND j.state = 'running'
    AND j.lease_expires_at <= statement_timestamp()
  ORDER BY j.lease_expires_at
  LIMIT $2::integer
  FOR UPDATE SKIP LOCKED
)
UPDATE {S}.jobs j
SET state = CASE WHEN j.attempts >= j.max_attempts THEN 'dead' ELSE 'available' END,
    finished_at = CASE WHEN j.attempts >= j.max_attempts THEN statement_timestamp() END,
    run_at = CASE WHEN j.attempts >= j.max_attempts THEN j.run_at
                  ELSE statement_timestamp() END,
    last_error = CASE WHEN j.attempts >= j.max_attempts
                      THEN 'lease expired after ' || j.attempts || ' attempts (worker lost)'
                      ELSE 'lease expired (worker lost)' END,
    lease_expires_at = NULL
FROM expired
WHERE j.id = expired.id AND j.state = 'running'
)sql";

constexpr std::string_view kCancelSql = R"sql(
UPDATE {S}.jobs j
SET state = 'cancelled', finished_at = statement_timestamp(), lease_expires_at = NULL
WHERE j.id = ANY($1::bigint[]) AND j.state IN ('available', 'running')
RETURNING j.id
)sql";

// A job whose unique key a live job of its queue holds stays where it is: it cannot become
// live again without breaking the key's promise. Of several retried jobs sharing a key,
// only the oldest is retried (the rest would collide with it). A job enqueued with that
// key by another transaction between this statement's snapshot and its write still
// collides: unique_violation → kConflict, and the caller tries again.
#define READPAST_PG_RETRY_SET                                                                   \
  "SET state = 'available', attempts = 0, run_at = statement_timestamp(), finished_at = NULL, " \
  "lease_expires_at = NULL "
#define READPAST_PG_KEY_FREE(candidates)                            \
  "(j.unique_key IS NULL OR (NOT EXISTS (SELECT 1 FROM {S}.jobs h " \
  "WHERE h.queue = j.queue AND h.unique_key = j.unique_key "        \
  "AND h.state IN ('available', 'running')) "                       \
  "AND j.id = (SELECT min(c.id) FROM {S}.jobs c WHERE " candidates  \
  " AND c.queue = j.queue AND c.unique_key = j.unique_key)))"
constexpr std::string_view kRetrySql =
    "UPDATE {S}.jobs j " READPAST_PG_RETRY_SET
    "WHERE j.id = ANY($1::bigint[]) AND j.state IN ('dead', 'cancelled') AND " READPAST_PG_KEY_FREE(
        "c.id = ANY($1::bigint[]) AND c.state IN ('dead', 'cancelled')") " RETURNING j.id";

constexpr std::string_view kRetryAllSql =
    "UPDATE {S}.jobs j " READPAST_PG_RETRY_SET
    "WHERE j.queue = $1::text AND j.state = $2::text AND j.state IN ('dead', 'cancelled') "
    "AND " READPAST_PG_KEY_FREE("c.queue = $1::text AND c.state = $2::text");
#undef READPAST_PG_RETRY_SET
#undef READPAST_PG_KEY_FREE

// One small batch of a purge; walks jobs_finished_idx.
constexpr std::string_view kPurgeSql = R"sql(
DELETE FROM {S}.jobs j
WHERE j.id IN (
  SELECT d.id FROM {S}.jobs d
  WHERE d.queue = $1::text AND d.state = $2::text
    AND d.state IN ('succeeded', 'dead', 'cancelled')
    AND d.finished_at <= $3::timestamptz
  ORDER BY d.finished_at
  LIMIT $4::integer
  FOR UPDATE SKIP LOCKED
)
)sql";

constexpr std::string_view kNowSql = "SELECT statement_timestamp()";

// Microseconds until the queue's next available job is due (<= 0: one is due now); NULL
// when the queue has no available job or is paused. One probe of jobs_due_idx.
constexpr std::string_view kNextDueSql = R"sql(
SELECT (extract(epoch FROM min(j.run_at) - statement_timestamp()) * 1000000)::bigint
FROM {S}.jobs j
WHERE j.queue = $1::text AND j.state = 'available'
  AND NOT EXISTS (SELECT 1 FROM {S}.queues q WHERE q.name = $1::text AND q.paused_at IS NOT NULL)
)sql";

// One row per (queue, state). Each branch matches one partial index, so the statistics of
// one queue read only that queue's index entries, without an index of their own.
constexpr std::string_view kStatsSql = R"sql(
SELECT j.queue, 'available'::text,
       count(*),
       count(*) FILTER (WHERE j.run_at > statement_timestamp()),
       (extract(epoch FROM statement_timestamp()
                - min(j.run_at) FILTER (WHERE j.run_at <= statement_timestamp()))
        * 1000000)::bigint
FROM {S}.jobs j
WHERE j.state = 'available' AND ($1::text IS NULL OR j.queue = $1::text)
GROUP BY j.queue
UNION ALL
SELECT j.queue, 'running'::text, count(*), 0::bigint, NULL::bigint
FROM {S}.jobs j
WHERE j.state = 'running' AND ($1::text IS NULL OR j.queue = $1::text)
GROUP BY j.queue
UNION ALL
SELECT j.queue, j.state, count(*), 0::bigint, NULL::bigint
FROM {S}.jobs j
WHERE j.state IN ('succeeded', 'dead', 'cancelled') AND ($1::text IS NULL OR j.queue = $1::text)
GROUP BY j.queue, j.state
UNION ALL
SELECT q.name, 'paused'::text, 0::bigint, 0::bigint, NULL::bigint
FROM {S}.queues q
WHERE q.paused_at IS NOT NULL AND ($1::text IS NULL OR q.name = $1::text)
)sql";

// Walks jobs_finished_idx.
constexpr std::string_view kFinishedSinceSql = R"sql(
SELECT j.queue, count(*) FILTER (WHERE j.state = 'succeeded'),
       count(*) FILTER (WHERE j.state = 'dead')
FROM {S}.jobs j
WHERE j.state IN ('succeeded', 'dead') AND j.finished_at > $1::timestamptz
  AND ($2::text IS NULL OR j.queue = $2::text)
GROUP BY j.queue
ORDER BY j.queue
)sql";

// Pausing keeps the first pause time.
constexpr std::string_view kPauseSql = R"sql(
INSERT INTO {S}.queues AS q (name, paused_at) VALUES ($1::text, statement_timestamp())
ON CONFLICT (name) DO UPDATE SET paused_at = coalesce(q.paused_at, excluded.paused_at)
)sql";

// Resuming wakes the queue's idle workers, as an enqueue would.
constexpr std::string_view kResumeSql = R"sql(
WITH resumed AS (
  UPDATE {S}.queues q SET paused_at = NULL
  WHERE q.name = $1::text AND q.paused_at IS NOT NULL
  RETURNING q.name
)
SELECT pg_notify({CHANNEL}, r.name) FROM resumed r
)sql";

// A replaced schedule keeps its created_at and last tick. xmax = 0 on the returned row
// tells an inserted row from one updated by ON CONFLICT (PostgreSQL sets xmax on update).
constexpr std::string_view kUpsertScheduleSql = R"sql(
INSERT INTO {S}.schedules AS s (name, queue, spec, payload, priority, max_attempts)
VALUES ($1::text, $2::text, $3::text, $4::bytea, $5::integer, $6::integer)
ON CONFLICT (name) DO UPDATE
SET queue = excluded.queue, spec = excluded.spec, payload = excluded.payload,
    priority = excluded.priority, max_attempts = excluded.max_attempts
RETURNING (s.xmax = 0)
)sql";

constexpr std::string_view kListSchedulesSql = R"sql(
SELECT s.name, s.queue, s.spec, s.payload, s.priority, s.max_attempts, s.created_at,
       s.last_tick_at
FROM {S}.schedules s
ORDER BY s.name
)sql";

constexpr std::string_view kDeleteScheduleSql =
    "DELETE FROM {S}.schedules s WHERE s.name = $1::text";

// ONE statement takes the tick and inserts its job, so both commit or neither does. Of two
// callers racing for one tick, the second's UPDATE waits for the first's row lock, then
// re-checks last_tick_at against the committed row (READ COMMITTED) and takes nothing.
constexpr std::string_view kEnqueueTickSql = R"sql(
WITH taken AS (
  UPDATE {S}.schedules s SET last_tick_at = $2::timestamptz
  WHERE s.name = $1::text AND coalesce(s.last_tick_at, s.created_at) < $2::timestamptz
  RETURNING s.queue, s.payload, s.priority, s.max_attempts
)
INSERT INTO {S}.jobs AS j (queue, payload, priority, run_at, max_attempts, unique_key)
SELECT t.queue, t.payload, t.priority, $2::timestamptz, t.max_attempts, $3::text FROM taken t
ON CONFLICT (queue, unique_key)
  WHERE unique_key IS NOT NULL AND state IN ('available', 'running')
  DO NOTHING
RETURNING j.id
)sql";

// Claimed when the task's row is new or its time has come. Of two racing inserts of a new
// task, the second waits for the first and then finds its next_run_at in the future.
constexpr std::string_view kClaimTaskSql = R"sql(
INSERT INTO {S}.tasks AS t (task, next_run_at, claimed_by, claimed_at)
VALUES ($1::text, statement_timestamp() + $2::bigint * interval '1 microsecond', $3::text,
        statement_timestamp())
ON CONFLICT (task) DO UPDATE
SET next_run_at = excluded.next_run_at, claimed_by = excluded.claimed_by,
    claimed_at = excluded.claimed_at
WHERE t.next_run_at <= statement_timestamp()
RETURNING t.task
)sql";

#define READPAST_PG_LIST_SELECT "SELECT " READPAST_PG_JOB_COLUMNS " FROM {S}.jobs j "
constexpr std::string_view kListAllSql =
    READPAST_PG_LIST_SELECT "WHERE j.id > $1::bigint ORDER BY j.id LIMIT $2::integer";
constexpr std::string_view kListQueueSql = READPAST_PG_LIST_SELECT
    "WHERE j.id > $1::bigint AND j.queue = $3::text ORDER BY j.id LIMIT $2::integer";
constexpr std::string_view kListStateSql = READPAST_PG_LIST_SELECT
    "WHERE j.id > $1::bigint AND j.state = $3::text ORDER BY j.id LIMIT $2::integer";
constexpr std::string_view kListQueueStateSql = READPAST_PG_LIST_SELECT
    "WHERE j.id > $1::bigint AND j.queue = $3::text AND j.state = $4::text "
    "ORDER BY j.id LIMIT $2::integer";
constexpr std::string_view kGetSql = READPAST_PG_LIST_SELECT "WHERE j.id = $1::bigint";
#undef READPAST_PG_LIST_SELECT

// The advisory lock key is derived from the schema name inside migrate(); this creates the
// schema and the version table, both idempotent.
constexpr std::string_view kCreateSchemaSql = R"sql(
CREATE SCHEMA IF NOT EXISTS {S};
CREATE TABLE IF NOT EXISTS {S}.schema_version (
  version    integer     PRIMARY KEY,
  applied_at timestamptz NOT NULL DEFAULT now()
);
)sql";

// Migration 1: the jobs table, its indexes, the wake-up triggers and the SQL interface.
// Written once and never edited after release: a change is a new migration.
constexpr std::string_view kMigration1 = R"sql(
CREATE TABLE {S}.jobs (
  id               bigint      GENERATED ALWAYS AS IDENTITY (SEQUENCE NAME {S}.jobs_id_seq)
                               PRIMARY KEY,
  queue            text        NOT NULL CHECK (queue ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$'),
  state            text        NOT NULL DEFAULT 'available'
                   CHECK (state IN ('available', 'running', 'succeeded', 'dead', 'cancelled')),
  priority         integer     NOT NULL DEFAULT 100,
  run_at           timestamptz NOT NULL DEFAULT statement_timestamp(),
  attempts         integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  max_attempts     integer     NOT NULL DEFAULT 25 CHECK (max_attempts >= 1),
  lease_token      uuid,
  leased_by        text,
  lease_expires_at timestamptz,
  enqueued_at      timestamptz NOT NULL DEFAULT statement_timestamp(),
  started_at       timestamptz,
  finished_at      timestamptz,
  unique_key       text,
  last_error       text,
  payload          bytea       NOT NULL DEFAULT ''::bytea,
  -- A running job always has a lease that can be fenced and that expires.
  CONSTRAINT jobs_running_has_lease
    CHECK (state <> 'running' OR (lease_token IS NOT NULL AND lease_expires_at IS NOT NULL))
) WITH (
  -- Every job is updated two or three times in its life (lease, then complete or fail).
  -- Leave room on each page so that the new row version usually lands on the same page.
  fillfactor = 80,
  -- Vacuum after 1% of the rows changed instead of 20%: dead versions of leased and
  -- finished jobs otherwise pile up in the lease index faster than the default notices.
  autovacuum_vacuum_scale_factor = 0.01,
  autovacuum_vacuum_threshold = 1000,
  autovacuum_vacuum_insert_scale_factor = 0.01,
  autovacuum_analyze_scale_factor = 0.02,
  -- Let vacuum of this table run at full speed: it is small work done often.
  autovacuum_vacuum_cost_delay = 0
);

-- lease: the next available jobs of a queue in hand-out order.
CREATE INDEX jobs_lease_idx ON {S}.jobs (queue, priority, run_at, id)
  WHERE state = 'available';
-- wait_for_work and the lease's first check: is a job of the queue due, and when is the
-- next one? (jobs_lease_idx cannot say without walking every scheduled job.)
CREATE INDEX jobs_due_idx ON {S}.jobs (queue, run_at)
  WHERE state = 'available';
-- rescue: running jobs of a queue by lease expiry.
CREATE INDEX jobs_expiry_idx ON {S}.jobs (queue, lease_expires_at)
  WHERE state = 'running';
-- unique keys are held by live jobs only; the ON CONFLICT target of enqueue.
CREATE UNIQUE INDEX jobs_unique_key_idx ON {S}.jobs (queue, unique_key)
  WHERE unique_key IS NOT NULL AND state IN ('available', 'running');
-- purge and retention: finished jobs of a queue by age.
CREATE INDEX jobs_finished_idx ON {S}.jobs (queue, state, finished_at)
  WHERE state IN ('succeeded', 'dead', 'cancelled');

-- 128 random bits from the server's strong random source. gen_random_uuid() gives 122
-- random bits (6 are fixed version/variant bits), so two of them are hashed together.
CREATE FUNCTION {S}.new_lease_token() RETURNS uuid
LANGUAGE sql VOLATILE PARALLEL SAFE AS $fn$
  SELECT encode(substr(sha256(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid())),
                       1, 16), 'hex')::uuid
$fn$;

-- min(cap, base * 2^(attempts - 1)) * factor, in microseconds as an interval; the exponent
-- is clamped at 40 like Backoff::delay_after, and the arithmetic is in double precision so
-- it cannot overflow.
CREATE FUNCTION {S}.backoff_delay(attempts integer, base_us bigint, cap_us bigint,
                                  factor double precision) RETURNS interval
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
  SELECT interval '1 microsecond'
         * trunc(least($3::double precision,
                       $2 * power(2::double precision, least(greatest($1 - 1, 0), 40))) * $4)
$fn$;

-- Wake-up: NOTIFY {CHANNEL} with the queue's name when a job becomes available to run
-- now. Delivered when the transaction commits; repeats within a transaction are merged
-- by PostgreSQL. Because it is a trigger, a plain INSERT by any program wakes workers too.
CREATE FUNCTION {S}.notify_inserted() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM pg_notify({CHANNEL}, q.queue)
  FROM (SELECT DISTINCT n.queue FROM new_jobs n
        WHERE n.state = 'available' AND n.run_at <= statement_timestamp()) q;
  RETURN NULL;
END
$fn$;
CREATE TRIGGER jobs_notify_inserted AFTER INSERT ON {S}.jobs
  REFERENCING NEW TABLE AS new_jobs
  FOR EACH STATEMENT EXECUTE FUNCTION {S}.notify_inserted();

CREATE FUNCTION {S}.notify_available() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM pg_notify({CHANNEL}, NEW.queue);
  RETURN NULL;
END
$fn$;
-- Row level with a WHEN clause: lease and complete, which never make a job available,
-- pay for the condition only.
CREATE TRIGGER jobs_notify_available AFTER UPDATE ON {S}.jobs
  FOR EACH ROW
  WHEN (NEW.state = 'available' AND OLD.state <> 'available'
        AND NEW.run_at <= statement_timestamp())
  EXECUTE FUNCTION {S}.notify_available();

-- ---------------------------------------------------------------------------------------
-- The SQL interface (docs/sql.md). Parameters are referred to by position in the bodies,
-- so that their names (which callers may use: priority => 5) never clash with columns.

CREATE FUNCTION {S}.enqueue(queue text, payload bytea DEFAULT ''::bytea,
                            priority integer DEFAULT 100, run_at timestamptz DEFAULT NULL,
                            delay interval DEFAULT NULL, max_attempts integer DEFAULT 25,
                            unique_key text DEFAULT NULL)
RETURNS bigint LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  job_id bigint;
BEGIN
  IF $4 IS NOT NULL AND $5 IS NOT NULL THEN
    RAISE EXCEPTION 'give run_at or delay, not both' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  LOOP
    INSERT INTO {S}.jobs AS j (queue, payload, priority, run_at, max_attempts, unique_key)
    VALUES ($1, $2, $3, coalesce($4, statement_timestamp() + coalesce($5, interval '0')), $6, $7)
    ON CONFLICT (queue, unique_key)
      WHERE unique_key IS NOT NULL AND state IN ('available', 'running')
      DO NOTHING
    RETURNING j.id INTO job_id;
    IF job_id IS NOT NULL THEN
      RETURN job_id;
    END IF;
    -- The key is held: return the holder. Each statement of this function takes a new
    -- snapshot, so a holder committed after the INSERT's snapshot is visible here.
    SELECT j.id INTO job_id FROM {S}.jobs j
    WHERE j.queue = $1 AND j.unique_key = $7 AND j.state IN ('available', 'running');
    IF job_id IS NOT NULL THEN
      RETURN job_id;
    END IF;
    -- The holder finished in between: insert again.
  END LOOP;
END
$fn$;

CREATE FUNCTION {S}.enqueue(queue text, payload text, priority integer DEFAULT 100,
                            run_at timestamptz DEFAULT NULL, delay interval DEFAULT NULL,
                            max_attempts integer DEFAULT 25, unique_key text DEFAULT NULL)
RETURNS bigint LANGUAGE sql VOLATILE AS $fn$
  SELECT {S}.enqueue($1, convert_to($2, 'UTF8'), $3, $4, $5, $6, $7)
$fn$;

CREATE FUNCTION {S}.enqueue_many(queue text, payloads bytea[], priority integer DEFAULT 100,
                                 run_at timestamptz DEFAULT NULL, delay interval DEFAULT NULL,
                                 max_attempts integer DEFAULT 25,
                                 unique_keys text[] DEFAULT NULL)
RETURNS SETOF bigint LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
BEGIN
  FOR i IN 1 .. coalesce(array_length($2, 1), 0) LOOP
    RETURN NEXT {S}.enqueue($1, $2[i], $3, $4, $5, $6, $7[i]);
  END LOOP;
END
$fn$;

CREATE FUNCTION {S}.enqueue_many(queue text, payloads text[], priority integer DEFAULT 100,
                                 run_at timestamptz DEFAULT NULL, delay interval DEFAULT NULL,
                                 max_attempts integer DEFAULT 25,
                                 unique_keys text[] DEFAULT NULL)
RETURNS SETOF bigint LANGUAGE sql VOLATILE AS $fn$
  SELECT {S}.enqueue_many($1, array(SELECT convert_to(p, 'UTF8') FROM unnest($2) AS p),
                          $3, $4, $5, $6, $7)
$fn$;

CREATE FUNCTION {S}.rescue_expired(queue text, batch integer DEFAULT 10000)
RETURNS bigint LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  moved bigint;
BEGIN
  {RESCUE};
  GET DIAGNOSTICS moved = ROW_COUNT;
  RETURN moved;
END
$fn$;

-- The same statement as the engine's lease, after a rescue of expired leases (a program
-- that uses only SQL has no worker runtime to do that for it).
CREATE FUNCTION {S}.lease(queue text, worker text, max_jobs integer DEFAULT 1,
                          lease_duration interval DEFAULT interval '30 seconds')
RETURNS SETOF {S}.jobs LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
BEGIN
  PERFORM {S}.rescue_expired($1);
  RETURN QUERY
  WITH picked AS (
    SELECT j.id FROM {S}.jobs j
    WHERE j.queue = $1 AND j.state = 'available' AND j.run_at <= statement_timestamp()
      AND EXISTS (SELECT 1 FROM {S}.jobs d
                  WHERE d.queue = $1 AND d.state = 'available'
                    AND d.run_at <= statement_timestamp())
    ORDER BY j.priority, j.run_at, j.id
    LIMIT $3
    FOR UPDATE SKIP LOCKED
  ), leased AS (
    UPDATE {S}.jobs j
    SET state = 'running',
        attempts = j.attempts + 1,
        lease_token = {S}.new_lease_token(),
        leased_by = $2,
        lease_expires_at = statement_timestamp() + $4,
        started_at = statement_timestamp()
    FROM picked
    WHERE j.id = picked.id AND j.state = 'available'
    RETURNING j.*
  )
  SELECT * FROM leased l ORDER BY l.priority, l.run_at, l.id;
END
$fn$;

CREATE FUNCTION {S}.complete(id bigint, lease_token uuid)
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
BEGIN
  UPDATE {S}.jobs j
  SET state = 'succeeded', finished_at = statement_timestamp(), lease_expires_at = NULL
  WHERE j.id = $1 AND j.state = 'running' AND j.lease_token = $2;
  RETURN FOUND;
END
$fn$;

-- Returns the job's new state: 'available' (it will be retried) or 'dead'; NULL when the
-- lease was lost. Without retry_after, the default backoff: 1s doubling up to 1h, less a
-- random 0-20%.
CREATE FUNCTION {S}.fail(id bigint, lease_token uuid, error text,
                         retry_after interval DEFAULT NULL)
RETURNS text LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  new_state text;
BEGIN
  UPDATE {S}.jobs j
  SET state = CASE WHEN j.attempts >= j.max_attempts THEN 'dead' ELSE 'available' END,
      finished_at = CASE WHEN j.attempts >= j.max_attempts THEN statement_timestamp() END,
      run_at = CASE WHEN j.attempts >= j.max_attempts THEN j.run_at
                    ELSE statement_timestamp()
                         + coalesce($4, {S}.backoff_delay(j.attempts, 1000000, 3600000000,
                                                          1 - 0.2 * random()))
               END,
      last_error = $3,
      lease_expires_at = NULL
  WHERE j.id = $1 AND j.state = 'running' AND j.lease_token = $2
  RETURNING j.state INTO new_state;
  RETURN new_state;
END
$fn$;

CREATE FUNCTION {S}.extend(id bigint, lease_token uuid,
                           lease_duration interval DEFAULT interval '30 seconds')
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
BEGIN
  UPDATE {S}.jobs j SET lease_expires_at = statement_timestamp() + $3
  WHERE j.id = $1 AND j.state = 'running' AND j.lease_token = $2;
  RETURN FOUND;
END
$fn$;

CREATE FUNCTION {S}.release(id bigint, lease_token uuid, delay interval DEFAULT interval '0')
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
BEGIN
  UPDATE {S}.jobs j
  SET state = 'available', run_at = statement_timestamp() + $3,
      attempts = greatest(j.attempts - 1, 0), lease_expires_at = NULL
  WHERE j.id = $1 AND j.state = 'running' AND j.lease_token = $2;
  RETURN FOUND;
END
$fn$;

-- The same four with the token as text (32 hex digits, with or without hyphens): many
-- drivers send strings typed as text, which does not cast to uuid by itself.
CREATE FUNCTION {S}.complete(id bigint, lease_token text) RETURNS boolean
LANGUAGE sql VOLATILE AS $fn$ SELECT {S}.complete($1, $2::uuid) $fn$;
CREATE FUNCTION {S}.fail(id bigint, lease_token text, error text,
                         retry_after interval DEFAULT NULL) RETURNS text
LANGUAGE sql VOLATILE AS $fn$ SELECT {S}.fail($1, $2::uuid, $3, $4) $fn$;
CREATE FUNCTION {S}.extend(id bigint, lease_token text,
                           lease_duration interval DEFAULT interval '30 seconds') RETURNS boolean
LANGUAGE sql VOLATILE AS $fn$ SELECT {S}.extend($1, $2::uuid, $3) $fn$;
CREATE FUNCTION {S}.release(id bigint, lease_token text, delay interval DEFAULT interval '0')
RETURNS boolean
LANGUAGE sql VOLATILE AS $fn$ SELECT {S}.release($1, $2::uuid, $3) $fn$;
)sql";

// Migration 2: paused queues, periodic schedules, shared maintenance tasks; lease() learns
// to skip paused queues. Written once and never edited after release.
constexpr std::string_view kMigration2 = R"sql(
CREATE TABLE {S}.queues (
  name      text        PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$'),
  paused_at timestamptz                               -- NULL: not paused
);
CREATE TABLE {S}.schedules (
  name         text        PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$'),
  queue        text        NOT NULL CHECK (queue ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$'),
  spec         text        NOT NULL,
  payload      bytea       NOT NULL DEFAULT ''::bytea,
  priority     integer     NOT NULL DEFAULT 100,
  max_attempts integer     NOT NULL DEFAULT 25 CHECK (max_attempts >= 1),
  created_at   timestamptz NOT NULL DEFAULT statement_timestamp(),
  last_tick_at timestamptz                            -- the latest tick enqueued
);
CREATE TABLE {S}.tasks (
  task        text        PRIMARY KEY,
  next_run_at timestamptz NOT NULL,                   -- free to claim from then on
  claimed_by  text,
  claimed_at  timestamptz
);

CREATE OR REPLACE FUNCTION {S}.lease(queue text, worker text, max_jobs integer DEFAULT 1,
                                     lease_duration interval DEFAULT interval '30 seconds')
RETURNS SETOF {S}.jobs LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
BEGIN
  IF EXISTS (SELECT 1 FROM {S}.queues q WHERE q.name = $1 AND q.paused_at IS NOT NULL) THEN
    RETURN;
  END IF;
  PERFORM {S}.rescue_expired($1);
  RETURN QUERY
  WITH picked AS (
    SELECT j.id FROM {S}.jobs j
    WHERE j.queue = $1 AND j.state = 'available' AND j.run_at <= statement_timestamp()
      AND EXISTS (SELECT 1 FROM {S}.jobs d
                  WHERE d.queue = $1 AND d.state = 'available'
                    AND d.run_at <= statement_timestamp())
    ORDER BY j.priority, j.run_at, j.id
    LIMIT $3
    FOR UPDATE SKIP LOCKED
  ), leased AS (
    UPDATE {S}.jobs j
    SET state = 'running',
        attempts = j.attempts + 1,
        lease_token = {S}.new_lease_token(),
        leased_by = $2,
        lease_expires_at = statement_timestamp() + $4,
        started_at = statement_timestamp()
    FROM picked
    WHERE j.id = picked.id AND j.state = 'available'
    RETURNING j.*
  )
  SELECT * FROM leased l ORDER BY l.priority, l.run_at, l.id;
END
$fn$;
)sql";

// Migration 3: the same rules, cheaper to check on the hot path. Written once and never
// edited after release.
// - The queue-name CHECK of jobs, [A-Za-z0-9][A-Za-z0-9_.-]{0,127}, as a length test and
//   an unbounded pattern: PostgreSQL's regex engine expands the bounded repetition {0,127}
//   into a large automaton that costs ~7 µs per row, on every INSERT and on every UPDATE (a
//   CHECK is re-evaluated for each new row version: every lease and every completion); this
//   form costs ~0.3 µs. (The queues and schedules tables keep theirs: they are not hot.)
// - lease() guards its walk with a min() instead of an EXISTS, like the engine's lease
//   (kLeaseSql says why).
constexpr std::string_view kMigration3 = R"sql(
ALTER TABLE {S}.jobs DROP CONSTRAINT jobs_queue_check;
ALTER TABLE {S}.jobs ADD CONSTRAINT jobs_queue_check
  CHECK (octet_length(queue) <= 128 AND queue ~ '^[A-Za-z0-9][A-Za-z0-9_.-]*$');

CREATE OR REPLACE FUNCTION {S}.lease(queue text, worker text, max_jobs integer DEFAULT 1,
                                     lease_duration interval DEFAULT interval '30 seconds')
RETURNS SETOF {S}.jobs LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
BEGIN
  IF EXISTS (SELECT 1 FROM {S}.queues q WHERE q.name = $1 AND q.paused_at IS NOT NULL) THEN
    RETURN;
  END IF;
  PERFORM {S}.rescue_expired($1);
  RETURN QUERY
  WITH picked AS (
    SELECT j.id FROM {S}.jobs j
    WHERE j.queue = $1 AND j.state = 'available' AND j.run_at <= statement_timestamp()
      AND (SELECT min(d.run_at) FROM {S}.jobs d
           WHERE d.queue = $1 AND d.state = 'available') <= statement_timestamp()
    ORDER BY j.priority, j.run_at, j.id
    LIMIT $3
    FOR UPDATE SKIP LOCKED
  ), leased AS (
    UPDATE {S}.jobs j
    SET state = 'running',
        attempts = j.attempts + 1,
        lease_token = {S}.new_lease_token(),
        leased_by = $2,
        lease_expires_at = statement_timestamp() + $4,
        started_at = statement_timestamp()
    FROM picked
    WHERE j.id = picked.id AND j.state = 'available'
    RETURNING j.*
  )
  SELECT * FROM leased l ORDER BY l.priority, l.run_at, l.id;
END
$fn$;
)sql";

// Migration 4: lease() finds the rows it picked by primary key, as the engine's lease does
// since 94a7268 (kLeaseSql says why): with max_jobs in the hundreds, `j.id = picked.id`
// alone was planned as a hash join over a sequential scan of the whole table. Written once
// and never edited after release.
constexpr std::string_view kMigration4 = R"sql(
CREATE OR REPLACE FUNCTION {S}.lease(queue text, worker text, max_jobs integer DEFAULT 1,
                                     lease_duration interval DEFAULT interval '30 seconds')
RETURNS SETOF {S}.jobs LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
BEGIN
  IF EXISTS (SELECT 1 FROM {S}.queues q WHERE q.name = $1 AND q.paused_at IS NOT NULL) THEN
    RETURN;
  END IF;
  PERFORM {S}.rescue_expired($1);
  RETURN QUERY
  WITH picked AS (
    SELECT j.id FROM {S}.jobs j
    WHERE j.queue = $1 AND j.state = 'available' AND j.run_at <= statement_timestamp()
      AND (SELECT min(d.run_at) FROM {S}.jobs d
           WHERE d.queue = $1 AND d.state = 'available') <= statement_timestamp()
    ORDER BY j.priority, j.run_at, j.id
    LIMIT $3
    FOR UPDATE SKIP LOCKED
  ), leased AS (
    UPDATE {S}.jobs j
    SET state = 'running',
        attempts = j.attempts + 1,
        lease_token = {S}.new_lease_token(),
        leased_by = $2,
        lease_expires_at = statement_timestamp() + $4,
        started_at = statement_timestamp()
    FROM picked
    WHERE j.id = ANY (ARRAY(SELECT x.id FROM picked x)) AND j.id = picked.id
      AND j.state = 'available'
    RETURNING j.*
  )
  SELECT * FROM leased l ORDER BY l.priority, l.run_at, l.id;
END
$fn$;
)sql";

std::string migration1(const SchemaName& schema) {
  std::string text(kMigration1);
  // The rescue statement of the engine is also the body of rescue_expired().
  const std::string_view marker = "{RESCUE}";
  auto at = text.find(marker);
  text.replace(at, marker.size(), kRescueSql);
  return expand(text, schema);
}

Statement make(const char* name, std::string_view text, const SchemaName& schema) {
  return Statement{std::string("readpast_") + name, expand(text, schema)};
}

// Replaces the first {LIMIT} of text.
std::string with_limit(std::string text, std::string_view limit) {
  const std::string_view marker = "{LIMIT}";
  text.replace(text.find(marker), marker.size(), limit);
  return text;
}

bool is_alnum(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
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
    : schema_version(make("schema_version", kSchemaVersionSql, schema)),
      enqueue(make("enqueue", kEnqueueSql, schema)),
      enqueue_one(make("enqueue_one", kEnqueueOneSql, schema)),
      enqueue_many(make("enqueue_many", kEnqueueManySql, schema)),
      enqueue_uniform(make("enqueue_uniform", kEnqueueUniformSql, schema)),
      lease_template_(expand(kLeaseSql, schema)),
      lease(Statement{"readpast_lease", with_limit(lease_template_, "$5::integer")}),
      complete(make("complete", kCompleteSql, schema)),
      complete_delete(make("complete_delete", kCompleteDeleteSql, schema)),
      fail(make("fail", kFailSql, schema)),
      extend(make("extend", kExtendSql, schema)),
      release(make("release", kReleaseSql, schema)),
      rescue(make("rescue", kRescueSql, schema)),
      cancel(make("cancel", kCancelSql, schema)),
      retry(make("retry", kRetrySql, schema)),
      retry_all(make("retry_all", kRetryAllSql, schema)),
      purge(make("purge", kPurgeSql, schema)),
      now(make("now", kNowSql, schema)),
      next_due(make("next_due", kNextDueSql, schema)),
      stats(make("stats", kStatsSql, schema)),
      list_all(make("list_all", kListAllSql, schema)),
      list_queue(make("list_queue", kListQueueSql, schema)),
      list_state(make("list_state", kListStateSql, schema)),
      list_queue_state(make("list_queue_state", kListQueueStateSql, schema)),
      get(make("get", kGetSql, schema)),
      finished_since(make("finished_since", kFinishedSinceSql, schema)),
      pause(make("pause", kPauseSql, schema)),
      resume(make("resume", kResumeSql, schema)),
      upsert_schedule(make("upsert_schedule", kUpsertScheduleSql, schema)),
      list_schedules(make("list_schedules", kListSchedulesSql, schema)),
      delete_schedule(make("delete_schedule", kDeleteScheduleSql, schema)),
      enqueue_tick(make("enqueue_tick", kEnqueueTickSql, schema)),
      claim_task(make("claim_task", kClaimTaskSql, schema)),
      create_schema(expand(kCreateSchemaSql, schema)),
      migrations{migration1(schema), expand(kMigration2, schema), expand(kMigration3, schema),
                 expand(kMigration4, schema)} {}

Statement Sql::lease_with_limit(int max_jobs) const {
  const std::string limit = std::to_string(max_jobs);
  return Statement{"readpast_lease_" + limit, with_limit(lease_template_, limit)};
}

#undef READPAST_PG_JOB_COLUMNS

}  // namespace readpast::detail::pg
