-- Migration 13: the lease from the head keeps its plan whatever the statistics say.
-- Until now it was a plain statement, planned by the statistics of the moment. An ANALYZE
-- (autovacuum's, at its own time) of a queue that was nearly empty records a few live rows in
-- many pages; when a backlog builds after it, the planner still expects about one row and
-- costs a bitmap scan of the whole queue followed by a sort below an ordered index scan that
-- stops after the batch. Every lease then read every available job of the queue, and the
-- backlog regime's clean baseline fell from 39,000 to 4,000 jobs/s for a minute, until the next
-- ANALYZE (docs/benchmarks.md, run 39). The same holds for its min(run_at) probe, which
-- PostgreSQL turns into an aggregate over such a scan instead of a descent that stops at the
-- first entry.
--
-- The lease is now this function, whose settings leave the planner one way to pick the batch:
-- jobs_lease_idx in hand-out order (no sorts, no bitmap scans, no sequential scans), as
-- lease_lanes() (migration 11) does while a snapshot is held. The probe is written as the
-- first entry of jobs_due_idx, which with sorts off only an ordered descent can give. The plan
-- is generic (planned once per session, with the batch size as a parameter), so the engine no
-- longer writes the batch size into the statement's text. The text of each part, its locks and
-- its guarantees are the statement's (sql/statements.sql, lease).
--
-- A token missing from p_tokens is drawn in the server (new_lease_token()), so that the SQL
-- interface's lease(), which knows no tokens in advance, takes its jobs the same way; the
-- engine always passes one per job it may take.
--
-- No table is locked: lease_head() is new and lease() is replaced in place. Workers already
-- running keep the statement they prepared until they restart.
CREATE FUNCTION :"schema".lease_head(
  p_queue text, p_worker text, p_lease_us bigint, p_tokens uuid[], p_max_jobs integer)
RETURNS TABLE (id bigint, queue text, state text, priority integer, run_at timestamptz,
  attempts integer, max_attempts integer, lease_token uuid, leased_by text,
  lease_expires_at timestamptz, enqueued_at timestamptz, started_at timestamptz,
  finished_at timestamptz, unique_key text, last_error text, payload bytea)
LANGUAGE plpgsql
SET enable_sort = off SET enable_bitmapscan = off
SET enable_mergejoin = off SET enable_seqscan = off SET plan_cache_mode = force_generic_plan
SET jit = off SET enable_incremental_sort = off
AS $fn$
#variable_conflict use_column
BEGIN
RETURN QUERY
WITH picked AS (
  SELECT p.id, row_number() OVER () AS n FROM (
    SELECT j.id FROM :"schema".live j
    WHERE j.queue = p_queue AND j.state = 'available' AND j.run_at <= statement_timestamp()
      AND (SELECT d.run_at FROM :"schema".live d
           WHERE d.queue = p_queue AND d.state = 'available'
           ORDER BY d.run_at
           LIMIT 1) <= statement_timestamp()
      AND NOT EXISTS (SELECT 1 FROM :"schema".queues q
                      WHERE q.name = p_queue AND (q.paused_at IS NOT NULL
                        OR q.running_limit IS NOT NULL OR q.rate_count IS NOT NULL))
    ORDER BY j.priority, j.run_at, j.id
    LIMIT p_max_jobs
    FOR UPDATE SKIP LOCKED
  ) p
), taken AS (
  UPDATE :"schema".live j
  SET state = 'running',
      attempts = j.attempts + 1,
      lease_token = coalesce((p_tokens)[picked.n::integer], :"schema".new_lease_token()),
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
SELECT t.* FROM taken t;
END
$fn$;

-- The SQL interface's lease() (docs/sql.md; migration 10's), whose own statement had the same
-- plan: it now takes its jobs through lease_head(), then reads them back from live as the
-- limited branch does, in a statement of its own, whose snapshot sees them leased.
CREATE OR REPLACE FUNCTION :"schema".lease(queue text, worker text, max_jobs integer DEFAULT 1,
                                lease_duration interval DEFAULT interval '30 seconds')
RETURNS SETOF :"schema".jobs LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  ids bigint[];
  lease_us bigint := (extract(epoch FROM $4) * 1000000)::bigint;
BEGIN
  IF EXISTS (SELECT 1 FROM :"schema".queues q WHERE q.name = $1 AND q.paused_at IS NOT NULL) THEN
    RETURN;
  END IF;
  PERFORM :"schema".rescue_expired($1);
  IF EXISTS (SELECT 1 FROM :"schema".queues q WHERE q.name = $1
             AND (q.running_limit IS NOT NULL OR q.rate_count IS NOT NULL)) THEN
    ids := ARRAY(SELECT l.id FROM :"schema".lease_limited(
                   $1, $2, $3, lease_us,
                   ARRAY(SELECT :"schema".new_lease_token()
                         FROM generate_series(1, greatest($3, 1)))) l
                 WHERE l.id IS NOT NULL);
  ELSE
    ids := ARRAY(SELECT h.id FROM :"schema".lease_head($1, $2, lease_us, '{}', $3) h);
  END IF;
  RETURN QUERY SELECT j.* FROM :"schema".live j WHERE j.id = ANY (ids)
  ORDER BY j.priority, j.run_at, j.id;
END
$fn$;
