-- 7: global limits of a queue (docs/workflows.md "Global limits"). NULL: no such limit. The
-- engine's plain lease reads them in the same row as paused_at and hands out nothing of a
-- limited queue (the engine's lease under limits serves those). A rate of N/DUR keeps N slots
-- (readpast_rate_slots), each the time of one of the queue's N latest leases (0: none yet).
-- Can run again after a failure half-way (IF NOT EXISTS, CREATE OR REPLACE). (Compound
-- statements: sent as one multi-statement script, without DELIMITER.)
ALTER TABLE readpast_queues
  ADD COLUMN IF NOT EXISTS running_limit INT NULL CHECK (running_limit >= 1),
  ADD COLUMN IF NOT EXISTS rate_count INT NULL CHECK (rate_count >= 1),
  ADD COLUMN IF NOT EXISTS rate_window BIGINT NULL CHECK (rate_window >= 1);

CREATE TABLE IF NOT EXISTS readpast_rate_slots (
  queue     VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  slot      INT    NOT NULL,  -- 0 .. rate_count - 1
  leased_at BIGINT NOT NULL,  -- microseconds; 0: no lease yet
  PRIMARY KEY (queue, slot),
  KEY readpast_rate_slots_oldest (queue, leased_at)
) ENGINE = InnoDB;

-- Sets the limits given (NULL keeps that one; a rate needs its count and window in
-- microseconds); a rate's slots keep the newest of their times when its count changes
-- (core's resized_rate_slots). The engine calls it too.
CREATE OR REPLACE PROCEDURE readpast_set_limits(p_queue VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin,
                                                p_running INT, p_rate_count INT,
                                                p_rate_window_us BIGINT)
  MODIFIES SQL DATA
BEGIN
  DECLARE v_slot INT DEFAULT 0;
  IF p_running IS NULL AND p_rate_count IS NULL THEN
    SIGNAL SQLSTATE '22023' SET MESSAGE_TEXT = 'no limit given: set a running limit or a rate';
  END IF;
  IF (p_rate_count IS NULL) <> (p_rate_window_us IS NULL) THEN
    SIGNAL SQLSTATE '22023' SET MESSAGE_TEXT = 'a rate needs both its count and its window';
  END IF;
  IF p_running IS NOT NULL AND p_running < 1 THEN
    SIGNAL SQLSTATE '22023' SET MESSAGE_TEXT = 'a running limit must be at least 1';
  END IF;
  IF p_rate_count IS NOT NULL AND (p_rate_count < 1 OR p_rate_count > 100000 OR p_rate_window_us < 1) THEN
    SIGNAL SQLSTATE '22023'
      SET MESSAGE_TEXT = 'a rate needs a count from 1 to 100000 and a positive window';
  END IF;
  INSERT INTO readpast_queues (name, running_limit, rate_count, rate_window)
    VALUES (p_queue, p_running, p_rate_count, p_rate_window_us)
    ON DUPLICATE KEY UPDATE running_limit = COALESCE(VALUES(running_limit), running_limit),
                            rate_count = COALESCE(VALUES(rate_count), rate_count),
                            rate_window = COALESCE(VALUES(rate_window), rate_window);
  IF p_rate_count IS NOT NULL THEN
    CREATE TEMPORARY TABLE IF NOT EXISTS readpast_kept_slots (
      n INT NOT NULL PRIMARY KEY, leased_at BIGINT NOT NULL) ENGINE = MEMORY;
    DELETE FROM readpast_kept_slots;
    INSERT INTO readpast_kept_slots (n, leased_at)
      SELECT ROW_NUMBER() OVER (ORDER BY leased_at DESC) - 1, leased_at
        FROM readpast_rate_slots WHERE queue = p_queue;
    DELETE FROM readpast_rate_slots WHERE queue = p_queue;
    WHILE v_slot < p_rate_count DO
      INSERT INTO readpast_rate_slots (queue, slot, leased_at)
        VALUES (p_queue, v_slot,
                COALESCE((SELECT k.leased_at FROM readpast_kept_slots k WHERE k.n = v_slot), 0));
      SET v_slot = v_slot + 1;
    END WHILE;
    DELETE FROM readpast_kept_slots;
  END IF;
END;

CREATE OR REPLACE PROCEDURE readpast_clear_limits(p_queue VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin)
  MODIFIES SQL DATA
BEGIN
  UPDATE readpast_queues SET running_limit = NULL, rate_count = NULL, rate_window = NULL
    WHERE name = p_queue;
  DELETE FROM readpast_rate_slots WHERE queue = p_queue;
END;

-- readpast_lease hands out nothing of a queue with limits: they are enforced by the engine's
-- lease (the C++ API, the command line, the HTTP API), which counts under a lock of the queue's
-- row; a plain-SQL lease would bypass them.
CREATE OR REPLACE PROCEDURE readpast_lease(p_queue VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin, p_worker VARBINARY(256),
                                           p_max_jobs INT, p_lease_us BIGINT)
  MODIFIES SQL DATA
BEGIN
  DECLARE v_max INT DEFAULT LEAST(GREATEST(COALESCE(p_max_jobs, 1), 1), 10000);
  DECLARE v_lease BIGINT DEFAULT COALESCE(p_lease_us, 30000000);
  DECLARE v_now BIGINT;
  SET v_now = readpast_now_us();
  CREATE TEMPORARY TABLE IF NOT EXISTS readpast_leasing (
    id BIGINT NOT NULL PRIMARY KEY, token CHAR(32) CHARACTER SET ascii NOT NULL) ENGINE = MEMORY;
  DELETE FROM readpast_leasing;
  INSERT INTO readpast_leasing (id, token)
    SELECT id, LOWER(HEX(RANDOM_BYTES(16))) FROM readpast_jobs FORCE INDEX (readpast_jobs_lease)
      WHERE queue = p_queue AND state = 'available' AND run_at <= v_now
        AND NOT EXISTS (SELECT 1 FROM readpast_queues
                        WHERE name = p_queue AND (paused_at IS NOT NULL
                          OR running_limit IS NOT NULL OR rate_count IS NOT NULL))
      ORDER BY priority, run_at, id LIMIT v_max
      FOR UPDATE SKIP LOCKED;
  -- From the picked ids to the jobs by primary key (STRAIGHT_JOIN): driven from readpast_jobs,
  -- the join would lock every available job of every queue.
  UPDATE readpast_leasing l STRAIGHT_JOIN readpast_jobs j ON j.id = l.id
    SET j.attempts = j.attempts + 1, j.lease_token = l.token, j.leased_by = p_worker,
        j.lease_expires_at = v_now + v_lease, j.started_at = v_now, j.state = 'running'
    WHERE j.state = 'available' AND j.run_at <= v_now;
  SELECT j.id, j.queue, j.state, j.priority, j.run_at, j.attempts, j.max_attempts,
         j.lease_token, j.leased_by, j.lease_expires_at, j.enqueued_at, j.started_at,
         j.finished_at, j.unique_key, j.last_error, j.payload
    FROM readpast_jobs j JOIN readpast_leasing l ON j.id = l.id AND j.lease_token = l.token
    ORDER BY j.priority, j.run_at, j.id;
  DELETE FROM readpast_leasing;
END;
