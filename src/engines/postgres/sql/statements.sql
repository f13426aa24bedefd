-- Every statement of the PostgreSQL engine. cmake/EmbedSql.cmake builds them into the engine
-- (postgres_statements.hpp): each "-- name:" starts one, each :parameter is sent as $N and
-- becomes a constant the engine binds by (pg_values.hpp), and comment lines are documentation
-- left out of the embedded text. docs/postgres.md explains the schema and the plans.
--
-- Runnable as written in psql, whose variables have the same syntax: \set schema readpast,
-- \set channel readpast.jobs, then each parameter (\set queue '\'default\''); :"schema" and
-- :"channel" expand to quoted identifiers and :'channel' to a literal. The engine expands
-- those once, when it opens (postgres_sql.cpp); the schema name is the only text ever
-- written into SQL, after SchemaName::parse allowed it ([A-Za-z0-9][A-Za-z0-9_.-]*, at most
-- 58 bytes) and quoted it. It cannot be a parameter: identifiers never are, and
-- search_path, a setting of the session, is not kept per client by a pooler in transaction
-- mode (PgBouncer), so every name is qualified.
--
-- Time: every statement reads the database's clock through statement_timestamp(), the time
-- the current client statement started. It is the same value everywhere within a statement
-- (so run_at <= t, lease_expires_at = t + d and started_at = t agree), and unlike now() it
-- does not stand still inside a caller's long transaction (the SQL functions and the outbox
-- run in the caller's transactions).
--
-- Parameters are sent and results read in binary format (pg_values.hpp); every parameter has
-- an explicit cast, from which the server infers its type. Rows of jobs come in the column
-- order read_job() expects (pg_jobs.cpp).

-- name: create_schema
-- A script, run by migrate() under migrate_lock: the schema and its version table, both
-- idempotent.
CREATE SCHEMA IF NOT EXISTS :"schema";
CREATE TABLE IF NOT EXISTS :"schema".schema_version (
  version    integer     PRIMARY KEY,
  applied_at timestamptz NOT NULL DEFAULT now()
);

-- name: migrate_lock
-- Concurrent migrations of one schema queue here; the second finds the work done. Scoped to
-- the transaction, so that it also works through a pooler in transaction mode.
SELECT pg_advisory_xact_lock(hashtext('readpast.migrate'), hashtext(:schema_name::text));

-- name: record_version
INSERT INTO :"schema".schema_version (version) VALUES (:version::integer);

-- name: listen
-- Run by the listener's own connection (pg_listener.cpp), never through a pooler.
LISTEN :"channel";

-- name: schema_version
-- max() of no rows is NULL: no migration applied yet.
SELECT max(version) FROM :"schema".schema_version;

-- name: enqueue_one
-- Enqueue without unique keys, the common case: a plain INSERT, so that the server does
-- none of the work below for matching inputs to unique-key holders. One job binds scalars
-- (the cheapest statement to plan and run); a batch unnests arrays in input order, and the
-- identity column draws its ids in that order, so the ids that come back, sorted, are the
-- inputs' ids in order (see pg_jobs.cpp). (For one job, the general statement below cost
-- 45 µs more server time per call: 6,830 against 9,814 calls/s on one connection.)
INSERT INTO :"schema".jobs (queue, payload, priority, run_at, max_attempts)
VALUES (:queue::text, :payload::bytea, :priority::integer,
        coalesce(:run_at::timestamptz,
                 statement_timestamp() + coalesce(:delay_us::bigint, 0) * interval '1 microsecond'),
        :max_attempts::integer)
RETURNING id;

-- name: enqueue_many
INSERT INTO :"schema".jobs (queue, payload, priority, run_at, max_attempts)
SELECT t.queue, t.payload, t.priority,
       coalesce(t.run_at,
                statement_timestamp() + coalesce(t.delay_us, 0) * interval '1 microsecond'),
       t.max_attempts
FROM unnest(:queues::text[], :payloads::bytea[], :priorities::integer[],
            :run_ats::timestamptz[], :delays_us::bigint[],
            :max_attempts::integer[])
     WITH ORDINALITY AS t(queue, payload, priority, run_at, delay_us, max_attempts, ord)
ORDER BY t.ord
RETURNING id;

-- name: enqueue_uniform
-- The same for a batch whose jobs differ only in their payloads (one queue, priority, time
-- and max_attempts: what a producer sends most), as one array and five scalars. Measured
-- against enqueue_many with the same jobs: the server unnests one array instead of six
-- and the client encodes one (readpast_bench, docs/benchmarks.md run 7).
INSERT INTO :"schema".jobs (queue, payload, priority, run_at, max_attempts)
SELECT :queue::text, t.payload, :priority::integer,
       coalesce(:run_at::timestamptz,
                statement_timestamp() + coalesce(:delay_us::bigint, 0) * interval '1 microsecond'),
       :max_attempts::integer
FROM unnest(:payloads::bytea[]) WITH ORDINALITY AS t(payload, ord)
ORDER BY t.ord
RETURNING id;

