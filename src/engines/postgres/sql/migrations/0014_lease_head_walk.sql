-- Migration 14: the lease from the head says how far it walked.
-- Every job leased from the head leaves its entries at the head of jobs_lease_idx and
-- jobs_due_idx, where the next lease starts. Once no snapshot can see the old version any more,
-- the first scan that passes an entry marks it dead, and later scans skip it without visiting
-- the table, but they still read its page: about 0.5 µs per page of both indexes (run 40),
-- until vacuum removes the entries. Autovacuum comes once a minute, so while a backlog drains the walk
-- grows by some 350 pages a second at 40,000 jobs a second, and leases from the head slowed the
-- clean backlog regime from 37,600 to 13,200 jobs a second each minute (docs/benchmarks.md,
-- run 39). Leases by lane start past what earlier leases took and do not slow down; on short
-- drains they cost more per lease. So the engine turns to the lanes when a lease from the head
-- walked far (src/engines/postgres/lease_mode.hpp), and the lease now says how far.
--
-- The walk is the pages of the two indexes this call read: the count of buffer requests that
-- PostgreSQL keeps per relation in the backend (pg_stat_get_xact_blocks_fetched), read before
-- and after the statement in the same transaction, where no flush of the statistics can fall
-- between. It is returned in one more row after the jobs, whose id is null and whose
-- walked_pages is the count (the job rows have none), so the jobs' columns stay as they were.
-- With track_counts off it reads 0, and the engine never turns to the lanes for a long head.
--
-- The engine calls lease_head_walk(), the same lease with that row after its jobs.
-- lease_head() keeps its columns and rows for those that call it already (the SQL
-- interface's lease(), and workers of the version before, which read every row they get as a
-- job) and now takes its jobs through lease_head_walk(), so that one statement serves both.
-- No table is locked: one function is added and one replaced in place.
CREATE FUNCTION :"schema".lease_head_walk(
  p_queue text, p_worker text, p_lease_us bigint, p_tokens uuid[], p_max_jobs integer)
RETURNS TABLE (id bigint, queue text, state text, priority integer, run_at timestamptz,
  attempts integer, max_attempts integer, lease_token uuid, leased_by text,
  lease_expires_at timestamptz, enqueued_at timestamptz, started_at timestamptz,
  finished_at timestamptz, unique_key text, last_error text, payload bytea,
  walked_pages bigint)
LANGUAGE plpgsql
SET enable_sort = off SET enable_bitmapscan = off
SET enable_mergejoin = off SET enable_seqscan = off SET plan_cache_mode = force_generic_plan
SET jit = off SET enable_incremental_sort = off
AS $fn$
#variable_conflict use_column
DECLARE
  pages_before bigint :=
    pg_stat_get_xact_blocks_fetched(':"schema".jobs_lease_idx'::regclass)
    + pg_stat_get_xact_blocks_fetched(':"schema".jobs_due_idx'::regclass);
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
SELECT t.*, NULL::bigint FROM taken t;
-- The row after the jobs: every other column is null (RETURNS TABLE's variables start so).
walked_pages := pg_stat_get_xact_blocks_fetched(':"schema".jobs_lease_idx'::regclass)
  + pg_stat_get_xact_blocks_fetched(':"schema".jobs_due_idx'::regclass) - pages_before;
RETURN NEXT;
END
$fn$;

CREATE OR REPLACE FUNCTION :"schema".lease_head(
  p_queue text, p_worker text, p_lease_us bigint, p_tokens uuid[], p_max_jobs integer)
RETURNS TABLE (id bigint, queue text, state text, priority integer, run_at timestamptz,
  attempts integer, max_attempts integer, lease_token uuid, leased_by text,
  lease_expires_at timestamptz, enqueued_at timestamptz, started_at timestamptz,
  finished_at timestamptz, unique_key text, last_error text, payload bytea)
LANGUAGE sql VOLATILE
AS $fn$
SELECT h.id, h.queue, h.state, h.priority, h.run_at, h.attempts, h.max_attempts, h.lease_token,
       h.leased_by, h.lease_expires_at, h.enqueued_at, h.started_at, h.finished_at,
       h.unique_key, h.last_error, h.payload
FROM :"schema".lease_head_walk(p_queue, p_worker, p_lease_us, p_tokens, p_max_jobs) h
WHERE h.id IS NOT NULL
$fn$;
