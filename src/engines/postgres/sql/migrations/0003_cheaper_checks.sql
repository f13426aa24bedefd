-- Migration 3: the same rules, cheaper to check on the hot path. Written once and never
-- edited after release.
-- - The queue-name CHECK of jobs, [A-Za-z0-9][A-Za-z0-9_.-]{0,127}, as a length test and
--   an unbounded pattern: PostgreSQL's regex engine expands the bounded repetition {0,127}
--   into a large automaton that costs ~7 µs per row, on every INSERT and on every UPDATE (a
--   CHECK is re-evaluated for each new row version: every lease and every completion); this
--   form costs ~0.3 µs. (The queues and schedules tables keep theirs: they are not hot.)
-- - lease() guards its walk with a min() instead of an EXISTS, like the engine's lease
--   (statements.sql, lease, says why).
ALTER TABLE :"schema".jobs DROP CONSTRAINT jobs_queue_check;
ALTER TABLE :"schema".jobs ADD CONSTRAINT jobs_queue_check
  CHECK (octet_length(queue) <= 128 AND queue ~ '^[A-Za-z0-9][A-Za-z0-9_.-]*$');

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
      AND (SELECT min(d.run_at) FROM :"schema".jobs d
           WHERE d.queue = $1 AND d.state = 'available') <= statement_timestamp()
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
