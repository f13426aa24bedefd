-- Every statement of the MariaDB engine. cmake/EmbedSql.cmake builds them into the engine
-- (mariadb_statements.hpp) with PARAMS=question: each :parameter becomes '?', and the engine
-- runs the statement as a server-side prepared statement with the values it binds by name
-- (mariadb_connection.hpp); no value is ever part of the SQL text.
-- Comment lines are documentation and are left out of the embedded text.
--
-- Times are BIGINT microseconds since the Unix epoch. "Now" is always the server's clock,
-- written out where it is used as
--   CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)
-- in a session at time_zone '+00:00'. NOW(6) is fixed for the length of one statement, so
-- every use in a statement is the same instant, and the optimizer takes it as a constant
-- (range scans along the indexes); a stored function in its place would not be.
-- The columns of a job come in the order read_job() expects: id, queue, state, priority,
-- run_at, attempts, max_attempts, lease_token, leased_by, lease_expires_at, enqueued_at,
-- started_at, finished_at, unique_key, last_error, payload.

-- name: create_version_table
CREATE TABLE IF NOT EXISTS readpast_schema_version (
  version INT NOT NULL PRIMARY KEY, applied_at DATETIME(6) NOT NULL DEFAULT NOW(6)
) ENGINE = InnoDB;

-- name: has_version_table
SELECT count(*) FROM information_schema.tables
  WHERE table_schema = DATABASE() AND table_name = 'readpast_schema_version';

-- name: schema_version
SELECT coalesce(max(version), 0) FROM readpast_schema_version;

-- name: record_version
INSERT INTO readpast_schema_version (version) VALUES (:version);

-- name: migrate_lock
-- DDL commits at once in MariaDB, so migrations cannot share one transaction: a named lock of
-- the server, per database, keeps two `readpast init` from migrating at the same time.
SELECT GET_LOCK(CONCAT('readpast_migrate.', DATABASE()), :timeout_s);

-- name: migrate_unlock
SELECT RELEASE_LOCK(CONCAT('readpast_migrate.', DATABASE()));

-- name: server_now
SELECT CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED);

-- name: oldest_transaction
-- The InnoDB transaction open the longest, but this connection's (Queue::storage_health): while
-- it is open, purge keeps every old row version it might read and the undo history grows (a
-- REPEATABLE READ snapshot, mysqldump --single-transaction, a connection idle in a
-- transaction). INNODB_TRX needs the PROCESS privilege; without it the engine says nothing of
-- a holder. trx_mysql_thread_id is the connection id that SHOW PROCESSLIST and KILL take.
-- InnoDB refreshes what INNODB_TRX shows at most every 100 ms.
SELECT t.trx_mysql_thread_id, concat(p.user, '@', p.host),
       CASE p.command WHEN 'Sleep' THEN 'idle in transaction' WHEN 'Query' THEN 'active'
                      ELSE lower(coalesce(p.command, '')) END,
       timestampdiff(MICROSECOND, t.trx_started, now(6))
FROM information_schema.innodb_trx t
LEFT JOIN information_schema.processlist p ON p.id = t.trx_mysql_thread_id
WHERE t.trx_mysql_thread_id <> connection_id()
ORDER BY t.trx_started
LIMIT 1;

-- name: storage_sizes
-- What each readpast table takes, data and indexes, as information_schema estimates it.
SELECT table_name, coalesce(data_length, 0) + coalesce(index_length, 0)
FROM information_schema.tables
WHERE table_schema = DATABASE() AND table_name LIKE 'readpast!_%' ESCAPE '!'
ORDER BY table_name;

-- name: find_unique_holder
-- Along readpast_jobs_unique: live_key is the unique key of a live job only.
SELECT id FROM readpast_jobs WHERE queue = :queue AND live_key = :unique_key;

-- name: find_unique_window
-- An open unique window of the key refuses every job of the queue that has the key.
SELECT job_id FROM readpast_unique_windows
  WHERE queue = :queue AND unique_key = :unique_key
    AND until > CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED);

-- name: claim_unique_window
-- Opens the key's window for a job about to be enqueued (job_id set once it is in). A
-- duplicate key (ER_DUP_ENTRY) means a window exists: take_over_unique_window then.
INSERT INTO readpast_unique_windows (queue, unique_key, job_id, until)
  VALUES (:queue, :unique_key, NULL, CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED) + :until);

-- name: take_over_unique_window
-- A closed window of the key becomes this job's (1 row changed); an open one stays (0 rows).
UPDATE readpast_unique_windows
  SET job_id = NULL, until = CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED) + :until
  WHERE queue = :queue AND unique_key = :unique_key
    AND until <= CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED);

-- name: window_holder
SELECT job_id FROM readpast_unique_windows WHERE queue = :queue AND unique_key = :unique_key;

-- name: set_window_job
UPDATE readpast_unique_windows SET job_id = :job_id
  WHERE queue = :queue AND unique_key = :unique_key;

-- name: drop_unique_window
DELETE FROM readpast_unique_windows WHERE queue = :queue AND unique_key = :unique_key;

-- name: forget_closed_windows
DELETE FROM readpast_unique_windows
  WHERE until <= CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)
  ORDER BY until LIMIT :limit;

-- name: insert_job
-- :run_at is a time, or NULL: now plus :delay.
INSERT INTO readpast_jobs (queue, state, priority, run_at, attempts, max_attempts,
                           enqueued_at, unique_key, payload)
  VALUES (:queue, 'available', :priority,
          coalesce(:run_at, CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED) + :delay), 0,
          :max_attempts, CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED), :unique_key,
          :payload);

-- name: insert_jobs
-- A batch of jobs without unique keys in one statement. :jobs is a JSON array, one
-- [queue, priority, max_attempts, run_at or null, delay, payload in hex] per job; the rows go in
-- in that order (ORDER BY n), so RETURNING hands back their ids in that order.
INSERT INTO readpast_jobs (queue, state, priority, run_at, attempts, max_attempts, enqueued_at,
                           payload)
  SELECT j.queue, 'available', j.priority, coalesce(j.run_at, CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED) + j.delay), 0,
         j.max_attempts, CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED), UNHEX(j.payload)
    FROM JSON_TABLE(:jobs, '$[*]' COLUMNS (n FOR ORDINALITY,
                                           queue VARCHAR(128) PATH '$[0]',
                                           priority INT PATH '$[1]',
                                           max_attempts INT PATH '$[2]',
                                           run_at BIGINT PATH '$[3]',
                                           delay BIGINT PATH '$[4]',
                                           payload LONGTEXT PATH '$[5]')) j
    ORDER BY j.n
  RETURNING id;

