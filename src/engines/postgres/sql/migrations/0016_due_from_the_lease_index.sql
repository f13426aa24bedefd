-- Migration 16: jobs_due_idx goes; the lease index answers "when is the next job due?".
-- jobs_due_idx, (queue, run_at) on the available jobs, gave three answers by one descent: is any
-- job of the queue due (the guard before a lease from the head, which otherwise walks past every
-- scheduled job), when is the next one due (next_due, for wait_for_work), and the limited
-- lease's check whether a limit, not an empty queue, held it back. It cost every enqueue a third
-- index entry: about 15% of a batched enqueue (docs/benchmarks.md, run 7), and under a held
-- snapshot one more dead entry per job that no vacuum removes.
--
-- jobs_lease_idx (queue, priority, run_at, id) holds the same entries, ordered by priority
-- first, so within a priority (a lane) its first entry is the lane's earliest run_at.
-- first_run_at() reads that first entry lane by lane: a descent per lane, the lanes found the
-- way lease_lanes() finds them (migration 12): those registered in `lanes`, and in each gap
-- between them (below the first, above the last, the whole range when none is) the first lane
-- with an available job, by a descent bounded by the registered lanes on either side so that it
-- reads no entry of theirs: four or five descents for a queue of one priority. (min(run_at) over
-- jobs_lease_idx without the lanes walks the whole queue: the drain halved, run 6.) From
-- p_after, for registered lanes: where the engine's frontiers say no job is left below
-- (next_due while a snapshot is held), so that the descent starts past the entries a held
-- snapshot keeps at the lane's head, as the bounded probe of jobs_due_idx did. A lane nobody
-- registered has no frontier and is read from its head.
--
-- The leases' guard ("is any job due?") reads the queue's first entry in hand-out order first:
-- when that job is due the answer is yes, and only when it is scheduled for later is
-- first_run_at() asked (a call of it on every lease cost a drain of one-job leases 13%,
-- docs/benchmarks.md run 47). lease_head_walk() then starts its walk at that entry, so that the
-- entries earlier leases left at the head of jobs_lease_idx are read once a lease, not by the
-- guard and again by the walk (before, once in each of the two indexes).
--
-- The functions that read jobs_due_idx are replaced in place, with the bodies of migrations 10,
-- 12 and 14 otherwise unchanged; lease_head_walk()'s walked_pages now counts the pages of
-- jobs_lease_idx alone (the engine's threshold for a long head, lease_mode.hpp, is set for one
-- index's head).
--
-- Locks: ACCESS EXCLUSIVE on live for the DROP INDEX, waited for at most 5 s
-- (lock_for_upgrade(), migration 15), held for the catalog change only: no table or index is
-- read or written under it.
SELECT :"schema".lock_for_upgrade(':"schema".live', 'ACCESS EXCLUSIVE');

-- The earliest run_at of the queue's available jobs (at or after p_after in its registered
-- lanes), NULL when it has none. A function for the settings in its definition, as the leases
-- are (migration 13): with statistics of a queue that was nearly empty when last analysed, the
-- planner would read a lane through a bitmap scan and a sort instead of a descent that stops at
-- its first entry. Called by the leases below and by the engine's next_due
-- (sql/statements.sql).
CREATE FUNCTION :"schema".first_run_at(p_queue text, p_after timestamptz)
RETURNS timestamptz
LANGUAGE plpgsql STABLE
SET enable_sort = off SET enable_bitmapscan = off
SET enable_mergejoin = off SET enable_seqscan = off SET plan_cache_mode = force_generic_plan
SET jit = off SET enable_incremental_sort = off
AS $fn$
#variable_conflict use_column
BEGIN
RETURN (
  WITH RECURSIVE lane (priority, run_at) AS (
    -- A row below every lane, from which the walk starts.
    SELECT NULL::integer, NULL::timestamptz
    UNION ALL
    -- The next lane above w: the first lane nobody registered below the next registered one
    -- (usually none; then its run_at is its first entry's), else that registered lane (its
    -- run_at NULL: read below, from p_after).
    SELECT coalesce(g.priority, r.priority), g.run_at
    FROM lane w
    LEFT JOIN LATERAL (
      SELECT l.priority FROM :"schema".lanes l
      WHERE l.queue = p_queue AND l.priority > coalesce(w.priority::bigint, -2147483649)
      ORDER BY l.priority
      LIMIT 1
    ) r ON true
    LEFT JOIN LATERAL (
      SELECT j.priority, j.run_at FROM :"schema".live j
      WHERE j.queue = p_queue AND j.state = 'available'
        AND j.priority > coalesce(w.priority::bigint, -2147483649)
        AND j.priority < coalesce(r.priority::bigint, 2147483648)
      ORDER BY j.priority, j.run_at, j.id
      LIMIT 1
    ) g ON true
    WHERE coalesce(g.priority, r.priority) IS NOT NULL
  )
  SELECT min(coalesce(w.run_at, (
    SELECT j.run_at FROM :"schema".live j
    WHERE j.queue = p_queue AND j.priority = w.priority AND j.state = 'available'
      AND j.run_at >= coalesce(p_after, '-infinity'::timestamptz)
    ORDER BY j.run_at, j.id
    LIMIT 1)))
  FROM lane w
  WHERE w.priority IS NOT NULL
);
END
$fn$;

