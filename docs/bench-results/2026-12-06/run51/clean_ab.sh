#!/usr/bin/env bash
# Run 51: the SQLite clean path (no reader held), two builds alternated, the order swapped
# every round: enqueue one by one and in batches, and the 8-thread and 4-process drains.
#   A=<readpast_bench before> B=<readpast_bench after> OUT=<dir> [ROUNDS=3] bash clean_ab.sh
#   python3 clean_ab.py OUT    (each metric's median per side and the median paired ratio B/A)
set -euo pipefail
: "${A:?readpast_bench before}" "${B:?readpast_bench after}" "${OUT:?output directory}"
ROUNDS=${ROUNDS:-3}
mkdir -p "$OUT/d"
for round in $(seq 1 "$ROUNDS"); do
  order="A B"; (( round % 2 == 0 )) && order="B A"
  for side in $order; do
    rm -rf "${OUT:?}/d/"*
    "${!side}" run --engine sqlite --systems readpast --suites enqueue,drain \
      --n-single 5000 --n-batch 100000 --drain-shapes 1x8,4x1 --drain-batches 1,100 \
      --sqlite-dir "$OUT/d" --out "$OUT/$side-$round.jsonl" > "$OUT/$side-$round.log" 2>&1
  done
done
rm -rf "$OUT/d"
