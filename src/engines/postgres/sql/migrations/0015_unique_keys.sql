-- Migration 15: unique keys held in a table of their own (docs/postgres-storage.md, section 14,
-- step 1). Until now a job's key was held by a partial unique index of live,
-- jobs_unique_key_idx. The storage of section 4 splits the live jobs over several tables and
-- partitions, and no unique index spans tables, nor can one of a partitioned table leave out
-- its partition key. So the keys move to unique_keys, one row per live job with a key, and the
-- index goes. It also costs a keyed job less: the index took one more entry at every lease
-- (a lease's update cannot be HOT), the table takes none.
--
-- Who writes it:
--   every insert of a keyed job into live   claims the key first, in its own statement: the
--                              engine's enqueues (statements.sql: enqueue, enqueue_tick,
--                              insert_dependent, retry, retry_all), the SQL functions enqueue
--                              and enqueue_after, and the jobs view's INSTEAD OF trigger
--                              (claim_unique_key(), below). An enqueue that hands back the
--                              holder's id claims with ON CONFLICT DO NOTHING; the others with
--                              a plain INSERT, which fails with unique_violation on a held key
--                              as the index did, after waiting for an uncommitted holder;
--   a change of queue or key   live's row trigger gives the old key back and claims the new;
--   a delete from live         live's row trigger gives the key back (a job moved to done, or
--                              deleted, by any program).
-- Claims are not a trigger: a row trigger that reads unique_keys cost 6 µs a keyed row and
-- slowed batched keyed enqueues by a third (docs/benchmarks.md, run 44); only an INSERT
-- written straight into live, which is readpast's table, holds no key that way (jobs are
-- written through readpast.jobs or the functions, docs/sql.md).
--
-- Locks: ACCESS EXCLUSIVE on live (the index is dropped), waited for at most 5 s; under it,
-- one read of the keyed live jobs through the index about to go.
--
-- lock_for_upgrade() is the wait of migrations 10 and 11, written once for this migration and
-- those after it: a long transaction that holds the table makes the upgrade fail at once,
-- naming that session, instead of queueing behind it with every worker queued behind the
-- upgrade. The lock, taken inside the function's exception block, is kept by the migration's
-- transaction; the function's own lock_timeout ends with the call.
CREATE FUNCTION :"schema".lock_for_upgrade(p_table regclass, p_mode text) RETURNS void
LANGUAGE plpgsql SET lock_timeout = '5s' AS $fn$
BEGIN
  IF p_mode NOT IN ('SHARE ROW EXCLUSIVE', 'ACCESS EXCLUSIVE') THEN
    RAISE EXCEPTION 'lock_for_upgrade: no lock mode %', p_mode
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  EXECUTE format('LOCK TABLE %s IN %s MODE', p_table, p_mode);
EXCEPTION WHEN lock_not_available THEN
  RAISE EXCEPTION 'the upgrade could not lock % within 5 s: held by %', p_table,
    coalesce((SELECT string_agg(format('pid %s (%s, %s since %s)', a.pid, a.usename,
                                       a.state, a.xact_start), '; ')
              FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
              WHERE l.relation = p_table AND l.granted AND l.pid <> pg_backend_pid()),
             'another session')
    USING ERRCODE = 'lock_not_available',
          HINT = 'end that transaction, or wait for it, and run readpast init again';
END
$fn$;
REVOKE ALL ON FUNCTION :"schema".lock_for_upgrade(regclass, text) FROM PUBLIC;

SELECT :"schema".lock_for_upgrade(':"schema".live', 'ACCESS EXCLUSIVE');

-- Rows are inserted and deleted, never updated, and only probed by their primary key; a key
-- reused often leaves dead versions that only vacuum removes, hence live's vacuum settings.
CREATE TABLE :"schema".unique_keys (
  queue      text   NOT NULL,
  unique_key text   NOT NULL,
  job_id     bigint NOT NULL,
  PRIMARY KEY (queue, unique_key)
) WITH (
  autovacuum_vacuum_scale_factor = 0.01,
  autovacuum_vacuum_threshold = 1000,
  autovacuum_vacuum_insert_scale_factor = 0.01,
  autovacuum_vacuum_cost_delay = 0
);

INSERT INTO :"schema".unique_keys (queue, unique_key, job_id)
SELECT j.queue, j.unique_key, j.id FROM :"schema".live j
WHERE j.unique_key IS NOT NULL AND j.state IN ('available', 'running', 'waiting');

DROP INDEX :"schema".jobs_unique_key_idx;

