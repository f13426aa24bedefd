CREATE OR REPLACE FUNCTION readpast.lease_head_walk(p_queue text, p_worker text, p_lease_us bigint, p_tokens uuid[], p_max_jobs integer)
 RETURNS TABLE(id bigint, queue text, state text, priority integer, run_at timestamp with time zone, attempts integer, max_attempts integer, lease_token uuid, leased_by text, lease_expires_at timestamp with time zone, enqueued_at timestamp with time zone, started_at timestamp with time zone, finished_at timestamp with time zone, unique_key text, last_error text, payload bytea, walked_pages bigint)
 LANGUAGE plpgsql
 SET enable_sort TO 'off'
 SET enable_bitmapscan TO 'off'
 SET enable_mergejoin TO 'off'
 SET enable_seqscan TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
 SET jit TO 'off'
 SET enable_incremental_sort TO 'off'
AS $function$
#variable_conflict use_column
DECLARE
  pages_before bigint :=
    pg_stat_get_xact_blocks_fetched('"readpast".jobs_lease_idx'::regclass)
    + pg_stat_get_xact_blocks_fetched('"readpast".jobs_due_idx'::regclass);
BEGIN
PERFORM set_config('synchronous_commit', 'off', true);
RETURN QUERY
WITH picked AS (
  SELECT p.id, row_number() OVER () AS n FROM (
    SELECT j.id FROM "readpast".live j
    WHERE j.queue = p_queue AND j.state = 'available' AND j.run_at <= statement_timestamp()
      AND (SELECT d.run_at FROM "readpast".live d
           WHERE d.queue = p_queue AND d.state = 'available'
           ORDER BY d.run_at
           LIMIT 1) <= statement_timestamp()
      AND NOT EXISTS (SELECT 1 FROM "readpast".queues q
                      WHERE q.name = p_queue AND (q.paused_at IS NOT NULL
                        OR q.running_limit IS NOT NULL OR q.rate_count IS NOT NULL))
    ORDER BY j.priority, j.run_at, j.id
    LIMIT p_max_jobs
    FOR UPDATE SKIP LOCKED
  ) p
), taken AS (
  UPDATE "readpast".live j
  SET state = 'running',
      attempts = j.attempts + 1,
      lease_token = coalesce((p_tokens)[picked.n::integer], "readpast".new_lease_token()),
      leased_by = p_worker,
      lease_expires_at = statement_timestamp() + p_lease_us * interval '1 microsecond',
      started_at = statement_timestamp()
  FROM picked
  WHERE j.id = ANY (ARRAY(SELECT x.id FROM picked x)) AND j.id = picked.id
    AND (j.state || '') = 'available'
  RETURNING j.id, j.queue, j.state, j.priority, j.run_at, j.attempts, j.max_attempts,
            j.lease_token, j.leased_by, j.lease_expires_at, j.enqueued_at, j.started_at,
            j.finished_at, j.unique_key, j.last_error, j.payload
)
SELECT t.*, NULL::bigint FROM taken t;
-- The row after the jobs: every other column is null (RETURNS TABLE's variables start so).
walked_pages := pg_stat_get_xact_blocks_fetched('"readpast".jobs_lease_idx'::regclass)
  + pg_stat_get_xact_blocks_fetched('"readpast".jobs_due_idx'::regclass) - pages_before;
RETURN NEXT;
END
$function$

