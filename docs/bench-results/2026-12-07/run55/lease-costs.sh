#!/usr/bin/env bash
# Run 55 (docs/benchmarks.md): what a lease and a completion cost the server, statement by
# statement, with pgbench on a throwaway cluster (one client, prepared statements, 300
# transactions a measurement, the table refilled before each). Prints pgbench's average
# latency per transaction for each form.
#   CLI=<readpast, the command line> bash docs/bench-results/2026-12-07/run55/lease-costs.sh
# Measured: the engine's lease (lease_head_walk, schema 19) of 1, 16, 254 and 508 jobs beside
# the raw ceiling's lease of 254 (bench/raw_subject.cpp's statement); the engine's lease of
# 254 with the triggers of `live` disabled, then without the queue name's CHECK, then without
# jobs_expiry_idx too; a copy of lease_head_walk that returns 10 columns instead of 16; the
# engine's complete_delete of 300 jobs beside a plain DELETE by id.
set -euo pipefail
cd "$(dirname "$0")/../../../.."
: "${CLI:?set CLI to a readpast command line}"
source bench/pg_throwaway.sh r55lease 25455
W=$DIR/sql
mkdir -p "$W"
"$CLI" init --db "$URL" >/dev/null
psql -q "$URL" <<'SQL'
CREATE SCHEMA rawq;
CREATE TABLE rawq.jobs (
  id bigserial PRIMARY KEY, queue text NOT NULL DEFAULT 'default',
  priority int NOT NULL DEFAULT 0, run_at timestamptz NOT NULL DEFAULT now(),
  payload bytea NOT NULL, attempts int NOT NULL DEFAULT 0, locked_by text,
  locked_until timestamptz);
CREATE INDEX jobs_ready ON rawq.jobs (priority, id) WHERE locked_until IS NULL;
-- The tokens a lease takes (the engine sends fresh ones; their values change nothing here).
CREATE TABLE public.tok AS SELECT ARRAY(SELECT gen_random_uuid() FROM generate_series(1, 508)) AS t;
SQL

fill() {  # 160,000 due jobs in both tables, analysed
  psql -q "$URL" -c "TRUNCATE rawq.jobs" -c "DELETE FROM readpast.live" \
    -c "INSERT INTO rawq.jobs (queue, payload) SELECT 'q', '\x0123456789' FROM generate_series(1, 160000)" \
    -c "INSERT INTO readpast.live (queue, payload) SELECT 'q', '\x0123456789' FROM generate_series(1, 160000)" \
    -c "VACUUM ANALYZE rawq.jobs" -c "VACUUM ANALYZE readpast.live" >/dev/null
}
fill_running() {  # 90,000 running jobs, each with its own token md5(id)
  psql -q "$URL" >/dev/null <<'SQL'
DELETE FROM readpast.live;
INSERT INTO readpast.live (queue, payload, state, lease_token, leased_by, lease_expires_at,
                           started_at, attempts)
SELECT 'q', '\x0123456789', 'running', gen_random_uuid(), 'w', now() + interval '1 hour', now(), 1
FROM generate_series(1, 90000);
UPDATE readpast.live SET lease_token = md5(id::text)::uuid;
VACUUM ANALYZE readpast.live;
DROP SEQUENCE IF EXISTS public.b;
CREATE SEQUENCE public.b;
SELECT setval('public.b', (SELECT min(id) / 300 + 2 FROM readpast.live));
SQL
}
measure() {  # NAME FILE [TRANSACTIONS]
  printf '%-44s %s ms\n' "$1" \
    "$(pgbench -n -M prepared -t "${3:-300}" -f "$2" "$URL" 2>&1 |
       sed -n 's/^latency average = \([0-9.]*\) ms/\1/p')"
}

echo 'SELECT 1;' > "$W/select1.sql"
psql -q "$URL" -c "CREATE TABLE public.tick (x int)"
echo 'INSERT INTO public.tick VALUES (1);' > "$W/insert.sql"
fill
measure 'SELECT 1 (a round trip)' "$W/select1.sql"
measure 'INSERT of one row (a round trip and a commit)' "$W/insert.sql"
cat > "$W/lease-empty.sql" <<'SQL'
SELECT count(*) FROM readpast.lease_head_walk('zz', 'w', 300000000, (SELECT t FROM public.tok), 1);
SQL
measure 'engine lease, empty queue' "$W/lease-empty.sql"
for n in 1 16 254 508; do
  cat > "$W/lease$n.sql" <<SQL
SELECT count(*) FROM readpast.lease_head_walk('q', 'w', 300000000, (SELECT t FROM public.tok), $n);
SQL
  fill
  measure "engine lease of $n" "$W/lease$n.sql"
