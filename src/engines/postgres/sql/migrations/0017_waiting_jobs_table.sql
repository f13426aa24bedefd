-- Migration 17: waiting jobs in a table of their own (docs/postgres-storage.md, section 14,
-- the rest of step 1). A job that waits for other jobs or for a group (state 'waiting',
-- migration 9) leaves live for `waiting`, a plain table with the view's columns in its order,
-- and the jobs view gets a third branch. live keeps the jobs a lease or a settle touches
-- (available and running): what the rings of section 4 will split into ready and running, with
-- no place in either for a job that nothing may lease yet.
--
-- A job moves between the tables in one statement (DELETE … RETURNING into INSERT), so that
-- every snapshot sees it in exactly one:
--   waiting → live   its last dependency met (resolve_succeeded in statements.sql), or a hand
--                    edit through the view; the insert into live announces it
--                    (jobs_notify_inserted) as the update to available did;
--   live → waiting   a retried dependent that waits again (rewait);
--   waiting → done   cancelled: by a dependency that failed (resolve_failed), or by cancel.
-- A waiting job holds its unique key like a live one (unique_keys, migration 15) and keeps its
-- error history: the row triggers that give a key back, or forget the history, skip a job that
-- is in one of the other tables at the end of the statement that moved it (an AFTER trigger
-- runs then), as migration 10's did for a move between live and done.
--
-- A move is not an update: a statement that waits for a row another transaction is moving,
-- then finds it gone, does not follow it into its new table. Two statements change waiting jobs
-- of other transactions: the lock of a dependent's dependencies, which now locks waiting ones
-- in a statement of its own before the live ones (lock_dependencies(), below), and cancel,
-- which the engine repeats once for the ids it missed (docs/postgres.md, "Waiting jobs").
--
-- Locks: ACCESS EXCLUSIVE on live, waited for at most 5 s (lock_for_upgrade(), migration 15);
-- under it, the waiting jobs are moved (one read of jobs_waiting_idx) and live's narrower state
-- CHECK is validated (one sequential read of live, proportional to the backlog; the planner
-- leaves live out of a query for waiting jobs only with a validated CHECK). Written once and
-- never edited after release.
SELECT :"schema".lock_for_upgrade(':"schema".live', 'ACCESS EXCLUSIVE');

