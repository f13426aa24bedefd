\set id random(10000, 1000000)
SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by, lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload FROM proto.one WHERE id > 0 AND id < :id ORDER BY id DESC LIMIT 100;
