-- Migration 23: running jobs in a ring of their own (docs/postgres-storage.md, section 14,
-- step 3). A lease moves each job it takes from live to `running` in its statement (DELETE …
-- RETURNING into INSERT) instead of updating it in place, and every settle reads and writes
-- `running` only. live then holds one version of a job, not two: under a snapshot held
-- elsewhere, the running version that every lease left in live (with an entry in live_pkey
-- and in jobs_expiry_idx) stayed as long as the hold, and the settles probed live_pkey through
-- them.
--
-- `running` is partitioned into three segments, and leases insert into the current one
-- (running_seg()). rotate_running(), called by one process of all every 10 s (the task
-- `ring`, which Queue::lease claims in src/queue.cpp) or by cron for SQL-only installations,
-- moves the few jobs still in the next segment (leased two rotations ago and
-- neither settled nor extended since) into the current one, TRUNCATEs it, and makes it
-- current. TRUNCATE returns the space of every settled job's version without vacuum, and a
-- held snapshot does not keep it. If nobody rotates, autovacuum still cleans the segments.
--
-- Where a job goes when it leaves `running`, from the engine's statements (statements.sql)
-- and the SQL functions alike: completed, to done (or nowhere, without retention); failed
-- and retried now, released, or rescued, to live, whose insert trigger announces it; failed
-- and retried later, or released with a delay, to scheduled; dead, to done. Each is one
-- statement, so every snapshot sees the job in exactly one table; unique keys and error
-- history stay with a moved job (the triggers below).
--
-- A move is not an update (migration 17): a statement that waits for the lock of a row that
-- a lease moves, then finds it gone, does not follow it. The statements that lock or change
-- other transactions' unfinished jobs by id look again (lock_dependencies() in rounds, the
-- engine's cancel in up to three passes), now across live, running, scheduled and waiting.
-- A settle that waits for a segment while a rotation moves its job takes its snapshot after
-- the wait, and finds the job in the current segment
-- (tests/postgres/running_ring_test.cpp).
--
-- live holds available jobs only afterwards: jobs_expiry_idx goes, and live's check says so,
-- which lets the planner leave live out of the view for any other state.
--
-- Locks: ACCESS EXCLUSIVE on live, waited for at most 5 s (lock_for_upgrade(), migration 15);
-- under it, the running jobs move (one read of jobs_expiry_idx, proportional to them) and the
-- new check is validated (one read of live). Leases in flight keep their tokens: a settle by
-- a binary of this version finds them in `running`. A binary of version 22 refuses to open
-- this schema, and one still running when the upgrade commits gets an error from each lease
-- (live's check) and finds its leases lost: its statements update running jobs in live. Stop
-- the workers for the upgrade, or restart them with it (docs/postgres.md).
-- Written once and never edited after release.
SELECT :"schema".lock_for_upgrade(':"schema".live', 'ACCESS EXCLUSIVE');

-- The ring: running_cur's value modulo 3 is the segment that leases insert into; a rotation
-- advances it by one. A sequence is read outside MVCC, so a statement of a long transaction
-- sees the current segment, not the one of its snapshot. setval(…, true) so that
-- pg_sequence_last_value() reads it from the start (it is null until a sequence is called).
CREATE SEQUENCE :"schema".running_cur MINVALUE 0 START 0;
SELECT setval(':"schema".running_cur', 0, true);
-- As its owner: a role allowed to lease needs no right on the sequence.
CREATE FUNCTION :"schema".running_seg() RETURNS smallint
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog AS $fn$
  SELECT (pg_sequence_last_value(':"schema".running_cur') % 3)::smallint;
$fn$;

CREATE TABLE :"schema".running (
  id               bigint      NOT NULL,
  queue            text        NOT NULL
                   CHECK (octet_length(queue) <= 128 AND queue ~ '^[A-Za-z0-9][A-Za-z0-9_.-]*$'),
  state            text        NOT NULL DEFAULT 'running' CHECK (state = 'running'),
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
  progress         text,
  waiting_for      integer,
  notify           boolean,
  delay_us         bigint,
  group_name       text        CHECK (group_name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$'),
  seg              smallint    NOT NULL DEFAULT :"schema".running_seg(),
  CONSTRAINT running_has_lease CHECK (lease_token IS NOT NULL AND lease_expires_at IS NOT NULL),
  PRIMARY KEY (id, seg)
) PARTITION BY LIST (seg);
-- Filled to 80%: an extend updates its row in place (HOT) when the page has room.
CREATE TABLE :"schema".running_0 PARTITION OF :"schema".running FOR VALUES IN (0)
  WITH (fillfactor = 80);
CREATE TABLE :"schema".running_1 PARTITION OF :"schema".running FOR VALUES IN (1)
  WITH (fillfactor = 80);
CREATE TABLE :"schema".running_2 PARTITION OF :"schema".running FOR VALUES IN (2)
  WITH (fillfactor = 80);
-- Rescue's order, and a queue's running count (limits, stats).
CREATE INDEX running_expiry_idx ON :"schema".running (queue, lease_expires_at);
CREATE INDEX running_group_idx ON :"schema".running (group_name, id)
  WHERE group_name IS NOT NULL;

-- One rotation (see the top of this file). It returns whether it rotated, how many jobs it
-- moved, and the segment now current. It gives up without waiting when a session that has
-- been in its transaction for more than a second holds a lock on the segment to empty (a long
-- reader, which would hold it until it ends), and after 50 ms of waiting otherwise: while it
-- waits for its lock, the leases and settles that want that segment wait behind it, so it
-- must never queue behind a long transaction. A caller tries again at its next turn; until a
-- rotation succeeds, leases keep inserting into the current segment, which only grows.
-- It runs as the caller: truncating a segment needs the right to (granted below to roles
-- that may delete from live), and the sequence's UPDATE right.
CREATE FUNCTION :"schema".rotate_running(
  OUT rotated boolean, OUT moved bigint, OUT current_segment smallint)
LANGUAGE plpgsql SET lock_timeout = '50ms' AS $fn$
DECLARE
  cur bigint := pg_sequence_last_value(':"schema".running_cur');
  next_seg smallint := ((cur + 1) % 3)::smallint;
  segment regclass := format(':"schema".%I', 'running_' || next_seg)::regclass;
BEGIN
  rotated := false;
  moved := 0;
  current_segment := (cur % 3)::smallint;
  IF EXISTS (SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
             WHERE l.relation = segment AND l.pid <> pg_backend_pid()
               AND a.xact_start < statement_timestamp() - interval '1 second') THEN
    RETURN;
  END IF;
  BEGIN
    EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', segment);
  EXCEPTION WHEN lock_not_available THEN
    RETURN;
  END;
  -- After the lock, a new snapshot: every job ever inserted into the segment has committed
  -- or rolled back, and this sees each one that is still there.
  -- Through the parent: a role's rights are those it has on running.
  WITH gone AS (
    DELETE FROM :"schema".running r WHERE r.seg = next_seg RETURNING r.*
  )
  INSERT INTO :"schema".running
  SELECT g.id, g.queue, g.state, g.priority, g.run_at, g.attempts, g.max_attempts,
         g.lease_token, g.leased_by, g.lease_expires_at, g.enqueued_at, g.started_at,
         g.finished_at, g.unique_key, g.last_error, g.payload, g.progress, g.waiting_for,
         g.notify, g.delay_us, g.group_name, current_segment
  FROM gone g;
  GET DIAGNOSTICS moved = ROW_COUNT;
  EXECUTE format('TRUNCATE %s', segment);
  PERFORM setval(':"schema".running_cur', cur + 1);
  rotated := true;
  current_segment := next_seg;
END
$fn$;
REVOKE ALL ON FUNCTION :"schema".rotate_running() FROM PUBLIC;
SELECT :"schema".grant_as_on_live(':"schema".running');
-- Rights: a role that may delete from live may rotate the ring (the function, each segment's
-- TRUNCATE, the sequence); it deletes nothing a delete from live could not.
DO $grants$
DECLARE
  g record;
BEGIN
  FOR g IN
    SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC'
                ELSE quote_ident(pg_get_userbyid(a.grantee)) END AS who
    FROM pg_class c, aclexplode(c.relacl) a
    WHERE c.oid = ':"schema".live'::regclass AND a.grantee <> c.relowner
      AND a.privilege_type = 'DELETE'
  LOOP
    EXECUTE format('GRANT EXECUTE ON FUNCTION :"schema".rotate_running() TO %s', g.who);
    EXECUTE format('GRANT TRUNCATE ON :"schema".running_0, :"schema".running_1, '
                   ':"schema".running_2 TO %s', g.who);
    EXECUTE format('GRANT SELECT, UPDATE ON SEQUENCE :"schema".running_cur TO %s', g.who);
  END LOOP;
END
$grants$;

-- The triggers that give a key back and forget a job's error history, aware of the new table,
-- before anything moves.
CREATE OR REPLACE FUNCTION :"schema".forget_job_errors() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  DELETE FROM :"schema".job_errors e
  WHERE e.job_id = OLD.id
    AND NOT EXISTS (SELECT 1 FROM :"schema".live l WHERE l.id = OLD.id)
    AND NOT EXISTS (SELECT 1 FROM :"schema".running r WHERE r.id = OLD.id)
    AND NOT EXISTS (SELECT 1 FROM :"schema".scheduled s WHERE s.id = OLD.id)
    AND NOT EXISTS (SELECT 1 FROM :"schema".waiting w WHERE w.id = OLD.id)
    AND NOT EXISTS (SELECT 1 FROM :"schema".done d WHERE d.id = OLD.id);
  RETURN NULL;
END
$fn$;

-- A job deleted from one of the tables of unfinished jobs gives its key back unless it is in
-- another of them now (moved by the statement, with its queue and key unchanged).
CREATE OR REPLACE FUNCTION :"schema".keep_unique_key() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $fn$
BEGIN
  IF TG_OP = 'DELETE' THEN
    IF TG_TABLE_NAME <> 'live' THEN
      PERFORM FROM :"schema".live l WHERE l.id = OLD.id;
      IF FOUND THEN RETURN NULL; END IF;
    END IF;
    IF TG_TABLE_NAME <> 'running' THEN
      PERFORM FROM :"schema".running r WHERE r.id = OLD.id;
      IF FOUND THEN RETURN NULL; END IF;
    END IF;
    IF TG_TABLE_NAME <> 'scheduled' THEN
      PERFORM FROM :"schema".scheduled s WHERE s.id = OLD.id;
      IF FOUND THEN RETURN NULL; END IF;
    END IF;
    IF TG_TABLE_NAME <> 'waiting' THEN
      PERFORM FROM :"schema".waiting w WHERE w.id = OLD.id;
      IF FOUND THEN RETURN NULL; END IF;
    END IF;
  END IF;
  DELETE FROM :"schema".unique_keys k
  WHERE k.queue = OLD.queue AND k.unique_key = OLD.unique_key AND k.job_id = OLD.id;
  IF TG_OP = 'UPDATE' AND NEW.unique_key IS NOT NULL THEN
    INSERT INTO :"schema".unique_keys (queue, unique_key, job_id)
    VALUES (NEW.queue, NEW.unique_key, NEW.id);
  END IF;
  RETURN NULL;
END
$fn$;

CREATE TRIGGER running_forget_errors AFTER DELETE ON :"schema".running
  FOR EACH ROW WHEN (OLD.last_error IS NOT NULL)
  EXECUTE FUNCTION :"schema".forget_job_errors();
CREATE TRIGGER running_move_unique_key AFTER UPDATE OF queue, unique_key ON :"schema".running
  FOR EACH ROW WHEN ((OLD.queue, OLD.unique_key) IS DISTINCT FROM (NEW.queue, NEW.unique_key))
  EXECUTE FUNCTION :"schema".keep_unique_key();
CREATE TRIGGER running_release_unique_key AFTER DELETE ON :"schema".running
  FOR EACH ROW WHEN (OLD.unique_key IS NOT NULL)
  EXECUTE FUNCTION :"schema".keep_unique_key();

-- The running jobs move, keys and error history kept (the triggers above).
WITH moved AS (
  DELETE FROM :"schema".live j WHERE j.state = 'running' RETURNING j.*
)
INSERT INTO :"schema".running SELECT m.*, 0 FROM moved m;
-- live holds available jobs only: its check says so, which also lets the planner leave live
-- out of the view's branches for any other state (constraint_exclusion's default, partition,
-- looks at the branches of a UNION ALL). Validated under the lock: one read of live.
DROP INDEX :"schema".jobs_expiry_idx;
ALTER TABLE :"schema".live
  DROP CONSTRAINT live_running_has_lease,
  DROP CONSTRAINT live_state_check,
  ADD CONSTRAINT live_state_check CHECK (state = 'available');

CREATE OR REPLACE FUNCTION :"schema".lease_head_walk(
  p_queue text, p_worker text, p_lease_us bigint, p_tokens uuid[], p_max_jobs integer)
RETURNS TABLE (id bigint, queue text, state text, priority integer, run_at timestamptz,
  attempts integer, max_attempts integer, lease_token uuid, leased_by text,
  lease_expires_at timestamptz, enqueued_at timestamptz, started_at timestamptz,
  finished_at timestamptz, unique_key text, last_error text, payload bytea,
  walked_pages bigint)
LANGUAGE plpgsql
SET enable_sort = off SET enable_bitmapscan = off
SET enable_mergejoin = off SET enable_seqscan = off SET plan_cache_mode = force_generic_plan
SET jit = off SET enable_incremental_sort = off SET enable_nestloop = off
AS $fn$
#variable_conflict use_column
DECLARE
  pages_before bigint :=
    pg_stat_get_xact_blocks_fetched(':"schema".jobs_lease_idx'::regclass);
  head record;
BEGIN
-- Migration 18: the queue's scheduled jobs that have come due move to live first, in a
-- statement of their own (promote_due()), which the statements below see: a job due now is
-- handed out in order with the others, by this lease.
IF EXISTS (SELECT 1 FROM :"schema".scheduled s
           WHERE s.queue = p_queue AND s.run_at <= statement_timestamp()) THEN
  PERFORM :"schema".promote_due(p_queue);
END IF;
-- Counted from here: the walk's pages, not those the promotion's inserts read.
pages_before := pg_stat_get_xact_blocks_fetched(':"schema".jobs_lease_idx'::regclass);
-- The queue's first job in hand-out order, past the entries that earlier leases left at the
-- head. It is the guard: none, or none due in any lane (first_run_at(), asked only when the
-- first one is scheduled for later), and nothing is walked. And the walk starts at it, so that
-- the head is read once a lease. A job committed between this statement and the walk with a
-- key before it is left for the next lease, as if it had committed after the walk's snapshot.
SELECT d.priority, d.run_at, d.id INTO head FROM :"schema".live d
WHERE d.queue = p_queue AND d.state = 'available'
ORDER BY d.priority, d.run_at, d.id
LIMIT 1;
IF FOUND AND (head.run_at <= statement_timestamp()
              OR :"schema".first_run_at(p_queue, NULL) <= statement_timestamp()) THEN
RETURN QUERY
WITH picked AS (
  SELECT p.id, row_number() OVER () AS n FROM (
    SELECT j.id FROM :"schema".live j
    WHERE j.queue = p_queue AND j.state = 'available' AND j.run_at <= statement_timestamp()
      AND (j.priority, j.run_at, j.id) >= (head.priority, head.run_at, head.id)
      AND NOT EXISTS (SELECT 1 FROM :"schema".queues q
                      WHERE q.name = p_queue AND (q.paused_at IS NOT NULL
                        OR q.running_limit IS NOT NULL OR q.rate_count IS NOT NULL))
    ORDER BY j.priority, j.run_at, j.id
    LIMIT p_max_jobs
    FOR UPDATE SKIP LOCKED
  ) p
), gone AS (
  DELETE FROM :"schema".live j
  USING picked
  WHERE j.id = ANY (ARRAY(SELECT x.id FROM picked x)) AND j.id = picked.id
    AND (j.state || '') = 'available'
  RETURNING j.*, picked.n
), taken AS (
  INSERT INTO :"schema".running
  SELECT g.id, g.queue, 'running', g.priority, g.run_at, g.attempts + 1, g.max_attempts,
         coalesce((p_tokens)[g.n::integer], :"schema".new_lease_token()), p_worker,
         statement_timestamp() + p_lease_us * interval '1 microsecond', g.enqueued_at,
         statement_timestamp(), g.finished_at, g.unique_key, g.last_error, g.payload,
         g.progress, g.waiting_for, g.notify, g.delay_us, g.group_name,
         (SELECT :"schema".running_seg())
  FROM gone g
  RETURNING running.id, running.queue, running.state, running.priority, running.run_at,
            running.attempts, running.max_attempts, running.lease_token, running.leased_by,
            running.lease_expires_at, running.enqueued_at, running.started_at,
            running.finished_at, running.unique_key, running.last_error, running.payload
)
SELECT t.*, NULL::bigint FROM taken t;
END IF;
-- The row after the jobs: every other column is null (RETURNS TABLE's variables start so).
walked_pages := pg_stat_get_xact_blocks_fetched(':"schema".jobs_lease_idx'::regclass)
  - pages_before;
RETURN NEXT;
END
$fn$;

CREATE OR REPLACE FUNCTION :"schema".lease_lanes(
  p_queue text, p_worker text, p_lease_us bigint, p_tokens uuid[], p_from_head integer,
  p_lane_priorities integer[], p_lane_run_at timestamptz[], p_lane_id bigint[],
  p_lane_marks_from bigint[], p_max_jobs integer)
RETURNS TABLE (id bigint, queue text, state text, priority integer, run_at timestamptz,
  attempts integer, max_attempts integer, lease_token uuid, leased_by text,
  lease_expires_at timestamptz, enqueued_at timestamptz, started_at timestamptz,
  finished_at timestamptz, unique_key text, last_error text, payload bytea,
  xmin bigint, xmax bigint, leased_at timestamptz)
LANGUAGE plpgsql
SET enable_sort = off SET enable_bitmapscan = off
SET enable_mergejoin = off SET enable_seqscan = off SET plan_cache_mode = force_generic_plan
SET jit = off SET enable_incremental_sort = off SET enable_nestloop = off
AS $fn$
#variable_conflict use_column
BEGIN
-- Migration 18: the queue's scheduled jobs that have come due move to live first, in a
-- statement of their own (promote_due()), which the statements below see: a job due now is
-- handed out in order with the others, by this lease.
IF EXISTS (SELECT 1 FROM :"schema".scheduled s
           WHERE s.queue = p_queue AND s.run_at <= statement_timestamp()) THEN
  PERFORM :"schema".promote_due(p_queue);
END IF;
-- Lane by lane, the lanes nobody registered are registered first, so that the statement below
-- reads them in priority order with the others: in each gap between the queue's registered
-- lanes (below the first, above the last, or the whole range when none is), the first lane
-- with an available job. Each probe is a descent of jobs_lease_idx bounded by the registered
-- lanes on either side, so that it reads no entry of theirs, however many a held snapshot
-- keeps; it stops at once where the gap is empty, which is the usual case. Repeated until a
-- round finds nothing, for gaps with more than one such lane.
IF p_from_head = 0 THEN
  LOOP
    PERFORM :"schema".register_lanes(p_queue, f.priorities)
    FROM (
      SELECT ARRAY(
        SELECT u.priority
        FROM (
          SELECT lag(r.priority) OVER (ORDER BY r.priority) AS below, r.priority AS above
          FROM :"schema".lanes r WHERE r.queue = p_queue
          UNION ALL
          SELECT max(r.priority), NULL FROM :"schema".lanes r WHERE r.queue = p_queue
        ) g
        CROSS JOIN LATERAL (
          SELECT j.priority FROM :"schema".live j
          WHERE j.queue = p_queue AND j.state = 'available'
            AND j.priority > coalesce(g.below::bigint, -2147483649)
            AND j.priority < coalesce(g.above::bigint, 2147483648)
          ORDER BY j.priority
          LIMIT 1
        ) u) AS priorities
    ) f
    WHERE cardinality(f.priorities) > 0;
    EXIT WHEN NOT FOUND;
  END LOOP;
END IF;
RETURN QUERY
WITH picked AS (
  SELECT p.id, row_number() OVER () AS n FROM ((
    SELECT c.id
    FROM :"schema".lanes l
    CROSS JOIN LATERAL (
      SELECT array_position(p_lane_priorities, l.priority) AS k
    ) a
    CROSS JOIN LATERAL (
      -- The lane's frontier (NULL: its head).
      SELECT (p_lane_run_at)[a.k] AS run_at, (p_lane_id)[a.k] AS id
    ) f
    LEFT JOIN LATERAL (
      -- The oldest key marked since the snapshot behind the frontier (usually none).
      SELECT m.run_at, m.id - 1 AS id FROM :"schema".lane_marks m
      WHERE m.queue = l.queue AND m.priority = l.priority
        AND m.xid >= ((p_lane_marks_from)[a.k])::text::xid8
      ORDER BY m.run_at, m.id
      LIMIT 1
    ) mk ON true
    CROSS JOIN LATERAL (
      -- Where the scan starts: the frontier, or the mark when it is behind the frontier.
      SELECT CASE WHEN (mk.run_at, mk.id) < (f.run_at, f.id) THEN mk.run_at ELSE f.run_at END
               AS run_at,
             CASE WHEN (mk.run_at, mk.id) < (f.run_at, f.id) THEN mk.id ELSE f.id END AS id
    ) s
    CROSS JOIN LATERAL (
      SELECT j.id FROM :"schema".live j
      WHERE j.queue = l.queue AND j.priority = l.priority AND j.state = 'available'
        AND (j.run_at, j.id) > (coalesce(s.run_at, '-infinity'::timestamptz), coalesce(s.id, 0))
        AND j.run_at <= statement_timestamp()
      ORDER BY j.run_at, j.id
      LIMIT p_max_jobs
      FOR UPDATE SKIP LOCKED
    ) c
    WHERE p_from_head = 0 AND l.queue = p_queue
      AND NOT EXISTS (SELECT 1 FROM :"schema".queues q
                      WHERE q.name = p_queue AND (q.paused_at IS NOT NULL
                        OR q.running_limit IS NOT NULL OR q.rate_count IS NOT NULL))
    ORDER BY l.priority
    LIMIT p_max_jobs
  ) UNION ALL (
    -- From the head: the queue's whole hand-out order, lanes or none. The uncorrelated guard
    -- is evaluated once, before the walk: when no job is due it stops the statement at once,
    -- instead of walking past every scheduled job (as in lease_head_walk()).
    SELECT h.id FROM (
      SELECT j.id FROM :"schema".live j
      WHERE p_from_head = 1 AND j.queue = p_queue AND j.state = 'available'
        AND j.run_at <= statement_timestamp()
        AND (SELECT CASE WHEN h.run_at <= statement_timestamp() THEN true
                         ELSE :"schema".first_run_at(p_queue, NULL) <= statement_timestamp() END
             FROM (SELECT d.run_at FROM :"schema".live d
                   WHERE d.queue = p_queue AND d.state = 'available'
                   ORDER BY d.priority, d.run_at, d.id
                   LIMIT 1) h)
        AND NOT EXISTS (SELECT 1 FROM :"schema".queues q
                        WHERE q.name = p_queue AND (q.paused_at IS NOT NULL
                          OR q.running_limit IS NOT NULL OR q.rate_count IS NOT NULL))
      ORDER BY j.priority, j.run_at, j.id
      LIMIT p_max_jobs
      FOR UPDATE SKIP LOCKED
    ) h
  )) p
), gone AS (
  DELETE FROM :"schema".live j
  USING picked
  WHERE j.id = ANY (ARRAY(SELECT x.id FROM picked x)) AND j.id = picked.id
    AND (j.state || '') = 'available'
  RETURNING j.*, picked.n
), taken AS (
  INSERT INTO :"schema".running
  SELECT g.id, g.queue, 'running', g.priority, g.run_at, g.attempts + 1, g.max_attempts,
         (p_tokens)[g.n::integer], p_worker,
         statement_timestamp() + p_lease_us * interval '1 microsecond', g.enqueued_at,
         statement_timestamp(), g.finished_at, g.unique_key, g.last_error, g.payload,
         g.progress, g.waiting_for, g.notify, g.delay_us, g.group_name,
         (SELECT :"schema".running_seg())
  FROM gone g
  RETURNING running.id, running.queue, running.state, running.priority, running.run_at,
            running.attempts, running.max_attempts, running.lease_token, running.leased_by,
            running.lease_expires_at, running.enqueued_at, running.started_at,
            running.finished_at, running.unique_key, running.last_error, running.payload
)
, snap AS (
  -- Once per statement. From the head, lanes met that nobody registered are registered, so
  -- that later leases read them.
  SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS xmin,
         pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS xmax,
         statement_timestamp() AS leased_at,
         CASE WHEN p_from_head = 1 THEN :"schema".register_lanes(p_queue,
           ARRAY(SELECT DISTINCT t.priority FROM taken t)) END AS registered
)
SELECT t.*, s.xmin, s.xmax, s.leased_at FROM taken t CROSS JOIN snap s;
END
$fn$;

CREATE OR REPLACE FUNCTION :"schema".lease_limited(p_queue text, p_worker text, p_max_jobs integer,
                                        p_lease_us bigint, p_tokens uuid[])
RETURNS TABLE (id bigint, queue text, state text, priority integer, run_at timestamptz,
               attempts integer, max_attempts integer, lease_token uuid, leased_by text,
               lease_expires_at timestamptz, enqueued_at timestamptz, started_at timestamptz,
               finished_at timestamptz, unique_key text, last_error text, payload bytea,
               throttled text, limited boolean)
LANGUAGE plpgsql VOLATILE SET enable_nestloop = off SET enable_mergejoin = off AS $fn$
#variable_conflict use_column
DECLARE
  lim record;
  allowed bigint := p_max_jobs;
  binding text;
  counted bigint;
  slots integer[];
  taken bigint := 0;
  v_now timestamptz;
BEGIN
-- Migration 18: the queue's scheduled jobs that have come due move to live first, in a
  -- statement of their own (promote_due()), which the statements below see: a job due now is
  -- handed out in order with the others, by this lease.
  IF EXISTS (SELECT 1 FROM :"schema".scheduled s
             WHERE s.queue = p_queue AND s.run_at <= statement_timestamp()) THEN
    PERFORM :"schema".promote_due(p_queue);
  END IF;
  SELECT q.paused_at, q.running_limit, q.rate_count, q.rate_window_us INTO lim
    FROM :"schema".queues q WHERE q.name = p_queue FOR UPDATE SKIP LOCKED;
  IF NOT FOUND THEN
    -- Taken by another lease of the queue (nothing this time), or no row: no limits.
    RETURN QUERY SELECT NULL::bigint, NULL::text, NULL::text, NULL::integer, NULL::timestamptz,
      NULL::integer, NULL::integer, NULL::uuid, NULL::text, NULL::timestamptz, NULL::timestamptz,
      NULL::timestamptz, NULL::timestamptz, NULL::text, NULL::text, NULL::bytea, NULL::text,
      EXISTS (SELECT 1 FROM :"schema".queues q WHERE q.name = p_queue);
    RETURN;
  END IF;
  IF lim.running_limit IS NULL AND lim.rate_count IS NULL THEN
    RETURN QUERY SELECT NULL::bigint, NULL::text, NULL::text, NULL::integer, NULL::timestamptz,
      NULL::integer, NULL::integer, NULL::uuid, NULL::text, NULL::timestamptz, NULL::timestamptz,
      NULL::timestamptz, NULL::timestamptz, NULL::text, NULL::text, NULL::bytea, NULL::text,
      false;
    RETURN;
  END IF;
  IF lim.paused_at IS NOT NULL THEN
    allowed := 0;
  END IF;
  IF allowed > 0 AND lim.running_limit IS NOT NULL THEN
    SELECT count(*) INTO counted FROM (
      SELECT 1 FROM :"schema".running j WHERE j.queue = p_queue
      LIMIT lim.running_limit) r;
    IF lim.running_limit - counted < allowed THEN
      allowed := greatest(lim.running_limit - counted, 0);
      binding := 'running';
    END IF;
  END IF;
  -- The lease's time, read after the count: a job whose settling the count saw finished
  -- before it, so that the jobs' own times show the limit held (and the rate slots are
  -- stamped in the order the row lock lets leases through).
  v_now := clock_timestamp();
  IF allowed > 0 AND lim.rate_count IS NOT NULL THEN
    slots := ARRAY(SELECT s.slot FROM :"schema".rate_slots s
                   WHERE s.queue = p_queue
                     AND s.leased_at <= v_now
                                        - lim.rate_window_us * interval '1 microsecond'
                   ORDER BY s.leased_at, s.slot LIMIT allowed);
    IF cardinality(slots) < allowed THEN
      allowed := cardinality(slots);
      binding := 'rate';
    END IF;
  END IF;
  IF allowed > 0 THEN
    RETURN QUERY
    WITH picked AS (
      SELECT p.id, row_number() OVER () AS n FROM (
        SELECT j.id FROM :"schema".live j
        WHERE j.queue = p_queue AND j.state = 'available' AND j.run_at <= v_now
          -- As in the plain lease: the guard stops the walk at once when no job is due,
          -- instead of stepping over every scheduled one.
          AND (SELECT CASE WHEN h.run_at <= v_now THEN true
                           ELSE :"schema".first_run_at(p_queue, NULL) <= v_now END
               FROM (SELECT d.run_at FROM :"schema".live d
                     WHERE d.queue = p_queue AND d.state = 'available'
                     ORDER BY d.priority, d.run_at, d.id
                     LIMIT 1) h)
        ORDER BY j.priority, j.run_at, j.id
        LIMIT allowed
        FOR UPDATE SKIP LOCKED
      ) p
    ), gone AS (
      DELETE FROM :"schema".live j
      USING picked
      WHERE j.id = ANY (ARRAY(SELECT x.id FROM picked x)) AND j.id = picked.id
        AND (j.state || '') = 'available'
      RETURNING j.*, picked.n
    )
    INSERT INTO :"schema".running
    SELECT g.id, g.queue, 'running', g.priority, g.run_at, g.attempts + 1, g.max_attempts,
           p_tokens[g.n::integer], p_worker, v_now + p_lease_us * interval '1 microsecond',
           g.enqueued_at, v_now, g.finished_at, g.unique_key, g.last_error, g.payload,
           g.progress, g.waiting_for, g.notify, g.delay_us, g.group_name,
           (SELECT :"schema".running_seg())
    FROM gone g
    RETURNING running.id, running.queue, running.state, running.priority, running.run_at,
              running.attempts, running.max_attempts, running.lease_token, running.leased_by,
              running.lease_expires_at, running.enqueued_at, running.started_at,
              running.finished_at, running.unique_key, running.last_error, running.payload,
              NULL::text, true;
    GET DIAGNOSTICS taken = ROW_COUNT;
    IF lim.rate_count IS NOT NULL AND taken > 0 THEN
      UPDATE :"schema".rate_slots s SET leased_at = v_now
        WHERE s.queue = p_queue AND s.slot = ANY (slots[1:taken]);
    END IF;
  END IF;
  IF binding IS NULL OR taken < allowed
     OR NOT coalesce((SELECT CASE WHEN h.run_at <= v_now THEN true
                                  ELSE :"schema".first_run_at(p_queue, NULL) <= v_now END
                      FROM (SELECT d.run_at FROM :"schema".live d
                            WHERE d.queue = p_queue AND d.state = 'available'
                            ORDER BY d.priority, d.run_at, d.id
                            LIMIT 1) h), false) THEN
    binding := NULL;
  END IF;
  IF lim.paused_at IS NOT NULL THEN
    binding := NULL;
  END IF;
  RETURN QUERY SELECT NULL::bigint, NULL::text, NULL::text, NULL::integer, NULL::timestamptz,
    NULL::integer, NULL::integer, NULL::uuid, NULL::text, NULL::timestamptz, NULL::timestamptz,
    NULL::timestamptz, NULL::timestamptz, NULL::text, NULL::text, NULL::bytea, binding, true;
END
$fn$;
CREATE OR REPLACE FUNCTION :"schema".complete_delete(p_ids bigint[], p_tokens uuid[])
RETURNS TABLE (id bigint, token uuid)
LANGUAGE plpgsql
SET enable_nestloop = off SET enable_mergejoin = off SET enable_seqscan = off
SET enable_bitmapscan = off SET plan_cache_mode = force_generic_plan SET jit = off
AS $fn$
#variable_conflict use_column
BEGIN
RETURN QUERY
DELETE FROM :"schema".running j
USING unnest(p_ids, p_tokens) AS r(id, token)
WHERE j.id = ANY (p_ids) AND j.id = r.id AND j.lease_token = r.token
  AND j.notify IS NOT TRUE
RETURNING j.id, r.token;
END
$fn$;

-- The view: a fifth branch, the columns and their defaults as they were.
CREATE OR REPLACE VIEW :"schema".jobs AS
  SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
         lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error,
         payload, progress, waiting_for, notify, delay_us, group_name
  FROM :"schema".live
  UNION ALL
  SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
         lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error,
         payload, progress, waiting_for, notify, delay_us, group_name
  FROM :"schema".running
  UNION ALL
  SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
         lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error,
         payload, progress, waiting_for, notify, delay_us, group_name
  FROM :"schema".scheduled
  UNION ALL
  SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
         lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error,
         payload, progress, waiting_for, notify, delay_us, group_name
  FROM :"schema".waiting
  UNION ALL
  SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
         lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error,
         payload, progress, waiting_for, notify, delay_us, group_name
  FROM :"schema".done;

-- The state's table, for the view's trigger.
CREATE OR REPLACE FUNCTION :"schema".table_of(p_state text) RETURNS text
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN p_state = 'available' THEN 'live'
              WHEN p_state = 'running' THEN 'running'
              WHEN p_state = 'waiting' THEN 'waiting'
              ELSE 'done' END;
$fn$;

-- Migration 18's claim_unique_key(), for a job the view's trigger put into any of the tables
-- of unfinished jobs.
CREATE OR REPLACE FUNCTION :"schema".claim_unique_key(p_id bigint) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog AS $fn$
  INSERT INTO :"schema".unique_keys (queue, unique_key, job_id)
  SELECT j.queue, j.unique_key, j.id FROM :"schema".live j
  WHERE j.id = p_id AND j.unique_key IS NOT NULL
  UNION ALL
  SELECT j.queue, j.unique_key, j.id FROM :"schema".running j
  WHERE j.id = p_id AND j.unique_key IS NOT NULL
  UNION ALL
  SELECT j.queue, j.unique_key, j.id FROM :"schema".scheduled j
  WHERE j.id = p_id AND j.unique_key IS NOT NULL
  UNION ALL
  SELECT j.queue, j.unique_key, j.id FROM :"schema".waiting j
  WHERE j.id = p_id AND j.unique_key IS NOT NULL;
$fn$;

-- Migration 18's lock_dependencies(), with running jobs in a table of their own: a running
-- dependency is marked where it is, and one that a lease or a settle moved while this waited
-- for its row is looked for again.
CREATE OR REPLACE FUNCTION :"schema".lock_dependencies(p_ids bigint[])
RETURNS TABLE (id bigint, state text)
LANGUAGE plpgsql SET enable_seqscan = off AS $fn$
#variable_conflict use_column
DECLARE
  todo bigint[] := p_ids;
BEGIN
  WHILE cardinality(todo) > 0 LOOP
    WITH locked AS (
      UPDATE :"schema".waiting j SET notify = true WHERE j.id = ANY(todo) RETURNING j.id
    )
    SELECT ARRAY(SELECT a FROM unnest(todo) a EXCEPT SELECT l.id FROM locked l) INTO todo;
    WITH locked AS (
      UPDATE :"schema".scheduled j SET notify = true WHERE j.id = ANY(todo) RETURNING j.id
    )
    SELECT ARRAY(SELECT a FROM unnest(todo) a EXCEPT SELECT l.id FROM locked l) INTO todo;
    WITH locked AS (
      UPDATE :"schema".live j SET notify = true WHERE j.id = ANY(todo) RETURNING j.id
    )
    SELECT ARRAY(SELECT a FROM unnest(todo) a EXCEPT SELECT l.id FROM locked l) INTO todo;
    WITH locked AS (
      UPDATE :"schema".running j SET notify = true WHERE j.id = ANY(todo) RETURNING j.id
    )
    SELECT ARRAY(SELECT a FROM unnest(todo) a EXCEPT SELECT l.id FROM locked l) INTO todo;
    todo := ARRAY(SELECT a FROM unnest(todo) a
                  WHERE EXISTS (SELECT 1 FROM :"schema".live j WHERE j.id = a)
                     OR EXISTS (SELECT 1 FROM :"schema".running j WHERE j.id = a)
                     OR EXISTS (SELECT 1 FROM :"schema".scheduled j WHERE j.id = a)
                     OR EXISTS (SELECT 1 FROM :"schema".waiting j WHERE j.id = a));
  END LOOP;
  RETURN QUERY SELECT j.id, j.state FROM :"schema".jobs j WHERE j.id = ANY(p_ids);
END
$fn$;

-- The SQL functions of docs/sql.md that settle a lease, on `running`. A job that leaves it
-- goes to live (retried or released now), scheduled (later) or done, as the engine's
-- statements do (statements.sql: fail, release, rescue).
CREATE OR REPLACE FUNCTION :"schema".complete(id bigint, lease_token uuid) RETURNS boolean
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
BEGIN
  WITH ended AS (
    DELETE FROM :"schema".running j WHERE j.id = $1 AND j.lease_token = $2
    RETURNING j.*
  )
  INSERT INTO :"schema".done
  SELECT e.id, e.queue, 'succeeded', e.priority, e.run_at, e.attempts, e.max_attempts,
         e.lease_token, e.leased_by, NULL, e.enqueued_at, e.started_at, statement_timestamp(),
         e.unique_key, e.last_error, e.payload, e.progress, e.waiting_for, e.notify,
         e.delay_us, e.group_name
  FROM ended e;
  RETURN FOUND;
END
$fn$;

CREATE OR REPLACE FUNCTION :"schema".fail(id bigint, lease_token uuid, error text,
                                          retry_after interval DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
  new_state text;
BEGIN
  WITH gone AS (
    DELETE FROM :"schema".running j WHERE j.id = $1 AND j.lease_token = $2
    RETURNING j.*, j.attempts >= j.max_attempts AS dies,
              statement_timestamp()
                + coalesce($4, :"schema".backoff_delay(j.attempts, 1000000, 3600000000,
                                                       1 - 0.2 * random())) AS retry_at
  ), retried AS (
    INSERT INTO :"schema".live OVERRIDING SYSTEM VALUE
    SELECT g.id, g.queue, 'available', g.priority, g.retry_at, g.attempts, g.max_attempts,
           g.lease_token, g.leased_by, NULL, g.enqueued_at, g.started_at, g.finished_at,
           g.unique_key, $3, g.payload, g.progress, g.waiting_for, g.notify, g.delay_us,
           g.group_name
    FROM gone g WHERE NOT g.dies AND g.retry_at <= statement_timestamp()
  ), rescheduled AS (
    INSERT INTO :"schema".scheduled
    SELECT g.id, g.queue, 'available', g.priority, g.retry_at, g.attempts, g.max_attempts,
           g.lease_token, g.leased_by, NULL, g.enqueued_at, g.started_at, g.finished_at,
           g.unique_key, $3, g.payload, g.progress, g.waiting_for, g.notify, g.delay_us,
           g.group_name
    FROM gone g WHERE NOT g.dies AND g.retry_at > statement_timestamp()
  ), buried AS (
    INSERT INTO :"schema".done
    SELECT g.id, g.queue, 'dead', g.priority, g.run_at, g.attempts, g.max_attempts,
           g.lease_token, g.leased_by, NULL, g.enqueued_at, g.started_at, statement_timestamp(),
           g.unique_key, $3, g.payload, g.progress, g.waiting_for, g.notify, g.delay_us,
           g.group_name
    FROM gone g WHERE g.dies
  ), recorded AS (
    INSERT INTO :"schema".job_errors (job_id, attempt, at, worker, error)
    SELECT g.id, g.attempts, statement_timestamp(), g.leased_by, $3 FROM gone g
  )
  SELECT CASE WHEN g.dies THEN 'dead' ELSE 'available' END INTO new_state FROM gone g;
  RETURN new_state;
END
$fn$;

CREATE OR REPLACE FUNCTION :"schema".extend(id bigint, lease_token uuid,
                                            lease_duration interval DEFAULT interval '30 seconds')
RETURNS boolean
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
BEGIN
  UPDATE :"schema".running j SET lease_expires_at = statement_timestamp() + $3
  WHERE j.id = $1 AND j.lease_token = $2;
  RETURN FOUND;
END
$fn$;

CREATE OR REPLACE FUNCTION :"schema".release(id bigint, lease_token uuid,
                                             delay interval DEFAULT interval '0')
RETURNS boolean
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
  released_count bigint;
BEGIN
  WITH released AS (
    DELETE FROM :"schema".running j WHERE j.id = $1 AND j.lease_token = $2
    RETURNING j.*, statement_timestamp() + $3 AS again_at
  ), into_live AS (
    INSERT INTO :"schema".live OVERRIDING SYSTEM VALUE
    SELECT d.id, d.queue, 'available', d.priority, d.again_at, greatest(d.attempts - 1, 0),
           d.max_attempts, d.lease_token, d.leased_by, NULL, d.enqueued_at, d.started_at,
           d.finished_at, d.unique_key, d.last_error, d.payload, d.progress, d.waiting_for,
           d.notify, d.delay_us, d.group_name
    FROM released d WHERE d.again_at <= statement_timestamp()
  ), rescheduled AS (
    INSERT INTO :"schema".scheduled
    SELECT d.id, d.queue, 'available', d.priority, d.again_at, greatest(d.attempts - 1, 0),
           d.max_attempts, d.lease_token, d.leased_by, NULL, d.enqueued_at, d.started_at,
           d.finished_at, d.unique_key, d.last_error, d.payload, d.progress, d.waiting_for,
           d.notify, d.delay_us, d.group_name
    FROM released d WHERE d.again_at > statement_timestamp()
  )
  SELECT count(*) INTO released_count FROM released;
  RETURN released_count > 0;
END
$fn$;

CREATE OR REPLACE FUNCTION :"schema".progress(id bigint, lease_token uuid, progress text)
RETURNS boolean
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
BEGIN
  IF octet_length($3) > 65536 THEN
    RAISE EXCEPTION 'progress of % bytes is over the limit of 65536 bytes', octet_length($3)
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM $3::json;  -- raises for text that is not JSON
  UPDATE :"schema".running j SET progress = $3
  WHERE j.id = $1 AND j.lease_token = $2;
  RETURN FOUND;
END
$fn$;

-- statements.sql's rescue, without :after, with the plain form of the join.
CREATE OR REPLACE FUNCTION :"schema".rescue_expired(queue text, batch integer DEFAULT 10000)
RETURNS bigint
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
  moved bigint;
BEGIN
  WITH expired AS (
    SELECT j.id, j.attempts >= j.max_attempts AS dies FROM :"schema".running j
    WHERE j.queue = $1::text AND j.lease_expires_at <= statement_timestamp()
    ORDER BY j.lease_expires_at
    LIMIT $2::integer
    FOR UPDATE SKIP LOCKED
  ), gone AS (
    DELETE FROM :"schema".running j USING expired e
    WHERE j.id = e.id
    RETURNING j.*, e.dies,
              CASE WHEN e.dies
                   THEN 'lease expired after ' || j.attempts || ' attempts (worker lost)'
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
           g.lease_token, g.leased_by, NULL, g.enqueued_at, g.started_at, statement_timestamp(),
           g.unique_key, g.error, g.payload, g.progress, g.waiting_for, g.notify, g.delay_us,
           g.group_name
    FROM gone g WHERE g.dies
  )
  INSERT INTO :"schema".job_errors (job_id, attempt, at, worker, error)
  SELECT g.id, g.attempts, statement_timestamp(), g.leased_by, g.error FROM gone g;
  GET DIAGNOSTICS moved = ROW_COUNT;
  RETURN moved;
END
$fn$;

CREATE OR REPLACE FUNCTION :"schema".lease(queue text, worker text, max_jobs integer DEFAULT 1,
                                lease_duration interval DEFAULT interval '30 seconds')
RETURNS SETOF :"schema".jobs LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  ids bigint[];
  lease_us bigint := (extract(epoch FROM $4) * 1000000)::bigint;
BEGIN
  IF EXISTS (SELECT 1 FROM :"schema".queues q WHERE q.name = $1 AND q.paused_at IS NOT NULL) THEN
    RETURN;
  END IF;
  PERFORM :"schema".rescue_expired($1);
  IF EXISTS (SELECT 1 FROM :"schema".queues q WHERE q.name = $1
             AND (q.running_limit IS NOT NULL OR q.rate_count IS NOT NULL)) THEN
    ids := ARRAY(SELECT l.id FROM :"schema".lease_limited(
                   $1, $2, $3, lease_us,
                   ARRAY(SELECT :"schema".new_lease_token()
                         FROM generate_series(1, greatest($3, 1)))) l
                 WHERE l.id IS NOT NULL);
  ELSE
    ids := ARRAY(SELECT h.id FROM :"schema".lease_head($1, $2, lease_us, '{}', $3) h);
  END IF;
  RETURN QUERY SELECT j.id, j.queue, j.state, j.priority, j.run_at, j.attempts, j.max_attempts,
                      j.lease_token, j.leased_by, j.lease_expires_at, j.enqueued_at,
                      j.started_at, j.finished_at, j.unique_key, j.last_error, j.payload,
                      j.progress, j.waiting_for, j.notify, j.delay_us, j.group_name
  FROM :"schema".running j WHERE j.id = ANY (ids)
  ORDER BY j.priority, j.run_at, j.id;
END
$fn$;

-- The view's trigger with five tables: a running job is in `running`, and a change of state
-- between two tables of unfinished jobs moves the row (migration 18 updated it in place first,
-- which a running job's lease columns and live's check no longer allow).
CREATE OR REPLACE FUNCTION :"schema".jobs_view_write() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  cur :"schema".jobs;  -- the job's row as it is now, locked (the tables' columns, in order)
  old_table text;
  new_table text;
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF NEW.id IS NOT NULL THEN
      RAISE EXCEPTION 'cannot insert a non-DEFAULT value into column "id"'
        USING ERRCODE = 'generated_always', DETAIL = 'A job takes its id from jobs_id_seq.';
    END IF;
    NEW.id := nextval(':"schema".jobs_id_seq');
    new_table := :"schema".table_of(NEW.state);
    IF new_table = 'live' THEN
      INSERT INTO :"schema".live OVERRIDING SYSTEM VALUE SELECT NEW.*;
      PERFORM :"schema".claim_unique_key(NEW.id);
    ELSIF new_table = 'running' THEN
      INSERT INTO :"schema".running SELECT NEW.*;
      PERFORM :"schema".claim_unique_key(NEW.id);
    ELSIF new_table = 'waiting' THEN
      INSERT INTO :"schema".waiting SELECT NEW.*;
      PERFORM :"schema".claim_unique_key(NEW.id);
    ELSE
      INSERT INTO :"schema".done SELECT NEW.*;
    END IF;
    RETURN NEW;
  END IF;

  IF TG_OP = 'DELETE' THEN
    DELETE FROM :"schema".live WHERE id = OLD.id;
    IF NOT FOUND THEN
      DELETE FROM :"schema".running WHERE id = OLD.id;
    END IF;
    IF NOT FOUND THEN
      DELETE FROM :"schema".scheduled WHERE id = OLD.id;
    END IF;
    IF NOT FOUND THEN
      DELETE FROM :"schema".waiting WHERE id = OLD.id;
    END IF;
    IF NOT FOUND THEN
      DELETE FROM :"schema".done WHERE id = OLD.id;
    END IF;
    RETURN CASE WHEN FOUND THEN OLD END;
  END IF;

  IF NEW.id IS DISTINCT FROM OLD.id THEN
    RAISE EXCEPTION 'a job''s id cannot change' USING ERRCODE = 'feature_not_supported';
  END IF;
  old_table := :"schema".table_of(OLD.state);
  EXECUTE format('SELECT * FROM :"schema".%I WHERE id = $1 FOR UPDATE', old_table)
    INTO cur USING OLD.id;
  IF cur.id IS NULL AND OLD.state = 'available' THEN
    -- An available job is in live when due, in scheduled when not (or due and not yet
    -- promoted): the same state in either, edited in place in whichever holds it.
    SELECT * INTO cur FROM :"schema".scheduled WHERE id = OLD.id FOR UPDATE;
    old_table := 'scheduled';
  END IF;
  IF cur.id IS NULL OR cur.state IS DISTINCT FROM OLD.state
     OR cur.lease_token IS DISTINCT FROM OLD.lease_token THEN
    RETURN NULL;  -- changed since this statement read it: not updated
  END IF;
  IF NEW.queue IS NOT DISTINCT FROM OLD.queue THEN NEW.queue := cur.queue; END IF;
  IF NEW.state IS NOT DISTINCT FROM OLD.state THEN NEW.state := cur.state; END IF;
  IF NEW.priority IS NOT DISTINCT FROM OLD.priority THEN NEW.priority := cur.priority; END IF;
  IF NEW.run_at IS NOT DISTINCT FROM OLD.run_at THEN NEW.run_at := cur.run_at; END IF;
  IF NEW.attempts IS NOT DISTINCT FROM OLD.attempts THEN NEW.attempts := cur.attempts; END IF;
  IF NEW.max_attempts IS NOT DISTINCT FROM OLD.max_attempts THEN
    NEW.max_attempts := cur.max_attempts;
  END IF;
  IF NEW.lease_token IS NOT DISTINCT FROM OLD.lease_token THEN
    NEW.lease_token := cur.lease_token;
  END IF;
  IF NEW.leased_by IS NOT DISTINCT FROM OLD.leased_by THEN NEW.leased_by := cur.leased_by; END IF;
  IF NEW.lease_expires_at IS NOT DISTINCT FROM OLD.lease_expires_at THEN
    NEW.lease_expires_at := cur.lease_expires_at;
  END IF;
  IF NEW.enqueued_at IS NOT DISTINCT FROM OLD.enqueued_at THEN
    NEW.enqueued_at := cur.enqueued_at;
  END IF;
  IF NEW.started_at IS NOT DISTINCT FROM OLD.started_at THEN
    NEW.started_at := cur.started_at;
  END IF;
  IF NEW.finished_at IS NOT DISTINCT FROM OLD.finished_at THEN
    NEW.finished_at := cur.finished_at;
  END IF;
  IF NEW.unique_key IS NOT DISTINCT FROM OLD.unique_key THEN
    NEW.unique_key := cur.unique_key;
  END IF;
  IF NEW.last_error IS NOT DISTINCT FROM OLD.last_error THEN
    NEW.last_error := cur.last_error;
  END IF;
  IF NEW.payload IS NOT DISTINCT FROM OLD.payload THEN NEW.payload := cur.payload; END IF;
  IF NEW.progress IS NOT DISTINCT FROM OLD.progress THEN NEW.progress := cur.progress; END IF;
  IF NEW.waiting_for IS NOT DISTINCT FROM OLD.waiting_for THEN
    NEW.waiting_for := cur.waiting_for;
  END IF;
  IF NEW.notify IS NOT DISTINCT FROM OLD.notify THEN NEW.notify := cur.notify; END IF;
  IF NEW.delay_us IS NOT DISTINCT FROM OLD.delay_us THEN NEW.delay_us := cur.delay_us; END IF;
  IF NEW.group_name IS NOT DISTINCT FROM OLD.group_name THEN
    NEW.group_name := cur.group_name;
  END IF;
  new_table := :"schema".table_of(NEW.state);
  IF new_table = 'live' AND old_table = 'scheduled' AND NEW.state = 'available' THEN
    new_table := 'scheduled';  -- promoted when due, by the next lease
  END IF;
  IF new_table = old_table THEN
    -- In place (every table has the view's columns, in its order).
    EXECUTE format('UPDATE :"schema".%I SET (queue, state, priority, run_at, attempts,
        max_attempts, lease_token, leased_by, lease_expires_at, enqueued_at, started_at,
        finished_at, unique_key, last_error, payload, progress, waiting_for, notify, delay_us,
        group_name)
      = (($1).queue, ($1).state, ($1).priority, ($1).run_at,
        ($1).attempts, ($1).max_attempts,
        ($1).lease_token, ($1).leased_by, ($1).lease_expires_at, ($1).enqueued_at,
        ($1).started_at, ($1).finished_at, ($1).unique_key, ($1).last_error, ($1).payload,
        ($1).progress, ($1).waiting_for, ($1).notify, ($1).delay_us, ($1).group_name)
      WHERE id = $2', old_table)
      USING NEW, OLD.id;
  ELSIF old_table <> 'done' AND new_table <> 'done' THEN
    -- Between two tables of unfinished jobs: a key that the edit changes moves first, in
    -- place (the old table's key trigger); then the row moves, as NEW, and keeps the key.
    -- Only the key is written in place: a state, a lease or a run_at there could break the old
    -- table's checks, or move the row by that table's triggers before it is deleted here.
    IF (NEW.queue, NEW.unique_key) IS DISTINCT FROM (OLD.queue, OLD.unique_key) THEN
      EXECUTE format('UPDATE :"schema".%I SET (queue, unique_key) = (($1).queue, ($1).unique_key)
        WHERE id = $2', old_table)
        USING NEW, OLD.id;
    END IF;
    EXECUTE format('INSERT INTO :"schema".%I %s SELECT ($1).*', new_table,
                   CASE WHEN new_table = 'live' THEN 'OVERRIDING SYSTEM VALUE' ELSE '' END)
      USING NEW;
    EXECUTE format('DELETE FROM :"schema".%I WHERE id = $1', old_table) USING OLD.id;
  ELSIF new_table <> 'done' THEN
    EXECUTE format('INSERT INTO :"schema".%I %s SELECT ($1).*', new_table,
                   CASE WHEN new_table = 'live' THEN 'OVERRIDING SYSTEM VALUE' ELSE '' END)
      USING NEW;
    PERFORM :"schema".claim_unique_key(NEW.id);
    DELETE FROM :"schema".done WHERE id = OLD.id;
  ELSE
    INSERT INTO :"schema".done SELECT NEW.*;
    EXECUTE format('DELETE FROM :"schema".%I WHERE id = $1', old_table) USING OLD.id;
  END IF;
  RETURN NEW;
END
$fn$;
