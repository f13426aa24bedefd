-- 8: dependencies (docs/workflows.md). A job enqueued after others waits in the new state
-- 'waiting' until they have all succeeded; it holds its unique key meanwhile, like a live
-- job (live_key). New columns:
--   waiting_for     how many of the job's dependencies have not succeeded yet; the job
--                   becomes available when the last one does (each edge counted down once).
--   notify          the job has dependents to tell when it finishes.
--   notify_pending  1 while a finished job still has dependents to tell, else NULL, so that
--                   readpast_jobs_notify holds those jobs only and a lease or a settling of
--                   any other job never writes to it (as finished_state, migration 3).
--   delay_us        a waiting job's delay, counted from the moment it becomes available.
--   group_name      the group the job is a member of, NULL for none (readpast_jobs_group:
--                   NULL for every other job, so a lease or a settling never writes to it).
-- live_key's new expression rebuilds the table (ALGORITHM=COPY): writers wait until it is
-- done. Every statement can run again after one failed half-way.

ALTER TABLE readpast_jobs DROP CONSTRAINT IF EXISTS readpast_jobs_state_check;

ALTER TABLE readpast_jobs
  ADD CONSTRAINT IF NOT EXISTS readpast_jobs_state_check
    CHECK (state IN ('available', 'running', 'succeeded', 'dead', 'cancelled', 'waiting')),
  ADD COLUMN IF NOT EXISTS waiting_for INT NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS notify TINYINT NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS delay_us BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS group_name VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NULL,
  ADD INDEX IF NOT EXISTS readpast_jobs_group (group_name, id);

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

-- The SQL interface (docs/mariadb.md "SQL interface"): readpast_enqueue_after enqueues a job
-- that waits until every job of p_after (a JSON array of ids, e.g. '[12, 13]') has
-- succeeded, with the rules the engines apply (docs/workflows.md): a job that does not exist
-- is an error (SQLSTATE 45000) and nothing is enqueued, a succeeded one is met, a dead or
-- cancelled one cancels the new job at once; a unique key held by a live job is an error too.
-- p_group makes the job a member of that group; p_after_group makes it wait until every member
-- of that group has finished too (NULL: none). Returns the new job's id. An empty array without
-- groups enqueues as readpast_enqueue.
CREATE OR REPLACE FUNCTION readpast_enqueue_after(p_after LONGTEXT,
                                                  p_queue VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin,
                                                  p_payload LONGBLOB, p_priority INT,
                                                  p_delay_us BIGINT, p_max_attempts INT,
                                                  p_unique_key VARBINARY(1024),
                                                  p_group VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin,
                                                  p_after_group VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin)
  RETURNS BIGINT NOT DETERMINISTIC MODIFIES SQL DATA
