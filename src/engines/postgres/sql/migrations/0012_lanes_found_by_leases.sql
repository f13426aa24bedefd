-- Migration 12: enqueues no longer register lanes. Schema 11's insert trigger probed `lanes`
-- for every statement, and wrote marks in a second statement over the inserted rows: each
-- statement run by a trigger function costs 5-7 µs of server time, and single enqueues ran at
-- 0.88 of schema 10 (docs/benchmarks.md, run 38). Now:
--   - the trigger reads the inserted rows once, for the wake-up and to learn whether any is
--     available with an old key; only then, or when its statement ran long, does it write marks
--     (as schema 11 did);
--   - lease_lanes() finds the lanes nobody registered itself: between the registered lanes of
--     the queue (and below the first, above the last) it probes jobs_lease_idx for an available
--     job, one index descent per gap that stops at the next registered lane without reading its
--     entries, and it registers the lanes it met that way. A lease from the head registers the
--     lanes it took from, as before; an UPDATE that moves a job into another lane still
--     registers it (live_announce_updated).
-- No table is locked: the two functions are replaced in place, and a statement that is
-- running keeps the definition it started with.

CREATE OR REPLACE FUNCTION :"schema".notify_inserted() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $fn$
BEGIN
  -- The wake-up (one notice per queue with a job due), and FOUND when some job is available
  -- with a key older than δ (100 ms, migration 11) before the statement. OFFSET 0 keeps the
  -- filter on `old` above the wake-up, so that every queue is woken whatever its keys.
  PERFORM FROM (
    SELECT q.old, CASE WHEN q.due THEN pg_notify(:'channel', q.queue) END AS woken
    FROM (SELECT DISTINCT n.queue, n.run_at <= statement_timestamp() AS due,
                 n.run_at < statement_timestamp() - interval '100 milliseconds' AS old
          FROM new_jobs n WHERE n.state = 'available') q
    OFFSET 0) w
  WHERE w.old;
  IF FOUND OR clock_timestamp() - statement_timestamp() > interval '100 milliseconds' THEN
    INSERT INTO :"schema".lane_marks (queue, priority, run_at, id)
    SELECT DISTINCT ON (n.queue, n.priority) n.queue, n.priority, n.run_at, n.id
    FROM new_jobs n
    WHERE n.state = 'available'
      AND (n.run_at < statement_timestamp() - interval '100 milliseconds'
           OR clock_timestamp() - statement_timestamp() > interval '100 milliseconds')
    ORDER BY n.queue, n.priority, n.run_at, n.id;
    PERFORM :"schema".forget_old_marks();
  END IF;
  RETURN NULL;
END
$fn$;

-- Migration 11's lease_lanes(), whose lane-by-lane branch now also reads the lanes nobody
-- registered (found in the gaps between those registered) and registers them.
CREATE OR REPLACE FUNCTION :"schema".lease_lanes(
  p_queue text, p_worker text, p_lease_us bigint, p_tokens uuid[], p_from_head integer,
  p_lane_priorities integer[], p_lane_run_at timestamptz[], p_lane_id bigint[],
  p_lane_marks_from bigint[], p_max_jobs integer)
RETURNS TABLE (id bigint, queue text, state text, priority integer, run_at timestamptz,
  attempts integer, max_attempts integer, lease_token uuid, leased_by text,
  lease_expires_at timestamptz, enqueued_at timestamptz, started_at timestamptz,
  finished_at timestamptz, unique_key text, last_error text, payload bytea,
  xmin bigint, xmax bigint, leased_at timestamptz)
LANGUAGE plpgsql
SET enable_sort = off SET enable_bitmapscan = off
SET enable_mergejoin = off SET enable_seqscan = off SET plan_cache_mode = force_generic_plan
SET jit = off SET enable_incremental_sort = off
AS $fn$
#variable_conflict use_column
BEGIN
-- Lane by lane, the lanes nobody registered are registered first, so that the statement below
-- reads them in priority order with the others: in each gap between the queue's registered
-- lanes (below the first, above the last, or the whole range when none is), the first lane
-- with an available job. Each probe is a descent of jobs_lease_idx bounded by the registered
-- lanes on either side, so that it reads no entry of theirs, however many a held snapshot
-- keeps; it stops at once where the gap is empty, which is the usual case. Repeated until a
-- round finds nothing, for gaps with more than one such lane.
IF p_from_head = 0 THEN
  LOOP
    PERFORM :"schema".register_lanes(p_queue, f.priorities)
    FROM (
      SELECT ARRAY(
        SELECT u.priority
        FROM (
          SELECT lag(r.priority) OVER (ORDER BY r.priority) AS below, r.priority AS above
          FROM :"schema".lanes r WHERE r.queue = p_queue
          UNION ALL
          SELECT max(r.priority), NULL FROM :"schema".lanes r WHERE r.queue = p_queue
        ) g
        CROSS JOIN LATERAL (
          SELECT j.priority FROM :"schema".live j
          WHERE j.queue = p_queue AND j.state = 'available'
            AND j.priority > coalesce(g.below::bigint, -2147483649)
            AND j.priority < coalesce(g.above::bigint, 2147483648)
          ORDER BY j.priority
          LIMIT 1
        ) u) AS priorities
    ) f
    WHERE cardinality(f.priorities) > 0;
    EXIT WHEN NOT FOUND;
  END LOOP;
