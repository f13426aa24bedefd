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
-- For a job given no delay or run_at: it is due. Otherwise enqueue_one_timed.
INSERT INTO :"schema".live (queue, payload, priority, run_at, max_attempts)
VALUES (:queue::text, :payload::bytea, :priority::integer,
        coalesce(:run_at::timestamptz,
                 statement_timestamp() + coalesce(:delay_us::bigint, 0) * interval '1 microsecond'),
        :max_attempts::integer)
RETURNING id;

-- name: enqueue_one_timed
-- The same for a job given a delay or a run_at: scheduled for later, it goes straight into
-- scheduled (migration 18), its id drawn from the same sequence, and into live when due. Each
-- INSERT is behind a condition with no column in it, so the one it is false for reads
-- nothing. (live's insert trigger would move it, at the cost of an insert and a delete in
-- live; this form costs a due job's enqueue about a tenth more than the plain one:
-- docs/benchmarks.md run 53.)
WITH due AS (
  INSERT INTO :"schema".live (queue, payload, priority, run_at, max_attempts)
  SELECT :queue::text, :payload::bytea, :priority::integer, r.run_at, :max_attempts::integer
  FROM (SELECT coalesce(:run_at::timestamptz, statement_timestamp()
                        + coalesce(:delay_us::bigint, 0) * interval '1 microsecond')) AS r(run_at)
  WHERE r.run_at <= statement_timestamp()
  RETURNING id
), later AS (
  INSERT INTO :"schema".scheduled (queue, payload, priority, run_at, max_attempts)
  SELECT :queue::text, :payload::bytea, :priority::integer, r.run_at, :max_attempts::integer
  FROM (SELECT coalesce(:run_at::timestamptz, statement_timestamp()
                        + coalesce(:delay_us::bigint, 0) * interval '1 microsecond')) AS r(run_at)
  WHERE r.run_at > statement_timestamp()
  RETURNING id
)
SELECT id FROM due UNION ALL SELECT id FROM later;

-- name: enqueue_many
INSERT INTO :"schema".live (queue, payload, priority, run_at, max_attempts)
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
-- and the client encodes one (readpast_bench, docs/benchmarks.md run 7). Given no delay or
-- run_at; otherwise enqueue_uniform_timed.
INSERT INTO :"schema".live (queue, payload, priority, run_at, max_attempts)
SELECT :queue::text, t.payload, :priority::integer,
       coalesce(:run_at::timestamptz,
                statement_timestamp() + coalesce(:delay_us::bigint, 0) * interval '1 microsecond'),
       :max_attempts::integer
FROM unnest(:payloads::bytea[]) WITH ORDINALITY AS t(payload, ord)
ORDER BY t.ord
RETURNING id;

-- name: enqueue_uniform_timed
-- A uniform batch given a delay or a run_at, into scheduled or live as enqueue_one_timed.
WITH due AS (
  INSERT INTO :"schema".live (queue, payload, priority, run_at, max_attempts)
  SELECT :queue::text, t.payload, :priority::integer, r.run_at, :max_attempts::integer
  FROM (SELECT coalesce(:run_at::timestamptz, statement_timestamp()
                        + coalesce(:delay_us::bigint, 0) * interval '1 microsecond')) AS r(run_at),
       unnest(:payloads::bytea[]) WITH ORDINALITY AS t(payload, ord)
  WHERE r.run_at <= statement_timestamp()
  ORDER BY t.ord
  RETURNING id
), later AS (
  INSERT INTO :"schema".scheduled (queue, payload, priority, run_at, max_attempts)
  SELECT :queue::text, t.payload, :priority::integer, r.run_at, :max_attempts::integer
  FROM (SELECT coalesce(:run_at::timestamptz, statement_timestamp()
                        + coalesce(:delay_us::bigint, 0) * interval '1 microsecond')) AS r(run_at),
       unnest(:payloads::bytea[]) WITH ORDINALITY AS t(payload, ord)
  WHERE r.run_at > statement_timestamp()
  ORDER BY t.ord
  RETURNING id
)
SELECT id FROM due UNION ALL SELECT id FROM later;

-- name: enqueue_one_keyed
-- One job with a unique key: the statement below for a batch of one, with scalars. The batch
-- statement's CTEs and lateral joins made PostgreSQL plan it afresh on every call under
-- plan_cache_mode = auto (a keyed enqueue one by one ran at 0.80 of schema 14's,
-- docs/benchmarks.md run 44); this one is cheap to plan and to run. The key is claimed for the
-- id drawn here; the job goes in only with the claim. When the claim fails, the holder is
-- looked up in this statement's snapshot: NULL when it committed after the snapshot was taken,
-- and the engine asks again (pg_jobs.cpp), as for the batch.
WITH claimed AS (
  INSERT INTO :"schema".unique_keys AS k (queue, unique_key, job_id)
  VALUES (:queue::text, :unique_key::text, nextval(':"schema".jobs_id_seq'))
  ON CONFLICT (queue, unique_key) DO NOTHING
  RETURNING k.job_id
), inserted AS (
  INSERT INTO :"schema".live AS j (id, queue, payload, priority, run_at, max_attempts, unique_key)
  OVERRIDING SYSTEM VALUE
  SELECT c.job_id, :queue::text, :payload::bytea, :priority::integer,
         coalesce(:run_at::timestamptz,
                  statement_timestamp() + coalesce(:delay_us::bigint, 0) * interval '1 microsecond'),
         :max_attempts::integer, :unique_key::text
  FROM claimed c
  RETURNING j.id
)
SELECT coalesce((SELECT i.id FROM inserted i),
                (SELECT h.job_id FROM :"schema".unique_keys h
                 WHERE h.queue = :queue::text AND h.unique_key = :unique_key::text)) AS id,
       EXISTS (SELECT 1 FROM inserted) AS inserted;

-- name: enqueue
-- Batch enqueue with unique keys, in one statement. Ids are drawn from the table's sequence up
-- front, in input order, so that each input row can be matched to what the INSERTs did. Each
-- key is claimed in unique_keys for its job first (migration 15), in input order, and a job
-- is inserted only if it has no key or its claim went in. An input whose new_id comes back
-- from RETURNING was inserted; otherwise its unique key was held, and the holder is either an
-- earlier row of this same batch (found in `inserted`) or a claim visible to this statement's
-- snapshot (the LIMIT keeps that lookup a probe per input row: without it, once unique_keys
-- has statistics, the planner joins the batch to every key by hash). A holder committed by
-- another transaction after the snapshot was taken is invisible here (ON CONFLICT still saw
-- it): id is then NULL and the engine looks again with a new statement (see pg_jobs.cpp).
WITH input AS (
  SELECT t.ord, t.queue, t.payload, t.priority, t.run_at, t.delay_us, t.max_attempts,
         t.unique_key, nextval(':"schema".jobs_id_seq') AS new_id
  FROM unnest(:queues::text[], :payloads::bytea[], :priorities::integer[],
              :run_ats::timestamptz[], :delays_us::bigint[],
              :max_attempts::integer[], :unique_keys::text[])
       WITH ORDINALITY AS t(queue, payload, priority, run_at, delay_us, max_attempts,
                            unique_key, ord)
  ORDER BY t.ord
), claimed AS (
  INSERT INTO :"schema".unique_keys AS k (queue, unique_key, job_id)
  SELECT i.queue, i.unique_key, i.new_id FROM input i
  WHERE i.unique_key IS NOT NULL
  ORDER BY i.ord
  ON CONFLICT (queue, unique_key) DO NOTHING
  RETURNING k.job_id
), inserted AS (
  INSERT INTO :"schema".live AS j (id, queue, payload, priority, run_at, max_attempts, unique_key)
  OVERRIDING SYSTEM VALUE
  SELECT i.new_id, i.queue, i.payload, i.priority,
         coalesce(i.run_at,
                  statement_timestamp() + coalesce(i.delay_us, 0) * interval '1 microsecond'),
         i.max_attempts, i.unique_key
  FROM input i
  WHERE i.unique_key IS NULL OR i.new_id IN (SELECT c.job_id FROM claimed c)
  ORDER BY i.ord
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
  SELECT h.job_id AS id FROM :"schema".unique_keys h
  WHERE ins.id IS NULL AND h.queue = i.queue AND h.unique_key = i.unique_key
  LIMIT 1
) holder ON true
ORDER BY i.ord;

