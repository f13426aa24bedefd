-- 3: secondary indexes that a lease does not change (docs/mariadb.md "Indexes"). Every index
-- that holds `state` changes twice for every job that runs: InnoDB delete-marks the old entry
-- and inserts a new one, and until purge removes the old entries the next lease walks them.
-- Version 1 had five such indexes; the drain at leases of 100 ran at 57-74% of its raw-SQL
-- ceiling (one index) in run 19 of docs/benchmarks.md. What is left:
--   readpast_jobs_lease        the hand-out order; also rescue (queue, 'running' prefix: at
--                              most as many rows as jobs running), stats and has_due_job
--   readpast_jobs_finished_at  (finished_state, queue, finished_at): purge, retention,
--                              finished_since, retry_all and lists of finished jobs;
--                              finished_state is NULL while a job is live, so a lease leaves
--                              the entry as it is
--   readpast_jobs_unique       unchanged
--
-- Adding a persistent generated column rebuilds the table (ALGORITHM=COPY): writes to
-- readpast_jobs wait until it is done. Every statement can run again after one failed
-- half-way (IF EXISTS / IF NOT EXISTS).

ALTER TABLE readpast_jobs
  ADD COLUMN IF NOT EXISTS finished_state VARCHAR(9) CHARACTER SET ascii COLLATE ascii_bin AS
    (IF(state = 'succeeded' OR state = 'dead' OR state = 'cancelled', state, NULL)) PERSISTENT;

ALTER TABLE readpast_jobs
  DROP INDEX IF EXISTS readpast_jobs_expiry,
  DROP INDEX IF EXISTS readpast_jobs_finished,
  DROP INDEX IF EXISTS readpast_jobs_queue_state,
  DROP INDEX IF EXISTS readpast_jobs_state,
  ADD INDEX IF NOT EXISTS readpast_jobs_finished_at (finished_state, queue, finished_at);
