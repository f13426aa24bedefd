-- Migration 1: the jobs table, its indexes, the wake-up triggers and the SQL interface.
-- Written once and never edited after release: a change is a new migration.
CREATE TABLE :"schema".jobs (
  id               bigint      GENERATED ALWAYS AS IDENTITY (SEQUENCE NAME :"schema".jobs_id_seq)
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
CREATE INDEX jobs_lease_idx ON :"schema".jobs (queue, priority, run_at, id)
  WHERE state = 'available';
-- wait_for_work and the lease's first check: is a job of the queue due, and when is the
-- next one? (jobs_lease_idx cannot say without walking every scheduled job.)
CREATE INDEX jobs_due_idx ON :"schema".jobs (queue, run_at)
  WHERE state = 'available';
-- rescue: running jobs of a queue by lease expiry.
CREATE INDEX jobs_expiry_idx ON :"schema".jobs (queue, lease_expires_at)
  WHERE state = 'running';
-- unique keys are held by live jobs only; the ON CONFLICT target of enqueue.
CREATE UNIQUE INDEX jobs_unique_key_idx ON :"schema".jobs (queue, unique_key)
  WHERE unique_key IS NOT NULL AND state IN ('available', 'running');
-- purge and retention: finished jobs of a queue by age.
CREATE INDEX jobs_finished_idx ON :"schema".jobs (queue, state, finished_at)
  WHERE state IN ('succeeded', 'dead', 'cancelled');

-- 128 random bits from the server's strong random source. gen_random_uuid() gives 122
-- random bits (6 are fixed version/variant bits), so two of them are hashed together.
CREATE FUNCTION :"schema".new_lease_token() RETURNS uuid
LANGUAGE sql VOLATILE PARALLEL SAFE AS $fn$
  SELECT encode(substr(sha256(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid())),
                       1, 16), 'hex')::uuid
$fn$;

-- min(cap, base * 2^(attempts - 1)) * factor, in microseconds as an interval; the exponent
-- is clamped at 40 like Backoff::delay_after, and the arithmetic is in double precision so
-- it cannot overflow.
CREATE FUNCTION :"schema".backoff_delay(attempts integer, base_us bigint, cap_us bigint,
                                  factor double precision) RETURNS interval
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
  SELECT interval '1 microsecond'
         * trunc(least($3::double precision,
                       $2 * power(2::double precision, least(greatest($1 - 1, 0), 40))) * $4)
$fn$;

-- Wake-up: NOTIFY :'channel' with the queue's name when a job becomes available to run
-- now. Delivered when the transaction commits; repeats within a transaction are merged
-- by PostgreSQL. Because it is a trigger, a plain INSERT by any program wakes workers too.
CREATE FUNCTION :"schema".notify_inserted() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM pg_notify(:'channel', q.queue)
  FROM (SELECT DISTINCT n.queue FROM new_jobs n
        WHERE n.state = 'available' AND n.run_at <= statement_timestamp()) q;
  RETURN NULL;
END
$fn$;
CREATE TRIGGER jobs_notify_inserted AFTER INSERT ON :"schema".jobs
  REFERENCING NEW TABLE AS new_jobs
  FOR EACH STATEMENT EXECUTE FUNCTION :"schema".notify_inserted();

CREATE FUNCTION :"schema".notify_available() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM pg_notify(:'channel', NEW.queue);
  RETURN NULL;
END
$fn$;
-- Row level with a WHEN clause: lease and complete, which never make a job available,
-- pay for the condition only.
CREATE TRIGGER jobs_notify_available AFTER UPDATE ON :"schema".jobs
  FOR EACH ROW
  WHEN (NEW.state = 'available' AND OLD.state <> 'available'
        AND NEW.run_at <= statement_timestamp())
  EXECUTE FUNCTION :"schema".notify_available();

-- ---------------------------------------------------------------------------------------
-- The SQL interface (docs/sql.md). Parameters are referred to by position in the bodies,
-- so that their names (which callers may use: priority => 5) never clash with columns.

CREATE FUNCTION :"schema".enqueue(queue text, payload bytea DEFAULT ''::bytea,
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
    INSERT INTO :"schema".jobs AS j (queue, payload, priority, run_at, max_attempts, unique_key)
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
    SELECT j.id INTO job_id FROM :"schema".jobs j
    WHERE j.queue = $1 AND j.unique_key = $7 AND j.state IN ('available', 'running');
    IF job_id IS NOT NULL THEN
      RETURN job_id;
    END IF;
    -- The holder finished in between: insert again.
  END LOOP;
END
$fn$;

CREATE FUNCTION :"schema".enqueue(queue text, payload text, priority integer DEFAULT 100,
                            run_at timestamptz DEFAULT NULL, delay interval DEFAULT NULL,
                            max_attempts integer DEFAULT 25, unique_key text DEFAULT NULL)
RETURNS bigint LANGUAGE sql VOLATILE AS $fn$
  SELECT :"schema".enqueue($1, convert_to($2, 'UTF8'), $3, $4, $5, $6, $7)
$fn$;

CREATE FUNCTION :"schema".enqueue_many(queue text, payloads bytea[], priority integer DEFAULT 100,
                                 run_at timestamptz DEFAULT NULL, delay interval DEFAULT NULL,
                                 max_attempts integer DEFAULT 25,
                                 unique_keys text[] DEFAULT NULL)
RETURNS SETOF bigint LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
BEGIN
  FOR i IN 1 .. coalesce(array_length($2, 1), 0) LOOP
    RETURN NEXT :"schema".enqueue($1, $2[i], $3, $4, $5, $6, $7[i]);
  END LOOP;
END
$fn$;

CREATE FUNCTION :"schema".enqueue_many(queue text, payloads text[], priority integer DEFAULT 100,
                                 run_at timestamptz DEFAULT NULL, delay interval DEFAULT NULL,
                                 max_attempts integer DEFAULT 25,
                                 unique_keys text[] DEFAULT NULL)
RETURNS SETOF bigint LANGUAGE sql VOLATILE AS $fn$
  SELECT :"schema".enqueue_many($1, array(SELECT convert_to(p, 'UTF8') FROM unnest($2) AS p),
                          $3, $4, $5, $6, $7)
$fn$;

CREATE FUNCTION :"schema".rescue_expired(queue text, batch integer DEFAULT 10000)
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
  GET DIAGNOSTICS moved = ROW_COUNT;
  RETURN moved;
END
$fn$;

-- The same statement as the engine's lease, after a rescue of expired leases (a program
-- that uses only SQL has no worker runtime to do that for it).
CREATE FUNCTION :"schema".lease(queue text, worker text, max_jobs integer DEFAULT 1,
                          lease_duration interval DEFAULT interval '30 seconds')