-- name: lease
-- The lease: ONE statement, lease_head_walk() (migrations 13 and 14), whose settings pin its
-- plan. It walks jobs_lease_idx in hand-out order and locks up to max_jobs rows, skipping rows
-- that another transaction has locked (another worker leasing or settling them) instead of
-- waiting for it.
-- Under READ COMMITTED, FOR UPDATE re-checks the WHERE clause against the newest version of
-- each row it locks, so a row that another worker leased (and committed) after this
-- statement's snapshot is not taken again. The UPDATE then changes exactly the rows this
-- statement holds locks on; it repeats the state test only as a second line of defence.
-- RETURNING order is unspecified: the engine sorts.
--
-- It is a function so that no statistics can change how it reads: with those of a queue that
-- was nearly empty when last analysed, a plain statement sorted the whole backlog on every
-- lease (docs/benchmarks.md, run 39). Inside it:
--   - The queue's first entry of jobs_lease_idx is read once, before the walk, which starts
--     there: when no job is due it stops the statement at once (migration 16).
--   - The NOT EXISTS (one probe of the queues table's primary key) hands out nothing of a
--     paused queue, nor of one with limits (lease_limited serves those; same row, same cost).
--   - The update's state test is written `(j.state || '')` so that it matches no partial
--     index, and `j.id = ANY (ARRAY(SELECT …))` repeats the join condition, so that the rows to
--     update are found by one probe of the primary key each (docs/postgres.md); each is joined
--     to its place in the pick by a hash join (migration 18: a nested loop, which statistics
--     of a nearly empty table chose, read the whole pick for every row).
--   - Scheduled jobs of the queue that have come due are promoted first (migration 18).
--   - Its plan is generic, planned once per session: the batch size is a parameter.
--   - After the jobs comes one row whose id is null: walked_pages, the pages of jobs_lease_idx
--     the call read, by which the engine turns to the lanes when the head is
--     long (src/engines/postgres/lease_mode.hpp).
--
-- Lease tokens come from the caller (:tokens, 128 random bits per job the lease may take, from
-- the operating system's random source: LeaseToken in core) and are handed out in pick
-- order. Generating them in the server (new_lease_token(): two gen_random_uuid() and a
-- SHA-256) cost about 12 µs per job, more than the rest of the lease.
-- params: queue, worker, lease_us, tokens, max_jobs
SELECT * FROM :"schema".lease_head_walk(:queue::text, :worker::text, :lease_us::bigint,
                                        :tokens::uuid[], :max_jobs::integer);

-- name: lease_lanes
-- The lease while another session holds an old snapshot (src/engines/postgres/lease_mode.hpp
-- says when): each lane of the queue (a priority in use, from `lanes`) is scanned from a key of
-- its own, the engine's frontier for it, instead of the queue from its head, where such a
-- snapshot keeps an index entry of every job already leased that no vacuum may remove. Same
-- locks, same order within the lanes it reads, same fencing, same pause and limits probe as
-- `lease`; lease_lanes() (migration 11) says how, and docs/postgres-storage.md section 6 why
-- the frontier passes no job a lease could take.
--
-- With :from_head, it reads the queue in (priority, run_at, id) order from its head, as
-- `lease` does: the engine does so for the first lease after it switched, now and then after,
-- and after one of its leases failed, for jobs that the frontiers passed.
--
-- :lane_run_at/:lane_id give, per priority in :lane_priorities, the key below which the engine
-- has proved that no visible, unlocked job can be; a lane not named, or named with NULLs, is
-- scanned from its head. Marks (lane_marks) of transactions that had not written when the
-- lease behind that key took its snapshot (xid >= :lane_marks_from) pull the start back.
--
-- Each job comes with what this lease saw: its snapshot's xmin and xmax and its
-- statement_timestamp(), of which the engine's frontiers are made. A lease that takes nothing
-- says nothing.
--
-- A function, so that the planner settings in its definition hold for it alone, through a
-- pooler in transaction mode too: the statistics autovacuum gathers under a held snapshot
-- (a few hundred live rows in thousands of pages) otherwise turn its plan into a walk of
-- jobs_due_idx and a sort (docs/benchmarks.md, run 36).
-- params: queue, worker, lease_us, tokens, from_head, lane_priorities, lane_run_at, lane_id, lane_marks_from, max_jobs
SELECT * FROM :"schema".lease_lanes(:queue::text, :worker::text, :lease_us::bigint,
  :tokens::uuid[], :from_head::integer, :lane_priorities::integer[],
  :lane_run_at::timestamptz[], :lane_id::bigint[], :lane_marks_from::bigint[],
  :max_jobs::integer);

-- name: oldest_snapshot
-- The oldest snapshot that keeps vacuum from removing row versions, and who holds it: a
-- session's (a long query, an open REPEATABLE READ transaction, pg_dump, a standby's
-- hot_standby_feedback through its walsender; a session's own transaction id counts as well
-- as its snapshot, whichever is older), a replication slot's, a prepared transaction's. Only
-- those of this database, and those of no database (a walsender, a physical slot): another
-- database's snapshots hold back no vacuum of this one's tables. The caller's own session is
-- left out, and so is autovacuum's snapshot, which holds back no other vacuum (its
-- backend_type is visible to a superuser or a member of pg_read_all_stats; to other roles a
-- long autovacuum looks like a reader; so are application_name, state and xact_start, NULL
-- for another role's session).
-- transactions: how many transaction ids were assigned since (age of its xmin); age_us: how
-- long its transaction has been open (a prepared one: since it was prepared). No row: nothing
-- holds a snapshot.
-- Read every LeaseMode::kProbeEvery by the engine (lease_mode.hpp), and by
-- Queue::storage_health.
SELECT h.kind, h.pid::bigint, h.client, h.state,
       (extract(epoch FROM statement_timestamp() - h.began) * 1000000)::bigint AS age_us,
       age(h.xmin)::bigint AS transactions, h.xmin::text::bigint AS xmin
FROM (
  SELECT 'session' AS kind, a.pid, a.application_name AS client, a.state,
         a.xact_start AS began,
         CASE WHEN a.backend_xid IS NULL THEN a.backend_xmin
              WHEN a.backend_xmin IS NULL THEN a.backend_xid
              WHEN age(a.backend_xid) > age(a.backend_xmin) THEN a.backend_xid
              ELSE a.backend_xmin END AS xmin
  FROM pg_catalog.pg_stat_activity a
  WHERE (a.backend_xmin IS NOT NULL OR a.backend_xid IS NOT NULL)
    AND a.backend_type IS DISTINCT FROM 'autovacuum worker'
    AND a.pid <> pg_catalog.pg_backend_pid()
    AND (a.datname IS NULL OR a.datname = current_database())
  UNION ALL
  SELECT 'replication slot', s.active_pid, s.slot_name::text,
         CASE WHEN s.active THEN 'active' ELSE 'inactive' END, NULL, s.xmin
  FROM pg_catalog.pg_replication_slots s
  WHERE s.xmin IS NOT NULL AND (s.database IS NULL OR s.database = current_database())
  UNION ALL
  SELECT 'prepared transaction', NULL, p.gid, 'prepared', p.prepared, p.transaction
  FROM pg_catalog.pg_prepared_xacts p
  WHERE p.database = current_database()
) h
ORDER BY age(h.xmin) DESC
LIMIT 1;

-- name: storage_sizes
-- What each table of the schema takes on disk, with its indexes and TOAST (Queue::
-- storage_health): every plain table and each segment of a ring (a partitioned parent holds
-- nothing itself). Sizes are read from the files, without locks.
SELECT c.relname::text, pg_catalog.pg_total_relation_size(c.oid)
FROM pg_catalog.pg_class c
WHERE c.relnamespace = ':"schema"'::regnamespace AND c.relkind = 'r'
ORDER BY c.relname;

-- name: complete
-- Every settling statement is fenced: it changes a row only while the row is running
-- under the given token. This is what makes a re-sent complete or fail (after a dropped
-- connection left its outcome unknown) safe: the first one that committed ended the lease,
-- so the re-sent one matches no row and reports the lease lost; it can neither complete
-- the job twice nor touch a later attempt that another worker holds. A running job is in
-- `running` (migration 23), which holds nothing else: a job that is kept moves from there to
-- done in the one statement.
--
-- The settles find each row by one probe of running_pkey, whatever the statistics say.
-- Autovacuum can record a table as a few rows in thousands of pages: under a snapshot held
-- elsewhere always, and in a drain that keeps a backlog whenever its vacuum extrapolates from
-- the pages it read (run 37: 21 rows in 40,000 pages, 31,000 live). With such statistics the
-- plain forms of these statements chose plans that read a whole index (run 34: the state test
-- of a partial index's condition; run 37: a merge join over the primary key). `j.id = r.id`
-- can be joined by merge, which makes the primary key's order useful: the planner read all of
-- it and joined each entry to the batch (0.5 s for 100 completions, run 37; 50 ms without a
-- hold). Written `j.id = ANY (ARRAY[r.id])`, it joins nothing by merge or hash, so the one
-- plan left that reads the table by an index probes its primary key once per id, and the
-- other, a sequential scan, costs the table's pages.
-- The batch is unnest() under `LIMIT cardinality(:ids)`, a limit that changes nothing but the
-- generic plan's estimate: unnest() of an array parameter is costed at ten rows, the
-- generic plan at ten probes, more than a custom plan of one probe plus its planning, and
-- PostgreSQL then planned a one-job settle anew on every call (run 37: 0.77 of the one-job
-- drains). A limit it cannot evaluate when planning it costs at a tenth of its input: one row.
-- (A function declared ROWS 1 does the same, but a SQL function's body is planned on every
-- call: 0.87.) Tests pin both plans: SettlesProbeThePrimaryKeyWhateverTheStatisticsSay and
-- TheSettlesOfOneJobKeepAGenericPlan, tests/postgres/engine_test.cpp.
WITH ended AS (
  DELETE FROM :"schema".running j
  USING (SELECT * FROM unnest(:ids::bigint[], :tokens::uuid[])
        LIMIT cardinality(:ids::bigint[])) AS r(id, token)
  WHERE j.id = ANY (ARRAY[r.id]) AND j.lease_token = r.token
  RETURNING j.*, r.token AS settled_token
), kept AS (
  INSERT INTO :"schema".done
  SELECT e.id, e.queue, 'succeeded', e.priority, e.run_at, e.attempts, e.max_attempts,
         e.lease_token, e.leased_by, NULL, e.enqueued_at, e.started_at,
         statement_timestamp(), e.unique_key, e.last_error, e.payload, e.progress,
         e.waiting_for, e.notify, e.delay_us, e.group_name
  FROM ended e
)
SELECT e.id, e.settled_token FROM ended e;

-- name: complete_delete
-- A job with dependents to tell (notify) is not deleted: the engine completes it with
-- `complete` instead, and retention deletes it once resolve_dependencies has told them.
-- The hot path of a drain without retention: complete_delete() (migrations 20 and 23) reads
-- the batch's ids in one scan of running_pkey and matches the tokens by hash, a plan its planner
-- settings keep whatever the statistics say, where the form above starts a scan per id.
SELECT d.id, d.token FROM :"schema".complete_delete(:ids::bigint[], :tokens::uuid[]) AS d;

-- name: fail
-- A dead job keeps its run_at; a retried one gets now + retry_after, or the backoff of the
-- attempt that just failed (j.attempts, read under the fence). no_retry sends it to dead
-- whatever attempts it has left. The job leaves `running` by one DELETE (migration 23) for
-- live when retried now, for scheduled when retried later (the key stays with it), for done
-- when dead (the key goes). The same statement records each failed attempt in the error
-- history (job_errors). Each retry's time is computed once, in the DELETE's RETURNING.
WITH gone AS (
  DELETE FROM :"schema".running j
  USING (SELECT * FROM unnest(:ids::bigint[], :tokens::uuid[], :errors::text[],
                              :retry_after_us::bigint[], :base_us::bigint[], :cap_us::bigint[],
                              :factors::double precision[], :no_retry::boolean[])
         LIMIT cardinality(:ids::bigint[]))
       AS r(id, token, error, retry_after_us, base_us, cap_us, factor, no_retry)
  WHERE j.id = ANY (ARRAY[r.id]) AND j.lease_token = r.token
  RETURNING j.*, r.token AS settled_token, r.error,
            j.attempts >= j.max_attempts OR r.no_retry AS dies,
            statement_timestamp()
              + coalesce(r.retry_after_us * interval '1 microsecond',
                         :"schema".backoff_delay(j.attempts, r.base_us, r.cap_us, r.factor))
              AS retry_at
), retried AS (
  INSERT INTO :"schema".live OVERRIDING SYSTEM VALUE
  SELECT g.id, g.queue, 'available', g.priority, g.retry_at, g.attempts, g.max_attempts,
         g.lease_token, g.leased_by, NULL, g.enqueued_at, g.started_at, g.finished_at,
         g.unique_key, g.error, g.payload, g.progress, g.waiting_for, g.notify, g.delay_us,
         g.group_name
  FROM gone g WHERE NOT g.dies AND g.retry_at <= statement_timestamp()
), rescheduled AS (
  INSERT INTO :"schema".scheduled
  SELECT g.id, g.queue, 'available', g.priority, g.retry_at, g.attempts, g.max_attempts,
         g.lease_token, g.leased_by, NULL, g.enqueued_at, g.started_at, g.finished_at,
         g.unique_key, g.error, g.payload, g.progress, g.waiting_for, g.notify, g.delay_us,
         g.group_name
  FROM gone g WHERE NOT g.dies AND g.retry_at > statement_timestamp()
), buried AS (
  INSERT INTO :"schema".done
  SELECT g.id, g.queue, 'dead', g.priority, g.run_at, g.attempts, g.max_attempts,
         g.lease_token, g.leased_by, NULL, g.enqueued_at, g.started_at,
         statement_timestamp(), g.unique_key, g.error, g.payload, g.progress, g.waiting_for,
         g.notify, g.delay_us, g.group_name
  FROM gone g WHERE g.dies
), recorded AS (
  INSERT INTO :"schema".job_errors (job_id, attempt, at, worker, error)
  SELECT g.id, g.attempts, statement_timestamp(), g.leased_by, g.error FROM gone g
)
SELECT g.id, g.settled_token, CASE WHEN g.dies THEN 'dead' ELSE 'available' END FROM gone g;

-- name: set_progress
UPDATE :"schema".running j SET progress = :progress::text
WHERE j.id = :id::bigint AND j.lease_token = :token::uuid;

-- name: job_errors
SELECT e.attempt, e.at, e.worker, e.error FROM :"schema".job_errors e
WHERE e.job_id = :id::bigint ORDER BY e.id;

-- name: find_unique_windows
-- The open windows among the (queue, unique key) pairs of a batch.
SELECT w.queue, w.unique_key, w.job_id
FROM :"schema".unique_windows w
JOIN unnest(:queues::text[], :unique_keys::text[]) AS k(queue, unique_key)
  ON w.queue = k.queue AND w.unique_key = k.unique_key
WHERE w.until > statement_timestamp();

-- name: claim_unique_window
-- Opens the key's window for a job about to be enqueued (job_id set once it is in), taking
-- over a closed one. No row back: an open window holds the key — after waiting for the
-- transaction that holds its row, so that of two enqueues racing for one key, one opens the
-- window and the other then finds it. :until_us is a duration from now.
INSERT INTO :"schema".unique_windows AS w (queue, unique_key, job_id, until)
VALUES (:queue::text, :unique_key::text, NULL,
        statement_timestamp() + :until_us::bigint * interval '1 microsecond')
ON CONFLICT (queue, unique_key) DO UPDATE
  SET job_id = NULL, until = excluded.until
  WHERE w.until <= statement_timestamp()
RETURNING true;

-- name: window_holder
SELECT w.job_id FROM :"schema".unique_windows w
WHERE w.queue = :queue::text AND w.unique_key = :unique_key::text;

-- name: set_window_job
-- :job_id NULL: the job was not inserted after all (a live job held the key), so the
-- window it claimed is dropped.
WITH dropped AS (
  DELETE FROM :"schema".unique_windows w
  WHERE :job_id::bigint IS NULL AND w.queue = :queue::text AND w.unique_key = :unique_key::text
)
UPDATE :"schema".unique_windows w SET job_id = :job_id::bigint
WHERE :job_id::bigint IS NOT NULL AND w.queue = :queue::text
  AND w.unique_key = :unique_key::text;

-- name: forget_closed_windows
DELETE FROM :"schema".unique_windows w
WHERE (w.queue, w.unique_key) IN (
  SELECT c.queue, c.unique_key FROM :"schema".unique_windows c
  WHERE c.until <= statement_timestamp()
  ORDER BY c.until LIMIT :limit::integer
  FOR UPDATE SKIP LOCKED);

-- name: extend
UPDATE :"schema".running j
SET lease_expires_at = statement_timestamp() + :lease_us::bigint * interval '1 microsecond'
FROM (SELECT * FROM unnest(:ids::bigint[], :tokens::uuid[])
        LIMIT cardinality(:ids::bigint[])) AS r(id, token)
WHERE j.id = ANY (ARRAY[r.id]) AND j.lease_token = r.token
RETURNING j.id, r.token;

-- name: held
-- Which of these leases are still held: a read (Queue::leases_held).
SELECT j.id, r.token
FROM :"schema".running j
JOIN (SELECT * FROM unnest(:ids::bigint[], :tokens::uuid[])
        LIMIT cardinality(:ids::bigint[])) AS r(id, token)
  ON j.id = ANY (ARRAY[r.id])
WHERE j.lease_token = r.token;

-- name: release
-- Gives back the attempt the lease spent. The job leaves `running` (migration 23) for live,
-- or for scheduled when released with a delay (the key stays with it in either).
-- params: delay_us, ids, tokens
WITH released AS (
  DELETE FROM :"schema".running j
  USING (SELECT * FROM unnest(:ids::bigint[], :tokens::uuid[])
          LIMIT cardinality(:ids::bigint[])) AS r(id, token)
  WHERE j.id = ANY (ARRAY[r.id]) AND j.lease_token = r.token
  RETURNING j.*, r.token AS settled_token,
            statement_timestamp() + :delay_us::bigint * interval '1 microsecond' AS again_at
), into_live AS (
  INSERT INTO :"schema".live OVERRIDING SYSTEM VALUE
  SELECT d.id, d.queue, 'available', d.priority, d.again_at, greatest(d.attempts - 1, 0),
         d.max_attempts, d.lease_token, d.leased_by, NULL, d.enqueued_at, d.started_at,
         d.finished_at, d.unique_key, d.last_error, d.payload, d.progress, d.waiting_for,
         d.notify, d.delay_us, d.group_name
  FROM released d WHERE :delay_us::bigint <= 0
), rescheduled AS (
  INSERT INTO :"schema".scheduled
  SELECT d.id, d.queue, 'available', d.priority, d.again_at, greatest(d.attempts - 1, 0),
         d.max_attempts, d.lease_token, d.leased_by, NULL, d.enqueued_at, d.started_at,
         d.finished_at, d.unique_key, d.last_error, d.payload, d.progress, d.waiting_for,
         d.notify, d.delay_us, d.group_name
  FROM released d WHERE :delay_us::bigint > 0
)
SELECT id, settled_token FROM released;

-- name: rescue
-- Expired leases of one queue, oldest first, at most :batch per statement: walks
-- running_expiry_idx (migration 23), so it costs the same with ten or ten million jobs
-- waiting. SKIP LOCKED: a row locked right now is being settled by its worker, which is the
-- better outcome. A rescued job leaves `running` for live, or for done as dead when its lease
-- was its last attempt. Migration 23's rescue_expired() has the same body, without :after
-- and with the plain form of the join (complete says why these differ): while another session
-- holds an old snapshot (lease_mode.hpp), the engine starts from the expiry where its previous
-- rescue left off, less a margin (NULL: from the head; lease_frontier.hpp says when), so that
-- it does not walk the entries of every lease settled since.
WITH expired AS (
  SELECT j.id, j.attempts >= j.max_attempts AS dies FROM :"schema".running j
  WHERE j.queue = :queue::text
    AND j.lease_expires_at <= statement_timestamp()
    AND j.lease_expires_at >= coalesce(:after::timestamptz, '-infinity'::timestamptz)
  ORDER BY j.lease_expires_at
  LIMIT :batch::integer
  FOR UPDATE SKIP LOCKED
), gone AS (
  DELETE FROM :"schema".running j USING expired e
  WHERE j.id = ANY (ARRAY[e.id])
  RETURNING j.*, e.dies,
            CASE WHEN e.dies THEN 'lease expired after ' || j.attempts || ' attempts (worker lost)'
                 ELSE 'lease expired (worker lost)' END AS error
), retried AS (
  INSERT INTO :"schema".live OVERRIDING SYSTEM VALUE
  SELECT g.id, g.queue, 'available', g.priority, statement_timestamp(), g.attempts,
         g.max_attempts, g.lease_token, g.leased_by, NULL, g.enqueued_at, g.started_at,
         g.finished_at, g.unique_key, g.error, g.payload, g.progress, g.waiting_for, g.notify,
         g.delay_us, g.group_name
  FROM gone g WHERE NOT g.dies
), buried AS (
  INSERT INTO :"schema".done
  SELECT g.id, g.queue, 'dead', g.priority, g.run_at, g.attempts, g.max_attempts,
         g.lease_token, g.leased_by, NULL, g.enqueued_at, g.started_at,
         statement_timestamp(), g.unique_key, g.error, g.payload, g.progress, g.waiting_for,
         g.notify, g.delay_us, g.group_name
  FROM gone g WHERE g.dies
)
-- Each rescued lease is a failed attempt of the error history, like fail()'s.
INSERT INTO :"schema".job_errors (job_id, attempt, at, worker, error)
SELECT g.id, g.attempts, statement_timestamp(), g.leased_by, g.error FROM gone g;

-- name: cancel
-- Moves the unfinished jobs among :ids (in live, running, scheduled or waiting) to done as
-- cancelled (a
-- finished one stays as it is). A job that another statement moves between those tables while
-- this waits for its row (the resolver from waiting to live, a lease promoting it from
-- scheduled, a failure retried later back into scheduled) is not found here: the engine runs
-- the statement again for the ids it missed, with a snapshot that sees the move (migrations 17
-- and 18). Announced on the wake-up channel with the payload '!cancel' (no queue name starts
-- with a '!', so it cannot be mistaken for a queue's wake-up; pg_listener.hpp): listening
-- workers check their running jobs' leases at once instead of at their next poll.
-- NOTIFY is delivered at commit, so a worker never checks before the cancel is visible.
-- Each table is probed by id, one probe a job, however small its statistics say it is (the
-- settles' form, `complete` says why): waiting is often analysed nearly empty and then holds
-- thousands of dead rows, which a scan of it for a batch of ids would read.
WITH input AS (
  SELECT i.id FROM unnest(:ids::bigint[]) AS i(id) LIMIT cardinality(:ids::bigint[])
), gone_live AS (
  DELETE FROM :"schema".live j USING input i WHERE j.id = ANY (ARRAY[i.id])
  RETURNING j.*
), gone_running AS (
  DELETE FROM :"schema".running j USING input i WHERE j.id = ANY (ARRAY[i.id])
  RETURNING j.id, j.queue, j.state, j.priority, j.run_at, j.attempts, j.max_attempts,
            j.lease_token, j.leased_by, j.lease_expires_at, j.enqueued_at, j.started_at,
            j.finished_at, j.unique_key, j.last_error, j.payload, j.progress, j.waiting_for,
            j.notify, j.delay_us, j.group_name
), gone_scheduled AS (
  DELETE FROM :"schema".scheduled j USING input i WHERE j.id = ANY (ARRAY[i.id])
  RETURNING j.*
), gone_waiting AS (
  DELETE FROM :"schema".waiting j USING input i WHERE j.id = ANY (ARRAY[i.id])
  RETURNING j.*
), cancelled AS (
  INSERT INTO :"schema".done
  SELECT g.id, g.queue, 'cancelled', g.priority, g.run_at, g.attempts, g.max_attempts,
         g.lease_token, g.leased_by, NULL, g.enqueued_at, g.started_at,
         statement_timestamp(), g.unique_key, g.last_error, g.payload, g.progress,
         g.waiting_for, g.notify, g.delay_us, g.group_name
  FROM (SELECT * FROM gone_live UNION ALL SELECT * FROM gone_running
        UNION ALL SELECT * FROM gone_scheduled UNION ALL SELECT * FROM gone_waiting) g
  RETURNING id, lease_token IS NOT NULL AS was_leased
), announced AS (
  -- One row whatever was cancelled (an aggregate without GROUP BY), so that the join below
  -- keeps every id; a NOTIFY only when a job that had a lease was cancelled.
  SELECT CASE WHEN bool_or(was_leased) THEN pg_notify(:'channel', '!cancel') END AS sent
  FROM cancelled
)
SELECT c.id FROM cancelled c CROSS JOIN announced;

-- name: retry
-- Moves dead and cancelled jobs from done back to live. A job whose unique key a live
-- job of its queue holds stays where it is: it cannot become live again without breaking the
-- key's promise. Of several retried jobs sharing a key, only the oldest is retried (the rest
-- would collide with it). A job enqueued with that key by another transaction between this
-- statement's snapshot and its write still collides: unique_violation → kConflict, and the
-- caller tries again.
WITH old AS (
  -- A member that has told its group of its finish (notify false) joins it again.
  SELECT o.id, o.notify FROM :"schema".done o
  WHERE o.id = ANY(:ids::bigint[]) AND o.state IN ('dead', 'cancelled')
  FOR UPDATE
), gone AS (
  DELETE FROM :"schema".done j USING old
  WHERE j.id = old.id
    AND (j.unique_key IS NULL
         OR (NOT EXISTS (SELECT 1 FROM :"schema".unique_keys h
                         WHERE h.queue = j.queue AND h.unique_key = j.unique_key)
             AND j.id = (SELECT min(c.id) FROM :"schema".done c
                         WHERE c.id = ANY(:ids::bigint[]) AND c.state IN ('dead', 'cancelled')
                           AND c.queue = j.queue AND c.unique_key = j.unique_key)))
  RETURNING j.*, old.notify AS old_notify
), claimed AS (
  -- The key, taken again (migration 15); a holder committed since this statement's snapshot
  -- fails it with unique_violation.
  INSERT INTO :"schema".unique_keys (queue, unique_key, job_id)
  SELECT g.queue, g.unique_key, g.id FROM gone g WHERE g.unique_key IS NOT NULL
), revived AS (
  INSERT INTO :"schema".live OVERRIDING SYSTEM VALUE
  SELECT g.id, g.queue, 'available', g.priority, statement_timestamp(), 0, g.max_attempts,
         g.lease_token, g.leased_by, NULL, g.enqueued_at, g.started_at, NULL, g.unique_key,
         g.last_error, g.payload, g.progress, g.waiting_for,
         g.group_name IS NOT NULL
             OR EXISTS (SELECT 1 FROM :"schema".dependencies d
                        WHERE d.depends_on = g.id AND NOT d.met),
         g.delay_us, g.group_name
  FROM gone g
)
SELECT g.id, EXISTS (SELECT 1 FROM :"schema".dependencies d WHERE d.job_id = g.id),
       CASE WHEN g.old_notify IS NOT TRUE THEN g.group_name END
FROM gone g;

-- name: retry_all
-- The same as retry, for every job of a queue in one state (dead or cancelled).
WITH old AS (
  -- A member that has told its group of its finish (notify false) joins it again.
  SELECT o.id, o.notify FROM :"schema".done o
  WHERE o.queue = :queue::text AND o.state = :state::text AND o.state IN ('dead', 'cancelled')
  FOR UPDATE
), gone AS (
  DELETE FROM :"schema".done j USING old
  WHERE j.id = old.id
    AND (j.unique_key IS NULL
         OR (NOT EXISTS (SELECT 1 FROM :"schema".unique_keys h
                         WHERE h.queue = j.queue AND h.unique_key = j.unique_key)
             AND j.id = (SELECT min(c.id) FROM :"schema".done c
                         WHERE c.queue = :queue::text AND c.state = :state::text
                           AND c.queue = j.queue AND c.unique_key = j.unique_key)))
  RETURNING j.*, old.notify AS old_notify
), claimed AS (
  -- The key, taken again (migration 15); a holder committed since this statement's snapshot
  -- fails it with unique_violation.
  INSERT INTO :"schema".unique_keys (queue, unique_key, job_id)
  SELECT g.queue, g.unique_key, g.id FROM gone g WHERE g.unique_key IS NOT NULL
), revived AS (
  INSERT INTO :"schema".live OVERRIDING SYSTEM VALUE
  SELECT g.id, g.queue, 'available', g.priority, statement_timestamp(), 0, g.max_attempts,
         g.lease_token, g.leased_by, NULL, g.enqueued_at, g.started_at, NULL, g.unique_key,
         g.last_error, g.payload, g.progress, g.waiting_for,
         g.group_name IS NOT NULL
             OR EXISTS (SELECT 1 FROM :"schema".dependencies d
                        WHERE d.depends_on = g.id AND NOT d.met),
         g.delay_us, g.group_name
  FROM gone g
)
SELECT g.id, EXISTS (SELECT 1 FROM :"schema".dependencies d WHERE d.job_id = g.id),
       CASE WHEN g.old_notify IS NOT TRUE THEN g.group_name END
FROM gone g;

-- name: purge
-- One small batch of a purge; walks jobs_finished_idx.
DELETE FROM :"schema".done j
WHERE j.id IN (
  SELECT d.id FROM :"schema".done d
  WHERE d.queue = :queue::text AND d.state = :state::text
    AND d.state IN ('succeeded', 'dead', 'cancelled')
    AND d.finished_at <= :cutoff::timestamptz AND d.notify IS NOT TRUE
  ORDER BY d.finished_at
  LIMIT :batch::integer
  FOR UPDATE SKIP LOCKED
);

-- name: now
-- The database's clock, to fix purge's cutoff once.
SELECT statement_timestamp();

-- name: next_due
-- Microseconds until the queue's next available job is due (<= 0: one is due now); NULL
-- when the queue has no available job or is paused. Without :after, the queue's first entry
-- in hand-out order, when it is due (a job is due: how early the earliest is does not matter);
-- otherwise first_run_at() (migration 16), which reads the first entry of each lane of
-- jobs_lease_idx, from :after when given in the lanes registered (while another session holds
-- an old snapshot: the earliest of the engine's lane frontiers, lease_frontier.hpp; below it
-- no job is left for a lease but those that marks announce, and their inserts notify), where
-- a held snapshot keeps the entries of every job taken since at the head; or the first job of
-- scheduled when that is earlier (migration 18: due or not yet, the next lease promotes it when
-- due). Then whether the queue's limits let no lease take a job now (running limit reached, no
-- rate slot out of its window): a throttled worker then looks again now and then instead of
-- spinning, since no notification announces a settled job. Under a running limit the queue's
-- running jobs are about as many as the limit, so counting them is bounded by it.
SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM :"schema".queues q
                             WHERE q.name = :queue::text AND q.paused_at IS NOT NULL)
            THEN (extract(epoch FROM least(
                    CASE WHEN :after::timestamptz IS NULL
                         THEN (SELECT CASE WHEN h.run_at <= statement_timestamp() THEN h.run_at
                                           ELSE :"schema".first_run_at(:queue::text, NULL) END
                               FROM (SELECT d.run_at FROM :"schema".live d
                                     WHERE d.queue = :queue::text AND d.state = 'available'
                                     ORDER BY d.priority, d.run_at, d.id
                                     LIMIT 1) h)
                         ELSE :"schema".first_run_at(:queue::text, :after::timestamptz) END,
                    (SELECT s.run_at FROM :"schema".scheduled s WHERE s.queue = :queue::text
                     ORDER BY s.run_at, s.id LIMIT 1))
                    - statement_timestamp()) * 1000000)::bigint END,
       EXISTS (SELECT 1 FROM :"schema".queues q
               WHERE q.name = :queue::text
                 AND ((q.running_limit IS NOT NULL
                       AND (SELECT count(*) FROM :"schema".running r
                            WHERE r.queue = :queue::text)
                           >= q.running_limit)
                      OR (q.rate_count IS NOT NULL
                          AND NOT EXISTS (SELECT 1 FROM :"schema".rate_slots s
                                          WHERE s.queue = :queue::text
                                            AND s.leased_at <= statement_timestamp()
                                              - q.rate_window_us * interval '1 microsecond'))));

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
SELECT j.queue, 'waiting'::text, count(*), 0::bigint, NULL::bigint
FROM :"schema".jobs j
WHERE j.state = 'waiting' AND (:queue::text IS NULL OR j.queue = :queue::text)
GROUP BY j.queue
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
DELETE FROM :"schema".done j
WHERE j.id = ANY(:ids::bigint[]) AND j.state IN ('succeeded', 'dead', 'cancelled')
  AND j.notify IS NOT TRUE
RETURNING j.id;

-- name: get
SELECT j.id, j.queue, j.state, j.priority, j.run_at, j.attempts, j.max_attempts, j.lease_token,
          j.leased_by, j.lease_expires_at, j.enqueued_at, j.started_at, j.finished_at,
          j.unique_key, j.last_error, j.payload, j.progress
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
INSERT INTO :"schema".live AS j (queue, payload, priority, max_attempts)
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
-- Should a live job hold the tick's key, the job is not inserted (its claim in unique_keys
-- comes first, as in enqueue) and the recorded id is one no job has.
WITH taken AS (
  UPDATE :"schema".schedules s
  SET last_tick_at = :tick::timestamptz, last_job_id = nextval(':"schema".jobs_id_seq')
  WHERE s.name = :name::text AND coalesce(s.last_tick_at, s.created_at) < :tick::timestamptz
  RETURNING s.queue, s.payload, s.priority, s.max_attempts, s.last_job_id
), claimed AS (
  INSERT INTO :"schema".unique_keys AS k (queue, unique_key, job_id)
  SELECT t.queue, :unique_key::text, t.last_job_id FROM taken t
  WHERE :unique_key::text IS NOT NULL
  ON CONFLICT (queue, unique_key) DO NOTHING
  RETURNING k.job_id
)
INSERT INTO :"schema".live AS j (id, queue, payload, priority, run_at, max_attempts, unique_key)
OVERRIDING SYSTEM VALUE
SELECT t.last_job_id, t.queue, t.payload, t.priority, :tick::timestamptz, t.max_attempts,
       :unique_key::text
