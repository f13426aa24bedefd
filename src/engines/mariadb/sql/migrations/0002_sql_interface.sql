-- 2: the SQL interface (docs/mariadb.md "SQL interface"): stored functions and a procedure for
-- enqueue, lease, complete, fail, extend, release and rescue_expired, with the engine's
-- semantics and fencing, for programs in any language. They run in the caller's transaction,
-- so readpast_enqueue inside the caller's own transaction commits or rolls back with it.
-- Each is CREATE OR REPLACE, so the migration can run again. (Compound statements: this file
-- is sent to the server as one multi-statement script, without DELIMITER.)
--
-- Times are microseconds since the Unix epoch from the server's clock, computed without any
-- time-zone conversion (TIMESTAMPDIFF from the epoch to UTC_TIMESTAMP(6)), so they are right
-- in a session of any time_zone. Durations are BIGINT microseconds. Lease tokens are 32 hex
-- digits of RANDOM_BYTES(16) (the server's cryptographic random source, 128 bits); the
-- settling functions take a token with or without hyphens, in either case. Queue parameters are
-- ascii_bin like the column: a parameter of another character set would be converted for the
-- comparison, and then no index on queue could be used (the lease would lock every job).

CREATE OR REPLACE FUNCTION readpast_now_us() RETURNS BIGINT NOT DETERMINISTIC NO SQL
  RETURN TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6));

CREATE OR REPLACE FUNCTION readpast_token(p_token VARCHAR(64)) RETURNS CHAR(32)
  CHARACTER SET ascii DETERMINISTIC NO SQL
  RETURN LOWER(REPLACE(p_token, '-', ''));

-- The id of the new job; or, when a live job of the queue holds p_unique_key, that job's id.
-- NULL arguments take the defaults: priority 100, no delay, 25 attempts, no unique key.
CREATE OR REPLACE FUNCTION readpast_enqueue(p_queue VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin, p_payload LONGBLOB,
                                            p_priority INT, p_delay_us BIGINT,
                                            p_max_attempts INT, p_unique_key VARBINARY(1024))
  RETURNS BIGINT NOT DETERMINISTIC MODIFIES SQL DATA
BEGIN
  DECLARE v_id BIGINT DEFAULT NULL;
  DECLARE v_duplicate BOOLEAN DEFAULT FALSE;
  DECLARE v_now BIGINT DEFAULT readpast_now_us();
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_id = NULL;
  DECLARE CONTINUE HANDLER FOR 1062 SET v_duplicate = TRUE;
  IF p_unique_key IS NOT NULL THEN
    SELECT id INTO v_id FROM readpast_jobs WHERE queue = p_queue AND live_key = p_unique_key;
    IF v_id IS NOT NULL THEN
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
    RETURN v_id;
  END IF;
  RETURN LAST_INSERT_ID();
END;

-- Ends the queue's expired leases: back to available, or dead when the attempts are spent.
CREATE OR REPLACE FUNCTION readpast_rescue_expired(p_queue VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin)
  RETURNS BIGINT NOT DETERMINISTIC MODIFIES SQL DATA
BEGIN
  DECLARE v_now BIGINT DEFAULT readpast_now_us();
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

-- Leases up to p_max_jobs (NULL: 1) due jobs of the queue for p_lease_us (NULL: 30 s) and
-- returns them, every column of readpast_jobs but live_key, in hand-out order. Rows another
-- lease holds are skipped (SKIP LOCKED). Unlike PostgreSQL's readpast.lease it does not rescue
-- expired leases: the rescue's range read would wait for leases that other transactions hold
-- (its index range ends at a running job another transaction may have locked), so call
-- readpast_rescue_expired(queue) on its own, e.g. before a lease, outside a long transaction.
-- Outside a transaction the pick and the take are two statements: a job another worker took in
-- between is left out, never handed to both. Call it at READ COMMITTED, as the engine does:
-- at REPEATABLE READ (MariaDB's default) its locking reads also lock gaps, which makes
-- enqueues and other leases wait for the caller's transaction.
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
                        WHERE name = p_queue AND paused_at IS NOT NULL)
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

-- TRUE when the job was running under this lease and is now succeeded; FALSE (nothing
-- changed) when the lease was lost or the job already settled.
CREATE OR REPLACE FUNCTION readpast_complete(p_id BIGINT, p_token VARCHAR(64))
  RETURNS BOOLEAN NOT DETERMINISTIC MODIFIES SQL DATA
BEGIN
  UPDATE readpast_jobs SET finished_at = readpast_now_us(), lease_expires_at = NULL,
      state = 'succeeded'
    WHERE id = p_id AND state = 'running' AND lease_token = readpast_token(p_token);
  RETURN ROW_COUNT() = 1;
END;

-- 'available' (to run again after p_retry_after_us, or the default backoff: 1 s doubling per
-- attempt, at most 1 h, less a random 0-20%), 'dead' (attempts spent), or NULL when the lease
-- was lost (nothing changed).
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
  SELECT state INTO v_state FROM readpast_jobs WHERE id = p_id;
  RETURN v_state;
END;

-- Heartbeat: lease_expires_at = now + p_lease_us (NULL: 30 s) while the lease is held.
CREATE OR REPLACE FUNCTION readpast_extend(p_id BIGINT, p_token VARCHAR(64), p_lease_us BIGINT)
  RETURNS BOOLEAN NOT DETERMINISTIC MODIFIES SQL DATA
BEGIN
  UPDATE readpast_jobs SET lease_expires_at = readpast_now_us() + COALESCE(p_lease_us, 30000000)
    WHERE id = p_id AND state = 'running' AND lease_token = readpast_token(p_token);
  RETURN ROW_COUNT() = 1;
END;

-- Hands the job back without spending an attempt: available again after p_delay_us (NULL: 0).
CREATE OR REPLACE FUNCTION readpast_release(p_id BIGINT, p_token VARCHAR(64), p_delay_us BIGINT)
  RETURNS BOOLEAN NOT DETERMINISTIC MODIFIES SQL DATA
BEGIN
  UPDATE readpast_jobs SET run_at = readpast_now_us() + GREATEST(COALESCE(p_delay_us, 0), 0),
      attempts = GREATEST(attempts - 1, 0), lease_expires_at = NULL, state = 'available'
    WHERE id = p_id AND state = 'running' AND lease_token = readpast_token(p_token);
  RETURN ROW_COUNT() = 1;
END;
