-- Migration 10: finished jobs in a table of their own (docs/postgres-storage.md, build order
-- step 1). `jobs` becomes a view over two tables with the same columns:
--   live  available, running and waiting jobs: every index the hot path uses, the wake-up
--         triggers, the identity that draws every job's id (jobs_id_seq, same name and
--         counter: no id is ever reused);
--   done  succeeded, dead and cancelled jobs kept for retention: the table that was `jobs`,
--         renamed, so that the history is not copied.
-- A job moves between them in one statement (DELETE … RETURNING into INSERT), so every
-- snapshot sees it in exactly one. The view keeps `readpast.jobs` the name to query, and its
-- INSTEAD OF triggers keep INSERT, UPDATE and DELETE on it working (docs/sql.md). What the
-- split is for comes with the next steps: the live table can then be laid out for a held
-- snapshot without carrying the history.
--
-- Locks: ACCESS EXCLUSIVE on jobs from the first statement to the commit, waited for at most
-- 5 s (a long transaction that holds jobs makes `readpast init` fail, naming it, instead of
-- stopping every worker behind the wait). Under it: the live jobs are moved (proportional to
-- the backlog) and done's state CHECK is validated (one sequential read of the history).
-- docs/postgres.md ("Upgrading to schema 10") gives the times measured. Written once and
-- never edited after release.
DO $do$
BEGIN
  SET LOCAL lock_timeout = '5s';
  LOCK TABLE :"schema".jobs IN ACCESS EXCLUSIVE MODE;
EXCEPTION WHEN lock_not_available THEN
  RAISE EXCEPTION 'the upgrade could not lock %.jobs within 5 s: held by %', ':"schema"',
    coalesce((SELECT string_agg(format('pid %s (%s, %s since %s)', a.pid, a.usename,
                                       a.state, a.xact_start), '; ')
              FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
              WHERE l.relation = ':"schema".jobs'::regclass AND l.granted
                AND l.pid <> pg_backend_pid()), 'another session')
    USING ERRCODE = 'lock_not_available',
          HINT = 'end that transaction, or wait for it, and run readpast init again';
END
$do$;

ALTER TABLE :"schema".jobs RENAME TO done;

-- The history's triggers go first: a live job moved out below must keep its error history.
DROP TRIGGER jobs_notify_inserted ON :"schema".done;
DROP TRIGGER jobs_notify_available ON :"schema".done;
DROP TRIGGER jobs_forget_errors ON :"schema".done;

-- The identity moves to live with the sequence's name, position and privileges.
DO $do$
DECLARE
  last bigint;
  called boolean;
  seq_acl aclitem[];
  g record;