FROM taken t
WHERE :unique_key::text IS NULL OR t.last_job_id IN (SELECT c.job_id FROM claimed c)
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

-- name: rotate_running
-- One rotation of the running ring (migration 23, rotate_running()): the jobs still in the
-- oldest segment move to the current one, and the oldest is truncated and becomes current.
SELECT r.rotated, r.moved FROM :"schema".rotate_running() r;

-- name: rotation_blocker
-- After a rotation that did not rotate: the session, in a transaction open for over a second,
-- that holds a lock on the segment the rotation would have emptied (rotate_running() gives up at
-- once on such a session), oldest first; no row when only short transactions were in the way
-- (the 50-ms lock_timeout) or the ring rotated meanwhile. As oldest_snapshot says it: another
-- role's session shows its application_name, state and xact_start only to a superuser or a
-- member of pg_read_all_stats, and without xact_start it is not known to be long (nor does
-- rotate_running() give up at once on it).
SELECT 'session', a.pid::bigint, a.application_name, a.state,
       (extract(epoch FROM statement_timestamp() - a.xact_start) * 1000000)::bigint
FROM pg_catalog.pg_locks l
JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
WHERE l.relation = format(':"schema".%I', 'running_' || ((:"schema".running_seg() + 1) % 3))::regclass
  AND l.pid <> pg_catalog.pg_backend_pid()
  AND a.xact_start < statement_timestamp() - interval '1 second'
