\set id random(1, 1000000)
SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by, lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload, progress FROM proto.one WHERE id = :id;
