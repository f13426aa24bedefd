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
--               the oldest key they name. Insert-only.
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
  marked_at timestamptz NOT NULL DEFAULT statement_timestamp()
);
CREATE INDEX lane_marks_xid_idx ON :"schema".lane_marks (queue, priority, xid);

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
  RETURN NULL;
END
$fn$;

-- Lanes met by a lease that read the queue from its head (the engine's lease, sql/statements.sql)
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