ORDER BY a.xact_start
LIMIT 1;

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

-- Dependencies (docs/workflows.md). dependencies holds one row per edge: job_id waits for
-- depends_on. A job enqueued after others is inserted waiting (or, when one of them is
-- already dead or cancelled, cancelled) with waiting_for = how many have not succeeded; each
-- of those is marked notify. resolve_dependencies then tells the dependents of every
-- finished job marked notify, in short transactions: a success meets the edge and counts
-- waiting_for down (the last one moves the job from waiting to live, whose insert trigger
-- announces it), a death or cancellation cancels the waiting dependents (which, marked notify
-- themselves, pass it down the chain).

-- name: lock_dependencies
-- The enqueue of a dependent, first: locks its unfinished dependencies (marking them notify),
-- so that none finishes before this transaction commits unseen, then reads every state with a
-- new snapshot that sees what finished while it waited (the function, migration 17, says how).
SELECT d.id, d.state FROM :"schema".lock_dependencies(:ids::bigint[]) AS d;

-- name: insert_dependent
WITH input AS (
  SELECT :queue::text AS queue, :payload::bytea AS payload, :priority::integer AS priority,
         CASE WHEN :state::text = 'available'
              THEN greatest(coalesce(:run_at::timestamptz, statement_timestamp()),
                            statement_timestamp() + :delay_us::bigint * interval '1 microsecond')
              ELSE coalesce(:run_at::timestamptz, statement_timestamp()) END AS run_at,
         :max_attempts::integer AS max_attempts, :unique_key::text AS unique_key,
         :state::text AS state, :waiting_for::integer AS waiting_for,
         :delay_us::bigint AS delay_us,
         CASE WHEN :state::text = 'cancelled' THEN statement_timestamp() END AS finished_at,
         :last_error::text AS last_error, :group_name::text AS group_name,
         :group_name::text IS NOT NULL AS notify, nextval(':"schema".jobs_id_seq') AS new_id
), claimed AS (
  -- The key first, as in enqueue: a held key leaves the job out, and no row comes back.
  INSERT INTO :"schema".unique_keys AS k (queue, unique_key, job_id)
  SELECT i.queue, i.unique_key, i.new_id FROM input i
  WHERE i.state <> 'cancelled' AND i.unique_key IS NOT NULL
  ON CONFLICT (queue, unique_key) DO NOTHING
  RETURNING k.job_id
), into_live AS (
  INSERT INTO :"schema".live (id, queue, payload, priority, run_at, max_attempts, unique_key,
                              state, waiting_for, delay_us, finished_at, last_error, group_name,
                              notify)
  OVERRIDING SYSTEM VALUE
  SELECT i.new_id, i.queue, i.payload, i.priority, i.run_at, i.max_attempts, i.unique_key,
         i.state, i.waiting_for, i.delay_us, i.finished_at, i.last_error, i.group_name, i.notify
  FROM input i
  WHERE i.state = 'available'
    AND (i.unique_key IS NULL OR i.new_id IN (SELECT c.job_id FROM claimed c))
  RETURNING id
), into_waiting AS (
  INSERT INTO :"schema".waiting (id, queue, payload, priority, run_at, max_attempts, unique_key,
                                 state, waiting_for, delay_us, last_error, group_name, notify)
  SELECT i.new_id, i.queue, i.payload, i.priority, i.run_at, i.max_attempts, i.unique_key,
         i.state, i.waiting_for, i.delay_us, i.last_error, i.group_name, i.notify
  FROM input i
  WHERE i.state = 'waiting'
    AND (i.unique_key IS NULL OR i.new_id IN (SELECT c.job_id FROM claimed c))
  RETURNING id
), into_done AS (
  -- Finished at once: holds no key, so no conflict to look for.
  INSERT INTO :"schema".done (id, queue, state, priority, run_at, attempts, max_attempts,
                              enqueued_at, finished_at, unique_key, last_error, payload,
                              waiting_for, notify, delay_us, group_name)
  SELECT i.new_id, i.queue, i.state, i.priority, i.run_at, 0,
         i.max_attempts, statement_timestamp(), i.finished_at, i.unique_key, i.last_error,
         i.payload, i.waiting_for, i.notify, i.delay_us, i.group_name
  FROM input i WHERE i.state = 'cancelled'
  RETURNING id
)
SELECT id FROM into_live UNION ALL SELECT id FROM into_waiting UNION ALL SELECT id FROM into_done;

