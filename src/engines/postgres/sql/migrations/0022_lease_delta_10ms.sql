-- Migration 22: δ, how far before the time its trigger runs a job may be dated and not be
-- marked (migration 11 put it as the time from a statement's start to its first write), goes
-- from 100 ms to 10 ms, and a row is marked by its own age when the trigger runs.
--
-- A lease by lane starts each lane at a frontier no later than (its earlier lease's time - δ)
-- (src/engines/postgres/lease_frontier.hpp, kDelta), so under a held snapshot every lease
-- walked the index entries of every job leased in the last 100 ms, which the hold keeps from
-- being marked dead: about 3,000 at 30,000 jobs/s, each a visit to the heap. With 10 ms it walks
-- a tenth of them (docs/benchmarks.md, run 58: the held drain's median window 1.12 times
-- schema 21's, the lease's median time hardly changed by the hold). The cost is more marks: a
-- statement that runs longer than 10 ms marks its jobs, one row of lane_marks per lane (about
-- one a second in that run).
--
-- The rule, restated: a row is marked when its run_at is more than δ before the time the
-- trigger runs (the statement's end for an insert, the row's update for an update). The
-- frontier's argument needs an unmarked row of a transaction that had not written at a
-- lease's snapshot to have run_at >= (that lease's time - δ); such a row was written after
-- the snapshot, so a trigger that runs later and marks every row older than δ before its own
-- time leaves none unmarked below that bound. Migration 18's insert trigger marked a row when
-- its run_at was more than δ before the statement's start or the statement had run longer
-- than δ; a row dated up to δ before its statement's start (an explicit run_at, such as
-- now() in a transaction that began earlier) by a statement that ran a little under δ passed
-- both tests and could sit up to 2δ below the lease's time, behind a frontier, until the next
-- look-back scan. (tests/postgres/lease_frontier_test.cpp.)
--
-- Locks: the insert trigger's function is replaced in place; the update trigger is dropped and
-- created again, which takes SHARE ROW EXCLUSIVE on live until `readpast init` commits:
-- enqueues, leases and settles wait that long (milliseconds), readers do not. Workers of
-- schema 21 may keep running through it: their frontiers stay 100 ms back, which the new
-- marks cover as well.
CREATE OR REPLACE FUNCTION :"schema".notify_inserted() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog SET enable_seqscan = off
AS $fn$
DECLARE
  -- Rows dated before this are marked: δ before a time after every write of the statement.
  marked_below constant timestamptz := clock_timestamp() - interval '10 milliseconds';
  any_old boolean;
  any_later boolean;
BEGIN
  -- The wake-up (one notice per queue with a job due), whether some available job is dated
  -- before marked_below, and whether some is scheduled for later. OFFSET 0 keeps the
  -- aggregates above the wake-up, so that every queue is woken whatever its keys.
  SELECT bool_or(w.old), bool_or(NOT w.due) INTO any_old, any_later
  FROM (
    SELECT q.old, q.due, CASE WHEN q.due THEN pg_notify(:'channel', q.queue) END AS woken
    FROM (SELECT DISTINCT n.queue, n.run_at <= statement_timestamp() AS due,
                 n.run_at < marked_below AS old
          FROM new_jobs n WHERE n.state = 'available') q
    OFFSET 0) w;
  IF any_later THEN
    INSERT INTO :"schema".scheduled
    SELECT * FROM new_jobs n
    WHERE n.state = 'available' AND n.run_at > statement_timestamp();
    DELETE FROM :"schema".live j
    WHERE j.id = ANY (ARRAY(SELECT n.id FROM new_jobs n
                            WHERE n.state = 'available' AND n.run_at > statement_timestamp()));
  END IF;
  IF any_old THEN
    -- The oldest key per lane; rows moved to scheduled above are ahead of every lease.
    INSERT INTO :"schema".lane_marks (queue, priority, run_at, id)
    SELECT DISTINCT ON (n.queue, n.priority) n.queue, n.priority, n.run_at, n.id
    FROM new_jobs n
    WHERE n.state = 'available' AND n.run_at <= statement_timestamp()
      AND n.run_at < marked_below
    ORDER BY n.queue, n.priority, n.run_at, n.id;
    PERFORM :"schema".forget_old_marks();
  END IF;
  RETURN NULL;
END
$fn$;

-- Updated rows that become available with a key more than δ old at the time of the update, or
-- move to another lane (migration 11's trigger, with the same rule as the insert's).
DROP TRIGGER live_announce_updated ON :"schema".live;
CREATE TRIGGER live_announce_updated AFTER UPDATE ON :"schema".live
  FOR EACH ROW
  WHEN (NEW.state = 'available'
        AND (OLD.state <> 'available' OR OLD.run_at <> NEW.run_at
             OR OLD.priority <> NEW.priority OR OLD.queue <> NEW.queue)
        AND (NEW.run_at < clock_timestamp() - interval '10 milliseconds'
             OR OLD.priority <> NEW.priority OR OLD.queue <> NEW.queue))
  EXECUTE FUNCTION :"schema".announce_updated();
