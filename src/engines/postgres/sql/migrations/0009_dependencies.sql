-- Migration 9: dependencies and groups (docs/workflows.md). A job enqueued after others (or
-- after a group) waits in the new state 'waiting' until they have all succeeded (until every
-- member of the group has finished); it holds its unique key meanwhile, like a live job. Four
-- columns, each added without rewriting the table. They are NULL for a plain job (read as 0,
-- false, 0 and none), so that its row is no wider than before: a NULL costs a bit of the
-- null bitmap the row already has, a value 4 to 8 bytes on every job.
--   waiting_for  how many of the job's dependencies have not succeeded yet; the job becomes
--                available when the last one does (each edge is counted down once).
--   notify       the job has dependents to tell when it finishes; jobs_notify_idx finds the
--                finished ones that have not told them yet (resolve_dependencies).
--   delay_us     a waiting job's delay, counted from the moment it becomes available.
--   group_name   the group the job is a member of, NULL for none.
-- Locks: ACCESS EXCLUSIVE on jobs for the ALTERs (catalog changes only, no scan: the CHECK
-- is added NOT VALID, as every existing row satisfies it), then SHARE while the four partial
-- indexes are built (a read of the table; writers wait, readers do not). Written once and
-- never edited after release.
ALTER TABLE :"schema".jobs
  DROP CONSTRAINT jobs_state_check,
  ADD CONSTRAINT jobs_state_check
    CHECK (state IN ('available', 'running', 'succeeded', 'dead', 'cancelled', 'waiting'))
    NOT VALID,
  ADD COLUMN waiting_for integer,
  ADD COLUMN notify boolean,
  ADD COLUMN delay_us bigint,
  ADD COLUMN group_name text CHECK (group_name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$');

DROP INDEX :"schema".jobs_unique_key_idx;
CREATE UNIQUE INDEX jobs_unique_key_idx ON :"schema".jobs (queue, unique_key)
  WHERE unique_key IS NOT NULL AND state IN ('available', 'running', 'waiting');
CREATE INDEX jobs_notify_idx ON :"schema".jobs (id)
  WHERE notify AND state IN ('succeeded', 'dead', 'cancelled');
-- list and stats of a group's members.
CREATE INDEX jobs_group_idx ON :"schema".jobs (group_name, id) WHERE group_name IS NOT NULL;
-- stats and list of waiting jobs (the other states each have theirs).
CREATE INDEX jobs_waiting_idx ON :"schema".jobs (queue, id) WHERE state = 'waiting';

-- One row per edge: job_id waits for depends_on, a job's id, or minus a group's id for a job
-- enqueued after a group. met: depends_on succeeded (the group finished) while job_id waited
-- (counted down in job_id's waiting_for). The primary key finds a finished job's dependents;
-- dependencies_job_idx what a job waits for.
CREATE TABLE :"schema".dependencies (
  depends_on bigint  NOT NULL,
  job_id     bigint  NOT NULL,
  met        boolean NOT NULL DEFAULT false,
  PRIMARY KEY (depends_on, job_id)
);
CREATE INDEX dependencies_job_idx ON :"schema".dependencies (job_id, depends_on);

-- One row per group (docs/workflows.md). live: members not yet finished, counted up by each
-- member's enqueue (and retry) and down when resolve_dependencies tells of its finish, under
-- the row's lock, so that exactly one finish takes it to 0 however many end at once. Then
-- release_pending is set, with released_upto the highest id of a job that waited for the
-- group at that moment: those are the jobs the release lets go.
CREATE TABLE :"schema".groups (
  id              bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name            text    NOT NULL UNIQUE,
  live            bigint  NOT NULL DEFAULT 0,
  release_pending boolean NOT NULL DEFAULT false,
  released_upto   bigint  NOT NULL DEFAULT 0
);
CREATE INDEX groups_pending_idx ON :"schema".groups (id) WHERE release_pending;

-- The SQL interface (docs/sql.md): enqueue (migration 7's, with unique_for) finds the holder
-- of a unique key among waiting jobs too (the index above), so the holder it hands back may
-- be waiting.
CREATE OR REPLACE FUNCTION :"schema".enqueue(queue text, payload bytea DEFAULT ''::bytea,
                            priority integer DEFAULT 100, run_at timestamptz DEFAULT NULL,
                            delay interval DEFAULT NULL, max_attempts integer DEFAULT 25,
                            unique_key text DEFAULT NULL, unique_for interval DEFAULT NULL)
RETURNS bigint LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  v_id bigint;
  v_claimed boolean;
BEGIN
  IF $4 IS NOT NULL AND $5 IS NOT NULL THEN
    RAISE EXCEPTION 'give run_at or delay, not both' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF $8 IS NOT NULL AND ($7 IS NULL OR $8 <= interval '0') THEN
    RAISE EXCEPTION 'unique_for needs a unique_key and a duration longer than zero'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF $8 IS NOT NULL THEN
    -- Claim the window (taking over a closed one): its row lock settles a race for the key.
    INSERT INTO :"schema".unique_windows AS w (queue, unique_key, job_id, until)
    VALUES ($1, $7, NULL, statement_timestamp() + $8)
    ON CONFLICT (queue, unique_key) DO UPDATE SET job_id = NULL, until = excluded.until
      WHERE w.until <= statement_timestamp()
    RETURNING true INTO v_claimed;
    IF v_claimed IS NULL THEN
      SELECT w.job_id INTO v_id FROM :"schema".unique_windows w
      WHERE w.queue = $1 AND w.unique_key = $7;
      RETURN v_id;
    END IF;
  ELSIF $7 IS NOT NULL THEN
    SELECT w.job_id INTO v_id FROM :"schema".unique_windows w
    WHERE w.queue = $1 AND w.unique_key = $7 AND w.until > statement_timestamp()
      AND w.job_id IS NOT NULL;
    IF v_id IS NOT NULL THEN
      RETURN v_id;
    END IF;
  END IF;
  LOOP
    INSERT INTO :"schema".jobs AS j (queue, payload, priority, run_at, max_attempts, unique_key)
    VALUES ($1, $2, $3, coalesce($4, statement_timestamp() + coalesce($5, interval '0')), $6, $7)
    ON CONFLICT (queue, unique_key)
      WHERE unique_key IS NOT NULL AND state IN ('available', 'running', 'waiting')
      DO NOTHING
    RETURNING j.id INTO v_id;
    IF v_id IS NOT NULL THEN
      IF $8 IS NOT NULL THEN
        UPDATE :"schema".unique_windows w SET job_id = v_id
        WHERE w.queue = $1 AND w.unique_key = $7;
      END IF;
      RETURN v_id;
    END IF;
    -- The key is held: return the holder (and drop a window claimed for a job that was not
    -- enqueued). Each statement of this function takes a new snapshot, so a holder
    -- committed after the INSERT's snapshot is visible here.
    SELECT j.id INTO v_id FROM :"schema".jobs j
    WHERE j.queue = $1 AND j.unique_key = $7 AND j.state IN ('available', 'running', 'waiting');
    IF v_id IS NOT NULL THEN
      IF $8 IS NOT NULL THEN
        DELETE FROM :"schema".unique_windows w WHERE w.queue = $1 AND w.unique_key = $7;
      END IF;
      RETURN v_id;
    END IF;
    -- The holder finished in between: insert again.
  END LOOP;
END
$fn$;

-- enqueue_after: enqueue a job that waits until every job of `after` has succeeded (the
-- rules of docs/workflows.md, as the engines apply them: a missing job is an error, a
-- succeeded one is met, a dead or cancelled one cancels the new job at once), and, with
-- after_group, until every member of that group has finished; group_name makes it a member
-- of a group. Returns its id.
CREATE FUNCTION :"schema".enqueue_after(after bigint[], queue text,
                                  payload bytea DEFAULT ''::bytea,
                                  priority integer DEFAULT 100, run_at timestamptz DEFAULT NULL,
                                  delay interval DEFAULT NULL, max_attempts integer DEFAULT 25,
                                  unique_key text DEFAULT NULL, group_name text DEFAULT NULL,
                                  after_group text DEFAULT NULL)
RETURNS bigint LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  job_id bigint;
  missing bigint;
  unmet integer;
  failed_id bigint;
  failed_state text;
  group_id bigint;
  group_live bigint;
  delay_us bigint := coalesce((extract(epoch FROM $6) * 1000000)::bigint, 0);
BEGIN
  IF $5 IS NOT NULL AND $6 IS NOT NULL THEN
    RAISE EXCEPTION 'give run_at or delay, not both' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF coalesce(array_length($1, 1), 0) = 0 AND $9 IS NULL AND $10 IS NULL THEN
    RETURN :"schema".enqueue($2, $3, $4, $5, $6, $7, $8);
  END IF;
  IF $9 = $10 THEN
    RAISE EXCEPTION 'a job cannot wait for its own group' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF $10 IS NOT NULL THEN
    -- Locked, so that the group's last member cannot finish unseen before this commits.
    SELECT g.id, g.live INTO group_id, group_live FROM :"schema".groups g
    WHERE g.name = $10 FOR UPDATE;
    IF group_id IS NULL THEN
      RAISE EXCEPTION 'no job was ever enqueued in group % to wait for', $10
        USING ERRCODE = 'invalid_parameter_value';
    END IF;
  END IF;
  IF (SELECT count(DISTINCT a) FROM unnest(coalesce($1, '{}')) a)
       <> coalesce(array_length($1, 1), 0)
     OR EXISTS (SELECT 1 FROM unnest($1) a WHERE a IS NULL OR a < 1) THEN
    RAISE EXCEPTION 'job ids to wait for must be positive and listed once'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- Lock the live dependencies first (see lock_dependencies in statements.sql).
  UPDATE :"schema".jobs j SET notify = true
  WHERE j.id = ANY($1) AND j.state IN ('available', 'running', 'waiting');
  SELECT a INTO missing FROM unnest($1) a
  WHERE NOT EXISTS (SELECT 1 FROM :"schema".jobs j WHERE j.id = a) LIMIT 1;
  IF missing IS NOT NULL THEN
    RAISE EXCEPTION 'job % to wait for does not exist', missing
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT count(*) + CASE WHEN group_live > 0 THEN 1 ELSE 0 END INTO unmet
  FROM :"schema".jobs j WHERE j.id = ANY($1) AND j.state <> 'succeeded';
  IF $9 IS NOT NULL THEN
    INSERT INTO :"schema".groups AS g (name, live) VALUES ($9, 1)
    ON CONFLICT (name) DO UPDATE SET live = g.live + 1;
  END IF;
  SELECT j.id, j.state INTO failed_id, failed_state
  FROM unnest($1) WITH ORDINALITY AS a(id, ord) JOIN :"schema".jobs j ON j.id = a.id
  WHERE j.state IN ('dead', 'cancelled') ORDER BY a.ord LIMIT 1;
  INSERT INTO :"schema".jobs AS j (queue, payload, priority, run_at, max_attempts, unique_key,
                                 state, waiting_for, delay_us, finished_at, last_error,
                                 group_name, notify)
  VALUES ($2, $3, $4,
          CASE WHEN failed_id IS NULL AND unmet = 0
               THEN greatest(coalesce($5, statement_timestamp()),
                             statement_timestamp() + coalesce($6, interval '0'))
               ELSE coalesce($5, statement_timestamp()) END,
          $7, $8,
          CASE WHEN failed_id IS NOT NULL THEN 'cancelled'
               WHEN unmet > 0 THEN 'waiting' ELSE 'available' END,
          unmet, delay_us,
          CASE WHEN failed_id IS NOT NULL THEN statement_timestamp() END,
          CASE WHEN failed_id IS NOT NULL
               THEN 'cancelled: dependency ' || failed_id || ' is ' || failed_state END,
          $9, $9 IS NOT NULL)
  ON CONFLICT (queue, unique_key)
    WHERE unique_key IS NOT NULL AND state IN ('available', 'running', 'waiting')
    DO NOTHING
  RETURNING j.id INTO job_id;
  IF job_id IS NULL THEN
    RAISE EXCEPTION 'the unique key is held by a job that was not enqueued after these jobs'
      USING ERRCODE = 'unique_violation';
  END IF;
  INSERT INTO :"schema".dependencies (depends_on, job_id, met)
  SELECT j.id, job_id, j.state = 'succeeded' FROM :"schema".jobs j WHERE j.id = ANY($1);
  IF group_id IS NOT NULL THEN
    INSERT INTO :"schema".dependencies (depends_on, job_id, met)
    VALUES (-group_id, job_id, group_live = 0);
  END IF;
  RETURN job_id;
END
$fn$;

CREATE FUNCTION :"schema".enqueue_after(after bigint[], queue text, payload text,
                                  priority integer DEFAULT 100, run_at timestamptz DEFAULT NULL,
                                  delay interval DEFAULT NULL, max_attempts integer DEFAULT 25,
                                  unique_key text DEFAULT NULL, group_name text DEFAULT NULL,
                                  after_group text DEFAULT NULL)
RETURNS bigint LANGUAGE sql VOLATILE AS $fn$
  SELECT :"schema".enqueue_after($1, $2, convert_to($3, 'UTF8'), $4, $5, $6, $7, $8, $9, $10)
$fn$;