-- name: unique_holder
SELECT k.job_id FROM :"schema".unique_keys k
WHERE k.queue = :queue::text AND k.unique_key = :unique_key::text;

-- name: insert_dependencies
INSERT INTO :"schema".dependencies (depends_on, job_id, met)
SELECT d.depends_on, :job_id::bigint, d.met
FROM unnest(:depends_on::bigint[], :met::boolean[]) AS d(depends_on, met);

-- name: resolve_lock
-- One resolver at a time over the whole database (a transaction-scoped advisory lock, so
-- that it works through a pooler in transaction mode): rounds of several processes would
-- otherwise meet on the same edges and dependents in opposite orders. try: another process
-- is resolving already, and this one lets it.
SELECT pg_try_advisory_xact_lock(hashtext(:'channel' || '.dependencies'));

-- name: resolve_wait_lock
-- The same lock, waited for: a retry of a dependent must not miss a round's work.
SELECT pg_advisory_xact_lock(hashtext(:'channel' || '.dependencies'));

-- name: any_notified
-- A read before resolve_dependencies takes its lock: mostly there is nothing to tell.
SELECT EXISTS (SELECT 1 FROM :"schema".done j
               WHERE j.notify AND j.state IN ('succeeded', 'dead', 'cancelled'))
    OR EXISTS (SELECT 1 FROM :"schema".groups g WHERE g.release_pending);