-- name: lease_select
-- The lease, step 1 (READ COMMITTED, inside one transaction): the next due jobs of the queue
-- in hand-out order, along readpast_jobs_lease, locked; rows another lease holds are skipped,
-- not waited for. The last column is the time every later statement of the lease uses.
SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
       lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload,
       CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)
  FROM readpast_jobs FORCE INDEX (readpast_jobs_lease)
  WHERE queue = :queue AND state = 'available'
    AND run_at <= CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)
    AND NOT EXISTS (SELECT 1 FROM readpast_queues
                    WHERE name = :queue AND (paused_at IS NOT NULL
                      OR running_limit IS NOT NULL OR rate_count IS NOT NULL))
  ORDER BY priority, run_at, id LIMIT :max_jobs
  FOR UPDATE SKIP LOCKED;

-- name: lease_select_limited
-- lease_select for a queue with limits, inside the lease under limits once they allowed
-- :max_jobs jobs (the queue's row is locked and known not to be paused).
SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
       lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload,
       CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)
  FROM readpast_jobs FORCE INDEX (readpast_jobs_lease)
  WHERE queue = :queue AND state = 'available'
    AND run_at <= CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)
  ORDER BY priority, run_at, id LIMIT :max_jobs
  FOR UPDATE SKIP LOCKED;

-- name: lock_queue_limits
-- The lease under limits, step 1: the queue's row, locked so that leases of the queue count
-- and take one at a time; taken by another lease, it is skipped (no row): the lease returns
-- nothing this time instead of waiting.
SELECT paused_at IS NOT NULL, running_limit, rate_count, rate_window
  FROM readpast_queues WHERE name = :queue
  FOR UPDATE SKIP LOCKED;

-- name: queue_limits
-- A plain read (no lock): the queue's limits; no row: none.
SELECT paused_at IS NOT NULL, running_limit, rate_count, rate_window
  FROM readpast_queues WHERE name = :queue;

-- name: count_running
-- The queue's running jobs along readpast_jobs_lease, up to :limit only (a plain read).
SELECT count(*) FROM (SELECT 1 FROM readpast_jobs FORCE INDEX (readpast_jobs_lease)
                      WHERE queue = :queue AND state = 'running' LIMIT :limit) r;

-- name: now_us
-- The lease under limits reads its time after counting the running jobs: a job whose settling
-- the count saw finished before it, so the jobs' own times show the limit held.
SELECT CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED);

-- name: free_rate_slots
-- The rate slots whose lease left the window, oldest first, up to :limit.
SELECT slot FROM readpast_rate_slots FORCE INDEX (readpast_rate_slots_oldest)
  WHERE queue = :queue AND leased_at <= :before ORDER BY leased_at, slot LIMIT :limit;

-- name: stamp_rate_slots
-- :slots a JSON array of slot numbers, joined by primary key (STRAIGHT_JOIN as in
-- lease_take_many).
UPDATE JSON_TABLE(:slots, '$[*]' COLUMNS (slot INT PATH '$')) x
  STRAIGHT_JOIN readpast_rate_slots s ON s.queue = :queue AND s.slot = x.slot
  SET s.leased_at = :now;

-- name: due_job_exists
SELECT EXISTS (SELECT 1 FROM readpast_jobs FORCE INDEX (readpast_jobs_lease)
               WHERE queue = :queue AND state = 'available'
                 AND run_at <= CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED));

-- name: set_limits
-- readpast_set_limits (migration 7) validates again and resizes the rate's slots.
CALL readpast_set_limits(:queue, :running, :rate_count, :rate_window);

-- name: clear_limits
CALL readpast_clear_limits(:queue);

-- name: lease_take
-- The lease, step 2, for each row step 1 locked, by primary key: :started_at is the time step 1
-- read, :token one of core's (LeaseToken::random()).
UPDATE readpast_jobs SET state = 'running', attempts = attempts + 1, lease_token = :token,
    leased_by = :worker_id, lease_expires_at = :started_at + :lease_duration,
    started_at = :started_at
  WHERE id = :id;

-- name: lease_take_many
-- The same for every row step 1 locked, in one statement: :leases is a JSON array of
-- [id, token] pairs, joined to the jobs by primary key. STRAIGHT_JOIN keeps that order:
-- driven from readpast_jobs, a join can lock every row it scans, not only the ones it takes.
UPDATE JSON_TABLE(:leases, '$[*]' COLUMNS (id BIGINT PATH '$[0]', token CHAR(32) PATH '$[1]')) l
  STRAIGHT_JOIN readpast_jobs j ON j.id = l.id
  SET j.state = 'running', j.attempts = j.attempts + 1, j.lease_token = l.token,
      j.leased_by = :worker_id, j.lease_expires_at = :started_at + :lease_duration,
      j.started_at = :started_at;

-- name: expired_ids
-- rescue, step 1: a plain read (no locks) of the queue's expired leases, along the running
-- jobs of readpast_jobs_lease (as many as jobs running: no index of its own, which every
-- lease would have to change). A locking range read here would wait for whichever
-- transaction holds the first running job past the range (a lease or a settle in flight, or a
-- caller's own transaction around readpast_complete).
SELECT id FROM readpast_jobs FORCE INDEX (readpast_jobs_lease)
  WHERE queue = :queue AND state = 'running'
    AND lease_expires_at <= CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)
  LIMIT :limit;

