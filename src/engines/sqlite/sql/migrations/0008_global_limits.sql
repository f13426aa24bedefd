-- 8: global limits of a queue (docs/workflows.md "Global limits"). NULL: no such limit. The
-- plain lease reads them in the same row as paused_at, so a queue without limits costs it
-- nothing more. A rate of N/DUR keeps N slots, each holding the time of one of the queue's
-- N latest leases (0: none yet): a lease may take as many jobs as there are slots older
-- than DUR, and stamps that many of the oldest with its time.
ALTER TABLE readpast_queues ADD COLUMN running_limit INTEGER CHECK (running_limit >= 1);
ALTER TABLE readpast_queues ADD COLUMN rate_count INTEGER CHECK (rate_count >= 1);
ALTER TABLE readpast_queues ADD COLUMN rate_window INTEGER CHECK (rate_window >= 1);
CREATE TABLE readpast_rate_slots (
  queue     TEXT    NOT NULL,
  slot      INTEGER NOT NULL,                         -- 0 .. rate_count - 1
  leased_at INTEGER NOT NULL,                         -- microseconds; 0: no lease yet
  PRIMARY KEY (queue, slot)
) WITHOUT ROWID;
CREATE INDEX readpast_rate_slots_oldest ON readpast_rate_slots (queue, leased_at);
