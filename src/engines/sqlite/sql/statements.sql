-- Every statement of the SQLite engine. cmake/EmbedSql.cmake builds them into the engine
-- (sqlite_statements.hpp): each "-- name:" starts one, and each :parameter becomes a constant
-- the engine binds by. Comment lines are documentation and are left out of the embedded text.
--
-- Times are INTEGER microseconds since the Unix epoch (UTC). :now is always read from the
-- clock after BEGIN IMMEDIATE took the write lock, so every statement of a transaction sees one
-- consistent time (on one machine, the host clock is the database's clock). The columns of a
-- job come in the order read_job() expects (docs/schema.md): id, queue, state, priority,
-- run_at, attempts, max_attempts, lease_token, leased_by, lease_expires_at, enqueued_at,
-- started_at, finished_at, unique_key, last_error, payload.
--
-- readpast_lease_token() is the engine's: each connection registers it (sqlite_connection.cpp)
-- to draw a new lease token from core (core/lease_tokens.hpp), the same tokens every engine
-- hands out. In the sqlite3 shell, lower(hex(randomblob(16))) stands in for it.

-- name: create_version_table
CREATE TABLE IF NOT EXISTS readpast_schema_version (
  version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL DEFAULT (datetime('now')));

-- name: has_version_table
SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'readpast_schema_version';

-- name: schema_version
-- max() of no rows is NULL, read as 0.
SELECT max(version) FROM readpast_schema_version;

-- name: record_version
INSERT INTO readpast_schema_version (version) VALUES (:version);

-- name: find_unique_holder
SELECT id FROM readpast_jobs WHERE queue = :queue AND unique_key = :unique_key
  AND (state = 'available' OR state = 'running' OR state = 'waiting');

-- name: find_unique_window
-- An open window of the key refuses every job of the queue that has the key.
SELECT job_id FROM readpast_unique_windows
  WHERE queue = :queue AND unique_key = :unique_key AND until > :now;

-- name: open_unique_window
-- After the job went in; replaces the key's closed window, if any (an open one refused the
-- job before it went in).
INSERT INTO readpast_unique_windows (queue, unique_key, job_id, until)
  VALUES (:queue, :unique_key, :job_id, :until)
  ON CONFLICT (queue, unique_key) DO UPDATE
  SET job_id = excluded.job_id, until = excluded.until;

-- name: forget_closed_windows
-- At most :limit closed windows, along readpast_unique_windows_until.
DELETE FROM readpast_unique_windows WHERE (queue, unique_key) IN (
  SELECT queue, unique_key FROM readpast_unique_windows WHERE until <= :now
    ORDER BY until LIMIT :limit);

-- name: insert_job
-- The new id is read with sqlite3_last_insert_rowid(), not RETURNING: RETURNING buffers its
-- rows in an ephemeral table that every execution would build and free.
INSERT INTO readpast_jobs (queue, state, priority, run_at, attempts, max_attempts,
                           enqueued_at, unique_key, payload)
  VALUES (:queue, 'available', :priority, :run_at, 0, :max_attempts, :now, :unique_key,
          :payload);

-- name: lease
-- A queue that is paused or has limits hands out nothing here: the test reads the one row of
-- readpast_queues the pause test always read. lease_limited serves limited queues.
-- The sub-select walks readpast_jobs_lease in (priority, run_at, id) order. RETURNING order
-- is unspecified, so the engine sorts the rows it returns (core/handout_order.hpp).
UPDATE readpast_jobs SET state = 'running', attempts = attempts + 1,
    lease_token = readpast_lease_token(), leased_by = :worker_id,
    lease_expires_at = :now + :lease_duration, started_at = :now
  WHERE id IN (SELECT id FROM readpast_jobs
               WHERE queue = :queue AND state = 'available' AND run_at <= :now
                 AND NOT EXISTS (SELECT 1 FROM readpast_queues
                                 WHERE name = :queue AND (paused_at IS NOT NULL
                                   OR running_limit IS NOT NULL OR rate_count IS NOT NULL))
               ORDER BY priority, run_at, id LIMIT :max_jobs)
  RETURNING id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
            lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error,
            payload;

