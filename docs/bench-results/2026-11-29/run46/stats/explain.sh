#!/usr/bin/env bash
# Run 46 (docs/benchmarks.md): main's held backlog regime for 150 s, and EXPLAIN (ANALYZE,
# BUFFERS) of the plain next_due statement schema 15 ran, 20 s into the baseline and 100 s into
# the hold, with the statistics autovacuum gathered meanwhile. From the repository's root:
#   B=<readpast_bench of schema 15> R=<readpast> OUT=<dir> bash docs/bench-results/2026-11-29/run46/stats/explain.sh
set -euo pipefail
B=${B:?}; R=${R:?}; OUT=${OUT:?}; mkdir -p "$OUT"
source bench/pg_throwaway.sh r46e 25450
BASE=${URL%/*}
psql -XAtq "$BASE/postgres" -c "CREATE DATABASE main"
"$R" --db "$BASE/main" init >/dev/null
psql -XAtq "$BASE/main" -c "ALTER DATABASE main SET jit = off"
"$B" run --engine postgres --pg-url "$BASE/main" --readpast-pg-url "$BASE/main" --suites snapshot \
  --systems readpast --snapshot-baseline-seconds 30 --snapshot-seconds 150 \
  --snapshot-tail-seconds 0 --snapshot-producers 2 --out "$OUT/held.jsonl" >"$OUT/held.log" 2>&1 &
explain() {
psql -X "$BASE/main" > "$OUT/explain-$1.txt" 2>&1 <<'SQL'
PREPARE nd(text, timestamptz) AS
SELECT (extract(epoch FROM min(j.run_at) - statement_timestamp()) * 1000000)::bigint,
       EXISTS (SELECT 1 FROM readpast.queues q
               WHERE q.name = $1::text
                 AND ((q.running_limit IS NOT NULL
                       AND (SELECT count(*) FROM readpast.live r
                            WHERE r.queue = $1::text AND r.state = 'running')
                           >= q.running_limit)
                      OR (q.rate_count IS NOT NULL
                          AND NOT EXISTS (SELECT 1 FROM readpast.rate_slots s
                                          WHERE s.queue = $1::text
                                            AND s.leased_at <= statement_timestamp()
                                              - q.rate_window_us * interval '1 microsecond'))))
FROM readpast.live j
WHERE j.queue = $1::text AND j.state = 'available'
  AND j.run_at >= coalesce($2::timestamptz, '-infinity'::timestamptz)
  AND NOT EXISTS (SELECT 1 FROM readpast.queues q
                  WHERE q.name = $1::text AND q.paused_at IS NOT NULL);
SET plan_cache_mode = force_generic_plan;
EXPLAIN (ANALYZE, BUFFERS) EXECUTE nd('bench', now() - interval '1 s');
EXPLAIN (ANALYZE, BUFFERS) EXECUTE nd('bench', now() - interval '1 s');
SET plan_cache_mode = force_custom_plan;
EXPLAIN (ANALYZE, BUFFERS) EXECUTE nd('bench', now() - interval '1 s');
SELECT relname, reltuples, relpages FROM pg_class WHERE relname IN ('live','jobs_due_idx','jobs_lease_idx');
SELECT n_live_tup, n_dead_tup, last_autoanalyze FROM pg_stat_user_tables WHERE relname = 'live';
SQL
}
until grep -qE 'snapshot baseline .* 20\.[0-9]s' "$OUT/held.log"; do sleep 0.3; done; explain baseline
until grep -qE 'snapshot held .* 100\.[0-9]s' "$OUT/held.log"; do sleep 0.3; done; explain held100
wait
