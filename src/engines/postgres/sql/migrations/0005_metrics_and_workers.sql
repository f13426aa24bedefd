-- Migration 5: the totals of the counters and histograms that processes record
-- (docs/metrics.md), kept apart from the jobs so that they outlive them; and the worker
-- processes' own heartbeats (the dashboard's workers page). Written once and never edited
-- after release.
CREATE TABLE :"schema".metrics (
  name        text   NOT NULL,  -- the series' name, e.g. readpast_jobs_completed_total
  queue       text   NOT NULL,  -- '' when the series has no queue label
  label       text   NOT NULL,  -- the series' other label (le, kind); '' when none
  label_value text   NOT NULL,
  value       bigint NOT NULL,  -- a count, or a histogram's sum in microseconds
  PRIMARY KEY (name, queue, label, label_value)
);
CREATE TABLE :"schema".workers (
  name         text        PRIMARY KEY,  -- the worker id its leases carry (leased_by)
  host         text        NOT NULL,
  pid          bigint      NOT NULL,
  queues       text        NOT NULL,     -- comma-separated queue names
  threads      integer     NOT NULL,
  started_at   timestamptz NOT NULL,
  heartbeat_at timestamptz NOT NULL
);
