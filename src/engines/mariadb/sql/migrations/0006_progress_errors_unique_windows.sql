-- 6: progress, error history and unique windows (docs/workflows.md). Can run again after a
-- failure half-way (IF NOT EXISTS, CREATE OR REPLACE). (Compound statements: this file is
-- sent to the server as one multi-statement script, without DELIMITER.)

-- The JSON text a running job last recorded (Queue::progress): a column of the job, so that it
-- goes with its row; no statement of the lease or of complete reads or writes it.
ALTER TABLE readpast_jobs ADD COLUMN IF NOT EXISTS progress MEDIUMBLOB NULL;

-- Every failed attempt: what fail() and the rescue of an expired lease wrote to last_error,
-- with the attempt's number, time and worker. Kept out of readpast_jobs so that its hot row
-- does not grow with each failure; read only by get(), oldest first (id order). The foreign
-- key deletes a job's history with the job, however it is deleted (purge, retention, remove,
-- a completion under zero retention, a user's own DELETE); InnoDB checks it by a lookup in
-- readpast_job_errors_job, and only for deletes (an UPDATE of a job never changes its id).
CREATE TABLE IF NOT EXISTS readpast_job_errors (
  id      BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  job_id  BIGINT NOT NULL,
  attempt INT    NOT NULL,
  at      BIGINT NOT NULL,  -- microseconds since the Unix epoch
  worker  VARBINARY(256) NULL,
  error   MEDIUMBLOB NOT NULL,
  KEY readpast_job_errors_job (job_id, id),
  CONSTRAINT readpast_job_errors_job_fk FOREIGN KEY (job_id) REFERENCES readpast_jobs (id)
    ON DELETE CASCADE
) ENGINE = InnoDB;

-- Unique windows (NewJob::unique_for): the key refuses another job of the queue until
-- `until`, whatever its job's state. A table of their own, so that readpast_jobs_unique (live
-- jobs only) stays as it is. An enqueue inserts its window before its job (the primary key
-- settles a race for the key) and takes over a closed one; the retention pass forgets closed
-- ones along readpast_unique_windows_until.
CREATE TABLE IF NOT EXISTS readpast_unique_windows (
  queue      VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  unique_key VARBINARY(1024) NOT NULL,
  job_id     BIGINT NULL,  -- the job that opened it (it may be gone since)
  until      BIGINT NOT NULL,
  PRIMARY KEY (queue, unique_key),
  KEY readpast_unique_windows_until (until)
) ENGINE = InnoDB;

-- readpast_fail and readpast_rescue_expired record the error history like the engine does.
CREATE OR REPLACE FUNCTION readpast_fail(p_id BIGINT, p_token VARCHAR(64), p_error MEDIUMBLOB,
                                         p_retry_after_us BIGINT)
  RETURNS VARCHAR(9) NOT DETERMINISTIC MODIFIES SQL DATA
BEGIN
  DECLARE v_now BIGINT DEFAULT readpast_now_us();
  DECLARE v_state VARCHAR(9) DEFAULT NULL;
  UPDATE readpast_jobs SET
      finished_at = IF(attempts >= max_attempts, v_now, NULL),
      run_at = IF(attempts >= max_attempts, run_at,
                  v_now + COALESCE(p_retry_after_us,
                                   CAST(LEAST(3600e6, 1e6 * POW(2e0, LEAST(GREATEST(attempts - 1, 0), 40)))
                                        * (1 - RAND() * 0.2) AS SIGNED))),
      last_error = p_error, lease_expires_at = NULL,
      state = IF(attempts >= max_attempts, 'dead', 'available')
    WHERE id = p_id AND state = 'running' AND lease_token = readpast_token(p_token);
  IF ROW_COUNT() = 0 THEN
    RETURN NULL;
  END IF;
  INSERT INTO readpast_job_errors (job_id, attempt, at, worker, error)
    SELECT id, attempts, v_now, leased_by, last_error FROM readpast_jobs WHERE id = p_id;
  SELECT state INTO v_state FROM readpast_jobs WHERE id = p_id;
  RETURN v_state;
END;

CREATE OR REPLACE FUNCTION readpast_rescue_expired(p_queue VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin)
  RETURNS BIGINT NOT DETERMINISTIC MODIFIES SQL DATA
BEGIN
  DECLARE v_now BIGINT DEFAULT readpast_now_us();
  INSERT INTO readpast_job_errors (job_id, attempt, at, worker, error)
    SELECT id, attempts, v_now, leased_by,
           CASE WHEN attempts >= max_attempts
                THEN CONCAT('lease expired after ', attempts, ' attempts (worker lost)')
                ELSE 'lease expired (worker lost)' END
      FROM readpast_jobs
      WHERE queue = p_queue AND state = 'running' AND lease_expires_at <= v_now
      FOR UPDATE;
  UPDATE readpast_jobs SET
      last_error = CASE WHEN attempts >= max_attempts
                        THEN CONCAT('lease expired after ', attempts, ' attempts (worker lost)')
                        ELSE 'lease expired (worker lost)' END,
      finished_at = CASE WHEN attempts >= max_attempts THEN v_now END,
      run_at = CASE WHEN attempts >= max_attempts THEN run_at ELSE v_now END,
      lease_expires_at = NULL,
      state = CASE WHEN attempts >= max_attempts THEN 'dead' ELSE 'available' END
    WHERE queue = p_queue AND state = 'running' AND lease_expires_at <= v_now;
  RETURN ROW_COUNT();
END;

