#!/usr/bin/env bash
# Run 49: the SQLite snapshot suite with a read transaction held 10 minutes on a checkpointed
# WAL (as run 45's page-size/held.sh), two builds alternated A B B A:
#   A=<readpast_bench of fa19256> B=<readpast_bench of the pacer change> OUT=<dir> bash held_ab.sh
#   then a second pair, numbered on: START=4 ORDER="B A" A=... B=... OUT=<dir> bash held_ab.sh
# A: futile checkpoint attempts paused 20x their cost, at most 5 s; B: 50x, at most 60 s
# (src/engines/sqlite/sqlite_checkpoint_pacer.hpp).
# ../../2026-11-29/run42/summarize_held.py OUT/*.jsonl prints what docs/benchmarks.md reports.
set -euo pipefail
: "${A:?readpast_bench A}" "${B:?readpast_bench B}" "${OUT:?output directory}"
HOLD=${HOLD:-600} BASELINE=${BASELINE:-60} TAIL=${TAIL:-30} ORDER=${ORDER:-A B B A}
mkdir -p "$OUT/d"
n=${START:-0}
for which in $ORDER; do
  n=$((n + 1))
  bench=$A
  [ "$which" = B ] && bench=$B
  rm -rf "${OUT:?}/d/"*
  "$bench" run --engine sqlite --suites snapshot --systems readpast \
    --snapshot-holder read-checkpointed --snapshot-baseline-seconds "$BASELINE" \
    --snapshot-seconds "$HOLD" --snapshot-tail-seconds "$TAIL" --sqlite-dir "$OUT/d" \
    --out "$OUT/$n-$which.jsonl" > "$OUT/$n-$which.log" 2>&1
done
rm -rf "$OUT/d"
