-- Migration 11: what a lease needs to start past the jobs earlier leases took, instead of at
-- the head of the queue (docs/postgres-storage.md, section 6). Under a snapshot that another
-- session holds open, the head of the hand-out order fills with entries of jobs already
-- leased that no vacuum may remove, and a lease that starts at the head walks all of them.
--   lanes       the (queue, priority) pairs that have had a live job: a lease reads the
--               queue's lanes in priority order and scans each from a key of its own (the
--               engine's frontier for that lane). Rows are added, never updated.
--   lane_marks  announcements of jobs that became available with a key older than the
--               frontiers of the leases running meanwhile: a run_at in the past, a statement
--               that ran long, a job whose priority or queue was changed. A lease reads the
--               marks written by transactions it could not rule out and starts no later than
--               the oldest key they name. Rows are added, and deleted an hour later
--               (forget_old_marks).
-- Both are written by the live table's triggers, so that a plain INSERT or UPDATE of jobs by
-- any program is announced too.
--
-- Locks: SHARE ROW EXCLUSIVE on live (the triggers), waited for at most 5 s; under it, one
-- read of the live jobs' lanes (proportional to the backlog). Written once and never edited
-- after release.
DO $do$
BEGIN
  SET LOCAL lock_timeout = '5s';
  LOCK TABLE :"schema".live IN SHARE ROW EXCLUSIVE MODE;
EXCEPTION WHEN lock_not_available THEN
  RAISE EXCEPTION 'the upgrade could not lock %.live within 5 s: held by %', ':"schema"',
    coalesce((SELECT string_agg(format('pid %s (%s, %s since %s)', a.pid, a.usename,
                                       a.state, a.xact_start), '; ')
              FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
              WHERE l.relation = ':"schema".live'::regclass AND l.granted
                AND l.pid <> pg_backend_pid()), 'another session')
    USING ERRCODE = 'lock_not_available',
          HINT = 'end that transaction, or wait for it, and run readpast init again';
END
$do$;

CREATE TABLE :"schema".lanes (
  queue    text    NOT NULL,
  priority integer NOT NULL,
  PRIMARY KEY (queue, priority)
);

CREATE TABLE :"schema".lane_marks (
  queue     text        NOT NULL,
  priority  integer     NOT NULL,
  -- The oldest key, in hand-out order (run_at, id), of the jobs announced.
  run_at    timestamptz NOT NULL,
  id        bigint      NOT NULL,
  -- The transaction that made them available: a lease reads the marks of transactions that
  -- had not written yet when the lease that set its frontier took its snapshot.
  xid       xid8        NOT NULL DEFAULT pg_current_xact_id(),
  -- The clock when the mark was written, after `xid` was assigned: a lease whose snapshot is
  -- later than this has xid below its xmax and does not need the mark.
  marked_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX lane_marks_xid_idx ON :"schema".lane_marks (queue, priority, xid);
CREATE INDEX lane_marks_marked_at_idx ON :"schema".lane_marks (marked_at);

-- Marks an hour old: whoever writes a mark deletes them. An engine uses a lane's frontier at
-- most 10 minutes after the lease whose snapshot it rests on (LeaseFrontier::kBasisAtMost,
-- src/engines/postgres/lease_frontier.hpp), and that lease needs only marks written after
-- its snapshot. SKIP LOCKED: a writer never waits for another's transaction (the outbox's
-- can be long) over marks that either may delete.
CREATE FUNCTION :"schema".forget_old_marks() RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog AS $fn$
  DELETE FROM :"schema".lane_marks m
  WHERE m.ctid = ANY (ARRAY(
    SELECT o.ctid FROM :"schema".lane_marks o
    WHERE o.marked_at < clock_timestamp() - interval '1 hour'
    ORDER BY o.marked_at
    LIMIT 1000
    FOR UPDATE SKIP LOCKED));
$fn$;
REVOKE ALL ON FUNCTION :"schema".forget_old_marks() FROM PUBLIC;

INSERT INTO :"schema".lanes (queue, priority)
SELECT DISTINCT j.queue, j.priority FROM :"schema".live j;

-- δ = 100 ms below bounds the time from a statement's start (which dates the rows it makes
-- available: run_at defaults to statement_timestamp()) to its first write. A row dated more
-- than δ before its statement, and every row of a statement that ran longer than δ, may have a
-- key that a lease already passed while the statement ran: it is marked.
--
-- Inserted rows: the lane of each (whatever its state: a waiting job becomes available later)
-- is registered when not yet known, one probe per distinct lane, and available rows with old
-- keys are marked, the oldest key per lane. The wake-up of migration 1 stays as it was.
-- SECURITY DEFINER: a role allowed to write jobs need not also be granted rights on lanes and
-- lane_marks; everything the function names is schema-qualified.
CREATE OR REPLACE FUNCTION :"schema".notify_inserted() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $fn$
BEGIN
  PERFORM pg_notify(:'channel', q.queue)
  FROM (SELECT DISTINCT n.queue FROM new_jobs n
        WHERE n.state = 'available' AND n.run_at <= statement_timestamp()) q;
  INSERT INTO :"schema".lanes (queue, priority)
  SELECT DISTINCT n.queue, n.priority FROM new_jobs n
  WHERE NOT EXISTS (SELECT 1 FROM :"schema".lanes l
                    WHERE l.queue = n.queue AND l.priority = n.priority)
  ON CONFLICT DO NOTHING;
  INSERT INTO :"schema".lane_marks (queue, priority, run_at, id)
  SELECT DISTINCT ON (n.queue, n.priority) n.queue, n.priority, n.run_at, n.id
  FROM new_jobs n
  WHERE n.state = 'available'
    AND (n.run_at < statement_timestamp() - interval '100 milliseconds'
         OR clock_timestamp() - statement_timestamp() > interval '100 milliseconds')
  ORDER BY n.queue, n.priority, n.run_at, n.id;
  IF FOUND THEN
    PERFORM :"schema".forget_old_marks();
  END IF;
  RETURN NULL;
