#!/usr/bin/env bash
# Run 42: SQLite's enqueue and drain suites (no reader held), before (A) and after (B) the
# WAL-extending VFS, alternating A B B A:
#   A=<readpast_bench before> B=<readpast_bench after> OUT=<dir> bash sqlite_drain_ab.sh
set -euo pipefail
: "${A:?readpast_bench before}" "${B:?readpast_bench after}" "${OUT:?output directory}"
mkdir -p "$OUT"
for label in A1 B1 B2 A2; do
  bin=${label:0:1}
  "${!bin}" run --engine sqlite --suites enqueue,drain --systems readpast \
    --out "$OUT/$label.jsonl" > "$OUT/$label.log" 2>&1
done
