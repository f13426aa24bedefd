#!/usr/bin/env bash
# Run 58 (docs/benchmarks.md): run 46's held backlog regime (60-s baseline, a hold of HOLD s,
# 600 by default, then TAIL s, 0 by default; 2 producers) for the sides given, in that order,
# one throwaway cluster, a fresh database per run. A side is a letter whose binaries are given
# as <letter>=<readpast_bench> R<letter>=<readpast>. A side named in DELTA_SIDES gets, after
# `readpast init`, schema 21's triggers with δ = DELTA_MS instead of 100 ms
# (screen/delta-screen.sql.in: the screening of run 58, before migration 22 was written; its
# bench must be built with LeaseFrontier::kDelta = DELTA_MS). From the repository's root,
# nothing else running:
#   A=<bench> RA=<readpast> B=<bench> RB=<readpast> OUT=<dir> HOLD=600 TAIL=60 \
#     bash docs/bench-results/2026-12-07/run58/held-ab.sh A B B A
set -euo pipefail
OUT=${OUT:?}
mkdir -p "$OUT"
source bench/pg_throwaway.sh r58ab "${PORT:-25459}"
BASE=${URL%/*}
n=0
for side in "$@"; do
  n=$((n + 1))
  db=$(echo "${side}$n" | tr 'A-Z' 'a-z')
  bench_var=$side cli_var=R$side
  bench=${!bench_var:?} cli=${!cli_var:?}
  psql -XAtq "$BASE/postgres" -c "CREATE DATABASE $db"
  "$cli" --db "$BASE/$db" init >/dev/null
  psql -XAtq "$BASE/$db" -c "ALTER DATABASE $db SET jit = off"
  if [[ " ${DELTA_SIDES:-} " == *" $side "* ]]; then
    sed "s/DELTA/${DELTA_MS:?}/g" "$(dirname "$0")/screen/delta-screen.sql.in" \
      | psql -XAtq -v ON_ERROR_STOP=1 "$BASE/$db"
  fi
  echo "$(date -u +%T) start $db" >> "$OUT/times.txt"
  "$bench" run --engine postgres --pg-url "$BASE/$db" --readpast-pg-url "$BASE/$db" \
    --suites snapshot --systems readpast \
    --snapshot-baseline-seconds 60 --snapshot-seconds "${HOLD:-600}" --snapshot-tail-seconds "${TAIL:-0}" \
    --snapshot-producers 2 --out "$OUT/held-$db.jsonl" >"$OUT/held-$db.log" 2>&1
  echo "$(date -u +%T) end $db" >> "$OUT/times.txt"
  psql -XAtq "$BASE/$db" -c "SELECT count(*) FROM readpast.lane_marks" > "$OUT/marks-$db.txt"
  python3 docs/bench-results/2026-11-29/run43/summarize.py --held "$OUT/held-$db.jsonl" | tee -a "$OUT/held.txt"
  psql -XAtq "$BASE/postgres" -c "DROP DATABASE $db"
done
cp "$DIR/data.log" "$OUT/server.log"