-- name: enqueue
-- Batch enqueue with unique keys, in one statement. Ids are drawn from the table's sequence up
-- front, in input order, so that each input row can be matched to what the INSERT did: an input
-- whose new_id comes back from RETURNING was inserted; otherwise its unique key was held,
-- and the holder is either an earlier row of this same batch (found in `inserted`) or a
-- row visible to this statement's snapshot. A holder committed by another transaction
-- after the snapshot was taken is invisible here (ON CONFLICT still saw it): id is then
-- NULL and the engine looks again with a new statement (see pg_jobs.cpp).
WITH input AS (
  SELECT t.ord, t.queue, t.payload, t.priority, t.run_at, t.delay_us, t.max_attempts,
         t.unique_key, nextval(':"schema".jobs_id_seq') AS new_id
  FROM unnest(:queues::text[], :payloads::bytea[], :priorities::integer[],
              :run_ats::timestamptz[], :delays_us::bigint[],
              :max_attempts::integer[], :unique_keys::text[])
       WITH ORDINALITY AS t(queue, payload, priority, run_at, delay_us, max_attempts,
                            unique_key, ord)
  ORDER BY t.ord
), inserted AS (
  INSERT INTO :"schema".jobs AS j (id, queue, payload, priority, run_at, max_attempts, unique_key)
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
  SELECT h.id FROM :"schema".jobs h
  WHERE ins.id IS NULL AND h.queue = i.queue AND h.unique_key = i.unique_key
    AND h.state IN ('available', 'running')
  LIMIT 1
) holder ON true
ORDER BY i.ord;