-- name: rescue_expired
-- rescue, step 2: those jobs by primary key (:ids a JSON array of ids, STRAIGHT_JOIN as in
-- lease_take_many), each only while it is still running with its lease expired.
UPDATE JSON_TABLE(:ids, '$[*]' COLUMNS (id BIGINT PATH '$')) x
  STRAIGHT_JOIN readpast_jobs j ON j.id = x.id
  SET j.last_error = CASE WHEN j.attempts >= j.max_attempts
                          THEN CONCAT('lease expired after ', j.attempts, ' attempts (worker lost)')
                          ELSE 'lease expired (worker lost)' END,
      j.finished_at = CASE WHEN j.attempts >= j.max_attempts
                           THEN CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED) END,
      j.run_at = CASE WHEN j.attempts >= j.max_attempts THEN j.run_at
                      ELSE CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED) END,
      j.lease_expires_at = NULL,
      j.state = CASE WHEN j.attempts >= j.max_attempts THEN 'dead' ELSE 'available' END
  WHERE j.state = 'running'
    AND j.lease_expires_at <= CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED);

-- The settling calls are fenced: each changes the job only while it is running under the
-- lease :token. MariaDB assigns SET columns left to right, each seeing the ones before: state
-- comes last wherever another assignment reads it.

-- name: complete
UPDATE readpast_jobs SET state = 'succeeded',
    finished_at = CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED), lease_expires_at = NULL
  WHERE id = :id AND state = 'running' AND lease_token = :token;

-- name: complete_delete
-- A job with dependents to tell (notify) is not deleted: the engine completes it with
-- `complete` instead, and retention deletes it once resolve_dependencies has told them.
DELETE FROM readpast_jobs
  WHERE id = :id AND state = 'running' AND lease_token = :token AND notify = 0;

-- name: fail
-- :retry_after NULL: the backoff, min(:backoff_cap, :backoff_base * 2^(attempts-1)) *
-- :backoff_factor, in DOUBLE arithmetic so that it cannot overflow; the exponent is clamped
-- at 40 like Backoff::delay_after. :no_retry 1: dead now.
UPDATE readpast_jobs SET
    finished_at = CASE WHEN attempts >= max_attempts OR :no_retry
                       THEN CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED) END,
    run_at = CASE WHEN attempts >= max_attempts OR :no_retry THEN run_at
                  ELSE CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)
                       + coalesce(:retry_after,
                         CAST(LEAST(:backoff_cap * 1e0,
                                    :backoff_base * POW(2e0, LEAST(GREATEST(attempts - 1, 0), 40)))
                              * :backoff_factor AS SIGNED)) END,
    last_error = :error, lease_expires_at = NULL,
    state = CASE WHEN attempts >= max_attempts OR :no_retry THEN 'dead' ELSE 'available' END
  WHERE id = :id AND state = 'running' AND lease_token = :token;

-- name: job_state
SELECT state FROM readpast_jobs WHERE id = :id;

-- name: record_error
-- In fail's transaction, after it settled the attempt: the error history entry.
INSERT INTO readpast_job_errors (job_id, attempt, at, worker, error)
  SELECT id, attempts, CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED), leased_by, last_error
  FROM readpast_jobs WHERE id = :id;

-- name: lock_expired
-- rescue, step 2: locks those of the expired ids (:ids a JSON array) that are still
-- running with their lease expired, so that the history entries and the UPDATE that follow
-- in the same transaction see the same rows.
SELECT j.id FROM JSON_TABLE(:ids, '$[*]' COLUMNS (id BIGINT PATH '$')) x
  STRAIGHT_JOIN readpast_jobs j ON j.id = x.id
  WHERE j.state = 'running'
    AND j.lease_expires_at <= CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)
  FOR UPDATE;

-- name: record_rescued_errors
-- rescue, step 3: one history entry per locked id (:ids), with the text the rescue writes.
INSERT INTO readpast_job_errors (job_id, attempt, at, worker, error)
  SELECT j.id, j.attempts, CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED), j.leased_by,
         CASE WHEN j.attempts >= j.max_attempts
              THEN CONCAT('lease expired after ', j.attempts, ' attempts (worker lost)')
              ELSE 'lease expired (worker lost)' END
  FROM JSON_TABLE(:ids, '$[*]' COLUMNS (id BIGINT PATH '$')) x
  STRAIGHT_JOIN readpast_jobs j ON j.id = x.id;

-- name: set_progress
UPDATE readpast_jobs SET progress = :progress
  WHERE id = :id AND state = 'running' AND lease_token = :token;

-- name: job_errors
SELECT attempt, at, worker, error FROM readpast_job_errors WHERE job_id = :id ORDER BY id;

-- name: extend
UPDATE readpast_jobs
  SET lease_expires_at = CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED) + :lease_duration
  WHERE id = :id AND state = 'running' AND lease_token = :token;

-- name: release
-- Gives back the attempt the lease spent.
UPDATE readpast_jobs SET run_at = CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED) + :delay,
    attempts = GREATEST(attempts - 1, 0),
    lease_expires_at = NULL, state = 'available'
  WHERE id = :id AND state = 'running' AND lease_token = :token;

-- The same four settling calls for a batch of leases, each in one statement: :refs is a JSON
-- array of [id, token] pairs joined to the jobs by primary key (STRAIGHT_JOIN, as in
-- lease_take_many), each job changed only while it is running under its token. The engine
-- runs them in a transaction and keeps the result only when every ref matched; otherwise it
-- rolls back and settles the refs one by one, to tell which were refused.

-- name: complete_many
UPDATE JSON_TABLE(:refs, '$[*]' COLUMNS (id BIGINT PATH '$[0]', token CHAR(32) PATH '$[1]')) l
  STRAIGHT_JOIN readpast_jobs j ON j.id = l.id
  SET j.finished_at = CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED), j.lease_expires_at = NULL, j.state = 'succeeded'
  WHERE j.state = 'running' AND j.lease_token = l.token;

-- name: complete_delete_many
DELETE j
  FROM JSON_TABLE(:refs, '$[*]' COLUMNS (id BIGINT PATH '$[0]', token CHAR(32) PATH '$[1]')) l
  STRAIGHT_JOIN readpast_jobs j ON j.id = l.id
  WHERE j.state = 'running' AND j.lease_token = l.token AND j.notify = 0;

-- name: extend_many
UPDATE JSON_TABLE(:refs, '$[*]' COLUMNS (id BIGINT PATH '$[0]', token CHAR(32) PATH '$[1]')) l
  STRAIGHT_JOIN readpast_jobs j ON j.id = l.id
  SET j.lease_expires_at = CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED) + :lease_duration
  WHERE j.state = 'running' AND j.lease_token = l.token;

