-- 6: dependencies (docs/workflows.md). A job enqueued after others waits in the new state
-- 'waiting' until they have all succeeded; it holds its unique key meanwhile, like a live
-- job (live_key). New columns:
--   waiting_for     how many of the job's dependencies have not succeeded yet; the job
--                   becomes available when the last one does (each edge counted down once).
--   notify          the job has dependents to tell when it finishes.
--   notify_pending  1 while a finished job still has dependents to tell, else NULL, so that
--                   readpast_jobs_notify holds those jobs only and a lease or a settling of
--                   any other job never writes to it (as finished_state, migration 3).
--   delay_us        a waiting job's delay, counted from the moment it becomes available.
-- live_key's new expression rebuilds the table (ALGORITHM=COPY): writers wait until it is
-- done. Every statement can run again after one failed half-way.

ALTER TABLE readpast_jobs DROP CONSTRAINT IF EXISTS readpast_jobs_state_check;

ALTER TABLE readpast_jobs
  ADD CONSTRAINT IF NOT EXISTS readpast_jobs_state_check
    CHECK (state IN ('available', 'running', 'succeeded', 'dead', 'cancelled', 'waiting')),
  ADD COLUMN IF NOT EXISTS waiting_for INT NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS notify TINYINT NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS delay_us BIGINT NOT NULL DEFAULT 0;

ALTER TABLE readpast_jobs
  MODIFY COLUMN live_key VARBINARY(1024) AS
    (IF(state = 'available' OR state = 'running' OR state = 'waiting', unique_key, NULL))
    PERSISTENT,
  ADD COLUMN IF NOT EXISTS notify_pending TINYINT AS
    (IF(notify = 1 AND (state = 'succeeded' OR state = 'dead' OR state = 'cancelled'), 1, NULL))
    PERSISTENT,
  ADD INDEX IF NOT EXISTS readpast_jobs_notify (notify_pending, id);

-- One row per edge: job_id waits for depends_on. met: depends_on succeeded while job_id
-- waited (counted down in job_id's waiting_for). The primary key finds a finished job's
-- dependents; readpast_dependencies_job what a job waits for.
CREATE TABLE IF NOT EXISTS readpast_dependencies (
  depends_on BIGINT  NOT NULL,
  job_id     BIGINT  NOT NULL,
  met        TINYINT NOT NULL DEFAULT 0,
  PRIMARY KEY (depends_on, job_id),
  KEY readpast_dependencies_job (job_id, depends_on)
) ENGINE = InnoDB;

-- One row per lock that serializes work over the whole database: 'dependencies' is held by
-- the one process resolving dependencies (FOR UPDATE SKIP LOCKED: the others let it).
CREATE TABLE IF NOT EXISTS readpast_locks (
  name VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY
) ENGINE = InnoDB;
INSERT IGNORE INTO readpast_locks (name) VALUES ('dependencies');
