-- Migration 19: a running job may leave live for scheduled, its key kept.
--
-- Up to migration 18 a running job left live only for done or for good, so the trigger that
-- gives a key back (keep_unique_key(), migrations 15, 17 and 18) skipped its probes for a
-- running job deleted from live: a keyed job's completion, the hot path, probed nothing. A
-- failure retried after a backoff, and a release with a delay, were updated in place first and
-- moved by live_schedule_later, a row trigger, one call and two statements per job (0.62 of
-- schema 17 for failures retried later, docs/benchmarks.md run 53).
--
-- From this version the engine's fail and release move such a job from live to scheduled in
-- their own statement (statements.sql, set-based), so a running job deleted from live may now
-- be in scheduled at the end of the statement. Its key stays then; a running job never leaves
-- live for waiting, so scheduled is the one table probed, inside the statement that gives the
-- key back: a keyed completion pays one probe of scheduled_pkey, no statement more.
-- live_schedule_later stays for every other path (the SQL functions, the view's edits, a
-- binary of schema 18 that is still running).
--
-- Locks: none but the function's replacement; nothing moves. Written once and never edited
-- after release.
CREATE OR REPLACE FUNCTION :"schema".keep_unique_key() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $fn$
BEGIN
  IF TG_OP = 'DELETE' AND TG_TABLE_NAME = 'live' AND OLD.state = 'running' THEN
    DELETE FROM :"schema".unique_keys k
    WHERE k.queue = OLD.queue AND k.unique_key = OLD.unique_key AND k.job_id = OLD.id
      AND NOT EXISTS (SELECT FROM :"schema".scheduled s WHERE s.id = OLD.id);
    RETURN NULL;
  END IF;
  IF TG_OP = 'DELETE' THEN
    IF TG_TABLE_NAME <> 'live' THEN
      PERFORM FROM :"schema".live l WHERE l.id = OLD.id;
      IF FOUND THEN RETURN NULL; END IF;
    END IF;
    IF TG_TABLE_NAME <> 'scheduled' THEN
      PERFORM FROM :"schema".scheduled s WHERE s.id = OLD.id;
      IF FOUND THEN RETURN NULL; END IF;
    END IF;
    IF TG_TABLE_NAME <> 'waiting' THEN
      PERFORM FROM :"schema".waiting w WHERE w.id = OLD.id;
      IF FOUND THEN RETURN NULL; END IF;
    END IF;
  END IF;
  DELETE FROM :"schema".unique_keys k
  WHERE k.queue = OLD.queue AND k.unique_key = OLD.unique_key AND k.job_id = OLD.id;
  IF TG_OP = 'UPDATE' AND NEW.unique_key IS NOT NULL THEN
    INSERT INTO :"schema".unique_keys (queue, unique_key, job_id)
    VALUES (NEW.queue, NEW.unique_key, NEW.id);
  END IF;
  RETURN NULL;
END
$fn$;