-- name: lease_one
-- The same for one job (:max_jobs is 1). SQLite builds an ephemeral table (a b-tree with a
-- page cache of its own, allocated and freed by every execution) for IN (sub-select) and one
-- for the UPDATE's row set when it also has RETURNING; `id = (sub-select)` needs neither,
-- which leaves the one RETURNING buffers its rows in.
UPDATE readpast_jobs SET state = 'running', attempts = attempts + 1,
    lease_token = readpast_lease_token(), leased_by = :worker_id,
    lease_expires_at = :now + :lease_duration, started_at = :now
  WHERE id = (SELECT id FROM readpast_jobs
              WHERE queue = :queue AND state = 'available' AND run_at <= :now
                AND NOT EXISTS (SELECT 1 FROM readpast_queues
                                WHERE name = :queue AND (paused_at IS NOT NULL
                                  OR running_limit IS NOT NULL OR rate_count IS NOT NULL))
              ORDER BY priority, run_at, id LIMIT :max_jobs)
  RETURNING id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
            lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error,
            payload;

-- name: record_rescued_errors
-- In rescue_expired's transaction, before it: one history entry per lease it will rescue,
-- with the text it writes to last_error.
INSERT INTO readpast_job_errors (job_id, attempt, at, worker, error)
  SELECT id, attempts, :now, leased_by,
         CASE WHEN attempts >= max_attempts
              THEN 'lease expired after ' || attempts || ' attempts (worker lost)'
              ELSE 'lease expired (worker lost)' END
  FROM readpast_jobs
  WHERE queue = :queue AND state = 'running' AND lease_expires_at <= :now;

-- name: lease_under_limits
-- lease for a queue with limits, inside lease_limited's transaction, once its limits allowed
-- :max_jobs jobs (the queue is known not to be paused: read in the same transaction).
UPDATE readpast_jobs SET state = 'running', attempts = attempts + 1,
    lease_token = readpast_lease_token(), leased_by = :worker_id,
    lease_expires_at = :now + :lease_duration, started_at = :now
  WHERE id IN (SELECT id FROM readpast_jobs
               WHERE queue = :queue AND state = 'available' AND run_at <= :now
               ORDER BY priority, run_at, id LIMIT :max_jobs)
  RETURNING id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
            lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error,
            payload;

-- name: queue_limits
-- A queue's limits and whether it is paused; no row: neither.
SELECT paused_at IS NOT NULL, running_limit, rate_count, rate_window
  FROM readpast_queues WHERE name = :queue;

-- name: count_running
-- The queue's running jobs, counted along readpast_jobs_expiry up to :limit only: a lease
-- under a running limit of N never reads more than N entries.
SELECT count(*) FROM (SELECT 1 FROM readpast_jobs
                      WHERE queue = :queue AND state = 'running' LIMIT :limit);

-- name: free_rate_slots
-- The rate slots whose lease left the window (leased_at <= now - window), oldest first, up to
-- :limit, along readpast_rate_slots_oldest.
SELECT slot FROM readpast_rate_slots
  WHERE queue = :queue AND leased_at <= :before ORDER BY leased_at, slot LIMIT :limit;

-- name: stamp_rate_slot
UPDATE readpast_rate_slots SET leased_at = :now WHERE queue = :queue AND slot = :slot;

-- name: due_job_exists
SELECT EXISTS (SELECT 1 FROM readpast_jobs
               WHERE queue = :queue AND state = 'available' AND run_at <= :now);

-- name: set_limits
-- NULL keeps the queue's limit of that kind.
INSERT INTO readpast_queues (name, running_limit, rate_count, rate_window)
  VALUES (:queue, :running_limit, :rate_count, :rate_window)
  ON CONFLICT (name) DO UPDATE
  SET running_limit = coalesce(excluded.running_limit, running_limit),
      rate_count = coalesce(excluded.rate_count, rate_count),
      rate_window = coalesce(excluded.rate_window, rate_window);

-- name: clear_limits
UPDATE readpast_queues SET running_limit = NULL, rate_count = NULL, rate_window = NULL
  WHERE name = :queue;

-- name: rate_slot_times
SELECT leased_at FROM readpast_rate_slots WHERE queue = :queue;

-- name: delete_rate_slots
DELETE FROM readpast_rate_slots WHERE queue = :queue;

-- name: insert_rate_slot
INSERT INTO readpast_rate_slots (queue, slot, leased_at) VALUES (:queue, :slot, :leased_at);

-- name: rescue_expired
UPDATE readpast_jobs SET
    state = CASE WHEN attempts >= max_attempts THEN 'dead' ELSE 'available' END,
    finished_at = CASE WHEN attempts >= max_attempts THEN :now END,
    run_at = CASE WHEN attempts >= max_attempts THEN run_at ELSE :now END,
    last_error = CASE WHEN attempts >= max_attempts
                      THEN 'lease expired after ' || attempts || ' attempts (worker lost)'
                      ELSE 'lease expired (worker lost)' END,
    lease_expires_at = NULL
  WHERE queue = :queue AND state = 'running' AND lease_expires_at <= :now;

