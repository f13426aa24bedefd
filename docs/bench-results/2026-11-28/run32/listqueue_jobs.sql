\set id random(1, 990000)
SELECT id, queue, state, priority, run_at, attempts, max_attempts, lease_token, leased_by, lease_expires_at, enqueued_at, started_at, finished_at, unique_key, last_error, payload FROM proto.jobs WHERE queue = 'q1' AND id > :id AND id < 9223372036854775807 ORDER BY id LIMIT 100;