-- Rows are inserted, updated while their dependencies are met one by one (waiting_for,
-- notify), and deleted when the job leaves: live's settings.
CREATE TABLE :"schema".waiting (
  id               bigint      PRIMARY KEY,
  queue            text        NOT NULL
                   CHECK (octet_length(queue) <= 128 AND queue ~ '^[A-Za-z0-9][A-Za-z0-9_.-]*$'),
  state            text        NOT NULL DEFAULT 'waiting' CHECK (state = 'waiting'),
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
CREATE INDEX waiting_queue_idx ON :"schema".waiting (queue, id);
CREATE INDEX waiting_group_idx ON :"schema".waiting (group_name, id) WHERE group_name IS NOT NULL;

-- The triggers that give a key back and forget a job's error history, aware of the new table,
-- before anything moves.
CREATE OR REPLACE FUNCTION :"schema".forget_job_errors() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  DELETE FROM :"schema".job_errors e
  WHERE e.job_id = OLD.id
    AND NOT EXISTS (SELECT 1 FROM :"schema".live l WHERE l.id = OLD.id)
    AND NOT EXISTS (SELECT 1 FROM :"schema".waiting w WHERE w.id = OLD.id)
    AND NOT EXISTS (SELECT 1 FROM :"schema".done d WHERE d.id = OLD.id);
  RETURN NULL;
END
$fn$;

-- Migration 15's keep_unique_key(): a job deleted from live or waiting gives its key back
-- unless it is in the other one now (moved by the statement, which every mover does with the
-- job's queue and key unchanged; the view's trigger changes them in place first). A running
-- job leaves live only for done or for good (the view's trigger moves one to waiting by way of
-- 'available'), so a keyed job's completion, the hot path, does not look in waiting.
CREATE OR REPLACE FUNCTION :"schema".keep_unique_key() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $fn$
BEGIN
  IF TG_OP = 'DELETE' AND (TG_TABLE_NAME = 'waiting' OR OLD.state <> 'running') THEN
    IF TG_TABLE_NAME = 'live' THEN
      PERFORM FROM :"schema".waiting w WHERE w.id = OLD.id;
    ELSE
      PERFORM FROM :"schema".live l WHERE l.id = OLD.id;
    END IF;
    IF FOUND THEN
      RETURN NULL;
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

CREATE TRIGGER waiting_forget_errors AFTER DELETE ON :"schema".waiting
  FOR EACH ROW WHEN (OLD.last_error IS NOT NULL)
  EXECUTE FUNCTION :"schema".forget_job_errors();
CREATE TRIGGER waiting_move_unique_key AFTER UPDATE OF queue, unique_key ON :"schema".waiting
  FOR EACH ROW WHEN ((OLD.queue, OLD.unique_key) IS DISTINCT FROM (NEW.queue, NEW.unique_key))
  EXECUTE FUNCTION :"schema".keep_unique_key();
CREATE TRIGGER waiting_release_unique_key AFTER DELETE ON :"schema".waiting
  FOR EACH ROW WHEN (OLD.unique_key IS NOT NULL)
  EXECUTE FUNCTION :"schema".keep_unique_key();

-- The waiting jobs move, keys and error history kept (the triggers above).
WITH moved AS (
  DELETE FROM :"schema".live j WHERE j.state = 'waiting'
  RETURNING j.*
)
INSERT INTO :"schema".waiting SELECT * FROM moved;
-- Not analysed here: a table that never was is planned as at least 10 pages, where one
-- analysed empty is planned as empty, and the engine's statements that find waiting jobs by
-- id would keep a generic plan that reads the whole table for as long as it grows (until
-- autovacuum analyses it, after 50 rows and 2% have changed).

DROP INDEX :"schema".jobs_waiting_idx;
ALTER TABLE :"schema".live
  DROP CONSTRAINT live_state_check,
  ADD CONSTRAINT live_state_check CHECK (state IN ('available', 'running'));

-- The view: a third branch, the columns and their defaults as they were.
CREATE OR REPLACE VIEW :"schema".jobs AS
  SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
         lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error,
         payload, progress, waiting_for, notify, delay_us, group_name
  FROM :"schema".live
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

-- Privileges: a role granted rights on live gets the same on waiting, which the engine's
-- statements and the SQL functions write in the caller's name.
DO $do$
DECLARE
  g record;
BEGIN
  FOR g IN
    SELECT a.privilege_type, a.grantee, a.is_grantable
    FROM pg_class c, aclexplode(c.relacl) a
    WHERE c.oid = ':"schema".live'::regclass AND a.grantee <> c.relowner
      AND a.privilege_type IN ('SELECT', 'INSERT', 'UPDATE', 'DELETE')
  LOOP
    EXECUTE format('GRANT %s ON :"schema".waiting TO %s%s', g.privilege_type,
                   CASE WHEN g.grantee = 0 THEN 'PUBLIC'
                        ELSE quote_ident(pg_get_userbyid(g.grantee)) END,
                   CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
  END LOOP;
END
$do$;

-- Migration 15's claim_unique_key(), for a job the view's trigger put into live or waiting.
CREATE OR REPLACE FUNCTION :"schema".claim_unique_key(p_id bigint) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog AS $fn$
  INSERT INTO :"schema".unique_keys (queue, unique_key, job_id)
  SELECT j.queue, j.unique_key, j.id FROM :"schema".live j
  WHERE j.id = p_id AND j.unique_key IS NOT NULL
  UNION ALL
  SELECT j.queue, j.unique_key, j.id FROM :"schema".waiting j
  WHERE j.id = p_id AND j.unique_key IS NOT NULL;
$fn$;

-- Migration 15's jobs_view_write() with three tables: each state has its table (table_of),
-- and a change of state that crosses tables is a move. A move between live and waiting makes
-- the other changes in place first, so that a changed queue or key moves the key
-- (keep_unique_key) before the row moves with it unchanged; a running job leaving live for
-- waiting is made available there first, since keep_unique_key keeps the key of a job moved
-- out of live only when it was not running.
CREATE FUNCTION :"schema".table_of(p_state text) RETURNS text
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN p_state IN ('available', 'running') THEN 'live'
              WHEN p_state = 'waiting' THEN 'waiting'
              ELSE 'done' END;
$fn$;

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

-- The enqueue of a dependent locks its unfinished dependencies (marking them notify), so that
-- none finishes before it commits unseen, then reads the state of each: three statements, each
-- with a snapshot of its own (a VOLATILE function's statements each take one). Waiting ones
-- first: a job the resolver moves from waiting to live while the first statement waits for
-- its row is gone from waiting when the wait ends, and the second, whose snapshot is taken
-- after, locks it in live; the third sees what finished while the others waited. One round
-- trip where the engine sent two statements before (three would cost a dependent's enqueue a
-- fifth, docs/benchmarks.md run 52), and plans that probe the primary keys whatever the
-- statistics say (waiting is often empty when planned, then grows). Run as the caller, who
-- needs UPDATE on both tables, as the engine's statements do.
CREATE FUNCTION :"schema".lock_dependencies(p_ids bigint[])
RETURNS TABLE (id bigint, state text)
LANGUAGE plpgsql VOLATILE SET enable_seqscan = off AS $fn$
#variable_conflict use_column
BEGIN
  UPDATE :"schema".waiting j SET notify = true WHERE j.id = ANY(p_ids);
  UPDATE :"schema".live j SET notify = true WHERE j.id = ANY(p_ids);
  RETURN QUERY SELECT j.id, j.state FROM :"schema".jobs j WHERE j.id = ANY(p_ids);
END
$fn$;

-- Migration 15's enqueue_after(): a job with an unmet dependency goes into waiting; its
-- dependencies are locked by lock_dependencies().
CREATE OR REPLACE FUNCTION :"schema".enqueue_after(after bigint[], queue text,
                                  payload bytea DEFAULT ''::bytea,
                                  priority integer DEFAULT 100, run_at timestamptz DEFAULT NULL,
                                  delay interval DEFAULT NULL, max_attempts integer DEFAULT 25,
                                  unique_key text DEFAULT NULL, group_name text DEFAULT NULL,
                                  after_group text DEFAULT NULL)
RETURNS bigint LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  job_id bigint;
  missing bigint;
  unmet integer;
  failed_id bigint;
  failed_state text;
  group_id bigint;
  group_live bigint;
  delay_us bigint := coalesce((extract(epoch FROM $6) * 1000000)::bigint, 0);
BEGIN
  IF $5 IS NOT NULL AND $6 IS NOT NULL THEN
    RAISE EXCEPTION 'give run_at or delay, not both' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF coalesce(array_length($1, 1), 0) = 0 AND $9 IS NULL AND $10 IS NULL THEN
    RETURN :"schema".enqueue($2, $3, $4, $5, $6, $7, $8);
  END IF;
  IF $9 = $10 THEN
    RAISE EXCEPTION 'a job cannot wait for its own group' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF $10 IS NOT NULL THEN
    -- Locked, so that the group's last member cannot finish unseen before this commits.
    SELECT g.id, g.live INTO group_id, group_live FROM :"schema".groups g
    WHERE g.name = $10 FOR UPDATE;
    IF group_id IS NULL THEN
      RAISE EXCEPTION 'no job was ever enqueued in group % to wait for', $10
        USING ERRCODE = 'invalid_parameter_value';
    END IF;
  END IF;
  IF (SELECT count(DISTINCT a) FROM unnest(coalesce($1, '{}')) a)
       <> coalesce(array_length($1, 1), 0)
     OR EXISTS (SELECT 1 FROM unnest($1) a WHERE a IS NULL OR a < 1) THEN
    RAISE EXCEPTION 'job ids to wait for must be positive and listed once'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM :"schema".lock_dependencies($1);
  SELECT a INTO missing FROM unnest($1) a
  WHERE NOT EXISTS (SELECT 1 FROM :"schema".jobs j WHERE j.id = a) LIMIT 1;
  IF missing IS NOT NULL THEN
    RAISE EXCEPTION 'job % to wait for does not exist', missing
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT count(*) + CASE WHEN group_live > 0 THEN 1 ELSE 0 END INTO unmet
  FROM :"schema".jobs j WHERE j.id = ANY($1) AND j.state <> 'succeeded';
  IF $9 IS NOT NULL THEN
    INSERT INTO :"schema".groups AS g (name, live) VALUES ($9, 1)
    ON CONFLICT (name) DO UPDATE SET live = g.live + 1;
  END IF;
  SELECT j.id, j.state INTO failed_id, failed_state
  FROM unnest($1) WITH ORDINALITY AS a(id, ord) JOIN :"schema".jobs j ON j.id = a.id
  WHERE j.state IN ('dead', 'cancelled') ORDER BY a.ord LIMIT 1;
  IF failed_id IS NOT NULL THEN
    -- Cancelled at once: a finished job, in done, which holds no unique key.
    INSERT INTO :"schema".done (id, queue, state, priority, run_at, attempts, max_attempts,
                                enqueued_at, finished_at, unique_key, last_error, payload,
                                delay_us, group_name, notify, waiting_for)
    VALUES (nextval(':"schema".jobs_id_seq'), $2, 'cancelled', $4,
            coalesce($5, statement_timestamp()), 0, $7, statement_timestamp(),
            statement_timestamp(), $8,
            'cancelled: dependency ' || failed_id || ' is ' || failed_state, $3, delay_us, $9,
            $9 IS NOT NULL, unmet)
    RETURNING id INTO job_id;
  ELSE
    job_id := nextval(':"schema".jobs_id_seq');
    IF $8 IS NOT NULL THEN
      INSERT INTO :"schema".unique_keys AS k (queue, unique_key, job_id)
      VALUES ($2, $8, job_id)
      ON CONFLICT (queue, unique_key) DO NOTHING;
      IF NOT FOUND THEN
        RAISE EXCEPTION 'the unique key is held by a job that was not enqueued after these jobs'
          USING ERRCODE = 'unique_violation';
      END IF;
    END IF;
    IF unmet > 0 THEN
      INSERT INTO :"schema".waiting AS j (id, queue, payload, priority, run_at, max_attempts,
                                          unique_key, waiting_for, delay_us, group_name, notify)
      VALUES (job_id, $2, $3, $4, coalesce($5, statement_timestamp()), $7, $8, unmet, delay_us,
              $9, $9 IS NOT NULL);
    ELSE
      INSERT INTO :"schema".live AS j (id, queue, payload, priority, run_at, max_attempts,
                                       unique_key, waiting_for, delay_us, group_name, notify)
      OVERRIDING SYSTEM VALUE
      VALUES (job_id, $2, $3, $4,
              greatest(coalesce($5, statement_timestamp()),
                       statement_timestamp() + coalesce($6, interval '0')),
              $7, $8, 0, delay_us, $9, $9 IS NOT NULL);
    END IF;
  END IF;
  INSERT INTO :"schema".dependencies (depends_on, job_id, met)
  SELECT j.id, job_id, j.state = 'succeeded' FROM :"schema".jobs j WHERE j.id = ANY($1);
  IF group_id IS NOT NULL THEN
    INSERT INTO :"schema".dependencies (depends_on, job_id, met)
    VALUES (-group_id, job_id, group_live = 0);
  END IF;
  RETURN job_id;
END
$fn$;
