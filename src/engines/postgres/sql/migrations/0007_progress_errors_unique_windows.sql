-- Migration 7: progress, error history and unique windows (docs/workflows.md). Written once
-- and never edited after release.

-- The JSON text a running job last recorded (Queue::progress). A column of the job, so that
-- it goes with its row; no statement of the lease or of complete reads or writes it. Adding
-- a nullable column without a default rewrites nothing.
ALTER TABLE :"schema".jobs ADD COLUMN progress text;

-- Every failed attempt: what fail() and the rescue of an expired lease wrote to last_error,
-- with the attempt's number, time and worker. Kept out of jobs so that its hot row does not
-- grow with each failure; read only by get(), oldest first (id order).
CREATE TABLE :"schema".job_errors (
  id      bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  job_id  bigint      NOT NULL,
  attempt integer     NOT NULL,
  at      timestamptz NOT NULL,
  worker  text,
  error   text        NOT NULL
);
CREATE INDEX job_errors_job_idx ON :"schema".job_errors (job_id, id);

-- The history goes with its job, however the job is deleted (purge, retention, remove, a
-- completion under zero retention, a user's own DELETE). A job that never failed has no
-- history and a NULL last_error (every entry also sets last_error, and nothing clears it):
-- the WHEN keeps its delete from paying for more than the condition (a foreign key would
-- run a lookup for every deleted job).
CREATE FUNCTION :"schema".forget_job_errors() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  DELETE FROM :"schema".job_errors e WHERE e.job_id = OLD.id;
  RETURN NULL;
END
$fn$;
CREATE TRIGGER jobs_forget_errors AFTER DELETE ON :"schema".jobs
  FOR EACH ROW WHEN (OLD.last_error IS NOT NULL)
  EXECUTE FUNCTION :"schema".forget_job_errors();

-- Unique windows (NewJob::unique_for): the key refuses another job of the queue until
-- `until`, whatever its job's state. A table of their own, so that jobs_unique_key_idx (live
-- jobs only) stays as it is. An enqueue takes over a closed window of its key (its row lock
-- is what makes two racing enqueues of one key insert one job); the retention pass forgets
-- closed ones along unique_windows_until_idx.
CREATE TABLE :"schema".unique_windows (
  queue      text        NOT NULL,
  unique_key text        NOT NULL,
  job_id     bigint,                -- the job that opened it (it may be gone since)
  until      timestamptz NOT NULL,
  PRIMARY KEY (queue, unique_key)
);
CREATE INDEX unique_windows_until_idx ON :"schema".unique_windows (until);

-- The rescue records a history entry for each lease it rescues, like fail() does.
CREATE OR REPLACE FUNCTION :"schema".rescue_expired(queue text, batch integer DEFAULT 10000)
RETURNS bigint LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  moved bigint;
BEGIN
  WITH expired AS (
    SELECT j.id FROM :"schema".jobs j
    WHERE j.queue = $1::text AND j.state = 'running'
      AND j.lease_expires_at <= statement_timestamp()
    ORDER BY j.lease_expires_at
    LIMIT $2::integer
    FOR UPDATE SKIP LOCKED
  ), rescued AS (
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
    WHERE j.id = expired.id AND j.state = 'running'
    RETURNING j.id, j.attempts, j.leased_by, j.last_error
  )
  INSERT INTO :"schema".job_errors (job_id, attempt, at, worker, error)
  SELECT r.id, r.attempts, statement_timestamp(), r.leased_by, r.last_error FROM rescued r;
  GET DIAGNOSTICS moved = ROW_COUNT;
  RETURN moved;
END
$fn$;

-- fail() records the attempt's error in the history, in its one statement.
CREATE OR REPLACE FUNCTION :"schema".fail(id bigint, lease_token uuid, error text,
                                    retry_after interval DEFAULT NULL)
RETURNS text LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  new_state text;
BEGIN
  WITH failed AS (
    UPDATE :"schema".jobs j
    SET state = CASE WHEN j.attempts >= j.max_attempts THEN 'dead' ELSE 'available' END,
        finished_at = CASE WHEN j.attempts >= j.max_attempts THEN statement_timestamp() END,
        run_at = CASE WHEN j.attempts >= j.max_attempts THEN j.run_at
                      ELSE statement_timestamp()
                           + coalesce($4, :"schema".backoff_delay(j.attempts, 1000000,
                                                                  3600000000, 1 - 0.2 * random()))
                 END,
        last_error = $3,
        lease_expires_at = NULL
    WHERE j.id = $1 AND j.state = 'running' AND j.lease_token = $2
    RETURNING j.id, j.state, j.attempts, j.leased_by
  ), recorded AS (
    INSERT INTO :"schema".job_errors (job_id, attempt, at, worker, error)
    SELECT f.id, f.attempts, statement_timestamp(), f.leased_by, $3 FROM failed f
  )
  SELECT f.state INTO new_state FROM failed f;
  RETURN new_state;
END
$fn$;

-- Records the running job's progress (JSON text, at most 64 KiB) under its lease token;
-- false when the lease was lost. Text that is not JSON raises invalid_text_representation.
CREATE FUNCTION :"schema".progress(id bigint, lease_token uuid, progress text)
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
BEGIN
  IF octet_length($3) > 65536 THEN
    RAISE EXCEPTION 'progress of % bytes is over the limit of 65536 bytes', octet_length($3)
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM $3::json;  -- raises for text that is not JSON
  UPDATE :"schema".jobs j SET progress = $3
  WHERE j.id = $1 AND j.state = 'running' AND j.lease_token = $2;
  RETURN FOUND;
END
$fn$;
CREATE FUNCTION :"schema".progress(id bigint, lease_token text, progress text) RETURNS boolean
LANGUAGE sql VOLATILE AS $fn$ SELECT :"schema".progress($1, $2::uuid, $3) $fn$;

-- enqueue() learns unique_for (a unique window; NULL: none) and that an open window of its
-- key refuses the job like a live holder does. A new last parameter changes the signature,
-- so the old functions are dropped and created again (enqueue_many calls them by name).
DROP FUNCTION :"schema".enqueue(text, text, integer, timestamptz, interval, integer, text);
DROP FUNCTION :"schema".enqueue(text, bytea, integer, timestamptz, interval, integer, text);

CREATE FUNCTION :"schema".enqueue(queue text, payload bytea DEFAULT ''::bytea,
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
    INSERT INTO :"schema".jobs AS j (queue, payload, priority, run_at, max_attempts, unique_key)
    VALUES ($1, $2, $3, coalesce($4, statement_timestamp() + coalesce($5, interval '0')), $6, $7)
    ON CONFLICT (queue, unique_key)
      WHERE unique_key IS NOT NULL AND state IN ('available', 'running')
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
    SELECT j.id INTO v_id FROM :"schema".jobs j
    WHERE j.queue = $1 AND j.unique_key = $7 AND j.state IN ('available', 'running');
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

CREATE FUNCTION :"schema".enqueue(queue text, payload text, priority integer DEFAULT 100,
                            run_at timestamptz DEFAULT NULL, delay interval DEFAULT NULL,
                            max_attempts integer DEFAULT 25, unique_key text DEFAULT NULL,
                            unique_for interval DEFAULT NULL)
RETURNS bigint LANGUAGE sql VOLATILE AS $fn$
  SELECT :"schema".enqueue($1, convert_to($2, 'UTF8'), $3, $4, $5, $6, $7, $8)
$fn$;
