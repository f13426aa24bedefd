DROP SCHEMA IF EXISTS exp CASCADE;
CREATE SCHEMA exp;
-- readpast's jobs columns; the lease state lives in exp.leases instead of on the row.
CREATE TABLE exp.jobs (LIKE readpast.jobs INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING IDENTITY);
ALTER TABLE exp.jobs ADD PRIMARY KEY (id);
CREATE INDEX ON exp.jobs (queue, priority, run_at, id) WHERE state = 'available';
CREATE INDEX ON exp.jobs (queue, run_at) WHERE state = 'available';
CREATE TABLE exp.leases (
  job_id bigint PRIMARY KEY,
  lease_token uuid NOT NULL,
  leased_by text NOT NULL,
  lease_expires_at timestamptz NOT NULL
);
CREATE INDEX ON exp.leases (lease_expires_at);
