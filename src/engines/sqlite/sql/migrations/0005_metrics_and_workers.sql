-- 5: the totals of the counters and histograms that processes record (docs/metrics.md), kept
-- apart from the jobs so that they outlive them; and the worker processes' own heartbeats
-- (the dashboard's workers page).

CREATE TABLE readpast_metrics (
  name        TEXT    NOT NULL,  -- the series' name, e.g. readpast_jobs_completed_total
  queue       TEXT    NOT NULL,  -- '' when the series has no queue label
  label       TEXT    NOT NULL,  -- the series' other label (le, kind); '' when none
  label_value TEXT    NOT NULL,
  value       INTEGER NOT NULL,  -- a count, or a histogram's sum in microseconds
  PRIMARY KEY (name, queue, label, label_value)
) WITHOUT ROWID;

CREATE TABLE readpast_workers (
  name         TEXT    PRIMARY KEY,  -- the worker id its leases carry (leased_by)
  host         TEXT    NOT NULL,
  pid          INTEGER NOT NULL,
  queues       TEXT    NOT NULL,     -- comma-separated queue names
  threads      INTEGER NOT NULL,
  started_at   INTEGER NOT NULL,     -- microseconds since the Unix epoch
  heartbeat_at INTEGER NOT NULL
) WITHOUT ROWID;