-- The settling calls are fenced: each changes the job only while it is running under the
-- lease :token.

-- name: complete
UPDATE readpast_jobs SET state = 'succeeded', finished_at = :now, lease_expires_at = NULL
  WHERE id = :id AND state = 'running' AND lease_token = :token;

-- name: complete_delete
-- A job with dependents to tell (notify) is kept as succeeded instead, until
-- resolve_dependencies has told them; then retention deletes it.
DELETE FROM readpast_jobs
  WHERE id = :id AND state = 'running' AND lease_token = :token AND notify = 0;

-- name: fail
-- :retry_after NULL: use the backoff, min(:backoff_cap, :backoff_base * 2^(attempts-1)) *
-- :backoff_factor, computed in REAL arithmetic so that it cannot overflow; the exponent is
-- clamped at 40 like Backoff::delay_after. :no_retry 1: dead now.
UPDATE readpast_jobs SET
    state = CASE WHEN attempts >= max_attempts OR :no_retry THEN 'dead' ELSE 'available' END,
    finished_at = CASE WHEN attempts >= max_attempts OR :no_retry THEN :now END,
    run_at = CASE WHEN attempts >= max_attempts OR :no_retry THEN run_at
                  ELSE :now + coalesce(:retry_after,
                         CAST(min(:backoff_cap * 1.0,
                                  :backoff_base * 1.0 * (1 << min(max(attempts - 1, 0), 40)))
                              * :backoff_factor AS INTEGER)) END,
    last_error = :error, lease_expires_at = NULL
  WHERE id = :id AND state = 'running' AND lease_token = :token
  RETURNING state, attempts, leased_by;

-- name: record_error
-- In fail's transaction, for the attempt it settled: the error history (readpast_job_errors).
INSERT INTO readpast_job_errors (job_id, attempt, at, worker, error)
  VALUES (:id, :attempt, :now, :worker, :error);

-- name: set_progress
UPDATE readpast_jobs SET progress = :progress
  WHERE id = :id AND state = 'running' AND lease_token = :token;

-- name: job_errors
SELECT attempt, at, worker, error FROM readpast_job_errors WHERE job_id = :id ORDER BY rowid;

-- name: extend
UPDATE readpast_jobs SET lease_expires_at = :now + :lease_duration
  WHERE id = :id AND state = 'running' AND lease_token = :token;

-- name: held
-- Is the lease still held? A read (Queue::leases_held).
SELECT 1 FROM readpast_jobs WHERE id = :id AND state = 'running' AND lease_token = :token;

-- name: release
-- Gives back the attempt the lease spent.
UPDATE readpast_jobs SET state = 'available', run_at = :now + :delay,
    attempts = max(attempts - 1, 0), lease_expires_at = NULL
  WHERE id = :id AND state = 'running' AND lease_token = :token;

-- name: cancel
UPDATE readpast_jobs SET state = 'cancelled', finished_at = :now, lease_expires_at = NULL
  WHERE id = :id AND (state = 'available' OR state = 'running' OR state = 'waiting');

-- name: retry
-- A job whose unique key a live job of its queue holds now stays where it is: it cannot
-- become live again without breaking the key's promise. A retried job that others still
-- wait for (an edge not met) must tell them when it finishes again: notify.
UPDATE readpast_jobs SET state = 'available', attempts = 0, run_at = :now, finished_at = NULL,
    lease_expires_at = NULL,
    notify = group_name IS NOT NULL
             OR EXISTS (SELECT 1 FROM readpast_dependencies d
                        WHERE d.depends_on = readpast_jobs.id AND d.met = 0)
  WHERE id = :id AND state IN ('dead', 'cancelled')
    AND NOT (unique_key IS NOT NULL
             AND EXISTS (SELECT 1 FROM readpast_jobs h
                         WHERE h.queue = readpast_jobs.queue
                           AND h.unique_key = readpast_jobs.unique_key
                           AND (h.state = 'available' OR h.state = 'running'
                                OR h.state = 'waiting')));

-- readpast_jobs_queue_state leaves running jobs out (migration 4). SQLite uses a partial index
-- only for a statement whose WHERE repeats the index's condition word for word (state =
-- :state alone cannot prove it), hence the `state <> 'running'` below.

-- name: retry_candidates
-- The next ids retry_all goes through (:state is dead or cancelled), one small transaction
-- at a time, along readpast_jobs_queue_state.
SELECT id FROM readpast_jobs
  WHERE queue = :queue AND state = :state AND state IN ('dead', 'cancelled')
    AND state <> 'running' AND id > :after_id
  ORDER BY id LIMIT :limit;