-- name: resolve_succeeded
-- One round for jobs that succeeded and for groups whose last member finished: up to :jobs
-- of each, and up to :limit of their unmet edges in all, become met (a group's only up to the
-- job it was released for, released_upto); each dependent counts down by its edges met here,
-- and the last one makes a waiting dependent available, its delay counted from now: it moves
-- from waiting to live, whose insert trigger announces it. A job none of whose unmet edges is
-- left beyond this round has told them all (notify = false); so has a group (release_pending =
-- false). The finished jobs and groups are locked (SKIP LOCKED) so that a retry waits for the
-- round.
-- Returns how many jobs, groups and edges it went through, and the groups of the jobs it
-- finished telling, comma-separated (one per job): those leave their groups (leave_groups).
WITH finished AS (
  SELECT j.id AS depends_on, 9223372036854775807::bigint AS upto
  FROM :"schema".done j
  WHERE j.notify AND j.state = 'succeeded'
  ORDER BY j.id
  LIMIT :jobs::integer
  FOR UPDATE SKIP LOCKED
), groups_done AS (
  SELECT -g.id AS depends_on, g.released_upto AS upto
  FROM :"schema".groups g
  WHERE g.release_pending
  ORDER BY g.id
  LIMIT :jobs::integer
  FOR UPDATE SKIP LOCKED
), sources AS (
  SELECT depends_on, upto FROM finished UNION ALL SELECT depends_on, upto FROM groups_done
), picked AS (
  SELECT d.depends_on, d.job_id
  FROM :"schema".dependencies d JOIN sources s ON d.depends_on = s.depends_on
  WHERE NOT d.met AND d.job_id <= s.upto
  ORDER BY d.depends_on, d.job_id
  LIMIT :limit::integer
), edges AS (
  UPDATE :"schema".dependencies d SET met = true
  FROM picked p
  WHERE d.depends_on = p.depends_on AND d.job_id = p.job_id AND NOT d.met
  RETURNING d.job_id
), counts AS (
  SELECT e.job_id, count(*)::integer AS n FROM edges e GROUP BY e.job_id
), counted AS (
  -- waiting probed by id whatever its statistics say (cancel says why).
  UPDATE :"schema".waiting j SET waiting_for = coalesce(j.waiting_for, 0) - c.n
  FROM counts c
  WHERE j.id = ANY (ARRAY[c.job_id]) AND coalesce(j.waiting_for, 0) > c.n
), freed AS (
  DELETE FROM :"schema".waiting j USING counts c
  WHERE j.id = ANY (ARRAY[c.job_id]) AND coalesce(j.waiting_for, 0) <= c.n
  RETURNING j.*
), made_available AS (
  INSERT INTO :"schema".live OVERRIDING SYSTEM VALUE
  SELECT f.id, f.queue, 'available', f.priority,
         greatest(f.run_at,
                  statement_timestamp() + coalesce(f.delay_us, 0) * interval '1 microsecond'),
         f.attempts, f.max_attempts, f.lease_token, f.leased_by, f.lease_expires_at,
         f.enqueued_at, f.started_at, f.finished_at, f.unique_key, f.last_error, f.payload,
         f.progress, 0, f.notify, f.delay_us, f.group_name
  FROM freed f
), counted_live AS (
  -- A dependent already available or running (retried with its dependencies met) counts too.
  UPDATE :"schema".live j SET waiting_for = greatest(coalesce(j.waiting_for, 0) - c.n, 0)
  FROM counts c
  WHERE j.id = c.job_id
), counted_running AS (
  UPDATE :"schema".running j SET waiting_for = greatest(coalesce(j.waiting_for, 0) - c.n, 0)
  FROM counts c
  WHERE j.id = c.job_id
), told AS (
  UPDATE :"schema".done j SET notify = false
  FROM finished f
  WHERE j.id = f.depends_on
    AND NOT EXISTS (SELECT 1 FROM :"schema".dependencies d
                    WHERE d.depends_on = f.depends_on AND NOT d.met
                      AND NOT EXISTS (SELECT 1 FROM picked p
                                      WHERE p.depends_on = d.depends_on
                                        AND p.job_id = d.job_id))
  RETURNING j.group_name
), released AS (
  UPDATE :"schema".groups g SET release_pending = false
  FROM groups_done gd
  WHERE g.id = -gd.depends_on
    AND NOT EXISTS (SELECT 1 FROM :"schema".dependencies d
                    WHERE d.depends_on = gd.depends_on AND NOT d.met AND d.job_id <= gd.upto
                      AND NOT EXISTS (SELECT 1 FROM picked p
                                      WHERE p.depends_on = d.depends_on
                                        AND p.job_id = d.job_id))
  RETURNING g.id
)
SELECT (SELECT count(*) FROM finished) + (SELECT count(*) FROM groups_done)
         + (SELECT count(*) FROM edges),
       coalesce((SELECT string_agg(t.group_name, ',') FROM told t
                 WHERE t.group_name IS NOT NULL), '');

