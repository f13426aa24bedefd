-- Migration 8: global limits of a queue (docs/workflows.md "Global limits"). NULL: no such
-- limit. The engine's plain lease reads them in the same row as paused_at (one probe of the
-- queues table's primary key, as before), and hands out nothing of a limited queue:
-- lease_limited below serves those. A rate of N/DUR keeps N slots (rate_slots), each the time
-- of one of the queue's N latest leases ('-infinity': none yet). Written once and never
-- edited after release.
ALTER TABLE :"schema".queues
  ADD COLUMN running_limit integer CHECK (running_limit >= 1),
  ADD COLUMN rate_count integer CHECK (rate_count >= 1),
  ADD COLUMN rate_window_us bigint CHECK (rate_window_us >= 1);
CREATE TABLE :"schema".rate_slots (
  queue     text        NOT NULL,
  slot      integer     NOT NULL,                   -- 0 .. rate_count - 1
  leased_at timestamptz NOT NULL,
  PRIMARY KEY (queue, slot)
);
CREATE INDEX rate_slots_oldest_idx ON :"schema".rate_slots (queue, leased_at);

-- The lease of a queue with limits: one call, one short transaction (the caller's). It takes
-- the queue's row FOR UPDATE SKIP LOCKED, so that leases of the queue count and take one at a
-- time, and a lease that finds the row taken returns at once with nothing (it never waits).
-- Then: the running jobs counted up to running_limit along jobs_expiry_idx; the lease's time
-- read (clock_timestamp(), after the count, for started_at and the slots); the rate slots out
-- of the window counted up to what is left (rate_slots_oldest_idx); that many jobs leased as
-- the plain lease does; as many of the oldest slots stamped with this lease's time. The slots
-- hold the times of the queue's rate_count latest leases, so a lease at t may take k jobs
-- exactly when k slots are at or before t - window: then at most rate_count leases fall in any
-- window of that length (docs/workflows.md). The arithmetic is core/limits.cpp's.
--
-- Rows: the jobs leased, then one last row whose id is NULL and whose `throttled` says which
-- limit ('running', 'rate') made the lease take fewer than p_max_jobs while a due job was left
-- (NULL otherwise), and `limited` whether the queue has limits at all (false: nothing was
-- done; the caller leases as for any queue).
CREATE FUNCTION :"schema".lease_limited(p_queue text, p_worker text, p_max_jobs integer,
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
      SELECT 1 FROM :"schema".jobs j WHERE j.queue = p_queue AND j.state = 'running'
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
        SELECT j.id FROM :"schema".jobs j
        WHERE j.queue = p_queue AND j.state = 'available' AND j.run_at <= v_now
          -- As in the plain lease: one probe of jobs_due_idx stops the walk at once when no
          -- job is due, instead of stepping over every scheduled one.
          AND (SELECT min(d.run_at) FROM :"schema".jobs d
               WHERE d.queue = p_queue AND d.state = 'available') <= v_now
        ORDER BY j.priority, j.run_at, j.id
        LIMIT allowed
        FOR UPDATE SKIP LOCKED
      ) p
    )
    UPDATE :"schema".jobs j
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
     OR NOT coalesce((SELECT min(j.run_at) FROM :"schema".jobs j
                      WHERE j.queue = p_queue AND j.state = 'available') <= v_now, false) THEN
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

-- The SQL interface (docs/sql.md): set_limits sets the limits given (NULL keeps that one);
-- a rate's slots keep the newest of their times when its count changes.
CREATE FUNCTION :"schema".set_limits(p_queue text, p_running integer DEFAULT NULL,
                                     p_rate_count integer DEFAULT NULL,
                                     p_rate_window interval DEFAULT NULL)
RETURNS void LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  window_us bigint;
  times timestamptz[];
