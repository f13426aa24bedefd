-- Migration 18: jobs scheduled for later in a table of their own (docs/postgres-storage.md,
-- section 14, step 2). An available job whose run_at is later than the statement that makes it
-- available leaves live for `scheduled`, a plain table with the view's columns in its order,
-- and the jobs view gets a fourth branch. live then holds the jobs a lease may take now and the
-- running ones: what the rings of section 4 will split into ready and running, with no row in
-- either that a segment would have to carry for hours until it comes due.
--
-- Into scheduled, from every path at once, at the end of the statement that wrote live, so
-- that each statement keeps its text and its RETURNING:
--   - inserts (the enqueues: the SQL functions, a plain INSERT INTO readpast.jobs, the
--     engine's keyed and mixed batches; a dependent released with its delay): live's
--     statement-level insert trigger, which already reads the inserted rows once for the
--     wake-up (notify_inserted(), migration 12), moves those scheduled for later in two
--     set-based statements; an enqueue of due jobs pays nothing more. The engine's enqueues
--     without keys of one job or of a uniform batch given a time (enqueue_one_timed and
--     enqueue_uniform_timed, statements.sql) insert into scheduled directly, which saves the
--     insert and the delete in live;
--   - updates (a failure retried after a backoff, a release with a delay, a hand edit of
--     run_at): a row trigger, live_schedule_later, whose condition the executor evaluates for
--     every row updated without a call (a lease pays that and nothing else), and which moves
--     the row in one statement. A statement-level trigger would have every lease collect its
--     rows for it.
-- A job scheduled for later that goes through live costs one insert and one delete there.
--
-- Out of scheduled, into live: promote_due(), which each lease runs first for its queue when
-- the first job of scheduled is due (one descent of scheduled_due_idx when none is), in a
-- statement of its own whose rows the lease's walk sees; so a job due now is handed out in
-- order with the others, by that lease. next_due reads scheduled too, so a waiting worker
-- wakes when its first job comes due. The insert into live announces the promoted jobs
-- (jobs_notify_inserted) and, when they are late, marks them for the lanes (migration 12).
--
-- A job moves in one statement (DELETE … RETURNING into INSERT), or, for the trigger, in the
-- statement that wrote it, so every snapshot sees it in exactly one table. Unique keys and
-- error history stay with a moved job: the row triggers that give a key back, or forget the
-- history, skip a job that is in another table at the end of the moving statement.
--
-- A move is not an update (migration 17): a statement that waits for the lock of a row another
-- transaction moves, then finds it gone, does not follow it. Jobs now move both ways between
-- live and scheduled, each time a lease promotes or a job fails with a backoff, so the
-- statements that lock or change other transactions' unfinished jobs by id look again until
-- they find each job or find it gone from the three live tables: lock_dependencies() (also
-- used by the resolver's renotify, statements.sql), and cancel, which the engine repeats for
-- the ids it missed.
--
-- Locks: ACCESS EXCLUSIVE on live, waited for at most 5 s (lock_for_upgrade(), migration 15);
-- under it, live's available jobs scheduled for later move (one read of jobs_lease_idx's
-- entries of available jobs, proportional to the backlog). Written once and never edited after
-- release.
SELECT :"schema".lock_for_upgrade(':"schema".live', 'ACCESS EXCLUSIVE');

-- Rows are inserted once, deleted when they come due or are cancelled, and updated only by a
-- hand edit through the view or a dependent's lock (notify): waiting's settings. Ids come from
-- the jobs' sequence, for the enqueues that insert here directly (statements.sql).
CREATE TABLE :"schema".scheduled (
  id               bigint      PRIMARY KEY DEFAULT nextval(':"schema".jobs_id_seq'),
  queue            text        NOT NULL
                   CHECK (octet_length(queue) <= 128 AND queue ~ '^[A-Za-z0-9][A-Za-z0-9_.-]*$'),
  state            text        NOT NULL DEFAULT 'available' CHECK (state = 'available'),
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
  group_name       text        CHECK (group_name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$')
) WITH (
  fillfactor = 80,
  autovacuum_vacuum_scale_factor = 0.01,
  autovacuum_vacuum_threshold = 1000,
  autovacuum_vacuum_insert_scale_factor = 0.01,
  autovacuum_analyze_scale_factor = 0.02,
  autovacuum_vacuum_cost_delay = 0
);
-- The promotion's order and next_due's first entry; stats and lists find a queue's jobs by it.
-- A group's members, as in the other tables.
CREATE INDEX scheduled_due_idx ON :"schema".scheduled (queue, run_at, id);
CREATE INDEX scheduled_group_idx ON :"schema".scheduled (group_name, id)
  WHERE group_name IS NOT NULL;

-- Rights: a role granted rights on live gets the same on a table the engine's statements and
-- the SQL functions now write in the caller's name (here scheduled; the rings will need it too).
CREATE FUNCTION :"schema".grant_as_on_live(p_table regclass) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
  g record;
BEGIN
  FOR g IN
    SELECT a.privilege_type, a.grantee, a.is_grantable
    FROM pg_class c, aclexplode(c.relacl) a
    WHERE c.oid = ':"schema".live'::regclass AND a.grantee <> c.relowner
      AND a.privilege_type IN ('SELECT', 'INSERT', 'UPDATE', 'DELETE')
  LOOP
    EXECUTE format('GRANT %s ON %s TO %s%s', g.privilege_type, p_table,
                   CASE WHEN g.grantee = 0 THEN 'PUBLIC'
                        ELSE quote_ident(pg_get_userbyid(g.grantee)) END,
                   CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
  END LOOP;
END
$fn$;
REVOKE ALL ON FUNCTION :"schema".grant_as_on_live(regclass) FROM PUBLIC;
SELECT :"schema".grant_as_on_live(':"schema".scheduled');

-- The triggers that give a key back and forget a job's error history, aware of the new table,
-- before anything moves.
CREATE OR REPLACE FUNCTION :"schema".forget_job_errors() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  DELETE FROM :"schema".job_errors e
  WHERE e.job_id = OLD.id
    AND NOT EXISTS (SELECT 1 FROM :"schema".live l WHERE l.id = OLD.id)
    AND NOT EXISTS (SELECT 1 FROM :"schema".scheduled s WHERE s.id = OLD.id)
    AND NOT EXISTS (SELECT 1 FROM :"schema".waiting w WHERE w.id = OLD.id)
    AND NOT EXISTS (SELECT 1 FROM :"schema".done d WHERE d.id = OLD.id);
  RETURN NULL;
END
$fn$;

-- Migration 17's keep_unique_key(): a job deleted from live, scheduled or waiting gives its
-- key back unless it is in another of them now (moved by the statement, with its queue and key
-- unchanged). A running job leaves live only for done or for good: a failure retried later, a
-- delayed release and the view's edits make it available in place first, and the trigger
-- below moves it from there. So a keyed job's completion, the hot path, probes nothing.
CREATE OR REPLACE FUNCTION :"schema".keep_unique_key() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $fn$
BEGIN
  IF TG_OP = 'DELETE' AND (TG_TABLE_NAME <> 'live' OR OLD.state <> 'running') THEN
    IF TG_TABLE_NAME <> 'live' THEN
      PERFORM FROM :"schema".live l WHERE l.id = OLD.id;
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

CREATE TRIGGER scheduled_forget_errors AFTER DELETE ON :"schema".scheduled
  FOR EACH ROW WHEN (OLD.last_error IS NOT NULL)
  EXECUTE FUNCTION :"schema".forget_job_errors();
CREATE TRIGGER scheduled_move_unique_key AFTER UPDATE OF queue, unique_key ON :"schema".scheduled
  FOR EACH ROW WHEN ((OLD.queue, OLD.unique_key) IS DISTINCT FROM (NEW.queue, NEW.unique_key))
  EXECUTE FUNCTION :"schema".keep_unique_key();
CREATE TRIGGER scheduled_release_unique_key AFTER DELETE ON :"schema".scheduled
  FOR EACH ROW WHEN (OLD.unique_key IS NOT NULL)
  EXECUTE FUNCTION :"schema".keep_unique_key();

-- The jobs scheduled for later move, keys and error history kept (the triggers above).
WITH moved AS (
  DELETE FROM :"schema".live j
  WHERE j.state = 'available' AND j.run_at > statement_timestamp()
  RETURNING j.*
)
INSERT INTO :"schema".scheduled SELECT * FROM moved;
-- Not analysed here, for the reason migration 17 gives for waiting.

-- The move into scheduled for an UPDATE that leaves a job of live available later (the header
-- says which). An AFTER row trigger runs at the end of that statement, after its RETURNING and
-- its other row triggers (live_move_unique_key first: a key changed by the same UPDATE moves
-- before the row does). live's columns are the view's, in its order.
CREATE FUNCTION :"schema".schedule_later() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  WITH moved AS (
    DELETE FROM :"schema".live j WHERE j.id = NEW.id RETURNING j.*
  )
  INSERT INTO :"schema".scheduled SELECT * FROM moved;
  RETURN NULL;
END
$fn$;
CREATE TRIGGER live_schedule_later AFTER UPDATE OF state, run_at ON :"schema".live
  FOR EACH ROW WHEN (NEW.state = 'available' AND NEW.run_at > statement_timestamp())
  EXECUTE FUNCTION :"schema".schedule_later();

-- And for an INSERT: migration 12's notify_inserted(), whose one read of the inserted rows now
-- also tells whether any is scheduled for later; only then are they moved, set-based, before
-- the marks (which leave them out: their keys are ahead of any lease). Sequential scans off, so
-- that the delete probes live_pkey whatever live's statistics say.
CREATE OR REPLACE FUNCTION :"schema".notify_inserted() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog SET enable_seqscan = off
AS $fn$
DECLARE
  any_old boolean;
  any_later boolean;
BEGIN
  -- The wake-up (one notice per queue with a job due), whether some job is available with a
  -- key older than δ (100 ms, migration 11) before the statement, and whether some is
  -- scheduled for later. OFFSET 0 keeps the aggregates above the wake-up, so that every queue
  -- is woken whatever its keys.
  SELECT bool_or(w.old), bool_or(NOT w.due) INTO any_old, any_later
  FROM (
    SELECT q.old, q.due, CASE WHEN q.due THEN pg_notify(:'channel', q.queue) END AS woken
    FROM (SELECT DISTINCT n.queue, n.run_at <= statement_timestamp() AS due,
                 n.run_at < statement_timestamp() - interval '100 milliseconds' AS old
          FROM new_jobs n WHERE n.state = 'available') q
    OFFSET 0) w;
  IF any_later THEN
    INSERT INTO :"schema".scheduled
    SELECT * FROM new_jobs n
    WHERE n.state = 'available' AND n.run_at > statement_timestamp();
    DELETE FROM :"schema".live j
    WHERE j.id = ANY (ARRAY(SELECT n.id FROM new_jobs n
                            WHERE n.state = 'available' AND n.run_at > statement_timestamp()));
  END IF;
  IF any_old OR clock_timestamp() - statement_timestamp() > interval '100 milliseconds' THEN
    INSERT INTO :"schema".lane_marks (queue, priority, run_at, id)
    SELECT DISTINCT ON (n.queue, n.priority) n.queue, n.priority, n.run_at, n.id
    FROM new_jobs n
    WHERE n.state = 'available' AND n.run_at <= statement_timestamp()
      AND (n.run_at < statement_timestamp() - interval '100 milliseconds'
           OR clock_timestamp() - statement_timestamp() > interval '100 milliseconds')
    ORDER BY n.queue, n.priority, n.run_at, n.id;
    PERFORM :"schema".forget_old_marks();
  END IF;
  RETURN NULL;
END
$fn$;

-- Out of scheduled: the queue's due jobs, earliest first, up to 5,000 a call (a lease after it
-- promotes the rest). SKIP LOCKED: leases of the queue promoting at once share the rows out,
-- and a job another statement holds (a cancel, a hand edit) waits for the next lease. Pinned
-- like the leases, whose statement it runs in (migration 13): scheduled is often analysed
-- nearly empty and then grows.
CREATE FUNCTION :"schema".promote_due(p_queue text) RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET enable_sort = off SET enable_bitmapscan = off
SET enable_mergejoin = off SET enable_seqscan = off SET plan_cache_mode = force_generic_plan
SET jit = off SET enable_incremental_sort = off
AS $fn$
#variable_conflict use_column
DECLARE
  moved bigint;
BEGIN
  WITH due AS (
    SELECT s.id FROM :"schema".scheduled s
    WHERE s.queue = p_queue AND s.run_at <= statement_timestamp()
    ORDER BY s.run_at, s.id
    LIMIT 5000
    FOR UPDATE SKIP LOCKED
  ), gone AS (
    DELETE FROM :"schema".scheduled s
    WHERE s.id = ANY (ARRAY(SELECT d.id FROM due d))
    RETURNING s.*
  )
  INSERT INTO :"schema".live OVERRIDING SYSTEM VALUE SELECT * FROM gone;
  GET DIAGNOSTICS moved = ROW_COUNT;
  RETURN moved;
END
$fn$;

-- The view: a fourth branch, the columns and their defaults as they were.
CREATE OR REPLACE VIEW :"schema".jobs AS
  SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
         lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error,
         payload, progress, waiting_for, notify, delay_us, group_name
  FROM :"schema".live
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

-- Migration 17's claim_unique_key(), for a job the view's trigger put into live (and the
-- trigger above perhaps into scheduled) or waiting.
CREATE OR REPLACE FUNCTION :"schema".claim_unique_key(p_id bigint) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog AS $fn$
  INSERT INTO :"schema".unique_keys (queue, unique_key, job_id)
  SELECT j.queue, j.unique_key, j.id FROM :"schema".live j
  WHERE j.id = p_id AND j.unique_key IS NOT NULL
  UNION ALL
  SELECT j.queue, j.unique_key, j.id FROM :"schema".scheduled j
  WHERE j.id = p_id AND j.unique_key IS NOT NULL
  UNION ALL
  SELECT j.queue, j.unique_key, j.id FROM :"schema".waiting j
  WHERE j.id = p_id AND j.unique_key IS NOT NULL;
$fn$;

-- Migration 17's jobs_view_write() with four tables: an available job is edited in place in
-- live or in scheduled, whichever holds it; live_schedule_later moves one whose run_at an edit
-- put later, and the next lease promotes one whose run_at an edit made due.
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
  IF new_table = old_table OR (old_table <> 'done' AND new_table <> 'done') THEN
    -- In place, in whichever table holds it (all have the view's columns, in its order); the
    -- state when the row stays, or 'available' when it leaves live for waiting below.
    EXECUTE format('UPDATE :"schema".%I SET (queue, state, priority, run_at, attempts,
        max_attempts, lease_token, leased_by, lease_expires_at, enqueued_at, started_at,
        finished_at, unique_key, last_error, payload, progress, waiting_for, notify, delay_us,
        group_name)
      = (($1).queue, $3, ($1).priority, ($1).run_at,
        ($1).attempts, ($1).max_attempts,
        ($1).lease_token, ($1).leased_by, ($1).lease_expires_at, ($1).enqueued_at,
        ($1).started_at, ($1).finished_at, ($1).unique_key, ($1).last_error, ($1).payload,
        ($1).progress, ($1).waiting_for, ($1).notify, ($1).delay_us, ($1).group_name)
      WHERE id = $2', old_table)
      USING NEW, OLD.id, CASE WHEN new_table = old_table THEN NEW.state
                              WHEN old_table = 'live' THEN 'available' ELSE OLD.state END;
    IF new_table <> old_table THEN
      -- Between live and waiting: the row, now as NEW but for its state, moves.
      EXECUTE format('INSERT INTO :"schema".%I %s SELECT ($1).*', new_table,
                     CASE WHEN new_table = 'live' THEN 'OVERRIDING SYSTEM VALUE' ELSE '' END)
        USING NEW;
      EXECUTE format('DELETE FROM :"schema".%I WHERE id = $1', old_table) USING OLD.id;
    END IF;
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

-- Migration 17's lock_dependencies(), for jobs that move both ways between live and scheduled:
-- each round locks (marks notify) the jobs still to lock in waiting, then scheduled, then live,
-- each in a statement with a snapshot of its own, and looks again for those it did not find
-- that are still in one of the three (moved while a statement waited for its row: a promotion,
-- a failure retried later). A job locked stays where it is until this transaction ends, so the
-- rounds end as soon as no job moves between two of them: one round, nearly always. Then the
-- state of each, as before. Also the resolver's renotify (statements.sql).
CREATE OR REPLACE FUNCTION :"schema".lock_dependencies(p_ids bigint[])
RETURNS TABLE (id bigint, state text)
LANGUAGE plpgsql VOLATILE SET enable_seqscan = off AS $fn$
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
    todo := ARRAY(SELECT a FROM unnest(todo) a
                  WHERE EXISTS (SELECT 1 FROM :"schema".live j WHERE j.id = a)
                     OR EXISTS (SELECT 1 FROM :"schema".scheduled j WHERE j.id = a)
                     OR EXISTS (SELECT 1 FROM :"schema".waiting j WHERE j.id = a));
  END LOOP;
  RETURN QUERY SELECT j.id, j.state FROM :"schema".jobs j WHERE j.id = ANY(p_ids);
END
$fn$;

-- The leases of migration 16, each promoting its queue's due jobs first, and each joining the
-- rows it updates to the rows it picked by a hash join. The update finds its rows by one probe
-- of live_pkey each (j.id = ANY (…)) and needs each row's place in the pick for its token
-- (j.id = picked.id). Planned with the statistics of a table never analysed or analysed nearly
-- empty (a fresh install, a truncated table, a queue drained when autovacuum looked), both
-- sides were estimated at one row and the planner joined them by a nested loop that read the
-- whole pick for every row updated: a lease of 254 jobs took 10.6 ms instead of 4.3, one of
-- 1,000 117 ms instead of 13, one of 10,000 11 s (docs/benchmarks.md, run 53). With
-- enable_nestloop off the join is hashed whatever the estimates; nothing else in the three
-- functions is a join that a nested loop would serve better (lease_lanes()' LATERAL joins
-- can only be nested loops, and stay so). lease_limited() gets the leases' form of the update
-- for the same reason.
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
), taken AS (
  UPDATE :"schema".live j
  SET state = 'running',
      attempts = j.attempts + 1,
      lease_token = coalesce((p_tokens)[picked.n::integer], :"schema".new_lease_token()),
      leased_by = p_worker,
      lease_expires_at = statement_timestamp() + p_lease_us * interval '1 microsecond',
      started_at = statement_timestamp()
  FROM picked
  WHERE j.id = ANY (ARRAY(SELECT x.id FROM picked x)) AND j.id = picked.id
    AND (j.state || '') = 'available'
  RETURNING j.id, j.queue, j.state, j.priority, j.run_at, j.attempts, j.max_attempts,
            j.lease_token, j.leased_by, j.lease_expires_at, j.enqueued_at, j.started_at,
            j.finished_at, j.unique_key, j.last_error, j.payload
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
), taken AS (
  UPDATE :"schema".live j
  SET state = 'running',
      attempts = j.attempts + 1,
      lease_token = (p_tokens)[picked.n::integer],
      leased_by = p_worker,
      lease_expires_at = statement_timestamp() + p_lease_us * interval '1 microsecond',
      started_at = statement_timestamp()
  FROM picked
  WHERE j.id = ANY (ARRAY(SELECT x.id FROM picked x)) AND j.id = picked.id
    AND (j.state || '') = 'available'
  RETURNING j.id, j.queue, j.state, j.priority, j.run_at, j.attempts, j.max_attempts,
            j.lease_token, j.leased_by, j.lease_expires_at, j.enqueued_at, j.started_at,
            j.finished_at, j.unique_key, j.last_error, j.payload
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
      SELECT 1 FROM :"schema".live j WHERE j.queue = p_queue AND j.state = 'running'
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
    )
    UPDATE :"schema".live j
    SET state = 'running',
        attempts = j.attempts + 1,
        lease_token = p_tokens[picked.n::integer],
        leased_by = p_worker,
        lease_expires_at = v_now + p_lease_us * interval '1 microsecond',
        started_at = v_now
    FROM picked
    WHERE j.id = ANY (ARRAY(SELECT x.id FROM picked x)) AND j.id = picked.id
      AND (j.state || '') = 'available'
    RETURNING j.id, j.queue, j.state, j.priority, j.run_at, j.attempts, j.max_attempts,
              j.lease_token, j.leased_by, j.lease_expires_at, j.enqueued_at, j.started_at,
              j.finished_at, j.unique_key, j.last_error, j.payload, NULL::text, true;
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
