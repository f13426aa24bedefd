#!/usr/bin/env bash
# Run 60 (docs/benchmarks.md): how long one rotation of the running ring takes under load. A
# 40-s baseline of the snapshot suite's backlog regime (2 producers, 8 workers, nothing held)
# runs on a fresh database of schema 23 while psql calls rotate_running() eight times, 2 s
# apart, with \timing (the time includes the wait for the segment's lock, at most 50 ms).
#   R=<readpast> B=<readpast_bench> bash docs/bench-results/2026-12-07/run60/rotation-time.sh
set -euo pipefail
source bench/pg_throwaway.sh r60rot "${PORT:-25462}"
BASE=${URL%/*}
psql -XAtq "$BASE/postgres" -c "CREATE DATABASE r"
"${R:?}" --db "$BASE/r" init >/dev/null
"${B:?}" run --engine postgres --pg-url "$BASE/r" --readpast-pg-url "$BASE/r" \
  --suites snapshot --systems readpast --snapshot-baseline-seconds 40 --snapshot-seconds 5 \
  --snapshot-producers 2 --snapshot-holder none --out /dev/null >/dev/null 2>&1 &
bp=$!
sleep 15
for _ in $(seq 8); do
  psql -XAtq "$BASE/r" <<'SQL'
\timing on
SELECT * FROM readpast.rotate_running();
SQL
  sleep 2
done
wait $bp || true