BEGIN
  IF p_running IS NULL AND p_rate_count IS NULL THEN
    RAISE EXCEPTION 'no limit given: set a running limit or a rate' USING ERRCODE = '22023';
  END IF;
  IF (p_rate_count IS NULL) <> (p_rate_window IS NULL) THEN
    RAISE EXCEPTION 'a rate needs both its count and its window' USING ERRCODE = '22023';
  END IF;
  IF p_running IS NOT NULL AND p_running < 1 THEN
    RAISE EXCEPTION 'a running limit must be at least 1' USING ERRCODE = '22023';
  END IF;
  IF p_rate_count IS NOT NULL THEN
    window_us := (extract(epoch FROM p_rate_window) * 1000000)::bigint;
    IF p_rate_count < 1 OR p_rate_count > 100000 OR window_us < 1 THEN
      RAISE EXCEPTION 'a rate needs a count from 1 to 100000 and a positive window'
        USING ERRCODE = '22023';
    END IF;
  END IF;
  INSERT INTO :"schema".queues AS q (name, running_limit, rate_count, rate_window_us)
    VALUES (p_queue, p_running, p_rate_count, window_us)
  ON CONFLICT (name) DO UPDATE
    SET running_limit = coalesce(excluded.running_limit, q.running_limit),
        rate_count = coalesce(excluded.rate_count, q.rate_count),
        rate_window_us = coalesce(excluded.rate_window_us, q.rate_window_us);
  IF p_rate_count IS NOT NULL THEN
    -- The newest min(old, new) times are kept (core's resized_rate_slots).
    times := ARRAY(SELECT s.leased_at FROM :"schema".rate_slots s WHERE s.queue = p_queue
                   ORDER BY s.leased_at DESC LIMIT p_rate_count);
    DELETE FROM :"schema".rate_slots s WHERE s.queue = p_queue;
    INSERT INTO :"schema".rate_slots (queue, slot, leased_at)
    SELECT p_queue, g.n, coalesce(times[g.n + 1], '-infinity'::timestamptz)
    FROM generate_series(0, p_rate_count - 1) AS g(n);
  END IF;
END
$fn$;

CREATE FUNCTION :"schema".clear_limits(p_queue text)
RETURNS void LANGUAGE sql VOLATILE AS $fn$
  UPDATE :"schema".queues SET running_limit = NULL, rate_count = NULL, rate_window_us = NULL
    WHERE name = p_queue;
  DELETE FROM :"schema".rate_slots WHERE queue = p_queue;
$fn$;

-- The SQL interface's lease() honours limits too: a limited queue's jobs come from
-- lease_limited, with tokens drawn like lease()'s own.
CREATE OR REPLACE FUNCTION :"schema".lease(queue text, worker text, max_jobs integer DEFAULT 1,
                                     lease_duration interval DEFAULT interval '30 seconds')
RETURNS SETOF :"schema".jobs LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  ids bigint[];
BEGIN
  IF EXISTS (SELECT 1 FROM :"schema".queues q WHERE q.name = $1 AND q.paused_at IS NOT NULL) THEN
    RETURN;
  END IF;
  PERFORM :"schema".rescue_expired($1);
  IF EXISTS (SELECT 1 FROM :"schema".queues q WHERE q.name = $1
             AND (q.running_limit IS NOT NULL OR q.rate_count IS NOT NULL)) THEN
    -- Read back in a statement of its own: its snapshot sees what lease_limited changed.
    ids := ARRAY(SELECT l.id FROM :"schema".lease_limited(
                   $1, $2, $3, (extract(epoch FROM $4) * 1000000)::bigint,
                   ARRAY(SELECT :"schema".new_lease_token()
                         FROM generate_series(1, greatest($3, 1)))) l
                 WHERE l.id IS NOT NULL);
    RETURN QUERY SELECT j.* FROM :"schema".jobs j WHERE j.id = ANY (ids)
    ORDER BY j.priority, j.run_at, j.id;
    RETURN;
  END IF;
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