-- name: purge
-- Finished at or before :finished_before. Walks readpast_jobs_finished: the OR chain repeats
-- the index's condition word for word, which is what lets SQLite use a partial index here.
DELETE FROM readpast_jobs WHERE id IN (
  SELECT id FROM readpast_jobs
    WHERE queue = :queue AND state = :state
      AND (state = 'succeeded' OR state = 'dead' OR state = 'cancelled')
      AND finished_at <= :finished_before AND notify = 0
    ORDER BY finished_at LIMIT :limit);

-- name: stats_all
-- One row per (queue, state): the count, then the state's sub-count (scheduled for
-- 'available', expired leases for 'running'), then the oldest due run_at ('available' only).
-- Every state but running is counted along readpast_jobs_queue_state, running jobs along
-- readpast_jobs_expiry. Paused queues come as one more row, of state 'paused', so that a
-- paused queue without jobs is listed too; queues with limits as one of state 'limits'
-- (running_limit, rate_count, rate_window in the count columns).
SELECT queue, state, count(*), coalesce(sum(run_at > :now), 0),
       min(CASE WHEN run_at <= :now THEN run_at END)
  FROM readpast_jobs WHERE state <> 'running' GROUP BY queue, state
UNION ALL
SELECT queue, 'running', count(*), coalesce(sum(lease_expires_at <= :now), 0), NULL
  FROM readpast_jobs WHERE state = 'running' GROUP BY queue
UNION ALL
SELECT name, 'paused', 0, 0, NULL FROM readpast_queues WHERE paused_at IS NOT NULL
UNION ALL
SELECT name, 'limits', running_limit, rate_count, rate_window FROM readpast_queues
  WHERE running_limit IS NOT NULL OR rate_count IS NOT NULL
ORDER BY 1;

-- name: stats_queue
-- stats_all for one queue.
SELECT queue, state, count(*), coalesce(sum(run_at > :now), 0),
       min(CASE WHEN run_at <= :now THEN run_at END)
  FROM readpast_jobs WHERE state <> 'running' AND queue = :queue GROUP BY queue, state
UNION ALL
SELECT queue, 'running', count(*), coalesce(sum(lease_expires_at <= :now), 0), NULL
  FROM readpast_jobs WHERE state = 'running' AND queue = :queue GROUP BY queue
UNION ALL
SELECT name, 'paused', 0, 0, NULL FROM readpast_queues
  WHERE paused_at IS NOT NULL AND name = :queue
UNION ALL
SELECT name, 'limits', running_limit, rate_count, rate_window FROM readpast_queues
  WHERE (running_limit IS NOT NULL OR rate_count IS NOT NULL) AND name = :queue;

-- name: finished_since
-- Since :since (exclusive), for :queue (NULL: every queue). Walks readpast_jobs_finished,
-- whose condition the OR chain repeats (see purge).
SELECT queue, coalesce(sum(state = 'succeeded'), 0), coalesce(sum(state = 'dead'), 0)
  FROM readpast_jobs
  WHERE (state = 'succeeded' OR state = 'dead' OR state = 'cancelled')
    AND state IN ('succeeded', 'dead') AND finished_at > :since
    AND (:queue IS NULL OR queue = :queue)
  GROUP BY queue ORDER BY queue;

-- name: pause
-- Pausing keeps the first pause time.
INSERT INTO readpast_queues (name, paused_at) VALUES (:queue, :now)
  ON CONFLICT (name) DO UPDATE SET paused_at = coalesce(paused_at, excluded.paused_at);

-- name: resume
UPDATE readpast_queues SET paused_at = NULL WHERE name = :queue;

-- name: find_schedule
SELECT 1 FROM readpast_schedules WHERE name = :name;

-- name: upsert_schedule
-- A replaced schedule keeps its created_at and last tick.
INSERT INTO readpast_schedules (name, queue, spec, payload, priority, max_attempts, created_at)
  VALUES (:name, :queue, :spec, :payload, :priority, :max_attempts, :now)
  ON CONFLICT (name) DO UPDATE SET queue = excluded.queue, spec = excluded.spec,
    payload = excluded.payload, priority = excluded.priority,
    max_attempts = excluded.max_attempts;

-- name: list_schedules
SELECT name, queue, spec, payload, priority, max_attempts, created_at, last_tick_at,
       last_job_id
  FROM readpast_schedules ORDER BY name;

-- name: delete_schedule
DELETE FROM readpast_schedules WHERE name = :name;