-- name: held_many
-- Which of these leases are still held: a read (Queue::leases_held).
SELECT l.id, l.token
  FROM JSON_TABLE(:refs, '$[*]' COLUMNS (id BIGINT PATH '$[0]', token CHAR(32) PATH '$[1]')) l
  STRAIGHT_JOIN readpast_jobs j ON j.id = l.id
  WHERE j.state = 'running' AND j.lease_token = l.token;

-- name: release_many
UPDATE JSON_TABLE(:refs, '$[*]' COLUMNS (id BIGINT PATH '$[0]', token CHAR(32) PATH '$[1]')) l
  STRAIGHT_JOIN readpast_jobs j ON j.id = l.id
  SET j.run_at = CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED) + :delay, j.attempts = GREATEST(j.attempts - 1, 0),
      j.lease_expires_at = NULL, j.state = 'available'
  WHERE j.state = 'running' AND j.lease_token = l.token;

-- name: cancel
UPDATE readpast_jobs SET finished_at = CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED),
    lease_expires_at = NULL, state = 'cancelled'
  WHERE id = :id AND (state = 'available' OR state = 'running' OR state = 'waiting');

-- name: retry
-- A job whose unique key a live job of its queue holds now stays where it is: the UPDATE
-- fails on readpast_jobs_unique (ER_DUP_ENTRY), which the engine reads as "not retried".
-- (MariaDB cannot read the table an UPDATE changes in its own sub-select.)
-- A retried job that others still wait for (an edge not met) must tell them when it
-- finishes again: notify.
UPDATE readpast_jobs SET attempts = 0, run_at = CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED),
    finished_at = NULL,
    lease_expires_at = NULL,
    notify = group_name IS NOT NULL
             OR EXISTS (SELECT 1 FROM readpast_dependencies d
                        WHERE d.depends_on = readpast_jobs.id AND d.met = 0),
    state = 'available'
  WHERE id = :id AND (state = 'dead' OR state = 'cancelled');

-- name: retry_candidates
-- The next jobs retry_all goes through (:state is dead or cancelled), one small transaction
-- at a time, in the order of readpast_jobs_finished_at (finished_at, then id, which InnoDB
-- keeps in every secondary index): each batch goes on after the last one's (finished_at,
-- id), so the whole walk reads every job of that state once, also those that stay (a live
-- job holds their unique key).
SELECT id, finished_at FROM readpast_jobs FORCE INDEX (readpast_jobs_finished_at)
  WHERE finished_state = :state AND queue = :queue AND finished_at >= :after_at
    AND (finished_at > :after_at OR id > :after_id)
  ORDER BY finished_at, id LIMIT :limit;

-- name: purge
-- Finished (:state succeeded, dead or cancelled) at or before :finished_before, along
-- readpast_jobs_finished_at.
DELETE FROM readpast_jobs
  WHERE finished_state = :state AND queue = :queue AND finished_at <= :finished_before
    AND notify = 0
  ORDER BY finished_at LIMIT :limit;

-- name: stats_all
-- One row per (queue, state): the count, then the state's sub-count (scheduled for
-- 'available', expired leases for 'running'), then the age of the oldest due job
-- ('available' only). Paused queues come as one more row, of state 'paused', so that a paused
-- queue without jobs is listed too; queues with limits as one of state 'limits'
-- (running_limit, rate_count, rate_window in the count columns).
SELECT queue, state, count(*),
       coalesce(sum(CASE state
                      WHEN 'available'
                        THEN run_at > CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)
                      WHEN 'running'
                        THEN lease_expires_at <= CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)
                      ELSE 0 END), 0),
       CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)
         - min(CASE WHEN run_at <= CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)
                    THEN run_at END)
  FROM readpast_jobs GROUP BY queue, state
UNION ALL
SELECT name, 'paused', 0, 0, NULL FROM readpast_queues WHERE paused_at IS NOT NULL
UNION ALL
SELECT name, 'limits', running_limit, rate_count, rate_window FROM readpast_queues
  WHERE running_limit IS NOT NULL OR rate_count IS NOT NULL
ORDER BY 1;

-- name: stats_queue
-- stats_all for one queue.
SELECT queue, state, count(*),
       coalesce(sum(CASE state
                      WHEN 'available'
                        THEN run_at > CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)
                      WHEN 'running'
                        THEN lease_expires_at <= CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)
                      ELSE 0 END), 0),
       CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)
         - min(CASE WHEN run_at <= CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)
                    THEN run_at END)
  FROM readpast_jobs WHERE queue = :queue GROUP BY queue, state
UNION ALL
SELECT name, 'paused', 0, 0, NULL FROM readpast_queues
  WHERE paused_at IS NOT NULL AND name = :queue
UNION ALL
SELECT name, 'limits', running_limit, rate_count, rate_window FROM readpast_queues
  WHERE (running_limit IS NOT NULL OR rate_count IS NOT NULL) AND name = :queue;

-- name: job_queues
-- Every queue that has jobs, from readpast_jobs_lease in a loose index scan (one step per
-- queue). finished_since for every queue runs finished_since_queue for each of them: one
-- range per queue, so the cost follows the jobs finished since, not the table. (A dependent
-- sub-select per queue would not do: it reads its ranges by (finished_state, queue) only.)
SELECT queue FROM readpast_jobs FORCE INDEX (readpast_jobs_lease) GROUP BY queue;

-- name: finished_since_queue
-- Since :since (exclusive), two ranges of readpast_jobs_finished_at.
SELECT queue, coalesce(sum(finished_state = 'succeeded'), 0),
       coalesce(sum(finished_state = 'dead'), 0)
  FROM readpast_jobs
  WHERE queue = :queue AND (finished_state = 'succeeded' OR finished_state = 'dead')
    AND finished_at > :since
  GROUP BY queue;

-- name: pause
-- Pausing keeps the first pause time.
INSERT INTO readpast_queues (name, paused_at)
  VALUES (:queue, CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED))
  ON DUPLICATE KEY UPDATE paused_at = coalesce(paused_at, VALUES(paused_at));

-- name: resume
UPDATE readpast_queues SET paused_at = NULL WHERE name = :queue;

