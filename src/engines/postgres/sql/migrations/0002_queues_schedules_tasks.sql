-- Migration 2: paused queues, periodic schedules, shared maintenance tasks; lease() learns
-- to skip paused queues. Written once and never edited after release.
CREATE TABLE :"schema".queues (
  name      text        PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$'),
  paused_at timestamptz                               -- NULL: not paused
);
CREATE TABLE :"schema".schedules (
  name         text        PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$'),
  queue        text        NOT NULL CHECK (queue ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$'),
  spec         text        NOT NULL,
  payload      bytea       NOT NULL DEFAULT ''::bytea,
  priority     integer     NOT NULL DEFAULT 100,
  max_attempts integer     NOT NULL DEFAULT 25 CHECK (max_attempts >= 1),
  created_at   timestamptz NOT NULL DEFAULT statement_timestamp(),
  last_tick_at timestamptz                            -- the latest tick enqueued
);
CREATE TABLE :"schema".tasks (
  task        text        PRIMARY KEY,
  next_run_at timestamptz NOT NULL,                   -- free to claim from then on
  claimed_by  text,
  claimed_at  timestamptz
);

CREATE OR REPLACE FUNCTION :"schema".lease(queue text, worker text, max_jobs integer DEFAULT 1,
                                     lease_duration interval DEFAULT interval '30 seconds')
RETURNS SETOF :"schema".jobs LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
BEGIN
  IF EXISTS (SELECT 1 FROM :"schema".queues q WHERE q.name = $1 AND q.paused_at IS NOT NULL) THEN
    RETURN;
  END IF;
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
