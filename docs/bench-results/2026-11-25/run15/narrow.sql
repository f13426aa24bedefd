WITH c AS (SELECT j.id FROM exp.jobs j WHERE j.queue = 'bench' AND j.state = 'available' AND j.run_at <= statement_timestamp() AND (SELECT min(d.run_at) FROM exp.jobs d WHERE d.queue = 'bench' AND d.state = 'available') <= statement_timestamp() AND NOT EXISTS (SELECT 1 FROM readpast.queues q WHERE q.name = 'bench' AND q.paused_at IS NOT NULL) AND NOT EXISTS (SELECT 1 FROM exp.leases l WHERE l.job_id = j.id) ORDER BY j.priority, j.run_at, j.id LIMIT 100 FOR UPDATE SKIP LOCKED), ins AS (INSERT INTO exp.leases (job_id, lease_token, leased_by, lease_expires_at) SELECT c.id, gen_random_uuid(), 'w', statement_timestamp() + interval '5 minutes' FROM c ON CONFLICT (job_id) DO NOTHING RETURNING job_id, lease_token, leased_by, lease_expires_at) SELECT string_agg(j.id::text, ',') AS ids, count(j.payload) AS n FROM exp.jobs j JOIN ins ON j.id = ins.job_id \gset
BEGIN;
DELETE FROM exp.leases WHERE job_id IN (:ids);
DELETE FROM exp.jobs WHERE id IN (:ids);
COMMIT;