-- name: find_schedule
SELECT 1 FROM readpast_schedules WHERE name = :name FOR UPDATE;

-- name: upsert_schedule
-- A replaced schedule keeps its created_at and last tick.
INSERT INTO readpast_schedules (name, queue, spec, payload, priority, max_attempts, created_at)
  VALUES (:name, :queue, :spec, :payload, :priority, :max_attempts,
          CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED))
  ON DUPLICATE KEY UPDATE queue = VALUES(queue), spec = VALUES(spec),
    payload = VALUES(payload), priority = VALUES(priority),
    max_attempts = VALUES(max_attempts);

-- name: list_schedules
SELECT name, queue, spec, payload, priority, max_attempts, created_at, last_tick_at,
       last_job_id
  FROM readpast_schedules ORDER BY name;

-- name: delete_schedule
DELETE FROM readpast_schedules WHERE name = :name;

-- name: take_tick
-- Takes the tick when nobody has yet (the row stays locked until the job is inserted).
UPDATE readpast_schedules SET last_tick_at = :tick
  WHERE name = :name AND coalesce(last_tick_at, created_at) < :tick;

-- name: record_tick_job
-- In the transaction that took the tick: the job it enqueued.
UPDATE readpast_schedules SET last_job_id = :job_id WHERE name = :name;

-- name: schedule_job
SELECT queue, payload, priority, max_attempts FROM readpast_schedules WHERE name = :name;

-- name: task_next_run
-- claim_task, step 1: the task's row, locked (none: step 2 inserts it).
SELECT next_run_at <= CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)
  FROM readpast_tasks WHERE task = :task FOR UPDATE;

-- name: insert_task
-- A second claimant that inserts at the same time fails on the primary key: not claimed.
INSERT INTO readpast_tasks (task, next_run_at, claimed_by, claimed_at)
  VALUES (:task, CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED) + :interval, :claimed_by,
          CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED));

-- name: claim_task
UPDATE readpast_tasks
  SET next_run_at = CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED) + :interval,
      claimed_by = :claimed_by, claimed_at = CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)
  WHERE task = :task;

-- list: one statement per filter combination, so that each can use an index; keyset paging
-- after :after_id.

-- list_*: one statement per filter, pages by id between :after_id and :before_id
-- (exclusive), oldest first or (the *_desc twin) newest first. The rest of the WHERE is the
-- same in every one: the derived views (scheduled, retrying, expired: 1 to apply, 0 not) and
-- the search, a substring of the payload, worker, unique key or last error with letters in
-- any case. The columns are binary strings, which LOWER() leaves alone, so both sides are
-- read as latin1 (every byte one character: any bytes match as bytes). LOCATE() takes the
-- text as it is (no LIKE wildcards). Queue::list_page bounds how many ids one request with
-- a view or a search looks at (options.hpp, ListRequest::scan_limit).

-- name: list_all
SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
       lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload
  FROM readpast_jobs
  WHERE id > :after_id
    AND id < :before_id AND (:scheduled = 0 OR run_at > CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED))
    AND (:retrying = 0 OR attempts > 0)
    AND (:expired = 0 OR lease_expires_at <= CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED))
    AND (:search IS NULL OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(payload USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(leased_by USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(unique_key USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(last_error USING latin1))) > 0)
  ORDER BY id LIMIT :limit;

-- name: list_all_desc
SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
       lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload
  FROM readpast_jobs
  WHERE id > :after_id
    AND id < :before_id AND (:scheduled = 0 OR run_at > CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED))
    AND (:retrying = 0 OR attempts > 0)
    AND (:expired = 0 OR lease_expires_at <= CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED))
    AND (:search IS NULL OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(payload USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(leased_by USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(unique_key USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(last_error USING latin1))) > 0)
  ORDER BY id DESC LIMIT :limit;

-- name: list_queue
SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
       lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload
  FROM readpast_jobs
  WHERE id > :after_id AND queue = :queue
    AND id < :before_id AND (:scheduled = 0 OR run_at > CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED))
    AND (:retrying = 0 OR attempts > 0)
    AND (:expired = 0 OR lease_expires_at <= CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED))
    AND (:search IS NULL OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(payload USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(leased_by USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(unique_key USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(last_error USING latin1))) > 0)
  ORDER BY id LIMIT :limit;

-- name: list_queue_desc
SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
       lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload
  FROM readpast_jobs
  WHERE id > :after_id AND queue = :queue
    AND id < :before_id AND (:scheduled = 0 OR run_at > CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED))
    AND (:retrying = 0 OR attempts > 0)
    AND (:expired = 0 OR lease_expires_at <= CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED))
    AND (:search IS NULL OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(payload USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(leased_by USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(unique_key USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(last_error USING latin1))) > 0)
  ORDER BY id DESC LIMIT :limit;

-- Lists by state have no index by state and id, which every lease or completion would have to
-- change: the server walks the primary key from :after_id, or sorts the state's range of
-- readpast_jobs_lease (live states, one queue) or readpast_jobs_finished_at (finished
-- states), whichever it reckons reads less: the primary key when the state is a large part
-- of the table, the range when it is a small one.
-- name: list_state
SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
       lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload
  FROM readpast_jobs
  WHERE id > :after_id AND state = :state
    AND id < :before_id AND (:scheduled = 0 OR run_at > CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED))
    AND (:retrying = 0 OR attempts > 0)
    AND (:expired = 0 OR lease_expires_at <= CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED))
    AND (:search IS NULL OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(payload USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(leased_by USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(unique_key USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(last_error USING latin1))) > 0)
  ORDER BY id LIMIT :limit;

-- name: list_state_desc
SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
       lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload
  FROM readpast_jobs
  WHERE id > :after_id AND state = :state
    AND id < :before_id AND (:scheduled = 0 OR run_at > CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED))
    AND (:retrying = 0 OR attempts > 0)
    AND (:expired = 0 OR lease_expires_at <= CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED))
    AND (:search IS NULL OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(payload USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(leased_by USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(unique_key USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(last_error USING latin1))) > 0)
  ORDER BY id DESC LIMIT :limit;

-- name: list_finished_state
SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
       lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload
  FROM readpast_jobs
  WHERE id > :after_id AND finished_state = :state
    AND id < :before_id AND (:scheduled = 0 OR run_at > CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED))
    AND (:retrying = 0 OR attempts > 0)
    AND (:expired = 0 OR lease_expires_at <= CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED))
    AND (:search IS NULL OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(payload USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(leased_by USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(unique_key USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(last_error USING latin1))) > 0)
  ORDER BY id LIMIT :limit;

-- name: list_finished_state_desc
SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
       lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload
  FROM readpast_jobs
  WHERE id > :after_id AND finished_state = :state
    AND id < :before_id AND (:scheduled = 0 OR run_at > CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED))
    AND (:retrying = 0 OR attempts > 0)
    AND (:expired = 0 OR lease_expires_at <= CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED))
    AND (:search IS NULL OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(payload USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(leased_by USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(unique_key USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(last_error USING latin1))) > 0)
  ORDER BY id DESC LIMIT :limit;

-- name: list_queue_state
SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
       lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload
  FROM readpast_jobs
  WHERE id > :after_id AND queue = :queue AND state = :state
    AND id < :before_id AND (:scheduled = 0 OR run_at > CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED))
    AND (:retrying = 0 OR attempts > 0)
    AND (:expired = 0 OR lease_expires_at <= CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED))
    AND (:search IS NULL OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(payload USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(leased_by USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(unique_key USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(last_error USING latin1))) > 0)
  ORDER BY id LIMIT :limit;

-- name: list_queue_state_desc
SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
       lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload
  FROM readpast_jobs
  WHERE id > :after_id AND queue = :queue AND state = :state
    AND id < :before_id AND (:scheduled = 0 OR run_at > CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED))
    AND (:retrying = 0 OR attempts > 0)
    AND (:expired = 0 OR lease_expires_at <= CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED))
    AND (:search IS NULL OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(payload USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(leased_by USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(unique_key USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(last_error USING latin1))) > 0)
  ORDER BY id DESC LIMIT :limit;

-- name: list_queue_finished_state
SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
       lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload
  FROM readpast_jobs
  WHERE id > :after_id AND queue = :queue AND finished_state = :state
    AND id < :before_id AND (:scheduled = 0 OR run_at > CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED))
    AND (:retrying = 0 OR attempts > 0)
    AND (:expired = 0 OR lease_expires_at <= CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED))
    AND (:search IS NULL OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(payload USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(leased_by USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(unique_key USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(last_error USING latin1))) > 0)
  ORDER BY id LIMIT :limit;

-- name: list_queue_finished_state_desc
SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
       lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload
  FROM readpast_jobs
  WHERE id > :after_id AND queue = :queue AND finished_state = :state
    AND id < :before_id AND (:scheduled = 0 OR run_at > CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED))
    AND (:retrying = 0 OR attempts > 0)
    AND (:expired = 0 OR lease_expires_at <= CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED))
    AND (:search IS NULL OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(payload USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(leased_by USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(unique_key USING latin1))) > 0
         OR LOCATE(LOWER(CONVERT(CAST(:search AS BINARY) USING latin1)), LOWER(CONVERT(last_error USING latin1))) > 0)
  ORDER BY id DESC LIMIT :limit;

