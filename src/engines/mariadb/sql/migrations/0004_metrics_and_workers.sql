-- 4: the totals of the counters and histograms that processes record (docs/metrics.md), kept
-- apart from the jobs so that they outlive them; and the worker processes' own heartbeats
-- (the dashboard's workers page).

CREATE TABLE IF NOT EXISTS readpast_metrics (
  name        VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,  -- e.g. readpast_jobs_completed_total
  queue       VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,  -- '' when none
  label       VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,  -- le, kind; '' when none
  label_value VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  value       BIGINT NOT NULL,  -- a count, or a histogram's sum in microseconds
  PRIMARY KEY (name, queue, label, label_value)
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS readpast_workers (
  name         VARBINARY(256) NOT NULL PRIMARY KEY,  -- the worker id its leases carry (leased_by)
  host         VARBINARY(256) NOT NULL,
  pid          BIGINT NOT NULL,
  queues       TEXT CHARACTER SET ascii COLLATE ascii_bin NOT NULL,  -- comma-separated
  threads      INT    NOT NULL,
  started_at   BIGINT NOT NULL,  -- microseconds since the Unix epoch
  heartbeat_at BIGINT NOT NULL
) ENGINE = InnoDB;
