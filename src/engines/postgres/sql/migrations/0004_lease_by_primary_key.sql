-- Migration 4: lease() finds the rows it picked by primary key, as the engine's lease does
-- since 94a7268 (statements.sql, lease, says why): with max_jobs in the hundreds,
-- `j.id = picked.id` alone was planned as a hash join over a sequential scan of the whole
-- table. Written once and never edited after release.
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
    WHERE j.id = ANY (ARRAY(SELECT x.id FROM picked x)) AND j.id = picked.id
      AND j.state = 'available'
    RETURNING j.*
  )
  SELECT * FROM leased l ORDER BY l.priority, l.run_at, l.id;
END
$fn$;