-- name: resolve_failed
-- The same for jobs that ended dead or cancelled: up to :limit of their waiting dependents
-- are cancelled (moved to done), last_error naming the dependency (as
-- dependency_failed_error in core/dependencies.cpp words it); marked notify themselves, they
-- pass it down the chain in a later round. Returns, like resolve_succeeded, the groups of the
-- jobs it finished telling.
WITH finished AS (
  SELECT j.id, j.state FROM :"schema".done j
  WHERE j.notify AND j.state IN ('dead', 'cancelled')
  ORDER BY j.id
  LIMIT :jobs::integer
  FOR UPDATE SKIP LOCKED
), picked AS (
  SELECT DISTINCT ON (d.job_id) d.job_id, f.id AS cause, f.state AS cause_state
  FROM :"schema".dependencies d
  JOIN finished f ON d.depends_on = f.id
  JOIN :"schema".waiting w ON w.id = ANY (ARRAY[d.job_id])  -- by id (cancel says why)
  WHERE NOT d.met
  ORDER BY d.job_id, f.id
  LIMIT :limit::integer
), gone AS (
  DELETE FROM :"schema".waiting j USING picked p
  WHERE j.id = ANY (ARRAY[p.job_id])
  RETURNING j.*, 'cancelled: dependency ' || p.cause || ' is ' || p.cause_state AS reason
), cancelled AS (
  INSERT INTO :"schema".done
  SELECT g.id, g.queue, 'cancelled', g.priority, g.run_at, g.attempts, g.max_attempts,
         g.lease_token, g.leased_by, NULL, g.enqueued_at, g.started_at,
         statement_timestamp(), g.unique_key, g.reason, g.payload, g.progress,
         g.waiting_for, g.notify, g.delay_us, g.group_name
  FROM gone g
  RETURNING id
), told AS (
  UPDATE :"schema".done j SET notify = false
  FROM finished f
  WHERE j.id = f.id
    AND NOT EXISTS (SELECT 1 FROM :"schema".dependencies d
                    JOIN :"schema".waiting w ON w.id = ANY (ARRAY[d.job_id])
                    WHERE d.depends_on = f.id AND NOT d.met
                      AND NOT EXISTS (SELECT 1 FROM picked p WHERE p.job_id = d.job_id))
  RETURNING j.group_name
)
SELECT (SELECT count(*) FROM finished) + (SELECT count(*) FROM cancelled),
       coalesce((SELECT string_agg(t.group_name, ',') FROM told t
                 WHERE t.group_name IS NOT NULL), '');

