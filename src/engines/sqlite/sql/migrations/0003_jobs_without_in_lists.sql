-- 3: the jobs table rebuilt (SQLite cannot alter a CHECK) with every condition on state written
-- with = and OR. SQLite evaluates an IN list of three or more values through an ephemeral table
-- that the statement builds and frees each time; the state CHECK of migration 1 did so on every
-- insert and update of a job, the finished index's condition on every write that touched it,
-- and the churn of that memory cost more than the rest of the statement. The copy keeps every
-- row and id, and the AUTOINCREMENT counter (sqlite_sequence), so that no id is ever handed out
-- twice.

CREATE TABLE readpast_jobs_v3 (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,  -- increasing, never reused
  queue            TEXT    NOT NULL,
  state            TEXT    NOT NULL DEFAULT 'available'
                   CHECK (state = 'available' OR state = 'running' OR state = 'succeeded'
                          OR state = 'dead' OR state = 'cancelled'),
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
-- Before the first row goes in, so that the copy only ever raises the counter.
INSERT INTO sqlite_sequence (name, seq)
  SELECT 'readpast_jobs_v3', seq FROM sqlite_sequence WHERE name = 'readpast_jobs';
INSERT INTO readpast_jobs_v3 (id, queue, state, priority, run_at, attempts, max_attempts,
                              lease_token, leased_by, lease_expires_at, enqueued_at,
                              started_at, finished_at, unique_key, last_error, payload)
  SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
         lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload
  FROM readpast_jobs;
DROP TABLE readpast_jobs;  -- and with it its indexes and triggers, recreated below
ALTER TABLE readpast_jobs_v3 RENAME TO readpast_jobs;  -- renames its sqlite_sequence row too
CREATE INDEX readpast_jobs_lease ON readpast_jobs (queue, priority, run_at, id)
  WHERE state = 'available';
CREATE INDEX readpast_jobs_expiry ON readpast_jobs (queue, lease_expires_at)
  WHERE state = 'running';
CREATE UNIQUE INDEX readpast_jobs_unique ON readpast_jobs (queue, unique_key)
  WHERE unique_key IS NOT NULL AND state IN ('available', 'running');  -- two: no ephemeral
CREATE INDEX readpast_jobs_finished ON readpast_jobs (queue, state, finished_at)
  WHERE state = 'succeeded' OR state = 'dead' OR state = 'cancelled';
CREATE INDEX readpast_jobs_queue_state ON readpast_jobs (queue, state, id);
CREATE TRIGGER readpast_jobs_queue_name_insert BEFORE INSERT ON readpast_jobs
  WHEN NOT (typeof(NEW.queue) = 'text' AND length(NEW.queue) BETWEEN 1 AND 128 AND NEW.queue GLOB '[A-Za-z0-9]*' AND NEW.queue NOT GLOB '*[^A-Za-z0-9_.-]*')
  BEGIN SELECT RAISE(ABORT, 'invalid queue name'); END;
CREATE TRIGGER readpast_jobs_queue_name_update BEFORE UPDATE OF queue ON readpast_jobs
  WHEN NOT (typeof(NEW.queue) = 'text' AND length(NEW.queue) BETWEEN 1 AND 128 AND NEW.queue GLOB '[A-Za-z0-9]*' AND NEW.queue NOT GLOB '*[^A-Za-z0-9_.-]*')
  BEGIN SELECT RAISE(ABORT, 'invalid queue name'); END;