-- Privileges: a role granted rights on live (an application's, carried over from the jobs
-- table by migration 10) gets the same on unique_keys, which the enqueues below and the
-- engine's statements read and write in the caller's name. The triggers and the view's
-- claim_unique_key() need none of the caller's: SECURITY DEFINER, like the lanes' functions
-- (migration 11), so that a role allowed to write jobs through the view may write keyed ones
-- without rights of its own on unique_keys.
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
    EXECUTE format('GRANT %s ON :"schema".unique_keys TO %s%s', g.privilege_type,
                   CASE WHEN g.grantee = 0 THEN 'PUBLIC'
                        ELSE quote_ident(pg_get_userbyid(g.grantee)) END,
                   CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
  END LOOP;
END
$do$;

-- Changed and deleted rows. The old row gives its key back if it held it; the new row of a
-- change claims its key, or fails with unique_violation if another job holds it.
CREATE FUNCTION :"schema".keep_unique_key() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $fn$
BEGIN
  DELETE FROM :"schema".unique_keys k
  WHERE k.queue = OLD.queue AND k.unique_key = OLD.unique_key AND k.job_id = OLD.id;
  IF TG_OP = 'UPDATE' AND NEW.unique_key IS NOT NULL THEN
    INSERT INTO :"schema".unique_keys (queue, unique_key, job_id)
    VALUES (NEW.queue, NEW.unique_key, NEW.id);
  END IF;
  RETURN NULL;
END
$fn$;

-- Row level with WHEN clauses: a job without a key, and the lease and settles (which name
-- neither column), pay for the condition only.
CREATE TRIGGER live_move_unique_key AFTER UPDATE OF queue, unique_key ON :"schema".live
  FOR EACH ROW WHEN ((OLD.queue, OLD.unique_key) IS DISTINCT FROM (NEW.queue, NEW.unique_key))
  EXECUTE FUNCTION :"schema".keep_unique_key();
CREATE TRIGGER live_release_unique_key AFTER DELETE ON :"schema".live
  FOR EACH ROW WHEN (OLD.unique_key IS NOT NULL)
  EXECUTE FUNCTION :"schema".keep_unique_key();

-- The claim of a job the jobs view's trigger has just put into live, as its owner: a role
-- allowed to insert jobs through the view needs no rights on unique_keys. It claims only a
-- key the job in live has, so that it cannot be called to hold keys for jobs that are not
-- there. A held key fails with unique_violation.
CREATE FUNCTION :"schema".claim_unique_key(p_id bigint) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog AS $fn$
  INSERT INTO :"schema".unique_keys (queue, unique_key, job_id)
  SELECT j.queue, j.unique_key, j.id FROM :"schema".live j
  WHERE j.id = p_id AND j.unique_key IS NOT NULL;
$fn$;

-- Migration 10's jobs_view_write(), which now claims the key of each job it puts into live
-- (the only change: the two claim_unique_key() calls).
CREATE OR REPLACE FUNCTION :"schema".jobs_view_write() RETURNS trigger
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
      PERFORM :"schema".claim_unique_key(NEW.id);
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
    PERFORM :"schema".claim_unique_key(NEW.id);
    DELETE FROM :"schema".done WHERE id = OLD.id;
  ELSE
    INSERT INTO :"schema".done SELECT NEW.*;
    DELETE FROM :"schema".live WHERE id = OLD.id;
  END IF;
  RETURN NEW;
END
$fn$;

-- The SQL interface (docs/sql.md), same signatures: enqueue and enqueue_after claim the key
-- first, then insert the job with the id they claimed it for, so that a held key hands back
-- its holder (enqueue) or fails with the same message (enqueue_after) as before.
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
  IF $7 IS NULL THEN
    INSERT INTO :"schema".live AS j (queue, payload, priority, run_at, max_attempts)
    VALUES ($1, $2, $3, coalesce($4, statement_timestamp() + coalesce($5, interval '0')), $6)
    RETURNING j.id INTO v_id;
    RETURN v_id;
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
  ELSE
    SELECT w.job_id INTO v_id FROM :"schema".unique_windows w
    WHERE w.queue = $1 AND w.unique_key = $7 AND w.until > statement_timestamp()
      AND w.job_id IS NOT NULL;
    IF v_id IS NOT NULL THEN
      RETURN v_id;
    END IF;
  END IF;
  LOOP
    INSERT INTO :"schema".unique_keys AS k (queue, unique_key, job_id)
    VALUES ($1, $7, nextval(':"schema".jobs_id_seq'))
    ON CONFLICT (queue, unique_key) DO NOTHING
    RETURNING k.job_id INTO v_id;
    IF v_id IS NOT NULL THEN
      INSERT INTO :"schema".live AS j (id, queue, payload, priority, run_at, max_attempts,
                                       unique_key)
      OVERRIDING SYSTEM VALUE
      VALUES (v_id, $1, $2, $3, coalesce($4, statement_timestamp() + coalesce($5, interval '0')),
              $6, $7);
      IF $8 IS NOT NULL THEN
        UPDATE :"schema".unique_windows w SET job_id = v_id
        WHERE w.queue = $1 AND w.unique_key = $7;
      END IF;
      RETURN v_id;
    END IF;
    -- The key is held: return the holder (and drop a window claimed for a job that was not
    -- enqueued). Each statement of this function takes a new snapshot, so a holder
    -- committed after the INSERT's snapshot is visible here.
    SELECT k.job_id INTO v_id FROM :"schema".unique_keys k
    WHERE k.queue = $1 AND k.unique_key = $7;
    IF v_id IS NOT NULL THEN
      IF $8 IS NOT NULL THEN
        DELETE FROM :"schema".unique_windows w WHERE w.queue = $1 AND w.unique_key = $7;
      END IF;
      RETURN v_id;
    END IF;
    -- The holder finished in between: claim again.
  END LOOP;
END
$fn$;

-- enqueue_after (migration 10's), claiming the key first.
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
    INSERT INTO :"schema".live AS j (id, queue, payload, priority, run_at, max_attempts,
                                     unique_key, state, waiting_for, delay_us, group_name, notify)
    OVERRIDING SYSTEM VALUE
    VALUES (job_id, $2, $3, $4,
            CASE WHEN unmet = 0
                 THEN greatest(coalesce($5, statement_timestamp()),
                               statement_timestamp() + coalesce($6, interval '0'))
                 ELSE coalesce($5, statement_timestamp()) END,
            $7, $8, CASE WHEN unmet > 0 THEN 'waiting' ELSE 'available' END,
            unmet, delay_us, $9, $9 IS NOT NULL);
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