END
$fn$;

-- Lanes met by a lease_lanes() that read the queue from its head (p_from_head)
-- without their being registered: rows written while triggers were off
-- (session_replication_role = replica). Returns true.
CREATE FUNCTION :"schema".register_lanes(p_queue text, p_priorities integer[])
RETURNS boolean LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog AS $fn$
  INSERT INTO :"schema".lanes (queue, priority)
  SELECT p_queue, p.priority FROM unnest(p_priorities) AS p(priority)
  ON CONFLICT DO NOTHING;
  SELECT true;
$fn$;
REVOKE ALL ON FUNCTION :"schema".register_lanes(text, integer[]) FROM PUBLIC;

-- Updated rows that become available with an old key, or move to another lane. Row level
-- with a WHEN clause, like the wake-up: the lease, the settles and the engine's retries (dated
-- by their own statement) pay for the condition only.
CREATE FUNCTION :"schema".announce_updated() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $fn$
BEGIN
  INSERT INTO :"schema".lanes (queue, priority) VALUES (NEW.queue, NEW.priority)
  ON CONFLICT DO NOTHING;
  INSERT INTO :"schema".lane_marks (queue, priority, run_at, id)
  VALUES (NEW.queue, NEW.priority, NEW.run_at, NEW.id);
  PERFORM :"schema".forget_old_marks();
  RETURN NULL;
END
$fn$;
CREATE TRIGGER live_announce_updated AFTER UPDATE ON :"schema".live
  FOR EACH ROW
  WHEN (NEW.state = 'available'
        AND (OLD.state <> 'available' OR OLD.run_at <> NEW.run_at
             OR OLD.priority <> NEW.priority OR OLD.queue <> NEW.queue)
        AND (NEW.run_at < statement_timestamp() - interval '100 milliseconds'
             OR clock_timestamp() - statement_timestamp() > interval '100 milliseconds'
             OR OLD.priority <> NEW.priority OR OLD.queue <> NEW.queue))
  EXECUTE FUNCTION :"schema".announce_updated();


-- The engine's lease while another session holds an old snapshot (sql/statements.sql,
-- lease_lanes, says what it does). A function for the settings in its definition, which hold
-- for its statement alone and survive a pooler in transaction mode: under such a hold
-- autovacuum records a table of a few hundred live rows in many pages, and with those
-- statistics the planner read lanes through jobs_due_idx and a sort, and found the rows to
-- update by walking jobs_due_idx (docs/benchmarks.md, run 36). So: no sorts, no bitmap scans,
-- no merge joins, no sequential scans, one generic plan per backend; and no JIT, since with
-- those settings every plan costs more than jit_above_cost and would be compiled on every call
-- (0.3–2 s). Hash joins stay allowed: without them the update's join is quadratic in the batch.
-- The update's state test is written `(j.state || '')` so that it matches no partial index.
CREATE FUNCTION :"schema".lease_lanes(
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
  -- Once per statement. From the head, lanes met that nobody registered (rows written with
  -- triggers off) are registered, so that later leases read them.
  SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS xmin,
         pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS xmax,
         statement_timestamp() AS leased_at,
         CASE WHEN p_from_head = 1 THEN :"schema".register_lanes(p_queue,
           ARRAY(SELECT DISTINCT t.priority FROM taken t)) END AS registered
)
SELECT t.*, s.xmin, s.xmax, s.leased_at FROM taken t CROSS JOIN snap s;
END
$fn$;

-- Whoever was granted rights on the live table reads the lanes and marks and registers lanes
-- (a lease does both).
DO $do$
DECLARE
  g record;
  grantee text;
BEGIN
  FOR g IN
    SELECT DISTINCT a.grantee
    FROM pg_class c, aclexplode(c.relacl) a
    WHERE c.oid = ':"schema".live'::regclass AND a.grantee <> c.relowner
  LOOP
    grantee := CASE WHEN g.grantee = 0 THEN 'PUBLIC'
                    ELSE quote_ident(pg_get_userbyid(g.grantee)) END;
    EXECUTE format('GRANT SELECT ON :"schema".lanes, :"schema".lane_marks TO %s', grantee);
    EXECUTE format('GRANT EXECUTE ON FUNCTION :"schema".register_lanes(text, integer[]) TO %s',
                   grantee);
  END LOOP;
END
$do$;