-- TRUE when the job was running under this lease and now has p_progress as its progress;
-- FALSE (nothing changed) when the lease was lost. p_progress must be JSON text of at most
-- 64 KiB (SQLSTATE 22023 otherwise, nothing changed).
CREATE OR REPLACE FUNCTION readpast_progress(p_id BIGINT, p_token VARCHAR(64), p_progress MEDIUMBLOB)
  RETURNS BOOLEAN NOT DETERMINISTIC MODIFIES SQL DATA
BEGIN
  IF p_progress IS NULL OR LENGTH(p_progress) > 65536 OR NOT JSON_VALID(p_progress) THEN
    SIGNAL SQLSTATE '22023' SET MESSAGE_TEXT = 'progress must be JSON text of at most 65536 bytes';
  END IF;
  UPDATE readpast_jobs SET progress = p_progress
    WHERE id = p_id AND state = 'running' AND lease_token = readpast_token(p_token);
  RETURN ROW_COUNT() = 1;
END;

-- readpast_enqueue: an open unique window of the key refuses the job like a live holder does.
-- readpast_enqueue_for: the same with p_unique_for_us, the window (microseconds, > 0) the
-- key refuses other jobs of the queue for, whatever becomes of this one (MariaDB has no
-- overloading, so a new name rather than a new parameter).
CREATE OR REPLACE FUNCTION readpast_enqueue_for(p_queue VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin,
                                                p_payload LONGBLOB, p_priority INT,
                                                p_delay_us BIGINT, p_max_attempts INT,
                                                p_unique_key VARBINARY(1024),
                                                p_unique_for_us BIGINT)
  RETURNS BIGINT NOT DETERMINISTIC MODIFIES SQL DATA
BEGIN
  DECLARE v_id BIGINT DEFAULT NULL;
  DECLARE v_duplicate BOOLEAN DEFAULT FALSE;
  DECLARE v_now BIGINT DEFAULT readpast_now_us();
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_id = NULL;
  DECLARE CONTINUE HANDLER FOR 1062 SET v_duplicate = TRUE;
  IF p_unique_for_us IS NOT NULL AND (p_unique_key IS NULL OR p_unique_for_us <= 0) THEN
    SIGNAL SQLSTATE '22023'
      SET MESSAGE_TEXT = 'p_unique_for_us needs a unique key and a duration longer than zero';
  END IF;
  IF p_unique_for_us IS NOT NULL THEN
    -- Claim the window first (its primary key settles a race for the key); take over a
    -- closed one.
    INSERT INTO readpast_unique_windows (queue, unique_key, job_id, until)
      VALUES (p_queue, p_unique_key, NULL, v_now + p_unique_for_us);
    IF v_duplicate THEN
      SET v_duplicate = FALSE;
      UPDATE readpast_unique_windows SET job_id = NULL, until = v_now + p_unique_for_us
        WHERE queue = p_queue AND unique_key = p_unique_key AND until <= v_now;
      IF ROW_COUNT() = 0 THEN
        SELECT job_id INTO v_id FROM readpast_unique_windows
          WHERE queue = p_queue AND unique_key = p_unique_key;
        RETURN v_id;
      END IF;
    END IF;
  ELSEIF p_unique_key IS NOT NULL THEN
    SELECT job_id INTO v_id FROM readpast_unique_windows
      WHERE queue = p_queue AND unique_key = p_unique_key AND until > v_now
        AND job_id IS NOT NULL;
    IF v_id IS NOT NULL THEN
      RETURN v_id;
    END IF;
  END IF;
  IF p_unique_key IS NOT NULL THEN
    SELECT id INTO v_id FROM readpast_jobs WHERE queue = p_queue AND live_key = p_unique_key;
    IF v_id IS NOT NULL THEN
      IF p_unique_for_us IS NOT NULL THEN
        DELETE FROM readpast_unique_windows WHERE queue = p_queue AND unique_key = p_unique_key;
      END IF;
      RETURN v_id;
    END IF;
  END IF;
  INSERT INTO readpast_jobs (queue, state, priority, run_at, attempts, max_attempts,
                             enqueued_at, unique_key, payload)
    VALUES (p_queue, 'available', COALESCE(p_priority, 100),
            v_now + GREATEST(COALESCE(p_delay_us, 0), 0), 0, COALESCE(p_max_attempts, 25),
            v_now, p_unique_key, COALESCE(p_payload, ''));
  IF v_duplicate THEN
    -- A concurrent enqueue of the same key committed first: its job holds the key.
    SELECT id INTO v_id FROM readpast_jobs WHERE queue = p_queue AND live_key = p_unique_key;
    IF p_unique_for_us IS NOT NULL THEN
      DELETE FROM readpast_unique_windows WHERE queue = p_queue AND unique_key = p_unique_key;
    END IF;
    RETURN v_id;
  END IF;
  SET v_id = LAST_INSERT_ID();
  IF p_unique_for_us IS NOT NULL THEN
    UPDATE readpast_unique_windows SET job_id = v_id
      WHERE queue = p_queue AND unique_key = p_unique_key;
  END IF;
  RETURN v_id;
END;

CREATE OR REPLACE FUNCTION readpast_enqueue(p_queue VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin, p_payload LONGBLOB,
                                            p_priority INT, p_delay_us BIGINT,
                                            p_max_attempts INT, p_unique_key VARBINARY(1024))
  RETURNS BIGINT NOT DETERMINISTIC MODIFIES SQL DATA
  RETURN readpast_enqueue_for(p_queue, p_payload, p_priority, p_delay_us, p_max_attempts,
                              p_unique_key, NULL);
