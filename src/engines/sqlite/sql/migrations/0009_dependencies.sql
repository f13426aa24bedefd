-- 9: dependencies and groups (docs/workflows.md). A job enqueued after others (or after a
-- group) waits in the new state 'waiting' until they have all succeeded (until every member of
-- the group has finished). The jobs table is rebuilt, as in migration 3, because SQLite cannot
-- alter a CHECK; four columns come with it:
--   waiting_for  how many of the job's dependencies have not succeeded yet; the job becomes
--                available when the last one does (each edge is counted down once).
--   notify       the job has dependents to tell when it finishes; readpast_jobs_notify finds
--                the finished ones that have not told them yet (Queue::resolve_dependencies).
--   delay_us     a waiting job's delay, counted from the moment it becomes available.
--   group_name   the group the job is a member of (NewJob::group), NULL for none.
-- A waiting job holds its unique key, like a live one. Every row, id and the AUTOINCREMENT
-- counter are kept.

CREATE TABLE readpast_jobs_v9 (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,  -- increasing, never reused
  queue            TEXT    NOT NULL,
  state            TEXT    NOT NULL DEFAULT 'available'
                   CHECK (state = 'available' OR state = 'running' OR state = 'succeeded'
                          OR state = 'dead' OR state = 'cancelled' OR state = 'waiting'),
  priority         INTEGER NOT NULL DEFAULT 100,
  run_at           INTEGER NOT NULL,                   -- microseconds since the Unix epoch
  attempts         INTEGER NOT NULL DEFAULT 0,
  max_attempts     INTEGER NOT NULL DEFAULT 25 CHECK (max_attempts >= 1),
  lease_token      TEXT,
  leased_by        TEXT,
  lease_expires_at INTEGER,
  enqueued_at      INTEGER NOT NULL,
  started_at       INTEGER,
  finished_at      INTEGER,
  unique_key       TEXT,
  last_error       TEXT,
  payload          BLOB    NOT NULL DEFAULT x'',
  progress         TEXT,                               -- version 7
  waiting_for      INTEGER NOT NULL DEFAULT 0,
  notify           INTEGER NOT NULL DEFAULT 0,
  delay_us         INTEGER NOT NULL DEFAULT 0,
  group_name       TEXT
);
INSERT INTO sqlite_sequence (name, seq)
  SELECT 'readpast_jobs_v9', seq FROM sqlite_sequence WHERE name = 'readpast_jobs';
INSERT INTO readpast_jobs_v9 (id, queue, state, priority, run_at, attempts, max_attempts,
                              lease_token, leased_by, lease_expires_at, enqueued_at,
                              started_at, finished_at, unique_key, last_error, payload,
                              progress)
  SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
         lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload,
         progress
  FROM readpast_jobs;
DROP TABLE readpast_jobs;  -- and with it its indexes and triggers, recreated below
ALTER TABLE readpast_jobs_v9 RENAME TO readpast_jobs;
CREATE INDEX readpast_jobs_lease ON readpast_jobs (queue, priority, run_at, id)
  WHERE state = 'available';
CREATE INDEX readpast_jobs_expiry ON readpast_jobs (queue, lease_expires_at)
  WHERE state = 'running';
CREATE UNIQUE INDEX readpast_jobs_unique ON readpast_jobs (queue, unique_key)
  WHERE unique_key IS NOT NULL AND (state = 'available' OR state = 'running' OR state = 'waiting');
CREATE INDEX readpast_jobs_finished ON readpast_jobs (queue, state, finished_at)
  WHERE state = 'succeeded' OR state = 'dead' OR state = 'cancelled';
CREATE INDEX readpast_jobs_queue_state ON readpast_jobs (queue, state, id)
  WHERE state <> 'running';
CREATE INDEX readpast_jobs_notify ON readpast_jobs (id)
  WHERE notify = 1 AND (state = 'succeeded' OR state = 'dead' OR state = 'cancelled');
-- list and stats of a group's members.
CREATE INDEX readpast_jobs_group ON readpast_jobs (group_name, id) WHERE group_name IS NOT NULL;
CREATE TRIGGER readpast_jobs_queue_name_insert BEFORE INSERT ON readpast_jobs
  WHEN NOT (typeof(NEW.queue) = 'text' AND length(NEW.queue) BETWEEN 1 AND 128 AND NEW.queue GLOB '[A-Za-z0-9]*' AND NEW.queue NOT GLOB '*[^A-Za-z0-9_.-]*')
  BEGIN SELECT RAISE(ABORT, 'invalid queue name'); END;
CREATE TRIGGER readpast_jobs_queue_name_update BEFORE UPDATE OF queue ON readpast_jobs
  WHEN NOT (typeof(NEW.queue) = 'text' AND length(NEW.queue) BETWEEN 1 AND 128 AND NEW.queue GLOB '[A-Za-z0-9]*' AND NEW.queue NOT GLOB '*[^A-Za-z0-9_.-]*')
  BEGIN SELECT RAISE(ABORT, 'invalid queue name'); END;
-- Migration 7's: a job's error history goes with it.
CREATE TRIGGER readpast_job_errors_follow AFTER DELETE ON readpast_jobs
  FOR EACH ROW WHEN old.last_error IS NOT NULL
BEGIN
  DELETE FROM readpast_job_errors WHERE job_id = old.id;
END;

-- One row per edge: job_id waits for depends_on, a job's id, or minus a group's id for a job
-- enqueued after a group. met: depends_on succeeded (the group finished) while job_id waited
-- (counted down in job_id's waiting_for). The primary key finds a finished job's dependents;
-- readpast_dependencies_job finds what a job waits for.
CREATE TABLE readpast_dependencies (
  depends_on INTEGER NOT NULL,
  job_id     INTEGER NOT NULL,
  met        INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (depends_on, job_id)
) WITHOUT ROWID;
CREATE INDEX readpast_dependencies_job ON readpast_dependencies (job_id, depends_on);

-- One row per group. live: members not yet finished, counted up by each member's enqueue (and
-- retry) and down when resolve_dependencies tells of its finish, so that exactly one finish
-- takes it to 0 however many end at once. Then release_pending is set, with released_upto
-- the highest id of a job that waited for the group at that moment: those are the jobs the
-- release lets go (one enqueued after a new member joined waits for that member).
CREATE TABLE readpast_groups (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  name            TEXT    NOT NULL UNIQUE,
  live            INTEGER NOT NULL DEFAULT 0,
  release_pending INTEGER NOT NULL DEFAULT 0,
  released_upto   INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX readpast_groups_pending ON readpast_groups (id) WHERE release_pending = 1;
