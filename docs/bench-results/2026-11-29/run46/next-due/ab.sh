#!/usr/bin/env bash
# Run 46 (docs/benchmarks.md): schema 15 (A) against schema 16, next_due() pinned (B), in run
# 43's held backlog regime (60-s baseline, a hold of HOLD s, 600 by default, then TAIL s, 60 by
# default; 2 producers), one throwaway cluster, a fresh database per run, in the order given
# (run 46's due-now-shared/ runs are this script with HOLD=120 TAIL=0). From the repository's
# root, nothing else running:
#   A=<bench of A> RA=<readpast of A> B=<bench of B> RB=<readpast of B> OUT=<dir> \
#     bash docs/bench-results/2026-11-29/run46/next-due/ab.sh B A
set -euo pipefail
OUT=${OUT:?}
mkdir -p "$OUT"
source bench/pg_throwaway.sh r46ab "${PORT:-25447}"
BASE=${URL%/*}
n=0
for side in "$@"; do
  n=$((n + 1))
  db=$(echo "${side}$n" | tr 'A-Z' 'a-z')
  if [[ $side == A ]]; then bench=$A; cli=$RA; else bench=$B; cli=$RB; fi
  psql -XAtq "$BASE/postgres" -c "CREATE DATABASE $db"
  "$cli" --db "$BASE/$db" init >/dev/null
  psql -XAtq "$BASE/$db" -c "ALTER DATABASE $db SET jit = off"
  echo "$(date -u +%T) start $db" >> "$OUT/times.txt"
  "$bench" run --engine postgres --pg-url "$BASE/$db" --readpast-pg-url "$BASE/$db" \
    --suites snapshot --systems readpast \
    --snapshot-baseline-seconds 60 --snapshot-seconds "${HOLD:-600}" --snapshot-tail-seconds "${TAIL:-60}" \
    --snapshot-producers 2 --out "$OUT/held-$db.jsonl" >"$OUT/held-$db.log" 2>&1
  echo "$(date -u +%T) end $db" >> "$OUT/times.txt"
  python3 docs/bench-results/2026-11-29/run43/summarize.py --held "$OUT/held-$db.jsonl" | tee -a "$OUT/held.txt"
  psql -XAtq "$BASE/postgres" -c "DROP DATABASE $db"
done
grep -E 'automatic vacuum of table|automatic analyze of table' "$DIR/data.log" > "$OUT/autovacuum.txt" || true
cp "$DIR/data.log" "$OUT/server.log"