-- name: record_tick_job
-- In the transaction that took the tick: the job it enqueued.
UPDATE readpast_schedules SET last_job_id = :job_id WHERE name = :name;

-- name: schedule_job
-- What a job of the schedule needs (run now: no tick is taken).
SELECT queue, payload, priority, max_attempts FROM readpast_schedules WHERE name = :name;

-- name: take_tick
-- Takes the tick when nobody has yet; returns what the job needs.
UPDATE readpast_schedules SET last_tick_at = :tick
  WHERE name = :name AND coalesce(last_tick_at, created_at) < :tick
  RETURNING queue, payload, priority, max_attempts;

-- name: claim_task
-- Claimed when the row is new or its time has come.
INSERT INTO readpast_tasks (task, next_run_at, claimed_by, claimed_at)
  VALUES (:task, :now + :interval, :claimed_by, :now)
  ON CONFLICT (task) DO UPDATE SET next_run_at = excluded.next_run_at,
    claimed_by = excluded.claimed_by, claimed_at = excluded.claimed_at
  WHERE readpast_tasks.next_run_at <= :now;

-- list: one statement per filter combination, so that each can use an index; keyset paging
-- between :after_id and :before_id (exclusive), oldest first or (the *_desc twin) newest
-- first. The rest of the WHERE is the same in every one: the derived views (scheduled,
-- retrying, expired: 1 to apply, 0 not) and the search, a substring of the payload, worker,
-- unique key or last error, ASCII letters in any case (lower() folds only those); instr()
-- takes the text as it is, so % and _ mean nothing special. Queue::list_page bounds how many
-- ids one request with a view or a search looks at (options.hpp, ListRequest::scan_limit).

-- name: list_all
SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
       lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload
  FROM readpast_jobs
  WHERE id > :after_id
    AND id < :before_id AND (:scheduled = 0 OR run_at > :now)
    AND (:retrying = 0 OR attempts > 0) AND (:expired = 0 OR lease_expires_at <= :now)
    AND (:search IS NULL OR instr(lower(payload), lower(:search)) > 0
         OR instr(lower(leased_by), lower(:search)) > 0
         OR instr(lower(unique_key), lower(:search)) > 0
         OR instr(lower(last_error), lower(:search)) > 0)
  ORDER BY id LIMIT :limit;

-- name: list_all_desc
SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
       lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload
  FROM readpast_jobs
  WHERE id > :after_id
    AND id < :before_id AND (:scheduled = 0 OR run_at > :now)
    AND (:retrying = 0 OR attempts > 0) AND (:expired = 0 OR lease_expires_at <= :now)
    AND (:search IS NULL OR instr(lower(payload), lower(:search)) > 0
         OR instr(lower(leased_by), lower(:search)) > 0
         OR instr(lower(unique_key), lower(:search)) > 0
         OR instr(lower(last_error), lower(:search)) > 0)
  ORDER BY id DESC LIMIT :limit;

-- name: list_queue
SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
       lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload
  FROM readpast_jobs
  WHERE id > :after_id AND queue = :queue
    AND id < :before_id AND (:scheduled = 0 OR run_at > :now)
    AND (:retrying = 0 OR attempts > 0) AND (:expired = 0 OR lease_expires_at <= :now)
    AND (:search IS NULL OR instr(lower(payload), lower(:search)) > 0
         OR instr(lower(leased_by), lower(:search)) > 0
         OR instr(lower(unique_key), lower(:search)) > 0
         OR instr(lower(last_error), lower(:search)) > 0)
  ORDER BY id LIMIT :limit;

-- name: list_queue_desc
SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
       lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload
  FROM readpast_jobs
  WHERE id > :after_id AND queue = :queue
    AND id < :before_id AND (:scheduled = 0 OR run_at > :now)
    AND (:retrying = 0 OR attempts > 0) AND (:expired = 0 OR lease_expires_at <= :now)
    AND (:search IS NULL OR instr(lower(payload), lower(:search)) > 0
         OR instr(lower(leased_by), lower(:search)) > 0
         OR instr(lower(unique_key), lower(:search)) > 0
         OR instr(lower(last_error), lower(:search)) > 0)
  ORDER BY id DESC LIMIT :limit;

-- name: list_state
SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
       lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload
  FROM readpast_jobs
  WHERE id > :after_id AND state = :state
    AND id < :before_id AND (:scheduled = 0 OR run_at > :now)
    AND (:retrying = 0 OR attempts > 0) AND (:expired = 0 OR lease_expires_at <= :now)
    AND (:search IS NULL OR instr(lower(payload), lower(:search)) > 0
         OR instr(lower(leased_by), lower(:search)) > 0
         OR instr(lower(unique_key), lower(:search)) > 0
         OR instr(lower(last_error), lower(:search)) > 0)
  ORDER BY id LIMIT :limit;

