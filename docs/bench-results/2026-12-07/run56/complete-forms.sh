#!/usr/bin/env bash
# Run 56 (docs/benchmarks.md): a completion of BATCH jobs (300 unless told) by id and token,
# form by form, with pgbench on a throwaway cluster (one client, prepared statements, 280
# batches a measurement on 90,000 running jobs, refilled before each), as run 55's
# lease-costs.sh measured it:
#   - the statements of schema 19 (sql/statements.sql, complete_delete and complete: one
#     probe of live_pkey per id, `j.id = ANY (ARRAY[r.id])`), the jobs deleted or moved to done;
#   - the same two in a function that reads the batch's ids in one scan and matches the tokens
#     by hash: schema 20's complete_delete() for the deleted jobs, and for the kept ones the
#     form tried before landing (complete_kept() below, created here on the throwaway cluster);
#   - a DELETE by id alone (the raw ceiling's), tokens computed and not compared.
#   CLI=<readpast, the command line> [BATCH=300] bash complete-forms.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../../../.."
: "${CLI:?set CLI to a readpast command line}"
ROUNDS=${1:-3} BATCH=${BATCH:-300}
source bench/pg_throwaway.sh r56forms 25456
W=$DIR/sql
mkdir -p "$W"
"$CLI" init --db "$URL" >/dev/null
psql -q "$URL" <<'SQL'
-- The kept form tried in run 56 and not landed: complete_delete() of schema 20 with the move to
-- done of the statement `complete`.
CREATE FUNCTION readpast.complete_kept(p_ids bigint[], p_tokens uuid[])
RETURNS TABLE (id bigint, token uuid)
LANGUAGE plpgsql
SET enable_nestloop = off SET enable_mergejoin = off SET enable_seqscan = off
SET enable_bitmapscan = off SET plan_cache_mode = force_generic_plan SET jit = off
AS $fn$
#variable_conflict use_column
BEGIN
RETURN QUERY
WITH ended AS (
  DELETE FROM readpast.live j
  USING unnest(p_ids, p_tokens) AS r(id, token)
  WHERE j.id = ANY (p_ids) AND j.id = r.id AND j.lease_token = r.token
    AND (j.state || '') = 'running'
  RETURNING j.*, r.token AS settled_token
), kept AS (
  INSERT INTO readpast.done
  SELECT e.id, e.queue, 'succeeded', e.priority, e.run_at, e.attempts, e.max_attempts,
         e.lease_token, e.leased_by, NULL, e.enqueued_at, e.started_at,
         statement_timestamp(), e.unique_key, e.last_error, e.payload, e.progress,
         e.waiting_for, e.notify, e.delay_us, e.group_name
  FROM ended e
)
SELECT e.id, e.settled_token FROM ended e;
END
$fn$;
SQL
fill_running() {  # 90,000 running jobs, each with its own token md5(id)
  psql -q -v batch="$BATCH" "$URL" >/dev/null <<'SQL'
DELETE FROM readpast.live;
INSERT INTO readpast.live (queue, payload, state, lease_token, leased_by, lease_expires_at,
                           started_at, attempts)
SELECT 'q', '\x0123456789', 'running', gen_random_uuid(), 'w', now() + interval '1 hour', now(), 1
FROM generate_series(1, 90000);
UPDATE readpast.live SET lease_token = md5(id::text)::uuid;
VACUUM ANALYZE readpast.live;
DROP SEQUENCE IF EXISTS public.b;
CREATE SEQUENCE public.b;
SELECT setval('public.b', (SELECT min(id) / :batch + 2 FROM readpast.live));
SQL
}
measure() {  # NAME FILE
  printf '%-44s %s ms\n' "$1" \
    "$(pgbench -n -M prepared -t 280 -f "$2" "$URL" 2>&1 |
       sed -n 's/^latency average = \([0-9.]*\) ms/\1/p')"
}
batch='SELECT nextval('"'"'public.b'"'"') - 1 AS b \gset'
last=$(( BATCH - 1 ))
ids="ARRAY(SELECT generate_series(:b * $BATCH, :b * $BATCH + $last))"
tokens="ARRAY(SELECT md5(g::text)::uuid FROM generate_series(:b * $BATCH, :b * $BATCH + $last) g)"
cat > "$W/statement.sql" <<SQL
$batch
DELETE FROM readpast.live j
USING (SELECT * FROM unnest($ids, $tokens) LIMIT $BATCH) AS r(id, token)
WHERE j.id = ANY (ARRAY[r.id]) AND (j.state || '') = 'running' AND j.lease_token = r.token
  AND j.notify IS NOT TRUE
RETURNING j.id, r.token;
SQL
cat > "$W/statement-kept.sql" <<SQL
$batch
WITH ended AS (
  DELETE FROM readpast.live j
  USING (SELECT * FROM unnest($ids, $tokens) LIMIT $BATCH) AS r(id, token)
  WHERE j.id = ANY (ARRAY[r.id]) AND (j.state || '') = 'running' AND j.lease_token = r.token
  RETURNING j.*, r.token AS settled_token
), kept AS (
  INSERT INTO readpast.done
  SELECT e.id, e.queue, 'succeeded', e.priority, e.run_at, e.attempts, e.max_attempts,
         e.lease_token, e.leased_by, NULL, e.enqueued_at, e.started_at,
         statement_timestamp(), e.unique_key, e.last_error, e.payload, e.progress,
         e.waiting_for, e.notify, e.delay_us, e.group_name
  FROM ended e
)
SELECT e.id, e.settled_token FROM ended e;
SQL
cat > "$W/function.sql" <<SQL
$batch
SELECT * FROM readpast.complete_delete($ids, $tokens);
SQL
cat > "$W/function-kept.sql" <<SQL
$batch
SELECT * FROM readpast.complete_kept($ids, $tokens);
SQL
cat > "$W/delete.sql" <<SQL
$batch
DELETE FROM readpast.live WHERE id = ANY ($ids) AND cardinality($tokens) = $BATCH;
SQL
has_function=$(psql -Atq "$URL" -c "SELECT to_regprocedure('readpast.complete_delete(bigint[],uuid[])') IS NOT NULL")
for i in $(seq "$ROUNDS"); do
  fill_running; measure "deleted: statement of schema 19 ($i)" "$W/statement.sql"
  if [ "$has_function" = t ]; then
    fill_running; measure "deleted: complete_delete() of schema 20 ($i)" "$W/function.sql"
  fi
  fill_running; measure "DELETE by id ($i)" "$W/delete.sql"
  psql -q "$URL" -c "TRUNCATE readpast.done"
  fill_running; measure "kept: statement of schema 19 ($i)" "$W/statement-kept.sql"
  psql -q "$URL" -c "TRUNCATE readpast.done"
  fill_running; measure "kept: complete_kept(), tried ($i)" "$W/function-kept.sql"
done