done
cat > "$W/raw.sql" <<'SQL'
WITH c AS (SELECT id FROM rawq.jobs WHERE locked_until IS NULL AND run_at <= now() ORDER BY priority, id LIMIT 254 FOR UPDATE SKIP LOCKED) UPDATE rawq.jobs j SET locked_by = 'w', locked_until = now() + interval '5 minutes', attempts = j.attempts + 1 WHERE j.id = ANY (ARRAY(SELECT c.id FROM c)) RETURNING j.id, j.payload;
SQL
fill
measure 'raw lease of 254 (rows returned as text)' "$W/raw.sql"

# lease_head_walk with 10 columns: what the engine cannot know (queue, state, leased_by,
# lease_expires_at, started_at and finished_at are the caller's or one per lease; the token
# is its place in the pick).
psql -Atq "$URL" -c "SELECT pg_get_functiondef('readpast.lease_head_walk'::regproc)" > "$W/f.sql"
python3 - "$W/f.sql" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read().replace('readpast.lease_head_walk', 'readpast.lease_narrow', 1)
head, _, rest = s.partition('RETURNS TABLE(')
_, _, rest = rest.partition(')\n')
s = (head + 'RETURNS TABLE(id bigint, priority integer, run_at timestamp with time zone, '
     'attempts integer, max_attempts integer, n bigint, enqueued_at timestamp with time zone, '
     'unique_key text, last_error text, payload bytea, walked_pages bigint)\n' + rest)
old = '''  RETURNING j.id, j.queue, j.state, j.priority, j.run_at, j.attempts, j.max_attempts,
            j.lease_token, j.leased_by, j.lease_expires_at, j.enqueued_at, j.started_at,
            j.finished_at, j.unique_key, j.last_error, j.payload'''
assert old in s
s = s.replace(old, '''  RETURNING j.id, j.priority, j.run_at, j.attempts, j.max_attempts,
            picked.n, j.enqueued_at, j.unique_key, j.last_error, j.payload''')
open(p, 'w').write(s)
PY
psql -q "$URL" -f "$W/f.sql"
cat > "$W/narrow.sql" <<'SQL'
SELECT count(*) FROM readpast.lease_narrow('q', 'w', 300000000, (SELECT t FROM public.tok), 254);
SQL
for i in 1 2 3; do
  fill; measure "engine lease of 254, 16 columns ($i)" "$W/lease254.sql"
  fill; measure "engine lease of 254, 10 columns ($i)" "$W/narrow.sql"
done

psql -q "$URL" -c "ALTER TABLE readpast.live DISABLE TRIGGER USER"
fill; measure 'engine lease of 254, triggers off' "$W/lease254.sql"
psql -q "$URL" -c "ALTER TABLE readpast.live DROP CONSTRAINT live_queue_check"
fill; measure '  and no CHECK on the queue name' "$W/lease254.sql"
psql -q "$URL" -c "DROP INDEX readpast.jobs_expiry_idx"
fill; measure '  and no jobs_expiry_idx' "$W/lease254.sql"
psql -q "$URL" -c "ALTER TABLE readpast.live ENABLE TRIGGER USER" \
  -c "CREATE INDEX jobs_expiry_idx ON readpast.live (queue, lease_expires_at) WHERE state = 'running'" \
  -c "ALTER TABLE readpast.live ADD CONSTRAINT live_queue_check CHECK (octet_length(queue) <= 128 AND queue ~ '^[A-Za-z0-9][A-Za-z0-9_.-]*\$')"

# Completions of 300 jobs by id and token: the engine's statement (sql/statements.sql,
# complete_delete), then a DELETE by id alone (the raw ceiling's), 280 batches each. Both
# compute the batch's 300 tokens (md5 of each id, as fill_running set them).
cat > "$W/complete.sql" <<'SQL'
SELECT nextval('public.b') - 1 AS b \gset
DELETE FROM readpast.live j
USING (SELECT * FROM unnest(ARRAY(SELECT generate_series(:b * 300, :b * 300 + 299)),
                            ARRAY(SELECT md5(g::text)::uuid FROM generate_series(:b * 300, :b * 300 + 299) g))
       LIMIT 300) AS r(id, token)
WHERE j.id = ANY (ARRAY[r.id]) AND (j.state || '') = 'running' AND j.lease_token = r.token
  AND j.notify IS NOT TRUE
RETURNING j.id, r.token;
SQL
cat > "$W/delete.sql" <<'SQL'
SELECT nextval('public.b') - 1 AS b \gset
DELETE FROM readpast.live WHERE id = ANY (ARRAY(SELECT generate_series(:b * 300, :b * 300 + 299)))
  -- the tokens are computed as for the engine's statement (once), and not compared
  AND cardinality(ARRAY(SELECT md5(g::text)::uuid FROM generate_series(:b * 300, :b * 300 + 299) g)) = 300;
SQL
for i in 1 2; do
  fill_running; measure "engine complete_delete of 300 ($i)" "$W/complete.sql" 280
  fill_running; measure "DELETE of 300 by id ($i)" "$W/delete.sql" 280
done