-- name: list_state_desc
SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
       lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload
  FROM readpast_jobs
  WHERE id > :after_id AND state = :state
    AND id < :before_id AND (:scheduled = 0 OR run_at > :now)
    AND (:retrying = 0 OR attempts > 0) AND (:expired = 0 OR lease_expires_at <= :now)
    AND (:search IS NULL OR instr(lower(payload), lower(:search)) > 0
         OR instr(lower(leased_by), lower(:search)) > 0
         OR instr(lower(unique_key), lower(:search)) > 0
         OR instr(lower(last_error), lower(:search)) > 0)
  ORDER BY id DESC LIMIT :limit;

-- name: list_queue_state
-- One range of readpast_jobs_queue_state, for every state but running (list_queue_running).
SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
       lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload
  FROM readpast_jobs
  WHERE id > :after_id AND queue = :queue AND state = :state AND state <> 'running'
    AND id < :before_id AND (:scheduled = 0 OR run_at > :now)
    AND (:retrying = 0 OR attempts > 0) AND (:expired = 0 OR lease_expires_at <= :now)
    AND (:search IS NULL OR instr(lower(payload), lower(:search)) > 0
         OR instr(lower(leased_by), lower(:search)) > 0
         OR instr(lower(unique_key), lower(:search)) > 0
         OR instr(lower(last_error), lower(:search)) > 0)
  ORDER BY id LIMIT :limit;

-- name: list_queue_state_desc
SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
       lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload
  FROM readpast_jobs
  WHERE id > :after_id AND queue = :queue AND state = :state AND state <> 'running'
    AND id < :before_id AND (:scheduled = 0 OR run_at > :now)
    AND (:retrying = 0 OR attempts > 0) AND (:expired = 0 OR lease_expires_at <= :now)
    AND (:search IS NULL OR instr(lower(payload), lower(:search)) > 0
         OR instr(lower(leased_by), lower(:search)) > 0
         OR instr(lower(unique_key), lower(:search)) > 0
         OR instr(lower(last_error), lower(:search)) > 0)
  ORDER BY id DESC LIMIT :limit;

-- name: list_queue_running
-- The queue's running jobs (:state is 'running'), found along readpast_jobs_expiry and
-- sorted: there are only as many as its workers hold. The literal is what lets SQLite use
-- that partial index.
SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
       lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload
  FROM readpast_jobs
  WHERE id > :after_id AND queue = :queue AND state = :state AND state = 'running'
    AND id < :before_id AND (:scheduled = 0 OR run_at > :now)
    AND (:retrying = 0 OR attempts > 0) AND (:expired = 0 OR lease_expires_at <= :now)
    AND (:search IS NULL OR instr(lower(payload), lower(:search)) > 0
         OR instr(lower(leased_by), lower(:search)) > 0
         OR instr(lower(unique_key), lower(:search)) > 0
         OR instr(lower(last_error), lower(:search)) > 0)
  ORDER BY id LIMIT :limit;

-- name: list_queue_running_desc
SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
       lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload
  FROM readpast_jobs
  WHERE id > :after_id AND queue = :queue AND state = :state AND state = 'running'
    AND id < :before_id AND (:scheduled = 0 OR run_at > :now)
    AND (:retrying = 0 OR attempts > 0) AND (:expired = 0 OR lease_expires_at <= :now)
    AND (:search IS NULL OR instr(lower(payload), lower(:search)) > 0
         OR instr(lower(leased_by), lower(:search)) > 0
         OR instr(lower(unique_key), lower(:search)) > 0
         OR instr(lower(last_error), lower(:search)) > 0)
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

-- name: data_version
-- wait_for_work: PRAGMA data_version changes when another connection commits.
PRAGMA data_version;

