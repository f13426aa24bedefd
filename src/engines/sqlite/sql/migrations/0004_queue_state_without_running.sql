-- 4: readpast_jobs_queue_state without running jobs. Both state changes of every job that runs
-- (the lease, then the settling) deleted and re-inserted its entry in this index; now the lease
-- only deletes it and the settling only inserts it, two b-tree writes fewer per job. Running
-- jobs of a queue are few (workers hold them), so list and stats find them through
-- readpast_jobs_expiry instead (statements.sql).

DROP INDEX readpast_jobs_queue_state;
CREATE INDEX readpast_jobs_queue_state ON readpast_jobs (queue, state, id)
  WHERE state <> 'running';