BEGIN
  SELECT s.last_value, s.is_called INTO last, called FROM :"schema".jobs_id_seq s;
  SELECT c.relacl INTO seq_acl FROM pg_class c WHERE c.oid = ':"schema".jobs_id_seq'::regclass;
  ALTER TABLE :"schema".done ALTER COLUMN id DROP IDENTITY;
  CREATE TABLE :"schema".live (
    id               bigint      GENERATED ALWAYS AS IDENTITY
                                 (SEQUENCE NAME :"schema".jobs_id_seq) PRIMARY KEY,
    queue            text        NOT NULL
                     CHECK (octet_length(queue) <= 128 AND queue ~ '^[A-Za-z0-9][A-Za-z0-9_.-]*$'),
    state            text        NOT NULL DEFAULT 'available'
                     CHECK (state IN ('available', 'running', 'waiting')),
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
    CONSTRAINT live_running_has_lease
      CHECK (state <> 'running' OR (lease_token IS NOT NULL AND lease_expires_at IS NOT NULL))
  ) WITH (
    -- The settings the jobs table had (migration 1 says why): every live row is updated
    -- once or twice before it leaves.
    fillfactor = 80,
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_insert_scale_factor = 0.01,
    autovacuum_analyze_scale_factor = 0.02,
    autovacuum_vacuum_cost_delay = 0
  );
  PERFORM setval(':"schema".jobs_id_seq', last, called);
  FOR g IN
    SELECT a.privilege_type, a.grantee, a.is_grantable
    FROM aclexplode(seq_acl) a  -- none for NULL (default privileges): the function is strict
    WHERE a.grantee <> (SELECT c.relowner FROM pg_class c
                        WHERE c.oid = ':"schema".jobs_id_seq'::regclass)
  LOOP
    EXECUTE format('GRANT %s ON SEQUENCE :"schema".jobs_id_seq TO %s%s', g.privilege_type,
                   CASE WHEN g.grantee = 0 THEN 'PUBLIC'
                        ELSE quote_ident(pg_get_userbyid(g.grantee)) END,
                   CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
  END LOOP;
END
$do$;

-- The live jobs leave the history, found through the partial indexes that list them.
WITH moved AS (
  DELETE FROM :"schema".done j WHERE j.state IN ('available', 'running', 'waiting')
  RETURNING j.*
)
INSERT INTO :"schema".live OVERRIDING SYSTEM VALUE SELECT * FROM moved;
-- live is new: without statistics until autovacuum's first pass (a sample, not a scan).
ANALYZE :"schema".live;

-- Indexes: the live states' go to live under the names they had, the finished states' stay.
DROP INDEX :"schema".jobs_lease_idx, :"schema".jobs_due_idx, :"schema".jobs_expiry_idx,
           :"schema".jobs_unique_key_idx, :"schema".jobs_waiting_idx;
CREATE INDEX jobs_lease_idx ON :"schema".live (queue, priority, run_at, id)
  WHERE state = 'available';
CREATE INDEX jobs_due_idx ON :"schema".live (queue, run_at) WHERE state = 'available';
CREATE INDEX jobs_expiry_idx ON :"schema".live (queue, lease_expires_at) WHERE state = 'running';
CREATE UNIQUE INDEX jobs_unique_key_idx ON :"schema".live (queue, unique_key)
  WHERE unique_key IS NOT NULL AND state IN ('available', 'running', 'waiting');
CREATE INDEX jobs_waiting_idx ON :"schema".live (queue, id) WHERE state = 'waiting';
CREATE INDEX live_group_idx ON :"schema".live (group_name, id) WHERE group_name IS NOT NULL;

-- done holds finished states only. Validated, not NOT VALID: the planner drops done's branch
-- of the view for a live state only with a validated CHECK (a page of running jobs walked
-- done's primary key otherwise: docs/benchmarks.md, run 32).
ALTER INDEX :"schema".jobs_pkey RENAME TO done_pkey;
ALTER INDEX :"schema".jobs_group_idx RENAME TO done_group_idx;
ALTER TABLE :"schema".done
  DROP CONSTRAINT jobs_state_check,
  DROP CONSTRAINT jobs_running_has_lease,
  ADD CONSTRAINT done_state_check CHECK (state IN ('succeeded', 'dead', 'cancelled')),
  ALTER COLUMN state DROP DEFAULT,
  ALTER COLUMN priority DROP DEFAULT,
  ALTER COLUMN run_at DROP DEFAULT,
  ALTER COLUMN attempts DROP DEFAULT,
  ALTER COLUMN max_attempts DROP DEFAULT,
  ALTER COLUMN enqueued_at DROP DEFAULT,
  ALTER COLUMN payload DROP DEFAULT;

-- Wake-up: the triggers of migration 1, now on the table that receives runnable jobs.
CREATE TRIGGER jobs_notify_inserted AFTER INSERT ON :"schema".live
  REFERENCING NEW TABLE AS new_jobs
  FOR EACH STATEMENT EXECUTE FUNCTION :"schema".notify_inserted();
CREATE TRIGGER jobs_notify_available AFTER UPDATE ON :"schema".live
  FOR EACH ROW
  WHEN (NEW.state = 'available' AND OLD.state <> 'available'
        AND NEW.run_at <= statement_timestamp())
  EXECUTE FUNCTION :"schema".notify_available();

-- The error history goes when its job is gone from both tables. A move deletes the job from
-- one table and inserts it into the other in the same statement, and an AFTER trigger runs at
-- the end of that statement, when it sees the job in its new table: only a job that really
-- ended (a completion with zero retention, purge, retention, a DELETE) loses its history.
CREATE OR REPLACE FUNCTION :"schema".forget_job_errors() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  DELETE FROM :"schema".job_errors e
  WHERE e.job_id = OLD.id
    AND NOT EXISTS (SELECT 1 FROM :"schema".live l WHERE l.id = OLD.id)
    AND NOT EXISTS (SELECT 1 FROM :"schema".done d WHERE d.id = OLD.id);
  RETURN NULL;
END
$fn$;
CREATE TRIGGER live_forget_errors AFTER DELETE ON :"schema".live
  FOR EACH ROW WHEN (OLD.last_error IS NOT NULL)
  EXECUTE FUNCTION :"schema".forget_job_errors();
CREATE TRIGGER done_forget_errors AFTER DELETE ON :"schema".done
  FOR EACH ROW WHEN (OLD.last_error IS NOT NULL)
  EXECUTE FUNCTION :"schema".forget_job_errors();

-- The view: every job, with the columns and column order the table had.
CREATE VIEW :"schema".jobs AS
  SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
         lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error,
         payload, progress, waiting_for, notify, delay_us, group_name
  FROM :"schema".live
  UNION ALL
  SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
         lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error,
         payload, progress, waiting_for, notify, delay_us, group_name
  FROM :"schema".done;
-- The table's defaults, so that INSERT INTO jobs (queue) VALUES (…) is still an enqueue.
ALTER VIEW :"schema".jobs
  ALTER COLUMN state SET DEFAULT 'available',
  ALTER COLUMN priority SET DEFAULT 100,
  ALTER COLUMN run_at SET DEFAULT statement_timestamp(),
  ALTER COLUMN attempts SET DEFAULT 0,
  ALTER COLUMN max_attempts SET DEFAULT 25,
  ALTER COLUMN enqueued_at SET DEFAULT statement_timestamp(),
  ALTER COLUMN payload SET DEFAULT ''::bytea;

-- Privileges: a role granted rights on the jobs table (an application's) keeps them on the
-- view and on live; done has them already, as the renamed table.
DO $do$
DECLARE
  g record;
  grantee text;  -- "TO …" as GRANT writes it, with the grant option when it was given
BEGIN
  FOR g IN
    SELECT a.privilege_type, a.grantee, a.is_grantable
    FROM pg_class c, aclexplode(c.relacl) a
    WHERE c.oid = ':"schema".done'::regclass AND a.grantee <> c.relowner
  LOOP
    grantee := CASE WHEN g.grantee = 0 THEN 'PUBLIC'
                    ELSE quote_ident(pg_get_userbyid(g.grantee)) END
               || CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END;
    EXECUTE format('GRANT %s ON :"schema".live TO %s', g.privilege_type, grantee);
    IF g.privilege_type IN ('SELECT', 'INSERT', 'UPDATE', 'DELETE') THEN
      EXECUTE format('GRANT %s ON :"schema".jobs TO %s', g.privilege_type, grantee);
    END IF;
  END LOOP;
END
$do$;

-- INSERT, UPDATE and DELETE on the view act on the table that holds (or will hold) the job:
-- live for a live state, done for a finished one; an UPDATE that changes a job's state from
-- one kind to the other moves it (the new row first, so that when the old one's deletion
-- ends, and its history trigger runs, the job is already in its new table).
--
-- An UPDATE acts as one on the table did. It locks the job's current row (FOR UPDATE through
-- the view locks none) and changes it only while its state and lease token are still those
-- the statement read: of two sessions taking one available job through the view (a worker of
-- the binary before schema 10, whose statements name jobs), the second changes nothing. It
-- writes only the columns the statement changed, over the row as it is now, so that what
-- another transaction wrote since the statement's snapshot (a dependency's notify, a
-- waiting_for counted down) is kept. An INSERT takes its id from jobs_id_seq, as the table's
-- GENERATED ALWAYS identity did, and refuses one given.
CREATE FUNCTION :"schema".jobs_view_write() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  cur :"schema".jobs;  -- the job's row as it is now, locked (the tables' columns, in order)
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF NEW.id IS NOT NULL THEN
      RAISE EXCEPTION 'cannot insert a non-DEFAULT value into column "id"'
        USING ERRCODE = 'generated_always', DETAIL = 'A job takes its id from jobs_id_seq.';
    END IF;
    NEW.id := nextval(':"schema".jobs_id_seq');
    IF NEW.state IN ('available', 'running', 'waiting') THEN
      INSERT INTO :"schema".live OVERRIDING SYSTEM VALUE SELECT NEW.*;
    ELSE
      INSERT INTO :"schema".done SELECT NEW.*;
    END IF;
    RETURN NEW;
  END IF;

  IF TG_OP = 'DELETE' THEN
    DELETE FROM :"schema".live WHERE id = OLD.id;
    IF NOT FOUND THEN
      DELETE FROM :"schema".done WHERE id = OLD.id;
    END IF;
    RETURN CASE WHEN FOUND THEN OLD END;
  END IF;

  IF NEW.id IS DISTINCT FROM OLD.id THEN
    RAISE EXCEPTION 'a job''s id cannot change' USING ERRCODE = 'feature_not_supported';
  END IF;
  IF OLD.state IN ('available', 'running', 'waiting') THEN
    SELECT * INTO cur FROM :"schema".live WHERE id = OLD.id FOR UPDATE;
  ELSE
    SELECT * INTO cur FROM :"schema".done WHERE id = OLD.id FOR UPDATE;
  END IF;
  IF NOT FOUND OR cur.state IS DISTINCT FROM OLD.state
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
  IF (NEW.state IN ('available', 'running', 'waiting'))
     = (OLD.state IN ('available', 'running', 'waiting')) THEN
    -- In place, in whichever table holds it (both have the view's columns, in its order).
    EXECUTE format('UPDATE :"schema".%I SET (queue, state, priority, run_at, attempts,
        max_attempts, lease_token, leased_by, lease_expires_at, enqueued_at, started_at,
        finished_at, unique_key, last_error, payload, progress, waiting_for, notify, delay_us,
        group_name)
      = (($1).queue, ($1).state, ($1).priority, ($1).run_at, ($1).attempts, ($1).max_attempts,
        ($1).lease_token, ($1).leased_by, ($1).lease_expires_at, ($1).enqueued_at,
        ($1).started_at, ($1).finished_at, ($1).unique_key, ($1).last_error, ($1).payload,
        ($1).progress, ($1).waiting_for, ($1).notify, ($1).delay_us, ($1).group_name)
      WHERE id = $2',
        CASE WHEN OLD.state IN ('available', 'running', 'waiting') THEN 'live' ELSE 'done' END)
      USING NEW, OLD.id;
  ELSIF NEW.state IN ('available', 'running', 'waiting') THEN
    INSERT INTO :"schema".live OVERRIDING SYSTEM VALUE SELECT NEW.*;
    DELETE FROM :"schema".done WHERE id = OLD.id;
  ELSE
    INSERT INTO :"schema".done SELECT NEW.*;
    DELETE FROM :"schema".live WHERE id = OLD.id;
  END IF;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER jobs_write INSTEAD OF INSERT OR UPDATE OR DELETE ON :"schema".jobs
  FOR EACH ROW EXECUTE FUNCTION :"schema".jobs_view_write();