-- name: has_due_job
-- Is a job due (and the queue not paused), and would the queue's limits let a lease take it
-- (a running job fewer than the running limit, a rate slot out of its window)? A worker
-- throttled by a limit then waits here instead of spinning, and a settling job's commit
-- makes it look again. (Under a running limit the queue's running jobs are about as many as
-- the limit, so counting them all is bounded by it.)
SELECT EXISTS (SELECT 1 FROM readpast_jobs
               WHERE queue = :queue AND state = 'available' AND run_at <= :now)
   AND NOT EXISTS (SELECT 1 FROM readpast_queues q
                   WHERE q.name = :queue
                     AND (q.paused_at IS NOT NULL
                          OR (q.running_limit IS NOT NULL
                              AND (SELECT count(*) FROM readpast_jobs
                                   WHERE queue = :queue AND state = 'running') >= q.running_limit)
                          OR (q.rate_count IS NOT NULL
                              AND NOT EXISTS (SELECT 1 FROM readpast_rate_slots r
                                              WHERE r.queue = :queue
                                                AND r.leased_at <= :now - q.rate_window))));

-- name: add_metric
-- One series of a flush (docs/metrics.md): its stored total grows by the value.
INSERT INTO readpast_metrics (name, queue, label, label_value, value)
  VALUES (:name, :queue, :label, :label_value, :value)
  ON CONFLICT (name, queue, label, label_value) DO UPDATE
  SET value = readpast_metrics.value + excluded.value;

-- name: database_bytes
-- The database's size in its committed state (Queue::storage_health): its pages, in use and
-- free, whether they are in the file yet or still only in the write-ahead log.
SELECT c.page_count * s.page_size FROM pragma_page_count() c, pragma_page_size() s;

-- name: read_metrics
SELECT name, queue, label, label_value, value FROM readpast_metrics
  ORDER BY name, queue, label, label_value;

-- name: upsert_worker
-- A worker's heartbeat. started_at is kept while the same process reports again.
INSERT INTO readpast_workers (name, host, pid, queues, threads, started_at, heartbeat_at)
  VALUES (:name, :host, :pid, :queues, :threads, :now, :now)
  ON CONFLICT (name) DO UPDATE
  SET started_at = CASE WHEN readpast_workers.host = excluded.host
                         AND readpast_workers.pid = excluded.pid
                        THEN readpast_workers.started_at ELSE excluded.started_at END,
      host = excluded.host, pid = excluded.pid, queues = excluded.queues,
      threads = excluded.threads, heartbeat_at = excluded.heartbeat_at;

-- name: forget_stale_workers
DELETE FROM readpast_workers WHERE heartbeat_at < :before;

-- name: delete_worker
DELETE FROM readpast_workers WHERE name = :name;

-- name: list_workers
SELECT name, host, pid, queues, threads, started_at, heartbeat_at FROM readpast_workers
  ORDER BY name;

-- Dependencies (docs/workflows.md). readpast_dependencies holds one row per edge: job_id
-- waits for depends_on. A job enqueued after others is inserted waiting (or, when one of them
-- is already dead or cancelled, cancelled) with waiting_for = how many have not succeeded;
-- each of those is marked notify. resolve_dependencies, in short transactions of its own,
-- then tells the dependents of every finished job marked notify: a success meets the edge and
-- counts waiting_for down (the last one makes the job available), a death or cancellation
-- cancels the waiting dependents (which, marked notify themselves, pass it down the chain).

-- name: dependency_state
SELECT state FROM readpast_jobs WHERE id = :id;

-- name: insert_dependent_job
INSERT INTO readpast_jobs (queue, state, priority, run_at, attempts, max_attempts,
                           enqueued_at, unique_key, payload, waiting_for, delay_us,
                           finished_at, last_error, group_name, notify)
  VALUES (:queue, :state, :priority, :run_at, 0, :max_attempts, :now, :unique_key,
          :payload, :waiting_for, :delay_us, :finished_at, :last_error, :group_name,
          :group_name IS NOT NULL);

-- name: insert_dependency
INSERT INTO readpast_dependencies (depends_on, job_id, met) VALUES (:depends_on, :job_id, :met);

-- name: mark_notify
-- Only a live job: a finished one has nothing more to tell.
UPDATE readpast_jobs SET notify = 1
  WHERE id = :id AND notify = 0
    AND (state = 'available' OR state = 'running' OR state = 'waiting');

-- name: notified_jobs
-- Finished jobs with dependents (or a group) still to tell, along readpast_jobs_notify.
SELECT id, state, group_name FROM readpast_jobs
  WHERE notify = 1 AND (state = 'succeeded' OR state = 'dead' OR state = 'cancelled')
  ORDER BY id LIMIT :limit;

-- name: any_notified
-- A read before resolve_dependencies takes the write lock: mostly there is nothing to tell.
SELECT EXISTS (SELECT 1 FROM readpast_jobs
               WHERE notify = 1
                 AND (state = 'succeeded' OR state = 'dead' OR state = 'cancelled'))
    OR EXISTS (SELECT 1 FROM readpast_groups WHERE release_pending = 1);

