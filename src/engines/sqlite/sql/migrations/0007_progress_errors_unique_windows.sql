-- 7: progress, error history and unique windows (docs/workflows.md).
--
-- progress: the JSON text a running job last recorded (Queue::progress), a column of the job
-- so that it goes with its row; no statement of the lease or of complete reads or writes it.
ALTER TABLE readpast_jobs ADD COLUMN progress TEXT;

-- Every failed attempt: what fail() and the rescue of an expired lease wrote to last_error,
-- with the attempt's number, time and worker. Kept out of readpast_jobs so that its hot row
-- does not grow with each failure; read only by get(), oldest first (rowid order).
CREATE TABLE readpast_job_errors (
  job_id  INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  at      INTEGER NOT NULL,  -- microseconds since the Unix epoch
  worker  TEXT,
  error   TEXT    NOT NULL
);
CREATE INDEX readpast_job_errors_job ON readpast_job_errors (job_id);
-- The history goes with its job, however the job is deleted (purge, retention, remove, a
-- completion under zero retention, a user's own DELETE). A job that never failed has no
-- history and a NULL last_error (every entry also sets last_error, and nothing clears it):
-- the WHEN keeps its delete from paying for the lookup.
CREATE TRIGGER readpast_job_errors_follow AFTER DELETE ON readpast_jobs
  FOR EACH ROW WHEN old.last_error IS NOT NULL
BEGIN
  DELETE FROM readpast_job_errors WHERE job_id = old.id;
END;

-- Unique windows (NewJob::unique_for): the key refuses another job of the queue until
-- `until`, whatever its job's state. A table of their own, so that readpast_jobs_unique
-- (live jobs only) stays as it is. An enqueue replaces a closed window of its key; the
-- retention pass forgets closed ones along readpast_unique_windows_until.
CREATE TABLE readpast_unique_windows (
  queue      TEXT    NOT NULL,
  unique_key TEXT    NOT NULL,
  job_id     INTEGER NOT NULL,  -- the job that opened it (it may be gone since)
  until      INTEGER NOT NULL,  -- microseconds since the Unix epoch
  PRIMARY KEY (queue, unique_key)
) WITHOUT ROWID;
CREATE INDEX readpast_unique_windows_until ON readpast_unique_windows (until);
