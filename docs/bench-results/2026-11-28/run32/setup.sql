-- Prototype of docs/postgres-storage.md section 4's view over the split storage, beside
-- today's single table with the same rows, to measure what reads through the view cost.
DROP SCHEMA IF EXISTS proto CASCADE;
CREATE SCHEMA proto;
SET search_path = proto;
CREATE SEQUENCE jobs_id_seq;
-- Today's table (schema 9's columns and partial indexes).
CREATE TABLE one (
  id bigint PRIMARY KEY, queue text NOT NULL, state text NOT NULL, priority integer NOT NULL,
  run_at timestamptz NOT NULL, attempts integer NOT NULL, max_attempts integer NOT NULL,
  lease_token uuid, leased_by text, lease_expires_at timestamptz,
  enqueued_at timestamptz NOT NULL, started_at timestamptz, finished_at timestamptz,
  unique_key text, last_error text, payload bytea NOT NULL, progress text,
  waiting_for integer, notify boolean, delay_us bigint, group_name text);
-- The split: the same columns without state (but in done), plus seg in the rings.
CREATE TABLE ready (LIKE one, seg smallint NOT NULL) PARTITION BY LIST (seg);
ALTER TABLE ready DROP COLUMN state;
CREATE TABLE ready_0 PARTITION OF ready FOR VALUES IN (0);
CREATE TABLE ready_1 PARTITION OF ready FOR VALUES IN (1);
CREATE TABLE ready_2 PARTITION OF ready FOR VALUES IN (2);
CREATE TABLE ready_3 PARTITION OF ready FOR VALUES IN (3);
CREATE INDEX ON ready (queue, priority, run_at, id);
CREATE INDEX ON ready (id);
CREATE TABLE running (LIKE one, seg smallint NOT NULL) PARTITION BY LIST (seg);
ALTER TABLE running DROP COLUMN state;
CREATE TABLE running_0 PARTITION OF running FOR VALUES IN (0);
CREATE TABLE running_1 PARTITION OF running FOR VALUES IN (1);
CREATE TABLE running_2 PARTITION OF running FOR VALUES IN (2);
CREATE INDEX ON running (id);
CREATE INDEX ON running (queue, lease_expires_at);
CREATE TABLE scheduled (LIKE one);
ALTER TABLE scheduled DROP COLUMN state;
ALTER TABLE scheduled ADD PRIMARY KEY (id);
CREATE INDEX ON scheduled (queue, run_at);
CREATE TABLE waiting (LIKE one);
ALTER TABLE waiting DROP COLUMN state;
ALTER TABLE waiting ADD PRIMARY KEY (id);
CREATE INDEX ON waiting (queue, id);
CREATE TABLE done (LIKE one);
ALTER TABLE done ADD PRIMARY KEY (id);
-- Lets the planner drop done's branch of the view for a live state (constraint_exclusion's
-- default, 'partition', covers UNION ALL subqueries). Run 32's first round had no such CHECK
-- (results-without-check.txt); it was added for results-liststate-with-check.txt.
ALTER TABLE done ADD CONSTRAINT done_state CHECK (state IN ('succeeded', 'dead', 'cancelled'));
CREATE INDEX ON done (queue, state, finished_at);

-- 1,000,000 jobs in 4 queues: 200,000 ready (2 priorities), 50,000 scheduled, 10,000
-- running, 40,000 waiting, 700,000 finished (650,000 succeeded, 30,000 dead, 20,000
-- cancelled); ids interleaved as a real queue's are.
INSERT INTO one
SELECT g, 'q' || (g % 4),
       CASE WHEN g % 100 < 20 THEN 'available' WHEN g % 100 < 25 THEN 'available'
            WHEN g % 100 < 26 THEN 'running' WHEN g % 100 < 30 THEN 'waiting'
            WHEN g % 100 < 33 THEN 'dead' WHEN g % 100 < 35 THEN 'cancelled'
            ELSE 'succeeded' END,
       100 + (g % 2) * 10,
       CASE WHEN g % 100 BETWEEN 20 AND 24 THEN now() + interval '1 hour'
            ELSE now() - interval '1 hour' END,
       0, 25,
       CASE WHEN g % 100 = 25 THEN gen_random_uuid() END,
       CASE WHEN g % 100 = 25 THEN 'w1' END,
       CASE WHEN g % 100 = 25 THEN now() + interval '30 s' END,
       now() - interval '2 hours', NULL,
       CASE WHEN g % 100 >= 30 THEN now() - interval '10 minutes' END,
       NULL, NULL, convert_to('{"n":' || g || '}', 'UTF8'), NULL,
       CASE WHEN g % 100 BETWEEN 26 AND 29 THEN 1 END, NULL, NULL, NULL
