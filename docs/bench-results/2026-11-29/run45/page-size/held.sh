#!/usr/bin/env bash
# Run 45: the SQLite snapshot suite with a read transaction held on a checkpointed WAL, new
# files with 4,096-byte pages (SQLite's default, which readpast used before run 45) and
# 2,048 (readpast's default since), in turn:
#   BENCH=<readpast_bench> OUT=<dir> HOLD=90 BASELINE=30 TAIL=10 ROUNDS=2 SIZES="4096 1024 2048" \
#     bash held.sh                                  # held-90/
#   BENCH=<readpast_bench> OUT=<dir> HOLD=600 SIZES="4096 2048" bash held.sh   # held-600/
# In run 45 the runs were made with a build of 3ff822a patched to take the page size from the
# environment (readpast's file only; nothing else differs from --sqlite-page-size).
# ../../run42/summarize_held.py OUT/*.jsonl prints what docs/benchmarks.md reports.
set -euo pipefail
: "${BENCH:?readpast_bench}" "${OUT:?output directory}"
HOLD=${HOLD:-600} BASELINE=${BASELINE:-60} TAIL=${TAIL:-30} ROUNDS=${ROUNDS:-1}
SIZES=${SIZES:-4096 2048}
mkdir -p "$OUT/d"
for round in $(seq 1 "$ROUNDS"); do
  for ps in $SIZES; do
    rm -rf "${OUT:?}/d/"*
    "$BENCH" run --engine sqlite --suites snapshot --systems readpast --sqlite-page-size "$ps" \
      --snapshot-holder read-checkpointed --snapshot-baseline-seconds "$BASELINE" \
      --snapshot-seconds "$HOLD" --snapshot-tail-seconds "$TAIL" --sqlite-dir "$OUT/d" \
      --out "$OUT/ps$ps-r$round.jsonl" > "$OUT/ps$ps-r$round.log" 2>&1
  done
done
rm -rf "$OUT/d"
