DROP SCHEMA IF EXISTS exp2 CASCADE;
CREATE SCHEMA exp2;
-- readpast's columns split in two: what a lease or a finish changes, and what never changes
-- after enqueue (payload, enqueue time, unique key), keyed by the same id.
CREATE TABLE exp2.jobs (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  queue text NOT NULL CHECK (octet_length(queue) <= 128 AND queue ~ '^[A-Za-z0-9][A-Za-z0-9_.-]*$'),
  state text NOT NULL DEFAULT 'available' CHECK (state = ANY (ARRAY['available','running','succeeded','dead','cancelled'])),
  priority integer NOT NULL DEFAULT 100,
  run_at timestamptz NOT NULL DEFAULT statement_timestamp(),
  attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  max_attempts integer NOT NULL DEFAULT 25 CHECK (max_attempts >= 1),
  lease_token uuid, leased_by text, lease_expires_at timestamptz,
  started_at timestamptz, finished_at timestamptz, last_error text,
  CONSTRAINT jobs_running_has_lease CHECK (state <> 'running' OR lease_token IS NOT NULL AND lease_expires_at IS NOT NULL)
) WITH (fillfactor = 90);
CREATE TABLE exp2.bodies (
  id bigint PRIMARY KEY,
  enqueued_at timestamptz NOT NULL DEFAULT statement_timestamp(),
  unique_key text,
  payload bytea NOT NULL DEFAULT '\x'
);
CREATE INDEX ON exp2.jobs (queue, priority, run_at, id) WHERE state = 'available';
CREATE INDEX ON exp2.jobs (queue, run_at) WHERE state = 'available';
CREATE INDEX ON exp2.jobs (queue, lease_expires_at) WHERE state = 'running';
CREATE INDEX ON exp2.jobs (queue, state, finished_at) WHERE state IN ('succeeded','dead','cancelled');
