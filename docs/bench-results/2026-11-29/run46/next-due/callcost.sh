#!/usr/bin/env bash
# Run 46 (docs/benchmarks.md): one pgbench client, 10 s each, alternating: the plain next_due
# statement of schema 15 against the call of next_due() that next-due-pinned.patch adds, on a
# queue of 1,000 available jobs, nothing held. From the repository's root:
#   R=<readpast built with next-due-pinned.patch> OUT=<dir> bash docs/bench-results/2026-11-29/run46/next-due/callcost.sh
set -euo pipefail
R=${R:?}; OUT=${OUT:?}; mkdir -p "$OUT"
source bench/pg_throwaway.sh r46c 25451
BASE=${URL%/*}
"$R" --db "$BASE/bench" init >/dev/null
psql -XAtq "$BASE/bench" -c "INSERT INTO readpast.live (queue) SELECT 'q' FROM generate_series(1, 1000)" -c "VACUUM ANALYZE readpast.live"
cat > "$OUT/plain.sql" <<'SQL'
SELECT (extract(epoch FROM min(j.run_at) - statement_timestamp()) * 1000000)::bigint,
       EXISTS (SELECT 1 FROM readpast.queues q
               WHERE q.name = 'q'
                 AND ((q.running_limit IS NOT NULL
                       AND (SELECT count(*) FROM readpast.live r
                            WHERE r.queue = 'q' AND r.state = 'running')
                           >= q.running_limit)
                      OR (q.rate_count IS NOT NULL
                          AND NOT EXISTS (SELECT 1 FROM readpast.rate_slots s
                                          WHERE s.queue = 'q'
                                            AND s.leased_at <= statement_timestamp()
                                              - q.rate_window_us * interval '1 microsecond'))))
FROM readpast.live j
WHERE j.queue = 'q' AND j.state = 'available'
  AND j.run_at >= coalesce(NULL::timestamptz, '-infinity'::timestamptz)
  AND NOT EXISTS (SELECT 1 FROM readpast.queues q
                  WHERE q.name = 'q' AND q.paused_at IS NOT NULL);
SQL
echo "SELECT d.due_in_us, d.throttled FROM readpast.next_due('q', NULL::timestamptz) d;" > "$OUT/function.sql"
for round in 1 2 3; do
  for form in plain function; do
    tps=$(/usr/lib/postgresql/15/bin/pgbench -n -M prepared -c 1 -T 10 -f "$OUT/$form.sql" "$BASE/bench" 2>/dev/null | grep -E '^tps' | awk '{print $3}')
    echo "round $round $form tps $tps" | tee -a "$OUT/callcost.txt"
  done
done
