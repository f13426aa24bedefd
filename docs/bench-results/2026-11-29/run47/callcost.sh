#!/usr/bin/env bash
# Run 47 (docs/benchmarks.md): what asking every lane costs a call, beside reading the queue's
# first job: one pgbench client, 10 s each, alternating, on a queue of 1,000 available jobs of
# one priority (a registered lane), nothing held. From the repository's root:
#   R=<readpast of schema 16> OUT=<dir> bash docs/bench-results/2026-11-29/run47/callcost.sh
set -euo pipefail
R=${R:?}; OUT=${OUT:?}; mkdir -p "$OUT"
source bench/pg_throwaway.sh r47c 25452
BASE=${URL%/*}
"$R" --db "$BASE/bench" init >/dev/null
psql -XAtq "$BASE/bench" \
  -c "INSERT INTO readpast.live (queue) SELECT 'q' FROM generate_series(1, 1000)" \
  -c "INSERT INTO readpast.lanes (queue, priority) VALUES ('q', 100)" \
  -c "VACUUM ANALYZE readpast.live"
cat > "$OUT/first-job.sql" <<'SQL'
SELECT d.run_at FROM readpast.live d WHERE d.queue = 'q' AND d.state = 'available'
ORDER BY d.priority, d.run_at, d.id LIMIT 1;
SQL
echo "SELECT readpast.first_run_at('q', NULL);" > "$OUT/every-lane.sql"
for round in 1 2 3; do
  for form in first-job every-lane; do
    tps=$(/usr/lib/postgresql/15/bin/pgbench -n -M prepared -c 1 -T 10 -f "$OUT/$form.sql" \
      "$BASE/bench" 2>/dev/null | grep -E '^tps' | awk '{print $3}')
    echo "round $round $form tps $tps" | tee -a "$OUT/callcost.txt"
  done
done
