-- 1: the whole schema of the MariaDB engine (docs/mariadb.md). InnoDB, in the URL's database,
-- every table prefixed readpast_. MariaDB commits DDL at once, so a migration cannot be rolled
-- back: every statement is written to be run again (IF NOT EXISTS) after one failed half-way.
--
-- Times are BIGINT microseconds since the Unix epoch, from the server's clock (NOW(6) in a
-- session at time_zone '+00:00'). Queue names are ASCII and compared byte for byte; unique
-- keys and worker ids are bytes (VARBINARY), compared byte for byte as on the other engines.

CREATE TABLE IF NOT EXISTS readpast_jobs (
  id               BIGINT       NOT NULL AUTO_INCREMENT,  -- increasing, never reused
  queue            VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  state            VARCHAR(9)   CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'available',
  priority         INT          NOT NULL DEFAULT 100,
  run_at           BIGINT       NOT NULL,
  attempts         INT          NOT NULL DEFAULT 0,
  max_attempts     INT          NOT NULL DEFAULT 25,
  lease_token      CHAR(32)     CHARACTER SET ascii COLLATE ascii_bin NULL,
  leased_by        VARBINARY(256) NULL,
  lease_expires_at BIGINT       NULL,
  enqueued_at      BIGINT       NOT NULL,
  started_at       BIGINT       NULL,
  finished_at      BIGINT       NULL,
  unique_key       VARBINARY(1024) NULL,
  last_error       MEDIUMBLOB   NULL,
  payload          LONGBLOB     NOT NULL,
  -- The unique key while the job is live (available or running), else NULL: MariaDB has no
  -- partial unique index, and NULLs never collide in a UNIQUE one.
  live_key         VARBINARY(1024) AS
                   (IF(state = 'available' OR state = 'running', unique_key, NULL)) PERSISTENT,
  PRIMARY KEY (id),
  -- lease: SELECT ... FOR UPDATE SKIP LOCKED walks this in hand-out order.
  KEY readpast_jobs_lease (queue, state, priority, run_at, id),
  -- rescue: running jobs of a queue by lease expiry.
  KEY readpast_jobs_expiry (queue, state, lease_expires_at),
  -- purge, retention and finished_since: finished jobs of a queue by age.
  KEY readpast_jobs_finished (queue, state, finished_at),
  -- stats, list and retry_all: jobs of a queue and state by id.
  KEY readpast_jobs_queue_state (queue, state, id),
  -- list by state alone.
  KEY readpast_jobs_state (state, id),
  UNIQUE KEY readpast_jobs_unique (queue, live_key),
  CONSTRAINT readpast_jobs_state_check
    CHECK (state IN ('available', 'running', 'succeeded', 'dead', 'cancelled')),
  CONSTRAINT readpast_jobs_max_attempts_check CHECK (max_attempts >= 1),
  -- validate_queue_name's rule, so that a plain-SQL INSERT cannot create a queue no worker
  -- can name.
  CONSTRAINT readpast_jobs_queue_check CHECK (queue REGEXP '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$')
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS readpast_queues (
  name      VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
  paused_at BIGINT NULL,  -- NULL: not paused
  CONSTRAINT readpast_queues_name_check CHECK (name REGEXP '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$')
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS readpast_schedules (
  name         VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
  queue        VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  spec         TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  payload      LONGBLOB NOT NULL,
  priority     INT    NOT NULL DEFAULT 100,
  max_attempts INT    NOT NULL DEFAULT 25,
  created_at   BIGINT NOT NULL,
  last_tick_at BIGINT NULL,  -- the latest tick enqueued
  CONSTRAINT readpast_schedules_name_check
    CHECK (name REGEXP '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$'),
  CONSTRAINT readpast_schedules_queue_check
    CHECK (queue REGEXP '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$'),
  CONSTRAINT readpast_schedules_max_attempts_check CHECK (max_attempts >= 1)
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS readpast_tasks (
  task        VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
  next_run_at BIGINT NOT NULL,  -- free to claim from then on
  claimed_by  VARBINARY(256) NULL,
  claimed_at  BIGINT NULL
) ENGINE = InnoDB;