RETURNS SETOF :"schema".jobs LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
BEGIN
  PERFORM :"schema".rescue_expired($1);
  RETURN QUERY
  WITH picked AS (
    SELECT j.id FROM :"schema".jobs j
    WHERE j.queue = $1 AND j.state = 'available' AND j.run_at <= statement_timestamp()
      AND EXISTS (SELECT 1 FROM :"schema".jobs d
                  WHERE d.queue = $1 AND d.state = 'available'
                    AND d.run_at <= statement_timestamp())
    ORDER BY j.priority, j.run_at, j.id
    LIMIT $3
    FOR UPDATE SKIP LOCKED
  ), leased AS (
    UPDATE :"schema".jobs j
    SET state = 'running',
        attempts = j.attempts + 1,
        lease_token = :"schema".new_lease_token(),
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

CREATE FUNCTION :"schema".complete(id bigint, lease_token uuid)
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
BEGIN
  UPDATE :"schema".jobs j
  SET state = 'succeeded', finished_at = statement_timestamp(), lease_expires_at = NULL
  WHERE j.id = $1 AND j.state = 'running' AND j.lease_token = $2;
  RETURN FOUND;
END
$fn$;

-- Returns the job's new state: 'available' (it will be retried) or 'dead'; NULL when the
-- lease was lost. Without retry_after, the default backoff: 1s doubling up to 1h, less a
-- random 0-20%.
CREATE FUNCTION :"schema".fail(id bigint, lease_token uuid, error text,
                         retry_after interval DEFAULT NULL)
RETURNS text LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  new_state text;
BEGIN
  UPDATE :"schema".jobs j
  SET state = CASE WHEN j.attempts >= j.max_attempts THEN 'dead' ELSE 'available' END,
      finished_at = CASE WHEN j.attempts >= j.max_attempts THEN statement_timestamp() END,
      run_at = CASE WHEN j.attempts >= j.max_attempts THEN j.run_at
                    ELSE statement_timestamp()
                         + coalesce($4, :"schema".backoff_delay(j.attempts, 1000000, 3600000000,
                                                          1 - 0.2 * random()))
               END,
      last_error = $3,
      lease_expires_at = NULL
  WHERE j.id = $1 AND j.state = 'running' AND j.lease_token = $2
  RETURNING j.state INTO new_state;
  RETURN new_state;
END
$fn$;

CREATE FUNCTION :"schema".extend(id bigint, lease_token uuid,
                           lease_duration interval DEFAULT interval '30 seconds')
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
BEGIN
  UPDATE :"schema".jobs j SET lease_expires_at = statement_timestamp() + $3
  WHERE j.id = $1 AND j.state = 'running' AND j.lease_token = $2;
  RETURN FOUND;
END
$fn$;

CREATE FUNCTION :"schema".release(id bigint, lease_token uuid, delay interval DEFAULT interval '0')
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
BEGIN
  UPDATE :"schema".jobs j
  SET state = 'available', run_at = statement_timestamp() + $3,
      attempts = greatest(j.attempts - 1, 0), lease_expires_at = NULL
  WHERE j.id = $1 AND j.state = 'running' AND j.lease_token = $2;
  RETURN FOUND;
END
$fn$;

-- The same four with the token as text (32 hex digits, with or without hyphens): many
-- drivers send strings typed as text, which does not cast to uuid by itself.
CREATE FUNCTION :"schema".complete(id bigint, lease_token text) RETURNS boolean
LANGUAGE sql VOLATILE AS $fn$ SELECT :"schema".complete($1, $2::uuid) $fn$;
CREATE FUNCTION :"schema".fail(id bigint, lease_token text, error text,
                         retry_after interval DEFAULT NULL) RETURNS text
LANGUAGE sql VOLATILE AS $fn$ SELECT :"schema".fail($1, $2::uuid, $3, $4) $fn$;
CREATE FUNCTION :"schema".extend(id bigint, lease_token text,
                           lease_duration interval DEFAULT interval '30 seconds') RETURNS boolean
LANGUAGE sql VOLATILE AS $fn$ SELECT :"schema".extend($1, $2::uuid, $3) $fn$;
CREATE FUNCTION :"schema".release(id bigint, lease_token text, delay interval DEFAULT interval '0')
RETURNS boolean
LANGUAGE sql VOLATILE AS $fn$ SELECT :"schema".release($1, $2::uuid, $3) $fn$;
