-- 1: the jobs table and one partial index per hot path.

CREATE TABLE readpast_jobs (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,  -- increasing, never reused
  queue            TEXT    NOT NULL,
  state            TEXT    NOT NULL DEFAULT 'available'
                   CHECK (state IN ('available', 'running', 'succeeded', 'dead', 'cancelled')),
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
  payload          BLOB    NOT NULL DEFAULT x''
);
-- lease: the next available jobs of a queue in hand-out order.
CREATE INDEX readpast_jobs_lease ON readpast_jobs (queue, priority, run_at, id)
  WHERE state = 'available';
-- rescue: running jobs of a queue by lease expiry.
CREATE INDEX readpast_jobs_expiry ON readpast_jobs (queue, lease_expires_at)
  WHERE state = 'running';
-- unique keys are held only by live jobs.
CREATE UNIQUE INDEX readpast_jobs_unique ON readpast_jobs (queue, unique_key)
  WHERE unique_key IS NOT NULL AND state IN ('available', 'running');
-- purge and retention: finished jobs of a queue by age.
CREATE INDEX readpast_jobs_finished ON readpast_jobs (queue, state, finished_at)
  WHERE state IN ('succeeded', 'dead', 'cancelled');
-- stats and list: counts per queue and state, paging by id.
CREATE INDEX readpast_jobs_queue_state ON readpast_jobs (queue, state, id);
