#!/usr/bin/env bash
# Run 56 (docs/benchmarks.md): run 46's held backlog regime (60-s baseline, a hold of HOLD s,
# 600 by default, then TAIL s, 60 by default; 2 producers) on one throwaway cluster, a fresh
# database per run, with `live`'s fillfactor set to each value given (schema 20 sets 80): a
# leased job's new row version fits on its page when the page kept room for it, and otherwise
# goes to a page at the table's end, which under a held snapshot is always a new one.
#   B=<readpast_bench> RB=<readpast> OUT=<dir> bash held-fillfactor.sh 80 50
set -euo pipefail
cd "$(dirname "$0")/../../../.."
: "${B:?readpast_bench}" "${RB:?readpast}" "${OUT:?output directory}"
mkdir -p "$OUT"
source bench/pg_throwaway.sh r56ff "${PORT:-25460}"
BASE=${URL%/*}
for ff in "$@"; do
  db=ff$ff
  psql -XAtq "$BASE/postgres" -c "CREATE DATABASE $db"
  "$RB" --db "$BASE/$db" init >/dev/null
  psql -XAtq "$BASE/$db" -c "ALTER DATABASE $db SET jit = off" \
    -c "ALTER TABLE readpast.live SET (fillfactor = $ff)"
  echo "$(date -u +%T) start $db" >> "$OUT/times.txt"
  "$B" run --engine postgres --pg-url "$BASE/$db" --readpast-pg-url "$BASE/$db" \
    --suites snapshot --systems readpast \
    --snapshot-baseline-seconds 60 --snapshot-seconds "${HOLD:-600}" --snapshot-tail-seconds "${TAIL:-60}" \
    --snapshot-producers 2 --out "$OUT/held-$db.jsonl" >"$OUT/held-$db.log" 2>&1
  echo "$(date -u +%T) end $db" >> "$OUT/times.txt"
  psql -XAtq "$BASE/$db" -c "SELECT 'live ' || pg_size_pretty(pg_table_size('readpast.live'))" >> "$OUT/times.txt"
  python3 docs/bench-results/2026-11-29/run43/summarize.py --held "$OUT/held-$db.jsonl" | tee -a "$OUT/held.txt"
  psql -XAtq "$BASE/postgres" -c "DROP DATABASE $db"
done