-- name: id_bounds
-- The smallest and largest id (NULL, NULL for no job): two lookups at the ends of the primary key.
SELECT (SELECT min(id) FROM readpast_jobs), (SELECT max(id) FROM readpast_jobs);

-- name: delete_finished
-- Deletes one job by id, only when it has finished (like purge, never a live job).
DELETE FROM readpast_jobs
  WHERE id = :id AND state IN ('succeeded', 'dead', 'cancelled') AND notify = 0;

-- name: get
SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
       lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload,
       progress
  FROM readpast_jobs WHERE id = :id;

-- name: has_due_job
-- wait_for_work's poll: is a job due (and the queue not paused)? Along readpast_jobs_lease.
-- The second column says whether the queue has limits (one probe of readpast_queues' primary
-- key): only then does the poll ask queue_throttled too, so that the poll of a queue without
-- limits stays what it was.
SELECT EXISTS (SELECT 1 FROM readpast_jobs
               WHERE queue = :queue AND state = 'available'
                 AND run_at <= CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED))
   AND NOT EXISTS (SELECT 1 FROM readpast_queues WHERE name = :queue AND paused_at IS NOT NULL),
       EXISTS (SELECT 1 FROM readpast_queues
               WHERE name = :queue AND (running_limit IS NOT NULL OR rate_count IS NOT NULL));

-- name: queue_throttled
-- Would the queue's limits keep a lease from taking a job now (as many running as the running
-- limit, no rate slot out of its window)? A throttled worker then waits instead of spinning.
-- Under a running limit the running jobs are about as many as the limit.
SELECT EXISTS (SELECT 1 FROM readpast_queues q
               WHERE q.name = :queue
                 AND ((q.running_limit IS NOT NULL
                       AND (SELECT count(*) FROM readpast_jobs r
                            WHERE r.queue = :queue AND r.state = 'running') >= q.running_limit)
                      OR (q.rate_count IS NOT NULL
                          AND NOT EXISTS (
                            SELECT 1 FROM readpast_rate_slots s
                            WHERE s.queue = :queue
                              AND s.leased_at <= CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)
                                                 - q.rate_window))));

-- name: add_metric
-- One series of a flush (docs/metrics.md): its stored total grows by the value. A flush
-- sends its series sorted, so that two flushes at once lock rows in the same order.
INSERT INTO readpast_metrics (name, queue, label, label_value, value)
  VALUES (:name, :queue, :label, :label_value, :value)
  ON DUPLICATE KEY UPDATE value = value + VALUES(value);

-- name: read_metrics
SELECT name, queue, label, label_value, value FROM readpast_metrics
  ORDER BY name, queue, label, label_value;

-- name: upsert_worker
-- A worker's heartbeat. started_at is kept while the same process reports again (it is
-- assigned first, while host and pid still hold the stored values).
INSERT INTO readpast_workers (name, host, pid, queues, threads, started_at, heartbeat_at)
  VALUES (:name, :host, :pid, :queues, :threads,
          CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED),
          CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED))
  ON DUPLICATE KEY UPDATE
    started_at = IF(host = VALUES(host) AND pid = VALUES(pid), started_at, VALUES(started_at)),
    host = VALUES(host), pid = VALUES(pid), queues = VALUES(queues),
    threads = VALUES(threads), heartbeat_at = VALUES(heartbeat_at);

