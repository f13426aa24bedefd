#!/usr/bin/env bash
# Run 60 (docs/benchmarks.md): what the settles' probe of every segment costs. 30,000 running
# jobs in the three segments of `running` (10,000 each); pgbench times a read of 100 ids that
# are all in one segment, as a batch leased together is, through all three segments' primary
# keys ("all", what the settles do) and pruned to that segment ("one"), 10 s each, twice.
#   R=<readpast of schema 23> bash docs/bench-results/2026-12-07/run60/probe-segments.sh
set -euo pipefail
source bench/pg_throwaway.sh r60probe "${PORT:-25461}"
BASE=${URL%/*}
psql -XAtq "$BASE/postgres" -c "CREATE DATABASE p"
"${R:?}" --db "$BASE/p" init >/dev/null
psql -XAtq "$BASE/p" <<'SQL'
INSERT INTO readpast.running (id, queue, lease_token, lease_expires_at, started_at, attempts, seg)
SELECT i, 'q', gen_random_uuid(), now() + interval '1 hour', now(), 1, (i / 10000) % 3
FROM generate_series(1, 30000) i;
VACUUM ANALYZE readpast.running;
SQL
ids="ARRAY(SELECT generate_series(10000, 10099)::bigint)"
echo "SELECT count(*) FROM readpast.running j WHERE j.id = ANY ($ids);" >"$DIR/all.sql"
echo "SELECT count(*) FROM readpast.running j WHERE j.id = ANY ($ids)
  AND j.seg = ANY ('{1}'::smallint[]);" >"$DIR/one.sql"
for f in all one all one; do
  printf '%s: ' "$f"
  pgbench -n -M prepared -T 10 -c 1 -f "$DIR/$f.sql" "$BASE/p" 2>/dev/null |
    grep -E 'latency average' | tr -d '\n'
  echo
done