CREATE OR REPLACE FUNCTION :"schema".lease_head_walk(
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
    pg_stat_get_xact_blocks_fetched(':"schema".jobs_lease_idx'::regclass);
  head record;
BEGIN
-- The queue's first job in hand-out order, past the entries that earlier leases left at the
-- head. It is the guard: none, or none due in any lane (first_run_at(), asked only when the
-- first one is scheduled for later), and nothing is walked. And the walk starts at it, so that
-- the head is read once a lease. A job committed between this statement and the walk with a
-- key before it is left for the next lease, as if it had committed after the walk's snapshot.
SELECT d.priority, d.run_at, d.id INTO head FROM :"schema".live d
WHERE d.queue = p_queue AND d.state = 'available'
ORDER BY d.priority, d.run_at, d.id
LIMIT 1;
IF FOUND AND (head.run_at <= statement_timestamp()
              OR :"schema".first_run_at(p_queue, NULL) <= statement_timestamp()) THEN
RETURN QUERY
WITH picked AS (
  SELECT p.id, row_number() OVER () AS n FROM (
    SELECT j.id FROM :"schema".live j
    WHERE j.queue = p_queue AND j.state = 'available' AND j.run_at <= statement_timestamp()
      AND (j.priority, j.run_at, j.id) >= (head.priority, head.run_at, head.id)
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
END IF;
-- The row after the jobs: every other column is null (RETURNS TABLE's variables start so).
walked_pages := pg_stat_get_xact_blocks_fetched(':"schema".jobs_lease_idx'::regclass)
  - pages_before;
RETURN NEXT;
END
$fn$;

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
    -- From the head: the queue's whole hand-out order, lanes or none. The uncorrelated guard
    -- is evaluated once, before the walk: when no job is due it stops the statement at once,
    -- instead of walking past every scheduled job (as in lease_head_walk()).
    SELECT h.id FROM (
      SELECT j.id FROM :"schema".live j
      WHERE p_from_head = 1 AND j.queue = p_queue AND j.state = 'available'
        AND j.run_at <= statement_timestamp()
        AND (SELECT CASE WHEN h.run_at <= statement_timestamp() THEN true
                         ELSE :"schema".first_run_at(p_queue, NULL) <= statement_timestamp() END
             FROM (SELECT d.run_at FROM :"schema".live d
                   WHERE d.queue = p_queue AND d.state = 'available'
                   ORDER BY d.priority, d.run_at, d.id
                   LIMIT 1) h)
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

CREATE OR REPLACE FUNCTION :"schema".lease_limited(p_queue text, p_worker text, p_max_jobs integer,
                                        p_lease_us bigint, p_tokens uuid[])
RETURNS TABLE (id bigint, queue text, state text, priority integer, run_at timestamptz,
               attempts integer, max_attempts integer, lease_token uuid, leased_by text,
               lease_expires_at timestamptz, enqueued_at timestamptz, started_at timestamptz,
               finished_at timestamptz, unique_key text, last_error text, payload bytea,
               throttled text, limited boolean)
LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  lim record;
  allowed bigint := p_max_jobs;
  binding text;
  counted bigint;
  slots integer[];
  taken bigint := 0;
  v_now timestamptz;
BEGIN
  SELECT q.paused_at, q.running_limit, q.rate_count, q.rate_window_us INTO lim
    FROM :"schema".queues q WHERE q.name = p_queue FOR UPDATE SKIP LOCKED;
  IF NOT FOUND THEN
    -- Taken by another lease of the queue (nothing this time), or no row: no limits.
    RETURN QUERY SELECT NULL::bigint, NULL::text, NULL::text, NULL::integer, NULL::timestamptz,
      NULL::integer, NULL::integer, NULL::uuid, NULL::text, NULL::timestamptz, NULL::timestamptz,
      NULL::timestamptz, NULL::timestamptz, NULL::text, NULL::text, NULL::bytea, NULL::text,
      EXISTS (SELECT 1 FROM :"schema".queues q WHERE q.name = p_queue);
    RETURN;
  END IF;
  IF lim.running_limit IS NULL AND lim.rate_count IS NULL THEN
    RETURN QUERY SELECT NULL::bigint, NULL::text, NULL::text, NULL::integer, NULL::timestamptz,
      NULL::integer, NULL::integer, NULL::uuid, NULL::text, NULL::timestamptz, NULL::timestamptz,
      NULL::timestamptz, NULL::timestamptz, NULL::text, NULL::text, NULL::bytea, NULL::text,
      false;
    RETURN;
  END IF;
  IF lim.paused_at IS NOT NULL THEN
    allowed := 0;
  END IF;
  IF allowed > 0 AND lim.running_limit IS NOT NULL THEN
    SELECT count(*) INTO counted FROM (
      SELECT 1 FROM :"schema".live j WHERE j.queue = p_queue AND j.state = 'running'
      LIMIT lim.running_limit) r;
    IF lim.running_limit - counted < allowed THEN
      allowed := greatest(lim.running_limit - counted, 0);
      binding := 'running';
    END IF;
  END IF;
  -- The lease's time, read after the count: a job whose settling the count saw finished
  -- before it, so that the jobs' own times show the limit held (and the rate slots are
  -- stamped in the order the row lock lets leases through).
  v_now := clock_timestamp();
  IF allowed > 0 AND lim.rate_count IS NOT NULL THEN
    slots := ARRAY(SELECT s.slot FROM :"schema".rate_slots s
                   WHERE s.queue = p_queue
                     AND s.leased_at <= v_now
                                        - lim.rate_window_us * interval '1 microsecond'
                   ORDER BY s.leased_at, s.slot LIMIT allowed);
    IF cardinality(slots) < allowed THEN
      allowed := cardinality(slots);
      binding := 'rate';
    END IF;
  END IF;
  IF allowed > 0 THEN
    RETURN QUERY
    WITH picked AS (
      SELECT p.id, row_number() OVER () AS n FROM (
        SELECT j.id FROM :"schema".live j
        WHERE j.queue = p_queue AND j.state = 'available' AND j.run_at <= v_now
          -- As in the plain lease: the guard stops the walk at once when no job is due,
          -- instead of stepping over every scheduled one.
          AND (SELECT CASE WHEN h.run_at <= v_now THEN true
                           ELSE :"schema".first_run_at(p_queue, NULL) <= v_now END
               FROM (SELECT d.run_at FROM :"schema".live d
                     WHERE d.queue = p_queue AND d.state = 'available'
                     ORDER BY d.priority, d.run_at, d.id
                     LIMIT 1) h)
        ORDER BY j.priority, j.run_at, j.id
        LIMIT allowed
        FOR UPDATE SKIP LOCKED
      ) p
    )
    UPDATE :"schema".live j
    SET state = 'running',
        attempts = j.attempts + 1,
        lease_token = p_tokens[picked.n::integer],
        leased_by = p_worker,
        lease_expires_at = v_now + p_lease_us * interval '1 microsecond',
        started_at = v_now
    FROM picked
    WHERE j.id = picked.id AND j.state = 'available'
    RETURNING j.id, j.queue, j.state, j.priority, j.run_at, j.attempts, j.max_attempts,
              j.lease_token, j.leased_by, j.lease_expires_at, j.enqueued_at, j.started_at,
              j.finished_at, j.unique_key, j.last_error, j.payload, NULL::text, true;
    GET DIAGNOSTICS taken = ROW_COUNT;
    IF lim.rate_count IS NOT NULL AND taken > 0 THEN
      UPDATE :"schema".rate_slots s SET leased_at = v_now
        WHERE s.queue = p_queue AND s.slot = ANY (slots[1:taken]);
    END IF;
  END IF;
  IF binding IS NULL OR taken < allowed
     OR NOT coalesce((SELECT CASE WHEN h.run_at <= v_now THEN true
                                  ELSE :"schema".first_run_at(p_queue, NULL) <= v_now END
                      FROM (SELECT d.run_at FROM :"schema".live d
                            WHERE d.queue = p_queue AND d.state = 'available'
                            ORDER BY d.priority, d.run_at, d.id
                            LIMIT 1) h), false) THEN
    binding := NULL;
  END IF;
  IF lim.paused_at IS NOT NULL THEN
    binding := NULL;
  END IF;
  RETURN QUERY SELECT NULL::bigint, NULL::text, NULL::text, NULL::integer, NULL::timestamptz,
    NULL::integer, NULL::integer, NULL::uuid, NULL::text, NULL::timestamptz, NULL::timestamptz,
    NULL::timestamptz, NULL::timestamptz, NULL::text, NULL::text, NULL::bytea, binding, true;
END
$fn$;

DROP INDEX :"schema".jobs_due_idx;