BEGIN
  DECLARE v_now BIGINT DEFAULT readpast_now_us();
  DECLARE v_count INT;
  DECLARE v_distinct INT;
  DECLARE v_missing BIGINT DEFAULT NULL;
  DECLARE v_unmet INT;
  DECLARE v_failed BIGINT DEFAULT NULL;
  DECLARE v_failed_state VARCHAR(9) DEFAULT NULL;
  DECLARE v_id BIGINT;
  DECLARE v_group_id BIGINT DEFAULT NULL;
  DECLARE v_group_live BIGINT DEFAULT 0;
  IF p_after IS NULL OR JSON_VALID(p_after) = 0 OR JSON_TYPE(p_after) <> 'ARRAY' THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'p_after must be a JSON array of job ids';
  END IF;
  IF JSON_LENGTH(p_after) = 0 AND p_group IS NULL AND p_after_group IS NULL THEN
    RETURN readpast_enqueue(p_queue, p_payload, p_priority, p_delay_us, p_max_attempts,
                            p_unique_key);
  END IF;
  IF p_group IS NOT NULL AND p_group REGEXP '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$' = 0 THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'invalid group name';
  END IF;
  IF p_group <=> p_after_group AND p_group IS NOT NULL THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'a job cannot wait for its own group';
  END IF;
  IF p_after_group IS NOT NULL THEN
    -- Locked, so that the group's last member cannot finish unseen before this commits.
    SELECT id, live INTO v_group_id, v_group_live FROM readpast_groups
      WHERE name = p_after_group FOR UPDATE;
    IF v_group_id IS NULL THEN
      SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'no job was ever enqueued in that group to wait for';
    END IF;
  END IF;
  SELECT COUNT(*), COUNT(DISTINCT a.id) INTO v_count, v_distinct
    FROM JSON_TABLE(p_after, '$[*]' COLUMNS (id BIGINT PATH '$')) a WHERE a.id >= 1;
  IF v_count <> JSON_LENGTH(p_after) OR v_distinct <> v_count THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'job ids to wait for must be positive and listed once';
  END IF;
  -- Lock the live dependencies first, so that none finishes unseen before this commits.
  UPDATE readpast_jobs SET notify = 1
    WHERE id IN (SELECT a.id FROM JSON_TABLE(p_after, '$[*]' COLUMNS (id BIGINT PATH '$')) a)
      AND (state = 'available' OR state = 'running' OR state = 'waiting');
  SELECT a.id INTO v_missing
    FROM JSON_TABLE(p_after, '$[*]' COLUMNS (id BIGINT PATH '$')) a
    WHERE NOT EXISTS (SELECT 1 FROM readpast_jobs j WHERE j.id = a.id) LIMIT 1;
  IF v_missing IS NOT NULL THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'a job to wait for does not exist';
  END IF;
  SELECT COUNT(*) + IF(v_group_live > 0, 1, 0) INTO v_unmet FROM readpast_jobs
    WHERE id IN (SELECT a.id FROM JSON_TABLE(p_after, '$[*]' COLUMNS (id BIGINT PATH '$')) a)
      AND state <> 'succeeded';
  SELECT j.id, j.state INTO v_failed, v_failed_state
    FROM JSON_TABLE(p_after, '$[*]' COLUMNS (n FOR ORDINALITY, id BIGINT PATH '$')) a
    JOIN readpast_jobs j ON j.id = a.id
    WHERE j.state = 'dead' OR j.state = 'cancelled' ORDER BY a.n LIMIT 1;
  IF p_unique_key IS NOT NULL
     AND EXISTS (SELECT 1 FROM readpast_jobs WHERE queue = p_queue AND live_key = p_unique_key) THEN
    SIGNAL SQLSTATE '45000'
      SET MESSAGE_TEXT = 'the unique key is held by a job that was not enqueued after these jobs';
  END IF;
  IF p_group IS NOT NULL THEN
    INSERT INTO readpast_groups (name, live) VALUES (p_group, 1)
      ON DUPLICATE KEY UPDATE live = live + 1;
  END IF;
  INSERT INTO readpast_jobs (queue, state, priority, run_at, attempts, max_attempts,
                             enqueued_at, unique_key, payload, waiting_for, delay_us,
                             finished_at, last_error, group_name, notify)
    VALUES (p_queue,
            CASE WHEN v_failed IS NOT NULL THEN 'cancelled'
                 WHEN v_unmet > 0 THEN 'waiting' ELSE 'available' END,
            COALESCE(p_priority, 100),
            IF(v_failed IS NULL AND v_unmet = 0,
               v_now + GREATEST(COALESCE(p_delay_us, 0), 0), v_now),
            0, COALESCE(p_max_attempts, 25), v_now, p_unique_key, COALESCE(p_payload, ''),
            v_unmet, GREATEST(COALESCE(p_delay_us, 0), 0),
            IF(v_failed IS NULL, NULL, v_now),
            IF(v_failed IS NULL, NULL,
               CONCAT('cancelled: dependency ', v_failed, ' is ', v_failed_state)),
            p_group, p_group IS NOT NULL);
  SET v_id = LAST_INSERT_ID();
  INSERT INTO readpast_dependencies (depends_on, job_id, met)
    SELECT j.id, v_id, j.state = 'succeeded' FROM readpast_jobs j
    WHERE j.id IN (SELECT a.id FROM JSON_TABLE(p_after, '$[*]' COLUMNS (id BIGINT PATH '$')) a);
  IF v_group_id IS NOT NULL THEN
    INSERT INTO readpast_dependencies (depends_on, job_id, met)
      VALUES (-v_group_id, v_id, v_group_live = 0);
  END IF;
  RETURN v_id;
END;

-- One row per group (docs/workflows.md). live: members not yet finished, counted up by each
-- member's enqueue (and retry) and down when resolve_dependencies tells of its finish, under
-- the row's lock, so that exactly one finish takes it to 0 however many end at once. Then
-- release_pending is set, with released_upto the highest id of a job that waited for the
-- group at that moment: those are the jobs the release lets go. release_flag is 1 while a
-- release is pending, else NULL, so that readpast_groups_pending holds those rows only.
CREATE TABLE IF NOT EXISTS readpast_groups (
  id              BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name            VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  live            BIGINT NOT NULL DEFAULT 0,
  release_pending TINYINT NOT NULL DEFAULT 0,
  released_upto   BIGINT NOT NULL DEFAULT 0,
  release_flag    TINYINT AS (IF(release_pending = 1, 1, NULL)) PERSISTENT,
  UNIQUE KEY readpast_groups_name (name),
  KEY readpast_groups_pending (release_flag, id)
) ENGINE = InnoDB;
