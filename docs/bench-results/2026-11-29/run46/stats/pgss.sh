#!/usr/bin/env bash
# Run 46 (docs/benchmarks.md): main's held backlog regime (run 43's) with pg_stat_statements
# (track = all, so statements inside the lease functions count too), read over 30 s of the
# baseline and 40 s at 100 and 250 s into the hold: which statements cost more per job once the
# hold has grown live. From the repository's root, nothing else running:
#   B=<readpast_bench> R=<readpast> OUT=<dir> bash docs/bench-results/2026-11-29/run46/stats/pgss.sh
set -euo pipefail
B=${B:?}; R=${R:?}; OUT=${OUT:?}
mkdir -p "$OUT"
source bench/pg_throwaway.sh r46s "${PORT:-25449}"
BASE=${URL%/*}
cat >> "$DIR/data/postgresql.conf" <<CONF
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = all
pg_stat_statements.max = 1000
CONF
bench/pg_server.sh stop "$DIR/data" && bench/pg_server.sh start "$DIR/data" "${PORT:-25449}" >/dev/null
psql -XAtq "$BASE/postgres" -c "CREATE DATABASE main"
"$R" --db "$BASE/main" init >/dev/null
psql -XAtq "$BASE/main" -c "ALTER DATABASE main SET jit = off" -c "CREATE EXTENSION pg_stat_statements"
"$B" run --engine postgres --pg-url "$BASE/main" --readpast-pg-url "$BASE/main" --suites snapshot \
  --systems readpast --snapshot-baseline-seconds 60 --snapshot-seconds 300 \
  --snapshot-tail-seconds 0 --snapshot-producers 2 --out "$OUT/held-main.jsonl" >"$OUT/held-main.log" 2>&1 &
read_stats() {  # NAME: the statements' totals since the last reset, then reset
  psql -XAq "$BASE/main" -F $'\t' -c "COPY (SELECT s.calls, round(s.total_exec_time::numeric, 1), s.rows,
      s.shared_blks_hit + s.shared_blks_read, s.shared_blks_read, s.shared_blks_written, s.wal_bytes, s.toplevel,
      regexp_replace(left(s.query, 140), '\\s+', ' ', 'g')
    FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid AND d.datname = 'main'
    ORDER BY s.total_exec_time DESC LIMIT 40) TO STDOUT" > "$OUT/pgss-$1.tsv"
  psql -XAtq "$BASE/main" -c "SELECT pg_stat_statements_reset()" >/dev/null
}
at() { until grep -qE "$1" "$OUT/held-main.log"; do sleep 0.2; done; echo "$(date -u +%T.%N) $2" >> "$OUT/times.txt"; }
at 'snapshot baseline .* 20\.[0-9]s' reset; psql -XAtq "$BASE/main" -c "SELECT pg_stat_statements_reset()" >/dev/null
at 'snapshot baseline .* 50\.[0-9]s' baseline; read_stats baseline
at 'snapshot held .* 100\.[0-9]s' reset; psql -XAtq "$BASE/main" -c "SELECT pg_stat_statements_reset()" >/dev/null
at 'snapshot held .* 140\.[0-9]s' held100; read_stats held100
at 'snapshot held .* 250\.[0-9]s' reset; psql -XAtq "$BASE/main" -c "SELECT pg_stat_statements_reset()" >/dev/null
at 'snapshot held .* 290\.[0-9]s' held250; read_stats held250
wait