-- ---------------------------------------------------------------------------------------
-- The SQL interface (docs/sql.md), same signatures, on the two tables. lease() returned the
-- table's row type, which the rename gave to done: it is created again returning the view's.
DROP FUNCTION :"schema".lease(text, text, integer, interval);
CREATE FUNCTION :"schema".lease(queue text, worker text, max_jobs integer DEFAULT 1,
                                lease_duration interval DEFAULT interval '30 seconds')
RETURNS SETOF :"schema".jobs LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  ids bigint[];
BEGIN
  IF EXISTS (SELECT 1 FROM :"schema".queues q WHERE q.name = $1 AND q.paused_at IS NOT NULL) THEN
    RETURN;
  END IF;
  PERFORM :"schema".rescue_expired($1);
  IF EXISTS (SELECT 1 FROM :"schema".queues q WHERE q.name = $1
             AND (q.running_limit IS NOT NULL OR q.rate_count IS NOT NULL)) THEN
    -- Read back in a statement of its own: its snapshot sees what lease_limited changed.
    ids := ARRAY(SELECT l.id FROM :"schema".lease_limited(
                   $1, $2, $3, (extract(epoch FROM $4) * 1000000)::bigint,
                   ARRAY(SELECT :"schema".new_lease_token()
                         FROM generate_series(1, greatest($3, 1)))) l
                 WHERE l.id IS NOT NULL);
    RETURN QUERY SELECT j.* FROM :"schema".live j WHERE j.id = ANY (ids)
    ORDER BY j.priority, j.run_at, j.id;
    RETURN;
  END IF;
  RETURN QUERY
  WITH picked AS (
    SELECT j.id FROM :"schema".live j
    WHERE j.queue = $1 AND j.state = 'available' AND j.run_at <= statement_timestamp()
      AND (SELECT min(d.run_at) FROM :"schema".live d
           WHERE d.queue = $1 AND d.state = 'available') <= statement_timestamp()
    ORDER BY j.priority, j.run_at, j.id
    LIMIT $3
    FOR UPDATE SKIP LOCKED
  ), leased AS (
    UPDATE :"schema".live j
    SET state = 'running',
        attempts = j.attempts + 1,
        lease_token = :"schema".new_lease_token(),
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

-- lease_limited (migration 8's), on the live table: same result columns.
CREATE OR REPLACE FUNCTION :"schema".lease_limited(p_queue text, p_worker text, p_max_jobs integer,
                                        p_lease_us bigint, p_tokens uuid[])
RETURNS TABLE (id bigint, queue text, state text, priority integer, run_at timestamptz,
               attempts integer, max_attempts integer, lease_token uuid, leased_by text,
               lease_expires_at timestamptz, enqueued_at timestamptz, started_at timestamptz,
               finished_at timestamptz, unique_key text, last_error text, payload bytea,
               throttled text, limited boolean)
LANGUAGE plpgsql VOLATILE AS $fn$
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
          -- As in the plain lease: one probe of jobs_due_idx stops the walk at once when no
          -- job is due, instead of stepping over every scheduled one.
          AND (SELECT min(d.run_at) FROM :"schema".live d
               WHERE d.queue = p_queue AND d.state = 'available') <= v_now
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
    WHERE j.id = picked.id AND j.state = 'available'
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
     OR NOT coalesce((SELECT min(j.run_at) FROM :"schema".live j
                      WHERE j.queue = p_queue AND j.state = 'available') <= v_now, false) THEN
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

CREATE OR REPLACE FUNCTION :"schema".rescue_expired(queue text, batch integer DEFAULT 10000)
RETURNS bigint LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  moved bigint;
BEGIN
  WITH expired AS (
    SELECT j.id, j.attempts >= j.max_attempts AS dies FROM :"schema".live j
    WHERE j.queue = $1::text AND j.state = 'running'
      AND j.lease_expires_at <= statement_timestamp()
    ORDER BY j.lease_expires_at
    LIMIT $2::integer
    FOR UPDATE SKIP LOCKED
  ), retried AS (
    UPDATE :"schema".live j
    SET state = 'available', run_at = statement_timestamp(),
        last_error = 'lease expired (worker lost)', lease_expires_at = NULL
    FROM expired e
    WHERE j.id = e.id AND NOT e.dies AND j.state = 'running'
    RETURNING j.id, j.attempts, j.leased_by, j.last_error
  ), died AS (
    DELETE FROM :"schema".live j USING expired e
    WHERE j.id = e.id AND e.dies AND j.state = 'running'
    RETURNING j.*
  ), buried AS (
    INSERT INTO :"schema".done
    SELECT d.id, d.queue, 'dead', d.priority, d.run_at, d.attempts, d.max_attempts,
           d.lease_token, d.leased_by, NULL, d.enqueued_at, d.started_at, statement_timestamp(),
           d.unique_key, 'lease expired after ' || d.attempts || ' attempts (worker lost)',
           d.payload, d.progress, d.waiting_for, d.notify, d.delay_us, d.group_name
    FROM died d
    RETURNING id, attempts, leased_by, last_error
  )
  INSERT INTO :"schema".job_errors (job_id, attempt, at, worker, error)
  SELECT r.id, r.attempts, statement_timestamp(), r.leased_by, r.last_error
  FROM (SELECT * FROM retried UNION ALL SELECT * FROM buried) r;
  GET DIAGNOSTICS moved = ROW_COUNT;
  RETURN moved;
END
$fn$;

CREATE OR REPLACE FUNCTION :"schema".complete(id bigint, lease_token uuid)
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
BEGIN
  WITH ended AS (
    DELETE FROM :"schema".live j WHERE j.id = $1 AND j.state = 'running' AND j.lease_token = $2
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
RETURNS text LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  new_state text;
BEGIN
  WITH held AS (
    SELECT j.id, j.attempts >= j.max_attempts AS dies FROM :"schema".live j
    WHERE j.id = $1 AND j.state = 'running' AND j.lease_token = $2
    FOR UPDATE
  ), retried AS (
    UPDATE :"schema".live j
    SET state = 'available',
        run_at = statement_timestamp()
                 + coalesce($4, :"schema".backoff_delay(j.attempts, 1000000, 3600000000,
                                                        1 - 0.2 * random())),
        last_error = $3,
        lease_expires_at = NULL
    FROM held h
    WHERE j.id = h.id AND NOT h.dies AND j.state = 'running' AND j.lease_token = $2
    RETURNING j.id, j.state, j.attempts, j.leased_by
  ), died AS (
    DELETE FROM :"schema".live j USING held h
    WHERE j.id = h.id AND h.dies AND j.state = 'running' AND j.lease_token = $2
    RETURNING j.*
  ), buried AS (
    INSERT INTO :"schema".done
    SELECT d.id, d.queue, 'dead', d.priority, d.run_at, d.attempts, d.max_attempts,
           d.lease_token, d.leased_by, NULL, d.enqueued_at, d.started_at, statement_timestamp(),
           d.unique_key, $3, d.payload, d.progress, d.waiting_for, d.notify, d.delay_us,
           d.group_name
    FROM died d
    RETURNING id, state, attempts, leased_by
  ), failed AS (
    SELECT * FROM retried UNION ALL SELECT * FROM buried
  ), recorded AS (
    INSERT INTO :"schema".job_errors (job_id, attempt, at, worker, error)
    SELECT f.id, f.attempts, statement_timestamp(), f.leased_by, $3 FROM failed f
  )
  SELECT f.state INTO new_state FROM failed f;
  RETURN new_state;
END
$fn$;

CREATE OR REPLACE FUNCTION :"schema".extend(id bigint, lease_token uuid,
                                            lease_duration interval DEFAULT interval '30 seconds')
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
BEGIN
  UPDATE :"schema".live j SET lease_expires_at = statement_timestamp() + $3
  WHERE j.id = $1 AND j.state = 'running' AND j.lease_token = $2;
  RETURN FOUND;
END
$fn$;

CREATE OR REPLACE FUNCTION :"schema".release(id bigint, lease_token uuid,
                                             delay interval DEFAULT interval '0')
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
BEGIN
  UPDATE :"schema".live j
  SET state = 'available', run_at = statement_timestamp() + $3,
      attempts = greatest(j.attempts - 1, 0), lease_expires_at = NULL
  WHERE j.id = $1 AND j.state = 'running' AND j.lease_token = $2;
  RETURN FOUND;
END
$fn$;

CREATE OR REPLACE FUNCTION :"schema".progress(id bigint, lease_token uuid, progress text)
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
BEGIN
  IF octet_length($3) > 65536 THEN
    RAISE EXCEPTION 'progress of % bytes is over the limit of 65536 bytes', octet_length($3)
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM $3::json;  -- raises for text that is not JSON
  UPDATE :"schema".live j SET progress = $3
  WHERE j.id = $1 AND j.state = 'running' AND j.lease_token = $2;
  RETURN FOUND;
END
$fn$;

-- enqueue (migration 9's) inserts into live and finds a key's holder there.
CREATE OR REPLACE FUNCTION :"schema".enqueue(queue text, payload bytea DEFAULT ''::bytea,
                            priority integer DEFAULT 100, run_at timestamptz DEFAULT NULL,
                            delay interval DEFAULT NULL, max_attempts integer DEFAULT 25,
                            unique_key text DEFAULT NULL, unique_for interval DEFAULT NULL)
RETURNS bigint LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  v_id bigint;
  v_claimed boolean;
BEGIN
  IF $4 IS NOT NULL AND $5 IS NOT NULL THEN
    RAISE EXCEPTION 'give run_at or delay, not both' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF $8 IS NOT NULL AND ($7 IS NULL OR $8 <= interval '0') THEN
    RAISE EXCEPTION 'unique_for needs a unique_key and a duration longer than zero'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF $8 IS NOT NULL THEN
    -- Claim the window (taking over a closed one): its row lock settles a race for the key.
    INSERT INTO :"schema".unique_windows AS w (queue, unique_key, job_id, until)
    VALUES ($1, $7, NULL, statement_timestamp() + $8)
    ON CONFLICT (queue, unique_key) DO UPDATE SET job_id = NULL, until = excluded.until
      WHERE w.until <= statement_timestamp()
    RETURNING true INTO v_claimed;
    IF v_claimed IS NULL THEN
      SELECT w.job_id INTO v_id FROM :"schema".unique_windows w
      WHERE w.queue = $1 AND w.unique_key = $7;
      RETURN v_id;
    END IF;
  ELSIF $7 IS NOT NULL THEN
    SELECT w.job_id INTO v_id FROM :"schema".unique_windows w
    WHERE w.queue = $1 AND w.unique_key = $7 AND w.until > statement_timestamp()
      AND w.job_id IS NOT NULL;
    IF v_id IS NOT NULL THEN
      RETURN v_id;
    END IF;
  END IF;
  LOOP
    INSERT INTO :"schema".live AS j (queue, payload, priority, run_at, max_attempts, unique_key)
    VALUES ($1, $2, $3, coalesce($4, statement_timestamp() + coalesce($5, interval '0')), $6, $7)
    ON CONFLICT (queue, unique_key)
      WHERE unique_key IS NOT NULL AND state IN ('available', 'running', 'waiting')
      DO NOTHING
    RETURNING j.id INTO v_id;
    IF v_id IS NOT NULL THEN
      IF $8 IS NOT NULL THEN
        UPDATE :"schema".unique_windows w SET job_id = v_id
        WHERE w.queue = $1 AND w.unique_key = $7;
      END IF;
      RETURN v_id;
    END IF;
    -- The key is held: return the holder (and drop a window claimed for a job that was not
    -- enqueued). Each statement of this function takes a new snapshot, so a holder
    -- committed after the INSERT's snapshot is visible here.
    SELECT j.id INTO v_id FROM :"schema".live j
    WHERE j.queue = $1 AND j.unique_key = $7 AND j.state IN ('available', 'running', 'waiting');
    IF v_id IS NOT NULL THEN
      IF $8 IS NOT NULL THEN
        DELETE FROM :"schema".unique_windows w WHERE w.queue = $1 AND w.unique_key = $7;
      END IF;
      RETURN v_id;
    END IF;
    -- The holder finished in between: insert again.
  END LOOP;
END
$fn$;

-- enqueue_after: enqueue a job that waits until every job of `after` has succeeded (the
-- rules of docs/workflows.md, as the engines apply them: a missing job is an error, a
-- succeeded one is met, a dead or cancelled one cancels the new job at once), and, with
-- after_group, until every member of that group has finished; group_name makes it a member
-- of a group. Returns its id.

-- enqueue_after (migration 9's): a job whose dependency is already dead or cancelled goes
-- straight to done.
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
  -- Lock the live dependencies first (see lock_dependencies in statements.sql).
  UPDATE :"schema".live j SET notify = true
  WHERE j.id = ANY($1) AND j.state IN ('available', 'running', 'waiting');
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
    INSERT INTO :"schema".live AS j (queue, payload, priority, run_at, max_attempts, unique_key,
                                     state, waiting_for, delay_us, group_name, notify)
    VALUES ($2, $3, $4,
            CASE WHEN unmet = 0
                 THEN greatest(coalesce($5, statement_timestamp()),
                               statement_timestamp() + coalesce($6, interval '0'))
                 ELSE coalesce($5, statement_timestamp()) END,
            $7, $8, CASE WHEN unmet > 0 THEN 'waiting' ELSE 'available' END,
            unmet, delay_us, $9, $9 IS NOT NULL)
    ON CONFLICT (queue, unique_key)
      WHERE unique_key IS NOT NULL AND state IN ('available', 'running', 'waiting')
      DO NOTHING
    RETURNING j.id INTO job_id;
  END IF;
  IF job_id IS NULL THEN
    RAISE EXCEPTION 'the unique key is held by a job that was not enqueued after these jobs'
      USING ERRCODE = 'unique_violation';
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