END IF;
RETURN QUERY
WITH picked AS (
  SELECT p.id, row_number() OVER () AS n FROM ((
    SELECT c.id
    FROM :"schema".lanes l
    CROSS JOIN LATERAL (
      SELECT array_position(p_lane_priorities, l.priority) AS k
    ) a
    CROSS JOIN LATERAL (
      -- The lane's frontier (NULL: its head).
      SELECT (p_lane_run_at)[a.k] AS run_at, (p_lane_id)[a.k] AS id
    ) f
    LEFT JOIN LATERAL (
      -- The oldest key marked since the snapshot behind the frontier (usually none).
      SELECT m.run_at, m.id - 1 AS id FROM :"schema".lane_marks m
      WHERE m.queue = l.queue AND m.priority = l.priority
        AND m.xid >= ((p_lane_marks_from)[a.k])::text::xid8
      ORDER BY m.run_at, m.id
      LIMIT 1
    ) mk ON true
    CROSS JOIN LATERAL (
      -- Where the scan starts: the frontier, or the mark when it is behind the frontier.
      SELECT CASE WHEN (mk.run_at, mk.id) < (f.run_at, f.id) THEN mk.run_at ELSE f.run_at END
               AS run_at,
             CASE WHEN (mk.run_at, mk.id) < (f.run_at, f.id) THEN mk.id ELSE f.id END AS id
    ) s
    CROSS JOIN LATERAL (
      SELECT j.id FROM :"schema".live j
      WHERE j.queue = l.queue AND j.priority = l.priority AND j.state = 'available'
        AND (j.run_at, j.id) > (coalesce(s.run_at, '-infinity'::timestamptz), coalesce(s.id, 0))
        AND j.run_at <= statement_timestamp()
      ORDER BY j.run_at, j.id
      LIMIT p_max_jobs
      FOR UPDATE SKIP LOCKED
    ) c
    WHERE p_from_head = 0 AND l.queue = p_queue
      AND NOT EXISTS (SELECT 1 FROM :"schema".queues q
                      WHERE q.name = p_queue AND (q.paused_at IS NOT NULL
                        OR q.running_limit IS NOT NULL OR q.rate_count IS NOT NULL))
    ORDER BY l.priority
    LIMIT p_max_jobs
  ) UNION ALL (
    -- From the head: the queue's whole hand-out order, lanes or none. The uncorrelated min()
    -- is evaluated once, before the walk, as a probe of jobs_due_idx: when no job is due it
    -- stops the statement at once, instead of walking past every scheduled job.
    SELECT h.id FROM (
      SELECT j.id FROM :"schema".live j
      WHERE p_from_head = 1 AND j.queue = p_queue AND j.state = 'available'
        AND j.run_at <= statement_timestamp()
        AND (SELECT min(d.run_at) FROM :"schema".live d
             WHERE d.queue = p_queue AND d.state = 'available') <= statement_timestamp()
        AND NOT EXISTS (SELECT 1 FROM :"schema".queues q
                        WHERE q.name = p_queue AND (q.paused_at IS NOT NULL
                          OR q.running_limit IS NOT NULL OR q.rate_count IS NOT NULL))
      ORDER BY j.priority, j.run_at, j.id
      LIMIT p_max_jobs
      FOR UPDATE SKIP LOCKED
    ) h
  )) p
), taken AS (
  UPDATE :"schema".live j
  SET state = 'running',
      attempts = j.attempts + 1,
      lease_token = (p_tokens)[picked.n::integer],
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
, snap AS (
  -- Once per statement. From the head, lanes met that nobody registered are registered, so
  -- that later leases read them.
  SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS xmin,
         pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS xmax,
         statement_timestamp() AS leased_at,
         CASE WHEN p_from_head = 1 THEN :"schema".register_lanes(p_queue,
           ARRAY(SELECT DISTINCT t.priority FROM taken t)) END AS registered
)
SELECT t.*, s.xmin, s.xmax, s.leased_at FROM taken t CROSS JOIN snap s;
END
$fn$;