-- name: forget_stale_workers
DELETE FROM readpast_workers
  WHERE heartbeat_at < CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED) - :forget_us;

-- name: delete_worker
DELETE FROM readpast_workers WHERE name = :name;

-- name: list_workers
SELECT name, host, pid, queues, threads, started_at, heartbeat_at FROM readpast_workers
  ORDER BY name;

-- Dependencies (docs/workflows.md). readpast_dependencies holds one row per edge: job_id
-- waits for depends_on. A job enqueued after others is inserted waiting (or, when one of them
-- is already dead or cancelled, cancelled) with waiting_for = how many have not succeeded;
-- each live one is marked notify first (mark_notify), which locks it until the enqueue
-- commits, so that none finishes unseen. resolve_dependencies then tells the dependents of
-- every finished job marked notify, in short transactions under the 'dependencies' lock row:
-- a success meets the edge and counts waiting_for down (the last one makes the job
-- available), a death or cancellation cancels the waiting dependents (which, marked notify
-- themselves, pass it down the chain).

-- name: mark_notify
UPDATE readpast_jobs SET notify = 1
  WHERE id = :id AND (state = 'available' OR state = 'running' OR state = 'waiting');

-- name: insert_dependent_job
-- :run_at is the time it may run, decided by the engine on the server's clock (:now).
INSERT INTO readpast_jobs (queue, state, priority, run_at, attempts, max_attempts,
                           enqueued_at, unique_key, payload, waiting_for, delay_us,
                           finished_at, last_error, group_name, notify)
  VALUES (:queue, :state, :priority, :run_at, 0, :max_attempts, :now, :unique_key, :payload,
          :waiting_for, :delay_us, :finished_at, :last_error, :group_name,
          :group_name IS NOT NULL);

-- name: insert_dependency
INSERT INTO readpast_dependencies (depends_on, job_id, met) VALUES (:depends_on, :job_id, :met);

-- name: resolve_lock
SELECT name FROM readpast_locks WHERE name = 'dependencies' FOR UPDATE SKIP LOCKED;

-- name: resolve_wait_lock
SELECT name FROM readpast_locks WHERE name = 'dependencies' FOR UPDATE;

-- name: notified_jobs
-- Finished jobs with dependents still to tell, along readpast_jobs_notify.
SELECT id, state, group_name FROM readpast_jobs WHERE notify_pending = 1 ORDER BY id
  LIMIT :limit FOR UPDATE SKIP LOCKED;

-- name: any_notified
-- A read before resolve_dependencies locks anything: mostly there is nothing to tell.
SELECT EXISTS (SELECT 1 FROM readpast_jobs WHERE notify_pending = 1)
    OR EXISTS (SELECT 1 FROM readpast_groups WHERE release_flag = 1);

-- A round's sources are JSON arrays (JSON_TABLE) so that each step is one statement for all of
-- them, however many jobs the round tells: a round trip per edge made MariaDB's rounds the
-- slowest part of a drain of dependent jobs. Every array is driven from by primary key
-- (STRAIGHT_JOIN), as in lease_take_many. A multi-table UPDATE assigns in no promised order,
-- so in these no assignment reads a column another one sets.

-- name: pick_unmet_edges
-- Up to :limit unmet edges of :sources, [depends_on, upto] pairs: a job that succeeded (upto
-- its largest id) or minus a released group's id (upto the last job its release lets go,
-- released_upto). No ORDER BY, so that the scan stops at :limit rows however many dependents
-- one source has: which of them a round takes is not ordered, and the round asks afterwards
-- which sources have none left (sources_done).
SELECT d.depends_on, d.job_id
  FROM JSON_TABLE(:sources, '$[*]' COLUMNS (depends_on BIGINT PATH '$[0]',
                                            upto BIGINT PATH '$[1]')) s
  STRAIGHT_JOIN readpast_dependencies d ON d.depends_on = s.depends_on AND d.job_id <= s.upto
  WHERE d.met = 0
  LIMIT :limit;

-- name: meet_edges
-- The edges pick_unmet_edges took, :edges as [depends_on, job_id] pairs, become met.
UPDATE JSON_TABLE(:edges, '$[*]' COLUMNS (depends_on BIGINT PATH '$[0]',
                                          job_id BIGINT PATH '$[1]')) e
  STRAIGHT_JOIN readpast_dependencies d ON d.depends_on = e.depends_on AND d.job_id = e.job_id
  SET d.met = 1;

-- name: release_counted
-- :counts, [job_id, n] pairs: n edges of the job were met in this round. A waiting job whose
-- last unmet edges they were becomes available, its delay counted from now
-- (count_down_counted then counts every one of them down).
UPDATE JSON_TABLE(:counts, '$[*]' COLUMNS (id BIGINT PATH '$[0]', n INT PATH '$[1]')) x
  STRAIGHT_JOIN readpast_jobs j ON j.id = x.id
  SET j.run_at = GREATEST(j.run_at, CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED) + j.delay_us),
      j.state = 'available', j.waiting_for = 0
  WHERE j.state = 'waiting' AND j.waiting_for <= x.n;

-- name: count_down_counted
UPDATE JSON_TABLE(:counts, '$[*]' COLUMNS (id BIGINT PATH '$[0]', n INT PATH '$[1]')) x
  STRAIGHT_JOIN readpast_jobs j ON j.id = x.id
  SET j.waiting_for = GREATEST(j.waiting_for - x.n, 0);

-- name: pick_waiting_dependents
-- Up to :limit waiting dependents of :sources (a JSON array of ids of jobs that ended dead or
-- cancelled), each with the source it waited for. Unordered, as pick_unmet_edges.
SELECT d.job_id, d.depends_on
  FROM JSON_TABLE(:sources, '$[*]' COLUMNS (id BIGINT PATH '$')) s
  STRAIGHT_JOIN readpast_dependencies d ON d.depends_on = s.id
  STRAIGHT_JOIN readpast_jobs w ON w.id = d.job_id
  WHERE d.met = 0 AND w.state = 'waiting'
  LIMIT :limit;