-- name: unmet_dependents
-- Of a job, or (:id minus a group's id) of a group's release, up to the job :upto.
SELECT job_id FROM readpast_dependencies
  WHERE depends_on = :id AND met = 0 AND job_id <= :upto
  ORDER BY job_id LIMIT :limit;

-- name: meet_dependency
UPDATE readpast_dependencies SET met = 1
  WHERE depends_on = :depends_on AND job_id = :job_id AND met = 0;

-- name: count_down
-- The last unmet dependency makes a waiting job available, its delay counted from now.
UPDATE readpast_jobs SET
    state = CASE WHEN state = 'waiting' AND waiting_for <= 1 THEN 'available' ELSE state END,
    run_at = CASE WHEN state = 'waiting' AND waiting_for <= 1
                  THEN max(run_at, :now + delay_us) ELSE run_at END,
    waiting_for = max(waiting_for - 1, 0)
  WHERE id = :id;

-- name: waiting_dependents
SELECT d.job_id FROM readpast_dependencies d JOIN readpast_jobs j ON j.id = d.job_id
  WHERE d.depends_on = :id AND d.met = 0 AND j.state = 'waiting'
  ORDER BY d.job_id LIMIT :limit;

-- name: cancel_dependent
UPDATE readpast_jobs SET state = 'cancelled', finished_at = :now, last_error = :error
  WHERE id = :id AND state = 'waiting';

-- name: told
UPDATE readpast_jobs SET notify = 0 WHERE id = :id;

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
    state = CASE WHEN EXISTS (SELECT 1 FROM readpast_dependencies
                              WHERE job_id = :id AND met = 0)
                 THEN 'waiting' ELSE 'available' END
  WHERE id = :id;

-- name: renotify
UPDATE readpast_jobs SET notify = 1
  WHERE id IN (SELECT depends_on FROM readpast_dependencies WHERE job_id = :id AND met = 0)
    AND (state = 'available' OR state = 'running' OR state = 'waiting');

-- name: dependencies_of
-- What the job waits for; state is NULL for a job that no longer exists, and for a group
-- (then the last column names it).
SELECT d.depends_on, j.state, d.met, g.name
  FROM readpast_dependencies d
  LEFT JOIN readpast_jobs j ON j.id = d.depends_on
  LEFT JOIN readpast_groups g ON g.id = -d.depends_on
  WHERE d.job_id = :id ORDER BY d.depends_on < 0, abs(d.depends_on);

-- name: dependents_of
SELECT d.job_id, j.state, d.met, NULL
  FROM readpast_dependencies d LEFT JOIN readpast_jobs j ON j.id = d.job_id
  WHERE d.depends_on = :id ORDER BY d.job_id LIMIT :limit;

-- name: dependent_count
SELECT count(*) FROM readpast_dependencies WHERE depends_on = :id;

-- Groups (docs/workflows.md): readpast_groups counts each group's live members.

-- name: join_group
INSERT INTO readpast_groups (name, live) VALUES (:name, 1)
  ON CONFLICT (name) DO UPDATE SET live = live + 1;

-- name: find_group
SELECT id, live FROM readpast_groups WHERE name = :name;

-- name: leave_group
UPDATE readpast_groups SET live = max(live - 1, 0) WHERE name = :name;

-- name: release_group
-- The group's last member has finished: the jobs waiting for it now are let go.
UPDATE readpast_groups SET
    released_upto = coalesce((SELECT max(job_id) FROM readpast_dependencies
                              WHERE depends_on = -readpast_groups.id AND met = 0), 0),
    release_pending = EXISTS (SELECT 1 FROM readpast_dependencies
                              WHERE depends_on = -readpast_groups.id AND met = 0)
  WHERE name = :name AND live = 0;

-- name: pending_groups
SELECT id, released_upto FROM readpast_groups WHERE release_pending = 1 ORDER BY id LIMIT :limit;

-- name: group_released
UPDATE readpast_groups SET release_pending = 0 WHERE id = :id;

-- name: job_group
SELECT notify, group_name FROM readpast_jobs WHERE id = :id;

-- name: group_counts
SELECT state, count(*) FROM readpast_jobs WHERE group_name = :name GROUP BY state;

-- name: group_row
SELECT live, (SELECT count(*) FROM readpast_dependencies
              WHERE depends_on = -readpast_groups.id AND met = 0)
  FROM readpast_groups WHERE name = :name;

-- name: list_group
SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by,
       lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload
  FROM readpast_jobs WHERE group_name = :name AND id > :after_id ORDER BY id LIMIT :limit;