-- name: lease
-- The lease: ONE statement. The inner query walks jobs_lease_idx in hand-out order and locks
-- up to max_jobs rows, skipping rows that another transaction has locked (another worker leasing or
-- settling them) instead of waiting for it. Under READ COMMITTED, FOR UPDATE re-checks the
-- WHERE clause against the newest version of each row it locks, so a row that another
-- worker leased (and committed) after this statement's snapshot is not taken again. The
-- UPDATE then changes exactly the rows this statement holds locks on; it repeats the state
-- test only as a second line of defence. RETURNING order is unspecified: the engine sorts.
--
-- The uncorrelated min() is evaluated once, before the walk, as a probe of jobs_due_idx:
-- when no job is due it stops the statement at once, instead of walking past every
-- scheduled job. It is a min() and not an EXISTS because PostgreSQL always plans min() over
-- an index as an ordered index scan that stops at its first live entry, while an EXISTS was
-- planned as a sequential scan whenever the statistics promised an early match (a freshly
-- analysed queue of available jobs) — a scan that then stepped over every dead row version
-- at the head of the table, so that each lease of a long drain cost more than the last.
--
-- Lease tokens come from the caller (:tokens, 128 random bits per job the lease may take, from
-- the operating system's random source: LeaseToken in core) and are handed out in pick
-- order (row_number).
-- Generating them in the server (new_lease_token(): two gen_random_uuid() and a SHA-256)
-- cost about 12 µs per job, more than the rest of the lease.
--
-- :max_jobs is numbered last so that the engine can write a number in its place (see
-- Sql::lease_with_limit, postgres_sql.hpp): with LIMIT $5, PostgreSQL's generic plan
-- assumes a tenth of the table is taken and turns the UPDATE into a hash join over a
-- sequential scan, so it never uses that plan and plans the statement anew on every call
-- (~0.2 ms, as much as running it); with a literal LIMIT it caches a plan after five calls.
--
-- The NOT EXISTS (one probe of the queues table's primary key) hands out nothing of a
-- paused queue, nor of one with limits (lease_limited serves those; same row, same cost).
--
-- `j.id = ANY (ARRAY(SELECT …))` repeats the join condition so that the rows to update are
-- found by one probe of the primary key each: with a literal LIMIT of a few hundred the
-- planner otherwise joins `picked` to a sequential scan of the whole table (a hash join,
-- cheaper in its cost model while the table holds a few thousand pages), and a lease of 500
-- jobs from a queue of 20,000 spent half its time reading every row (docs/postgres.md).
-- params: queue, worker, lease_us, tokens, max_jobs
WITH picked AS (
  SELECT p.id, row_number() OVER () AS n FROM (
    SELECT j.id FROM :"schema".jobs j
    WHERE j.queue = :queue::text AND j.state = 'available' AND j.run_at <= statement_timestamp()
      AND (SELECT min(d.run_at) FROM :"schema".jobs d
           WHERE d.queue = :queue::text AND d.state = 'available') <= statement_timestamp()
      AND NOT EXISTS (SELECT 1 FROM :"schema".queues q
                      WHERE q.name = :queue::text AND (q.paused_at IS NOT NULL
                        OR q.running_limit IS NOT NULL OR q.rate_count IS NOT NULL))
    ORDER BY j.priority, j.run_at, j.id
    LIMIT :max_jobs::integer
    FOR UPDATE SKIP LOCKED
  ) p
)
UPDATE :"schema".jobs j
SET state = 'running',
    attempts = j.attempts + 1,
    lease_token = (:tokens::uuid[])[picked.n::integer],
    leased_by = :worker::text,
    lease_expires_at = statement_timestamp() + :lease_us::bigint * interval '1 microsecond',
    started_at = statement_timestamp()
FROM picked
WHERE j.id = ANY (ARRAY(SELECT x.id FROM picked x)) AND j.id = picked.id
  AND j.state = 'available'
RETURNING j.id, j.queue, j.state, j.priority, j.run_at, j.attempts, j.max_attempts, j.lease_token,
          j.leased_by, j.lease_expires_at, j.enqueued_at, j.started_at, j.finished_at,
          j.unique_key, j.last_error, j.payload;

-- name: complete
-- Every settling statement is fenced: it changes a row only while the row is running
-- under the given token. This is what makes a re-sent complete or fail (after a dropped
-- connection left its outcome unknown) safe: the first one that committed ended the lease,
-- so the re-sent one matches no row and reports the lease lost; it can neither complete
-- the job twice nor touch a later attempt that another worker holds.
UPDATE :"schema".jobs j
SET state = 'succeeded', finished_at = statement_timestamp(), lease_expires_at = NULL
FROM unnest(:ids::bigint[], :tokens::uuid[]) AS r(id, token)
WHERE j.id = r.id AND j.state = 'running' AND j.lease_token = r.token
RETURNING j.id, r.token;

-- name: complete_delete
DELETE FROM :"schema".jobs j
USING unnest(:ids::bigint[], :tokens::uuid[]) AS r(id, token)
WHERE j.id = r.id AND j.state = 'running' AND j.lease_token = r.token
RETURNING j.id, r.token;

-- name: fail
-- A dead job keeps its run_at; a retried one gets now + retry_after, or the backoff of the
-- attempt that just failed (j.attempts, read under the fence). no_retry sends it to dead
-- whatever attempts it has left.
UPDATE :"schema".jobs j
SET state = CASE WHEN j.attempts >= j.max_attempts OR r.no_retry THEN 'dead' ELSE 'available' END,
    finished_at = CASE WHEN j.attempts >= j.max_attempts OR r.no_retry
                       THEN statement_timestamp() END,
    run_at = CASE WHEN j.attempts >= j.max_attempts OR r.no_retry THEN j.run_at
                  ELSE statement_timestamp()
                       + coalesce(r.retry_after_us * interval '1 microsecond',
                                  :"schema".backoff_delay(j.attempts, r.base_us, r.cap_us,
                                                           r.factor))
             END,
    last_error = r.error,
    lease_expires_at = NULL
FROM unnest(:ids::bigint[], :tokens::uuid[], :errors::text[], :retry_after_us::bigint[],
            :base_us::bigint[], :cap_us::bigint[],
            :factors::double precision[], :no_retry::boolean[])
     AS r(id, token, error, retry_after_us, base_us, cap_us, factor, no_retry)
WHERE j.id = r.id AND j.state = 'running' AND j.lease_token = r.token
RETURNING j.id, r.token, j.state;

-- name: extend
UPDATE :"schema".jobs j
SET lease_expires_at = statement_timestamp() + :lease_us::bigint * interval '1 microsecond'
FROM unnest(:ids::bigint[], :tokens::uuid[]) AS r(id, token)
WHERE j.id = r.id AND j.state = 'running' AND j.lease_token = r.token
RETURNING j.id, r.token;

-- name: held
-- Which of these leases are still held: a read (Queue::leases_held).
SELECT j.id, r.token
FROM :"schema".jobs j
JOIN unnest(:ids::bigint[], :tokens::uuid[]) AS r(id, token) ON j.id = r.id
WHERE j.state = 'running' AND j.lease_token = r.token;

-- name: release
-- Gives back the attempt the lease spent.
UPDATE :"schema".jobs j
SET state = 'available',
    run_at = statement_timestamp() + :delay_us::bigint * interval '1 microsecond',
    attempts = greatest(j.attempts - 1, 0),
    lease_expires_at = NULL
FROM unnest(:ids::bigint[], :tokens::uuid[]) AS r(id, token)
WHERE j.id = r.id AND j.state = 'running' AND j.lease_token = r.token
RETURNING j.id, r.token;

-- name: rescue
-- Expired leases of one queue, oldest first, at most :batch per statement: walks
-- jobs_expiry_idx, which holds running jobs only, so it costs the same with ten or ten
-- million jobs waiting. SKIP LOCKED: a row locked right now is being settled by its
-- worker, which is the better outcome. Migration 1's rescue_expired() has the same body.
WITH expired AS (
  SELECT j.id FROM :"schema".jobs j
  WHERE j.queue = :queue::text AND j.state = 'running'
    AND j.lease_expires_at <= statement_timestamp()
  ORDER BY j.lease_expires_at
  LIMIT :batch::integer
  FOR UPDATE SKIP LOCKED
)
UPDATE :"schema".jobs j
SET state = CASE WHEN j.attempts >= j.max_attempts THEN 'dead' ELSE 'available' END,
    finished_at = CASE WHEN j.attempts >= j.max_attempts THEN statement_timestamp() END,
    run_at = CASE WHEN j.attempts >= j.max_attempts THEN j.run_at
                  ELSE statement_timestamp() END,
    last_error = CASE WHEN j.attempts >= j.max_attempts
                      THEN 'lease expired after ' || j.attempts || ' attempts (worker lost)'
                      ELSE 'lease expired (worker lost)' END,
    lease_expires_at = NULL
FROM expired
WHERE j.id = expired.id AND j.state = 'running';

-- name: cancel
-- Announced on the wake-up channel with the payload '!cancel' (no queue name starts with a
-- '!', so it cannot be mistaken for a queue's wake-up; pg_listener.hpp): listening workers
-- check their running jobs' leases at once instead of at their next poll. NOTIFY is
-- delivered at commit, so a worker never checks before the cancel is visible.
WITH cancelled AS (
  UPDATE :"schema".jobs j
  SET state = 'cancelled', finished_at = statement_timestamp(), lease_expires_at = NULL
  WHERE j.id = ANY(:ids::bigint[]) AND j.state IN ('available', 'running')
  RETURNING j.id, j.lease_token IS NOT NULL AS was_leased
), announced AS (
  -- One row whatever was cancelled (an aggregate without GROUP BY), so that the join below
  -- keeps every id; a NOTIFY only when a job that had a lease was cancelled.
  SELECT CASE WHEN bool_or(was_leased) THEN pg_notify(:'channel', '!cancel') END AS sent
  FROM cancelled
)
SELECT c.id FROM cancelled c CROSS JOIN announced;

-- name: retry
-- A job whose unique key a live job of its queue holds stays where it is: it cannot become
-- live again without breaking the key's promise. Of several retried jobs sharing a key,
-- only the oldest is retried (the rest would collide with it). A job enqueued with that
-- key by another transaction between this statement's snapshot and its write still
-- collides: unique_violation → kConflict, and the caller tries again.
UPDATE :"schema".jobs j
SET state = 'available', attempts = 0, run_at = statement_timestamp(), finished_at = NULL,
    lease_expires_at = NULL
WHERE j.id = ANY(:ids::bigint[]) AND j.state IN ('dead', 'cancelled')
  AND (j.unique_key IS NULL
       OR (NOT EXISTS (SELECT 1 FROM :"schema".jobs h
                       WHERE h.queue = j.queue AND h.unique_key = j.unique_key
                         AND h.state IN ('available', 'running'))
           AND j.id = (SELECT min(c.id) FROM :"schema".jobs c
                       WHERE c.id = ANY(:ids::bigint[]) AND c.state IN ('dead', 'cancelled')
                         AND c.queue = j.queue AND c.unique_key = j.unique_key)))
RETURNING j.id;

-- name: retry_all
-- The same as retry, for every job of a queue in one state (dead or cancelled).
UPDATE :"schema".jobs j
SET state = 'available', attempts = 0, run_at = statement_timestamp(), finished_at = NULL,
    lease_expires_at = NULL
WHERE j.queue = :queue::text AND j.state = :state::text AND j.state IN ('dead', 'cancelled')
  AND (j.unique_key IS NULL
       OR (NOT EXISTS (SELECT 1 FROM :"schema".jobs h
                       WHERE h.queue = j.queue AND h.unique_key = j.unique_key
                         AND h.state IN ('available', 'running'))
           AND j.id = (SELECT min(c.id) FROM :"schema".jobs c
                       WHERE c.queue = :queue::text AND c.state = :state::text
                         AND c.queue = j.queue AND c.unique_key = j.unique_key)));

-- name: purge
-- One small batch of a purge; walks jobs_finished_idx.
DELETE FROM :"schema".jobs j
WHERE j.id IN (
  SELECT d.id FROM :"schema".jobs d
  WHERE d.queue = :queue::text AND d.state = :state::text
    AND d.state IN ('succeeded', 'dead', 'cancelled')
    AND d.finished_at <= :cutoff::timestamptz
  ORDER BY d.finished_at
  LIMIT :batch::integer
  FOR UPDATE SKIP LOCKED
);

-- name: now
-- The database's clock, to fix purge's cutoff once.
SELECT statement_timestamp();

-- name: next_due
-- Microseconds until the queue's next available job is due (<= 0: one is due now); NULL
-- when the queue has no available job or is paused. One probe of jobs_due_idx. Then whether
-- the queue's limits let no lease take a job now (running limit reached, no rate slot out of
-- its window): a throttled worker then looks again now and then instead of spinning, since
-- no notification announces a settled job. Under a running limit the queue's running jobs
-- are about as many as the limit, so counting them is bounded by it.
SELECT (extract(epoch FROM min(j.run_at) - statement_timestamp()) * 1000000)::bigint,
       EXISTS (SELECT 1 FROM :"schema".queues q
               WHERE q.name = :queue::text
                 AND ((q.running_limit IS NOT NULL
                       AND (SELECT count(*) FROM :"schema".jobs r
                            WHERE r.queue = :queue::text AND r.state = 'running')
                           >= q.running_limit)
                      OR (q.rate_count IS NOT NULL
                          AND NOT EXISTS (SELECT 1 FROM :"schema".rate_slots s
                                          WHERE s.queue = :queue::text
                                            AND s.leased_at <= statement_timestamp()
                                              - q.rate_window_us * interval '1 microsecond'))))
FROM :"schema".jobs j
WHERE j.queue = :queue::text AND j.state = 'available'
  AND NOT EXISTS (SELECT 1 FROM :"schema".queues q
                  WHERE q.name = :queue::text AND q.paused_at IS NOT NULL);

-- name: stats
-- One row per (queue, state): the count, then the state's sub-count (scheduled for
-- 'available', expired leases for 'running'), then the age of the oldest due job
-- ('available' only). Each branch matches one partial index, so the statistics of one queue
-- read only that queue's index entries, without an index of their own.
SELECT j.queue, 'available'::text,
       count(*),
       count(*) FILTER (WHERE j.run_at > statement_timestamp()),
       (extract(epoch FROM statement_timestamp()
                - min(j.run_at) FILTER (WHERE j.run_at <= statement_timestamp()))
        * 1000000)::bigint
FROM :"schema".jobs j
WHERE j.state = 'available' AND (:queue::text IS NULL OR j.queue = :queue::text)
GROUP BY j.queue
UNION ALL
SELECT j.queue, 'running'::text, count(*),
       count(*) FILTER (WHERE j.lease_expires_at <= statement_timestamp()), NULL::bigint
FROM :"schema".jobs j
WHERE j.state = 'running' AND (:queue::text IS NULL OR j.queue = :queue::text)
GROUP BY j.queue
UNION ALL
SELECT j.queue, j.state, count(*), 0::bigint, NULL::bigint
FROM :"schema".jobs j
WHERE j.state IN ('succeeded', 'dead', 'cancelled')
  AND (:queue::text IS NULL OR j.queue = :queue::text)
GROUP BY j.queue, j.state
UNION ALL
SELECT q.name, 'paused'::text, 0::bigint, 0::bigint, NULL::bigint
FROM :"schema".queues q
WHERE q.paused_at IS NOT NULL AND (:queue::text IS NULL OR q.name = :queue::text)
UNION ALL
SELECT q.name, 'limits'::text, q.running_limit::bigint, q.rate_count::bigint, q.rate_window_us
FROM :"schema".queues q
WHERE (q.running_limit IS NOT NULL OR q.rate_count IS NOT NULL)
  AND (:queue::text IS NULL OR q.name = :queue::text);

-- list_*: one statement per filter, so that each gets a plan that fits it; pages by id
-- between :after_id and :before_id (exclusive), oldest first or (the *_desc twin) newest
-- first. The rest of the WHERE is the same in every one: the derived views (scheduled,
-- retrying, expired: 1 to apply, 0 not) and the search, a substring of the payload, worker,
-- unique key or last error with ASCII letters in any case. strpos() takes the text as it is
-- (no LIKE wildcards). The payload is bytea: encode(…, 'escape') writes it as text (bytes
-- 0 and >= 0x80 as \ooo, a backslash doubled) and :payload_search is the search text
-- written the same way by the engine (postgres_engine.cpp, escaped_for_payload), so any bytes match as bytes.
-- Queue::list_page bounds how many ids one request with a view or a search looks at
-- (options.hpp, ListRequest::scan_limit).

-- name: list_all
SELECT j.id, j.queue, j.state, j.priority, j.run_at, j.attempts, j.max_attempts, j.lease_token,
          j.leased_by, j.lease_expires_at, j.enqueued_at, j.started_at, j.finished_at,
          j.unique_key, j.last_error, j.payload
FROM :"schema".jobs j
WHERE j.id > :after_id::bigint
  AND j.id < :before_id::bigint
  AND (:scheduled::integer = 0 OR j.run_at > statement_timestamp())
  AND (:retrying::integer = 0 OR j.attempts > 0)
  AND (:expired::integer = 0 OR j.lease_expires_at <= statement_timestamp())
  AND (:search::text IS NULL
       OR strpos(lower(encode(j.payload, 'escape')), :payload_search::text) > 0
       OR strpos(lower(j.leased_by), lower(:search::text)) > 0
       OR strpos(lower(j.unique_key), lower(:search::text)) > 0
       OR strpos(lower(j.last_error), lower(:search::text)) > 0)
ORDER BY j.id
LIMIT :limit::integer;

-- name: list_all_desc
SELECT j.id, j.queue, j.state, j.priority, j.run_at, j.attempts, j.max_attempts, j.lease_token,
          j.leased_by, j.lease_expires_at, j.enqueued_at, j.started_at, j.finished_at,
          j.unique_key, j.last_error, j.payload
FROM :"schema".jobs j
WHERE j.id > :after_id::bigint
  AND j.id < :before_id::bigint
  AND (:scheduled::integer = 0 OR j.run_at > statement_timestamp())
  AND (:retrying::integer = 0 OR j.attempts > 0)
  AND (:expired::integer = 0 OR j.lease_expires_at <= statement_timestamp())
  AND (:search::text IS NULL
       OR strpos(lower(encode(j.payload, 'escape')), :payload_search::text) > 0
       OR strpos(lower(j.leased_by), lower(:search::text)) > 0
       OR strpos(lower(j.unique_key), lower(:search::text)) > 0
       OR strpos(lower(j.last_error), lower(:search::text)) > 0)
ORDER BY j.id DESC
LIMIT :limit::integer;

-- name: list_queue
SELECT j.id, j.queue, j.state, j.priority, j.run_at, j.attempts, j.max_attempts, j.lease_token,
          j.leased_by, j.lease_expires_at, j.enqueued_at, j.started_at, j.finished_at,
          j.unique_key, j.last_error, j.payload
FROM :"schema".jobs j
WHERE j.id > :after_id::bigint AND j.queue = :queue::text
  AND j.id < :before_id::bigint
  AND (:scheduled::integer = 0 OR j.run_at > statement_timestamp())
  AND (:retrying::integer = 0 OR j.attempts > 0)
  AND (:expired::integer = 0 OR j.lease_expires_at <= statement_timestamp())
  AND (:search::text IS NULL
       OR strpos(lower(encode(j.payload, 'escape')), :payload_search::text) > 0
       OR strpos(lower(j.leased_by), lower(:search::text)) > 0
       OR strpos(lower(j.unique_key), lower(:search::text)) > 0
       OR strpos(lower(j.last_error), lower(:search::text)) > 0)
ORDER BY j.id
LIMIT :limit::integer;

-- name: list_queue_desc
SELECT j.id, j.queue, j.state, j.priority, j.run_at, j.attempts, j.max_attempts, j.lease_token,
          j.leased_by, j.lease_expires_at, j.enqueued_at, j.started_at, j.finished_at,
          j.unique_key, j.last_error, j.payload
FROM :"schema".jobs j
WHERE j.id > :after_id::bigint AND j.queue = :queue::text
  AND j.id < :before_id::bigint
  AND (:scheduled::integer = 0 OR j.run_at > statement_timestamp())
  AND (:retrying::integer = 0 OR j.attempts > 0)
  AND (:expired::integer = 0 OR j.lease_expires_at <= statement_timestamp())
  AND (:search::text IS NULL
       OR strpos(lower(encode(j.payload, 'escape')), :payload_search::text) > 0
       OR strpos(lower(j.leased_by), lower(:search::text)) > 0
       OR strpos(lower(j.unique_key), lower(:search::text)) > 0
       OR strpos(lower(j.last_error), lower(:search::text)) > 0)
ORDER BY j.id DESC
LIMIT :limit::integer;

-- name: list_state
SELECT j.id, j.queue, j.state, j.priority, j.run_at, j.attempts, j.max_attempts, j.lease_token,
          j.leased_by, j.lease_expires_at, j.enqueued_at, j.started_at, j.finished_at,
          j.unique_key, j.last_error, j.payload
FROM :"schema".jobs j
WHERE j.id > :after_id::bigint AND j.state = :state::text
  AND j.id < :before_id::bigint
  AND (:scheduled::integer = 0 OR j.run_at > statement_timestamp())
  AND (:retrying::integer = 0 OR j.attempts > 0)
  AND (:expired::integer = 0 OR j.lease_expires_at <= statement_timestamp())
  AND (:search::text IS NULL
       OR strpos(lower(encode(j.payload, 'escape')), :payload_search::text) > 0
       OR strpos(lower(j.leased_by), lower(:search::text)) > 0
       OR strpos(lower(j.unique_key), lower(:search::text)) > 0
       OR strpos(lower(j.last_error), lower(:search::text)) > 0)
ORDER BY j.id
LIMIT :limit::integer;

-- name: list_state_desc
SELECT j.id, j.queue, j.state, j.priority, j.run_at, j.attempts, j.max_attempts, j.lease_token,
          j.leased_by, j.lease_expires_at, j.enqueued_at, j.started_at, j.finished_at,
          j.unique_key, j.last_error, j.payload
FROM :"schema".jobs j
WHERE j.id > :after_id::bigint AND j.state = :state::text
  AND j.id < :before_id::bigint
  AND (:scheduled::integer = 0 OR j.run_at > statement_timestamp())
  AND (:retrying::integer = 0 OR j.attempts > 0)
  AND (:expired::integer = 0 OR j.lease_expires_at <= statement_timestamp())
  AND (:search::text IS NULL
       OR strpos(lower(encode(j.payload, 'escape')), :payload_search::text) > 0
       OR strpos(lower(j.leased_by), lower(:search::text)) > 0
       OR strpos(lower(j.unique_key), lower(:search::text)) > 0
       OR strpos(lower(j.last_error), lower(:search::text)) > 0)
ORDER BY j.id DESC
LIMIT :limit::integer;

-- name: list_queue_state
SELECT j.id, j.queue, j.state, j.priority, j.run_at, j.attempts, j.max_attempts, j.lease_token,
          j.leased_by, j.lease_expires_at, j.enqueued_at, j.started_at, j.finished_at,
          j.unique_key, j.last_error, j.payload
FROM :"schema".jobs j
WHERE j.id > :after_id::bigint AND j.queue = :queue::text AND j.state = :state::text
  AND j.id < :before_id::bigint
  AND (:scheduled::integer = 0 OR j.run_at > statement_timestamp())
  AND (:retrying::integer = 0 OR j.attempts > 0)
  AND (:expired::integer = 0 OR j.lease_expires_at <= statement_timestamp())
  AND (:search::text IS NULL
       OR strpos(lower(encode(j.payload, 'escape')), :payload_search::text) > 0
       OR strpos(lower(j.leased_by), lower(:search::text)) > 0
       OR strpos(lower(j.unique_key), lower(:search::text)) > 0
       OR strpos(lower(j.last_error), lower(:search::text)) > 0)
ORDER BY j.id
LIMIT :limit::integer;

-- name: list_queue_state_desc
SELECT j.id, j.queue, j.state, j.priority, j.run_at, j.attempts, j.max_attempts, j.lease_token,
          j.leased_by, j.lease_expires_at, j.enqueued_at, j.started_at, j.finished_at,
          j.unique_key, j.last_error, j.payload
FROM :"schema".jobs j
WHERE j.id > :after_id::bigint AND j.queue = :queue::text AND j.state = :state::text
  AND j.id < :before_id::bigint
  AND (:scheduled::integer = 0 OR j.run_at > statement_timestamp())
  AND (:retrying::integer = 0 OR j.attempts > 0)
  AND (:expired::integer = 0 OR j.lease_expires_at <= statement_timestamp())
  AND (:search::text IS NULL
       OR strpos(lower(encode(j.payload, 'escape')), :payload_search::text) > 0
       OR strpos(lower(j.leased_by), lower(:search::text)) > 0
       OR strpos(lower(j.unique_key), lower(:search::text)) > 0
       OR strpos(lower(j.last_error), lower(:search::text)) > 0)
ORDER BY j.id DESC
LIMIT :limit::integer;

-- name: id_bounds
-- The smallest and largest id (NULL, NULL for no job): two lookups at the ends of the primary key.
SELECT (SELECT min(j.id) FROM :"schema".jobs j), (SELECT max(j.id) FROM :"schema".jobs j);

-- name: delete_finished
-- Deletes jobs by id, only those that have finished (like purge, never a live job).
DELETE FROM :"schema".jobs j
WHERE j.id = ANY(:ids::bigint[]) AND j.state IN ('succeeded', 'dead', 'cancelled')
RETURNING j.id;

-- name: get
SELECT j.id, j.queue, j.state, j.priority, j.run_at, j.attempts, j.max_attempts, j.lease_token,
          j.leased_by, j.lease_expires_at, j.enqueued_at, j.started_at, j.finished_at,
          j.unique_key, j.last_error, j.payload
FROM :"schema".jobs j
WHERE j.id = :id::bigint;

-- name: finished_since
-- Walks jobs_finished_idx.
SELECT j.queue, count(*) FILTER (WHERE j.state = 'succeeded'),
       count(*) FILTER (WHERE j.state = 'dead')
FROM :"schema".jobs j
WHERE j.state IN ('succeeded', 'dead') AND j.finished_at > :since::timestamptz
  AND (:queue::text IS NULL OR j.queue = :queue::text)
GROUP BY j.queue
ORDER BY j.queue;

-- name: lease_limited
-- See the function (migration 8). params: queue, worker, max_jobs, lease_us, tokens
SELECT * FROM :"schema".lease_limited(:queue::text, :worker::text, :max_jobs::integer,
                                      :lease_us::bigint, :tokens::uuid[]);

-- name: queue_limits
SELECT q.running_limit::bigint, q.rate_count::bigint, q.rate_window_us
FROM :"schema".queues q WHERE q.name = :queue::text;

-- name: set_limits
SELECT :"schema".set_limits(:queue::text, :running::integer, :rate_count::integer,
                            :rate_window_us::bigint * interval '1 microsecond');

-- name: clear_limits
SELECT :"schema".clear_limits(:queue::text);

-- name: pause
-- Pausing keeps the first pause time.
INSERT INTO :"schema".queues AS q (name, paused_at) VALUES (:queue::text, statement_timestamp())
ON CONFLICT (name) DO UPDATE SET paused_at = coalesce(q.paused_at, excluded.paused_at);

-- name: resume
-- Resuming wakes the queue's idle workers, as an enqueue would.
WITH resumed AS (
  UPDATE :"schema".queues q SET paused_at = NULL
  WHERE q.name = :queue::text AND q.paused_at IS NOT NULL
  RETURNING q.name
)
SELECT pg_notify(:'channel', r.name) FROM resumed r;

-- name: upsert_schedule
-- A replaced schedule keeps its created_at and last tick. xmax = 0 on the returned row
-- tells an inserted row from one updated by ON CONFLICT (PostgreSQL sets xmax on update).
INSERT INTO :"schema".schedules AS s (name, queue, spec, payload, priority, max_attempts)
VALUES (:name::text, :queue::text, :spec::text, :payload::bytea, :priority::integer,
        :max_attempts::integer)
ON CONFLICT (name) DO UPDATE
SET queue = excluded.queue, spec = excluded.spec, payload = excluded.payload,
    priority = excluded.priority, max_attempts = excluded.max_attempts
RETURNING (s.xmax = 0);

-- name: list_schedules
SELECT s.name, s.queue, s.spec, s.payload, s.priority, s.max_attempts, s.created_at,
       s.last_tick_at, s.last_job_id
FROM :"schema".schedules s
ORDER BY s.name;

-- name: delete_schedule
DELETE FROM :"schema".schedules s WHERE s.name = :name::text;

-- name: enqueue_schedule_now
-- Run now: one job from the schedule's definition, due at once, without a unique key; the
-- schedule's ticks are not touched. No row when there is no such schedule.
INSERT INTO :"schema".jobs AS j (queue, payload, priority, max_attempts)
SELECT s.queue, s.payload, s.priority, s.max_attempts
FROM :"schema".schedules s
WHERE s.name = :name::text
RETURNING j.id;

-- name: enqueue_tick
-- ONE statement takes the tick and inserts its job, so both commit or neither does. Of two
-- callers racing for one tick, the second's UPDATE waits for the first's row lock, then
-- re-checks last_tick_at against the committed row (READ COMMITTED) and takes nothing.
-- The job's id is drawn from the jobs' sequence first, so that the same UPDATE records it as
-- the schedule's last_job_id (a second UPDATE of the row in one statement is not allowed).
-- Should the insert meet a live job holding the tick's key, the recorded id is one no job has.
WITH taken AS (
  UPDATE :"schema".schedules s
  SET last_tick_at = :tick::timestamptz, last_job_id = nextval(':"schema".jobs_id_seq')
  WHERE s.name = :name::text AND coalesce(s.last_tick_at, s.created_at) < :tick::timestamptz
  RETURNING s.queue, s.payload, s.priority, s.max_attempts, s.last_job_id
)
INSERT INTO :"schema".jobs AS j (id, queue, payload, priority, run_at, max_attempts, unique_key)
OVERRIDING SYSTEM VALUE
SELECT t.last_job_id, t.queue, t.payload, t.priority, :tick::timestamptz, t.max_attempts,
       :unique_key::text
FROM taken t
ON CONFLICT (queue, unique_key)
  WHERE unique_key IS NOT NULL AND state IN ('available', 'running')
  DO NOTHING
RETURNING j.id;

-- name: claim_task
-- Claimed when the task's row is new or its time has come. Of two racing inserts of a new
-- task, the second waits for the first and then finds its next_run_at in the future.
INSERT INTO :"schema".tasks AS t (task, next_run_at, claimed_by, claimed_at)
VALUES (:task::text, statement_timestamp() + :interval_us::bigint * interval '1 microsecond',
        :claimed_by::text,
        statement_timestamp())
ON CONFLICT (task) DO UPDATE
SET next_run_at = excluded.next_run_at, claimed_by = excluded.claimed_by,
    claimed_at = excluded.claimed_at
WHERE t.next_run_at <= statement_timestamp()
RETURNING t.task;

-- name: add_metrics
-- One flush (docs/metrics.md): each series' stored total grows by its value. The rows come
-- sorted by series, so that two flushes at once lock them in the same order.
INSERT INTO :"schema".metrics AS m (name, queue, label, label_value, value)
SELECT r.name, r.queue, r.label, r.label_value, r.value
FROM unnest(:names::text[], :queues::text[], :labels::text[], :label_values::text[],
            :values::bigint[]) WITH ORDINALITY AS r(name, queue, label, label_value, value, ord)
ORDER BY r.ord
ON CONFLICT (name, queue, label, label_value) DO UPDATE SET value = m.value + excluded.value;

-- name: read_metrics
SELECT name, queue, label, label_value, value FROM :"schema".metrics
ORDER BY name, queue, label, label_value;

-- name: upsert_worker
-- A worker's heartbeat, and the workers silent for longer than :forget_us forgotten.
-- started_at is kept while the same process reports again.
WITH forgotten AS (
  DELETE FROM :"schema".workers
  WHERE heartbeat_at < statement_timestamp() - :forget_us::bigint * interval '1 microsecond'
    AND name <> :name::text
)
INSERT INTO :"schema".workers AS w (name, host, pid, queues, threads, started_at, heartbeat_at)
VALUES (:name::text, :host::text, :pid::bigint, :queues::text, :threads::integer,
        statement_timestamp(), statement_timestamp())
ON CONFLICT (name) DO UPDATE
SET started_at = CASE WHEN w.host = excluded.host AND w.pid = excluded.pid
                      THEN w.started_at ELSE excluded.started_at END,
    host = excluded.host, pid = excluded.pid, queues = excluded.queues,
    threads = excluded.threads, heartbeat_at = excluded.heartbeat_at;

-- name: delete_worker
DELETE FROM :"schema".workers WHERE name = :name::text;

-- name: list_workers
SELECT name, host, pid, queues, threads, started_at, heartbeat_at FROM :"schema".workers
ORDER BY name;
