#!/usr/bin/env bash
# Run 45: SQLite's enqueue and drain suites, no reader held: A = new files with 4,096-byte
# pages, B = 2,048 (readpast's default since run 45), both subjects (readpast and raw SQL),
# A B B A twice:
#   A=<readpast_bench> B=<readpast_bench> OUT=<dir> bash drain_ab.sh
# In run 45, A was a build of 3ff822a (4,096 for both subjects) and B one of the change; with
# builds of the change only: A=B=<readpast_bench> PAGE_A=4096.
# summarize_drain.py OUT prints the paired ratios.
set -euo pipefail
: "${A:?readpast_bench}" "${B:?readpast_bench}" "${OUT:?output directory}"
mkdir -p "$OUT"
for label in A1 B1 B2 A2 A3 B3 B4 A4; do
  side=${label:0:1}
  extra=()
  if [[ $side == A && -n "${PAGE_A:-}" ]]; then extra=(--sqlite-page-size "$PAGE_A"); fi
  "${!side}" run --engine sqlite --suites enqueue,drain --systems readpast "${extra[@]}" \
    --out "$OUT/$label.jsonl" > "$OUT/$label.log" 2>&1
done
