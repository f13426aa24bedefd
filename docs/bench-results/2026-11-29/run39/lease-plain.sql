WITH picked AS (
  SELECT p.id, row_number() OVER () AS n FROM (
    SELECT j.id FROM readpast.live j
    WHERE j.queue = 'q' AND j.state = 'available' AND j.run_at <= statement_timestamp()
      AND (SELECT min(d.run_at) FROM readpast.live d
           WHERE d.queue = 'q' AND d.state = 'available') <= statement_timestamp()
      AND NOT EXISTS (SELECT 1 FROM readpast.queues q
                      WHERE q.name = 'q' AND (q.paused_at IS NOT NULL
                        OR q.running_limit IS NOT NULL OR q.rate_count IS NOT NULL))
    ORDER BY j.priority, j.run_at, j.id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
  ) p
)
UPDATE readpast.live j
SET state = 'running', attempts = j.attempts + 1,
    lease_token = ('{00000000-0000-0000-0000-000000000001}'::uuid[])[picked.n::integer],
    leased_by = 'w', lease_expires_at = statement_timestamp() + 30000000::bigint * interval '1 microsecond',
    started_at = statement_timestamp()
FROM picked
WHERE j.id = ANY (ARRAY(SELECT x.id FROM picked x)) AND j.id = picked.id
  AND (j.state || '') = 'available'
RETURNING j.id, j.queue, j.state, j.priority, j.run_at, j.attempts, j.max_attempts, j.lease_token,
          j.leased_by, j.lease_expires_at, j.enqueued_at, j.started_at, j.finished_at,
          j.unique_key, j.last_error, j.payload;