-- name: leave_groups
-- Members that finished (told by this round, one name per member) leave their groups. The
-- groups' rows stay locked to the end of the round's transaction: release_groups, the next
-- statement, sees every job that waited for them (a waiter locks the row before it adds its
-- edge) and no new one can come in between.
UPDATE :"schema".groups g SET live = greatest(g.live - t.n, 0)
FROM (SELECT m.name, count(*) AS n FROM unnest(:names::text[]) AS m(name) GROUP BY m.name) t
WHERE g.name = t.name;

-- name: release_groups
-- A group whose last member has finished lets go of the jobs waiting for it now: up to the
-- highest id among them (resolve_succeeded meets those edges).
UPDATE :"schema".groups g
SET release_pending = true, released_upto = greatest(g.released_upto, w.upto)
FROM (SELECT -d.depends_on AS group_id, max(d.job_id) AS upto
      FROM :"schema".dependencies d
      WHERE d.depends_on IN (SELECT -q.id FROM :"schema".groups q
                             WHERE q.name = ANY(:names::text[]) AND q.live = 0)
        AND NOT d.met
      GROUP BY d.depends_on) w
WHERE g.id = w.group_id;

-- name: rewait
-- Retried dependents (put into live by retry, in this transaction) wait again for what has
-- not succeeded, moved to waiting, or stay available. Each edge is met when its job has
-- succeeded (an edge whose job is gone keeps what it was).
WITH edges AS (
  UPDATE :"schema".dependencies d
  SET met = coalesce((SELECT j.state = 'succeeded' FROM :"schema".jobs j
                      WHERE j.id = d.depends_on), d.met)
  WHERE d.job_id = ANY(:ids::bigint[])
  RETURNING d.job_id, d.depends_on, d.met
), counts AS (
  SELECT e.job_id, (count(*) FILTER (WHERE NOT e.met))::integer AS unmet
  FROM edges e GROUP BY e.job_id
), available AS (
  UPDATE :"schema".live j SET waiting_for = 0
  FROM counts c
  WHERE j.id = c.job_id AND c.unmet = 0
), gone AS (
  DELETE FROM :"schema".live j USING counts c
  WHERE j.id = c.job_id AND c.unmet > 0 AND j.state = 'available'
  RETURNING j.*, c.unmet
)
INSERT INTO :"schema".waiting
SELECT g.id, g.queue, 'waiting', g.priority, g.run_at, g.attempts, g.max_attempts,
       g.lease_token, g.leased_by, g.lease_expires_at, g.enqueued_at, g.started_at,
       g.finished_at, g.unique_key, g.last_error, g.payload, g.progress, g.unmet, g.notify,
       g.delay_us, g.group_name
FROM gone g;

-- name: renotify
-- The unfinished jobs that retried dependents wait for are to tell them when they finish.
-- Under the resolver's lock no job moves from waiting to live, but a lease may promote one
-- from scheduled and a failure move one back while this waits for its row, so the jobs are
-- marked by lock_dependencies() (migration 18), which looks again for a job that moved.
SELECT count(*) FROM :"schema".lock_dependencies(ARRAY(
  SELECT d.depends_on FROM :"schema".dependencies d
  WHERE d.job_id = ANY(:ids::bigint[]) AND NOT d.met));

-- name: dependencies_of
-- What the job waits for; state is NULL for a job that no longer exists, and for a group
-- (then the last column names it).
SELECT d.depends_on, j.state, d.met, g.name
FROM :"schema".dependencies d
LEFT JOIN :"schema".jobs j ON j.id = d.depends_on
LEFT JOIN :"schema".groups g ON g.id = -d.depends_on
WHERE d.job_id = :id::bigint ORDER BY d.depends_on < 0, abs(d.depends_on);

-- name: dependents_of
SELECT d.job_id, j.state, d.met, NULL::text, count(*) OVER () AS total
FROM :"schema".dependencies d LEFT JOIN :"schema".jobs j ON j.id = d.job_id
WHERE d.depends_on = :id::bigint ORDER BY d.job_id LIMIT :limit::integer;

-- Groups (docs/workflows.md): groups counts each group's live members.

-- name: join_group
INSERT INTO :"schema".groups AS g (name, live) VALUES (:name::text, 1)
ON CONFLICT (name) DO UPDATE SET live = g.live + 1;

-- name: find_group
-- Locked, so that the group's last member cannot finish unseen before this enqueue commits.
SELECT g.id, g.live FROM :"schema".groups g WHERE g.name = :name::text FOR UPDATE;

-- name: group_stats
-- The group's live count and waiters, then one row per state of its members (along
-- jobs_group_idx).
SELECT 'live', g.live FROM :"schema".groups g WHERE g.name = :name::text
UNION ALL
SELECT 'waiters', count(*) FROM :"schema".dependencies d
WHERE d.depends_on = -(SELECT g.id FROM :"schema".groups g WHERE g.name = :name::text)
  AND NOT d.met
UNION ALL
SELECT j.state, count(*) FROM :"schema".jobs j WHERE j.group_name = :name::text
GROUP BY j.state;

-- name: list_group
SELECT j.id, j.queue, j.state, j.priority, j.run_at, j.attempts, j.max_attempts, j.lease_token,
       j.leased_by, j.lease_expires_at, j.enqueued_at, j.started_at, j.finished_at,
       j.unique_key, j.last_error, j.payload
FROM :"schema".jobs j
WHERE j.group_name = :name::text AND j.id > :after_id::bigint
ORDER BY j.id
LIMIT :limit::integer;

-- name: rejoin_groups
-- Retried members that had left their groups join again (one name per member).
UPDATE :"schema".groups g SET live = g.live + t.n
FROM (SELECT m.name, count(*) AS n FROM unnest(:names::text[]) AS m(name) GROUP BY m.name) t
WHERE g.name = t.name;

-- name: job_group
SELECT j.group_name FROM :"schema".jobs j WHERE j.id = :id::bigint;