-- name: cancel_dependents
-- :dependents, [job_id, depends_on] pairs from pick_waiting_dependents: each is cancelled,
-- last_error naming the dependency and its state (as dependency_failed_error in
-- core/dependencies.cpp words it). Marked notify themselves, they pass it down the chain in a
-- later round.
UPDATE JSON_TABLE(:dependents, '$[*]' COLUMNS (id BIGINT PATH '$[0]',
                                               cause BIGINT PATH '$[1]')) x
  STRAIGHT_JOIN readpast_jobs f ON f.id = x.cause
  STRAIGHT_JOIN readpast_jobs w ON w.id = x.id
  SET w.finished_at = CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED),
      w.last_error = CONCAT('cancelled: dependency ', f.id, ' is ', f.state),
      w.state = 'cancelled'
  WHERE w.state = 'waiting';

-- name: sources_done
-- Of :sources (as pick_unmet_edges), those with no unmet edge left up to upto.
SELECT s.depends_on
  FROM JSON_TABLE(:sources, '$[*]' COLUMNS (depends_on BIGINT PATH '$[0]',
                                            upto BIGINT PATH '$[1]')) s
  WHERE NOT EXISTS (SELECT 1 FROM readpast_dependencies d
                    WHERE d.depends_on = s.depends_on AND d.met = 0 AND d.job_id <= s.upto);

-- name: failed_sources_done
-- Of :sources (as pick_waiting_dependents), those with no waiting dependent left.
SELECT s.id
  FROM JSON_TABLE(:sources, '$[*]' COLUMNS (id BIGINT PATH '$')) s
  WHERE NOT EXISTS (SELECT 1 FROM readpast_dependencies d
                      JOIN readpast_jobs w ON w.id = d.job_id
                    WHERE d.depends_on = s.id AND d.met = 0 AND w.state = 'waiting');

-- name: told
-- :ids, a JSON array: finished jobs that have told every dependent.
UPDATE JSON_TABLE(:ids, '$[*]' COLUMNS (id BIGINT PATH '$')) x
  STRAIGHT_JOIN readpast_jobs j ON j.id = x.id
  SET j.notify = 0;

-- name: has_dependencies
SELECT EXISTS (SELECT 1 FROM readpast_dependencies WHERE job_id = :id);

-- name: remeet_dependencies
-- A retried dependent: each edge is met when its job has succeeded (an edge whose job is
-- gone keeps what it was).
UPDATE readpast_dependencies SET
    met = coalesce((SELECT j.state = 'succeeded' FROM readpast_jobs j
                    WHERE j.id = readpast_dependencies.depends_on), met)
  WHERE job_id = :id;

-- name: rewait
-- A retried dependent waits again for what has not succeeded, or is available now.
UPDATE readpast_jobs SET
    waiting_for = (SELECT count(*) FROM readpast_dependencies WHERE job_id = :id AND met = 0),
    state = IF(waiting_for > 0, 'waiting', 'available')
  WHERE id = :id;

-- name: renotify
UPDATE readpast_jobs SET notify = 1
  WHERE id IN (SELECT depends_on FROM readpast_dependencies WHERE job_id = :id AND met = 0)
    AND (state = 'available' OR state = 'running' OR state = 'waiting');

-- name: dependencies_of
-- What the job waits for; state is NULL for a job that no longer exists.
SELECT d.depends_on, j.state, d.met, g.name
  FROM readpast_dependencies d
  LEFT JOIN readpast_jobs j ON j.id = d.depends_on
  LEFT JOIN readpast_groups g ON g.id = -d.depends_on
  WHERE d.job_id = :id ORDER BY d.depends_on < 0, ABS(d.depends_on);

-- name: dependents_of
SELECT d.job_id, j.state, d.met, NULL
  FROM readpast_dependencies d LEFT JOIN readpast_jobs j ON j.id = d.job_id
  WHERE d.depends_on = :id ORDER BY d.job_id LIMIT :limit;

-- name: dependent_count
SELECT count(*) FROM readpast_dependencies WHERE depends_on = :id;

-- Groups (docs/workflows.md): readpast_groups counts each group's live members.

-- name: join_group
INSERT INTO readpast_groups (name, live) VALUES (:name, 1)
  ON DUPLICATE KEY UPDATE live = live + 1;

-- name: find_group
-- Locked, so that the group's last member cannot finish unseen before this enqueue commits.
SELECT id, live FROM readpast_groups WHERE name = :name FOR UPDATE;

-- name: leave_group
-- :members of the group finished (told in this round).
UPDATE readpast_groups SET live = GREATEST(live - :members, 0) WHERE name = :name;

-- name: release_group
-- The group's last member has finished: the jobs waiting for it now are let go. (Assigned
-- left to right: release_pending reads the new released_upto.)
UPDATE readpast_groups SET
    released_upto = COALESCE((SELECT MAX(job_id) FROM readpast_dependencies
                              WHERE depends_on = -readpast_groups.id AND met = 0), 0),
    release_pending = released_upto > 0
  WHERE name = :name AND live = 0;

-- name: pending_groups
SELECT id, released_upto FROM readpast_groups WHERE release_flag = 1 ORDER BY id LIMIT :limit
  FOR UPDATE SKIP LOCKED;

-- name: groups_released
-- :ids, a JSON array: groups whose release has let every waiting job go.
UPDATE JSON_TABLE(:ids, '$[*]' COLUMNS (id BIGINT PATH '$')) x
  STRAIGHT_JOIN readpast_groups g ON g.id = x.id
  SET g.release_pending = 0;

-- name: job_group
SELECT notify, group_name FROM readpast_jobs WHERE id = :id;

-- name: group_counts
SELECT state, COUNT(*) FROM readpast_jobs WHERE group_name = :name GROUP BY state;

-- name: group_row
SELECT live, (SELECT COUNT(*) FROM readpast_dependencies
              WHERE depends_on = -readpast_groups.id AND met = 0)
  FROM readpast_groups WHERE name = :name;

-- name: list_group
SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
       lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload
  FROM readpast_jobs WHERE group_name = :name AND id > :after_id ORDER BY id LIMIT :limit;
