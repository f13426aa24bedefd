-- 2: paused queues, periodic schedules, shared maintenance tasks; and queue names checked by
-- the database too, so that a plain-SQL INSERT cannot create a queue that no worker can name.
-- (A CHECK cannot be added to an existing SQLite table: triggers do it.) The name check is
-- validate_queue_name's rule, [A-Za-z0-9][A-Za-z0-9_.-]{0,127}.

CREATE TABLE readpast_queues (
  name      TEXT PRIMARY KEY CHECK (typeof(name) = 'text' AND length(name) BETWEEN 1 AND 128 AND name GLOB '[A-Za-z0-9]*' AND name NOT GLOB '*[^A-Za-z0-9_.-]*'),
  paused_at INTEGER                                   -- NULL: not paused
) WITHOUT ROWID;
CREATE TABLE readpast_schedules (
  name         TEXT    PRIMARY KEY CHECK (typeof(name) = 'text' AND length(name) BETWEEN 1 AND 128 AND name GLOB '[A-Za-z0-9]*' AND name NOT GLOB '*[^A-Za-z0-9_.-]*'),
  queue        TEXT    NOT NULL CHECK (typeof(queue) = 'text' AND length(queue) BETWEEN 1 AND 128 AND queue GLOB '[A-Za-z0-9]*' AND queue NOT GLOB '*[^A-Za-z0-9_.-]*'),
  spec         TEXT    NOT NULL,
  payload      BLOB    NOT NULL DEFAULT x'',
  priority     INTEGER NOT NULL DEFAULT 100,
  max_attempts INTEGER NOT NULL DEFAULT 25 CHECK (max_attempts >= 1),
  created_at   INTEGER NOT NULL,
  last_tick_at INTEGER                                -- the latest tick enqueued
) WITHOUT ROWID;
CREATE TABLE readpast_tasks (
  task        TEXT    PRIMARY KEY,
  next_run_at INTEGER NOT NULL,                       -- free to claim from then on
  claimed_by  TEXT,
  claimed_at  INTEGER
) WITHOUT ROWID;
CREATE TRIGGER readpast_jobs_queue_name_insert BEFORE INSERT ON readpast_jobs
  WHEN NOT (typeof(NEW.queue) = 'text' AND length(NEW.queue) BETWEEN 1 AND 128 AND NEW.queue GLOB '[A-Za-z0-9]*' AND NEW.queue NOT GLOB '*[^A-Za-z0-9_.-]*')
  BEGIN SELECT RAISE(ABORT, 'invalid queue name'); END;
CREATE TRIGGER readpast_jobs_queue_name_update BEFORE UPDATE OF queue ON readpast_jobs
  WHEN NOT (typeof(NEW.queue) = 'text' AND length(NEW.queue) BETWEEN 1 AND 128 AND NEW.queue GLOB '[A-Za-z0-9]*' AND NEW.queue NOT GLOB '*[^A-Za-z0-9_.-]*')
  BEGIN SELECT RAISE(ABORT, 'invalid queue name'); END;