FROM generate_series(1, 1000000) g;
CREATE INDEX one_lease_idx ON one (queue, priority, run_at, id) WHERE state = 'available';
CREATE INDEX one_due_idx ON one (queue, run_at) WHERE state = 'available';
CREATE INDEX one_expiry_idx ON one (queue, lease_expires_at) WHERE state = 'running';
CREATE INDEX one_finished_idx ON one (queue, state, finished_at)
  WHERE state IN ('succeeded', 'dead', 'cancelled');
CREATE INDEX one_waiting_idx ON one (queue, id) WHERE state = 'waiting';

INSERT INTO ready SELECT id, queue, priority, run_at, attempts, max_attempts, lease_token,
  leased_by, lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error,
  payload, progress, waiting_for, notify, delay_us, group_name, (id % 4)::smallint
FROM one WHERE state = 'available' AND run_at <= now();
INSERT INTO scheduled SELECT id, queue, priority, run_at, attempts, max_attempts, lease_token,
  leased_by, lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error,
  payload, progress, waiting_for, notify, delay_us, group_name
FROM one WHERE state = 'available' AND run_at > now();
INSERT INTO running SELECT id, queue, priority, run_at, attempts, max_attempts, lease_token,
  leased_by, lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error,
  payload, progress, waiting_for, notify, delay_us, group_name, (id % 3)::smallint
FROM one WHERE state = 'running';
INSERT INTO waiting SELECT id, queue, priority, run_at, attempts, max_attempts, lease_token,
  leased_by, lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error,
  payload, progress, waiting_for, notify, delay_us, group_name
FROM one WHERE state = 'waiting';
INSERT INTO done SELECT * FROM one WHERE state IN ('succeeded', 'dead', 'cancelled');

-- The view: state is a constant per branch, but in done.
CREATE VIEW jobs AS
  SELECT id, queue, 'available'::text AS state, priority, run_at, attempts, max_attempts,
         lease_token, leased_by, lease_expires_at, enqueued_at, started_at, finished_at,
         unique_key, last_error, payload, progress, waiting_for, notify, delay_us, group_name
  FROM ready
  UNION ALL
  SELECT id, queue, 'available'::text, priority, run_at, attempts, max_attempts,
         lease_token, leased_by, lease_expires_at, enqueued_at, started_at, finished_at,
         unique_key, last_error, payload, progress, waiting_for, notify, delay_us, group_name
  FROM scheduled
  UNION ALL
  SELECT id, queue, 'running'::text, priority, run_at, attempts, max_attempts,
         lease_token, leased_by, lease_expires_at, enqueued_at, started_at, finished_at,
         unique_key, last_error, payload, progress, waiting_for, notify, delay_us, group_name
  FROM running
  UNION ALL
  SELECT id, queue, 'waiting'::text, priority, run_at, attempts, max_attempts,
         lease_token, leased_by, lease_expires_at, enqueued_at, started_at, finished_at,
         unique_key, last_error, payload, progress, waiting_for, notify, delay_us, group_name
  FROM waiting
  UNION ALL
  SELECT id, queue, state, priority, run_at, attempts, max_attempts,
         lease_token, leased_by, lease_expires_at, enqueued_at, started_at, finished_at,
         unique_key, last_error, payload, progress, waiting_for, notify, delay_us, group_name
  FROM done;
VACUUM ANALYZE;
