-- Migration 21: an edit through the jobs view that moves a due job from live to waiting with
-- a later run_at moves it once.
--
-- Migration 18's jobs_view_write() moves a job between live and waiting by updating it in
-- place first (so that the tables' key triggers move a changed key, and a running job leaving
-- live is seen as available there and keeps its key), then inserting it into the new table
-- and deleting it from the old. The update in place wrote the new run_at too; a later one
-- made live_schedule_later (migration 18) move the row to scheduled at the end of that
-- update, so the insert into waiting that followed left the job in two tables (waiting and
-- scheduled), and the view showed it twice. The update in place now keeps the row's own
-- run_at when the row leaves its table; the row moved carries the new one.
-- (tests/postgres/waiting_jobs_test.cpp, AnEditToWaitingWithALaterRunAtMovesTheJobOnce.)
--
-- No table is locked: one function is replaced.
CREATE OR REPLACE FUNCTION :"schema".jobs_view_write() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  cur :"schema".jobs;  -- the job's row as it is now, locked (the tables' columns, in order)
  old_table text;
  new_table text;
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF NEW.id IS NOT NULL THEN
      RAISE EXCEPTION 'cannot insert a non-DEFAULT value into column "id"'
        USING ERRCODE = 'generated_always', DETAIL = 'A job takes its id from jobs_id_seq.';
    END IF;
    NEW.id := nextval(':"schema".jobs_id_seq');
    new_table := :"schema".table_of(NEW.state);
    IF new_table = 'live' THEN
      INSERT INTO :"schema".live OVERRIDING SYSTEM VALUE SELECT NEW.*;
      PERFORM :"schema".claim_unique_key(NEW.id);
    ELSIF new_table = 'waiting' THEN
      INSERT INTO :"schema".waiting SELECT NEW.*;
      PERFORM :"schema".claim_unique_key(NEW.id);
    ELSE
      INSERT INTO :"schema".done SELECT NEW.*;
    END IF;
    RETURN NEW;
  END IF;

  IF TG_OP = 'DELETE' THEN
    DELETE FROM :"schema".live WHERE id = OLD.id;
    IF NOT FOUND THEN
      DELETE FROM :"schema".scheduled WHERE id = OLD.id;
    END IF;
    IF NOT FOUND THEN
      DELETE FROM :"schema".waiting WHERE id = OLD.id;
    END IF;
    IF NOT FOUND THEN
      DELETE FROM :"schema".done WHERE id = OLD.id;
    END IF;
    RETURN CASE WHEN FOUND THEN OLD END;
  END IF;

  IF NEW.id IS DISTINCT FROM OLD.id THEN
    RAISE EXCEPTION 'a job''s id cannot change' USING ERRCODE = 'feature_not_supported';
  END IF;
  old_table := :"schema".table_of(OLD.state);
  EXECUTE format('SELECT * FROM :"schema".%I WHERE id = $1 FOR UPDATE', old_table)
    INTO cur USING OLD.id;
  IF cur.id IS NULL AND OLD.state = 'available' THEN
    -- An available job is in live when due, in scheduled when not (or due and not yet
    -- promoted): the same state in either, edited in place in whichever holds it.
    SELECT * INTO cur FROM :"schema".scheduled WHERE id = OLD.id FOR UPDATE;
    old_table := 'scheduled';
  END IF;
  IF cur.id IS NULL OR cur.state IS DISTINCT FROM OLD.state
     OR cur.lease_token IS DISTINCT FROM OLD.lease_token THEN
    RETURN NULL;  -- changed since this statement read it: not updated
  END IF;
  IF NEW.queue IS NOT DISTINCT FROM OLD.queue THEN NEW.queue := cur.queue; END IF;
  IF NEW.state IS NOT DISTINCT FROM OLD.state THEN NEW.state := cur.state; END IF;
  IF NEW.priority IS NOT DISTINCT FROM OLD.priority THEN NEW.priority := cur.priority; END IF;
  IF NEW.run_at IS NOT DISTINCT FROM OLD.run_at THEN NEW.run_at := cur.run_at; END IF;
  IF NEW.attempts IS NOT DISTINCT FROM OLD.attempts THEN NEW.attempts := cur.attempts; END IF;
  IF NEW.max_attempts IS NOT DISTINCT FROM OLD.max_attempts THEN
    NEW.max_attempts := cur.max_attempts;
  END IF;
  IF NEW.lease_token IS NOT DISTINCT FROM OLD.lease_token THEN
    NEW.lease_token := cur.lease_token;
  END IF;
  IF NEW.leased_by IS NOT DISTINCT FROM OLD.leased_by THEN NEW.leased_by := cur.leased_by; END IF;
  IF NEW.lease_expires_at IS NOT DISTINCT FROM OLD.lease_expires_at THEN
    NEW.lease_expires_at := cur.lease_expires_at;
  END IF;
  IF NEW.enqueued_at IS NOT DISTINCT FROM OLD.enqueued_at THEN
    NEW.enqueued_at := cur.enqueued_at;
  END IF;
  IF NEW.started_at IS NOT DISTINCT FROM OLD.started_at THEN
    NEW.started_at := cur.started_at;
  END IF;
  IF NEW.finished_at IS NOT DISTINCT FROM OLD.finished_at THEN
    NEW.finished_at := cur.finished_at;
  END IF;
  IF NEW.unique_key IS NOT DISTINCT FROM OLD.unique_key THEN
    NEW.unique_key := cur.unique_key;
  END IF;
  IF NEW.last_error IS NOT DISTINCT FROM OLD.last_error THEN
    NEW.last_error := cur.last_error;
  END IF;
  IF NEW.payload IS NOT DISTINCT FROM OLD.payload THEN NEW.payload := cur.payload; END IF;
  IF NEW.progress IS NOT DISTINCT FROM OLD.progress THEN NEW.progress := cur.progress; END IF;
  IF NEW.waiting_for IS NOT DISTINCT FROM OLD.waiting_for THEN
    NEW.waiting_for := cur.waiting_for;
  END IF;
  IF NEW.notify IS NOT DISTINCT FROM OLD.notify THEN NEW.notify := cur.notify; END IF;
  IF NEW.delay_us IS NOT DISTINCT FROM OLD.delay_us THEN NEW.delay_us := cur.delay_us; END IF;
  IF NEW.group_name IS NOT DISTINCT FROM OLD.group_name THEN
    NEW.group_name := cur.group_name;
  END IF;
  new_table := :"schema".table_of(NEW.state);
  IF new_table = 'live' AND old_table = 'scheduled' AND NEW.state = 'available' THEN
    new_table := 'scheduled';  -- promoted when due, by the next lease
  END IF;
  IF new_table = old_table OR (old_table <> 'done' AND new_table <> 'done') THEN
    -- In place, in whichever table holds it (all have the view's columns, in its order); the
    -- state when the row stays, or 'available' when it leaves live for waiting below. A row
    -- that leaves keeps its run_at here ($4): given a later one, live_schedule_later would
    -- move it to scheduled at the end of this UPDATE, before the move below (migration 21).
    EXECUTE format('UPDATE :"schema".%I SET (queue, state, priority, run_at, attempts,
        max_attempts, lease_token, leased_by, lease_expires_at, enqueued_at, started_at,
        finished_at, unique_key, last_error, payload, progress, waiting_for, notify, delay_us,
        group_name)
      = (($1).queue, $3, ($1).priority, $4,
        ($1).attempts, ($1).max_attempts,
        ($1).lease_token, ($1).leased_by, ($1).lease_expires_at, ($1).enqueued_at,
        ($1).started_at, ($1).finished_at, ($1).unique_key, ($1).last_error, ($1).payload,
        ($1).progress, ($1).waiting_for, ($1).notify, ($1).delay_us, ($1).group_name)
      WHERE id = $2', old_table)
      USING NEW, OLD.id, CASE WHEN new_table = old_table THEN NEW.state
                              WHEN old_table = 'live' THEN 'available' ELSE OLD.state END,
            CASE WHEN new_table = old_table THEN NEW.run_at ELSE cur.run_at END;
    IF new_table <> old_table THEN
      -- Between live and waiting: the row, now as NEW but for its state, moves.
      EXECUTE format('INSERT INTO :"schema".%I %s SELECT ($1).*', new_table,
                     CASE WHEN new_table = 'live' THEN 'OVERRIDING SYSTEM VALUE' ELSE '' END)
        USING NEW;
      EXECUTE format('DELETE FROM :"schema".%I WHERE id = $1', old_table) USING OLD.id;
    END IF;
  ELSIF new_table <> 'done' THEN
    EXECUTE format('INSERT INTO :"schema".%I %s SELECT ($1).*', new_table,
                   CASE WHEN new_table = 'live' THEN 'OVERRIDING SYSTEM VALUE' ELSE '' END)
      USING NEW;
    PERFORM :"schema".claim_unique_key(NEW.id);
    DELETE FROM :"schema".done WHERE id = OLD.id;
  ELSE
    INSERT INTO :"schema".done SELECT NEW.*;
    EXECUTE format('DELETE FROM :"schema".%I WHERE id = $1', old_table) USING OLD.id;
  END IF;
  RETURN NEW;
END
$fn$;
