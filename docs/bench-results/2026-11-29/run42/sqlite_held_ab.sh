#!/usr/bin/env bash
# Run 42: the SQLite snapshot suite with a read transaction held on a checkpointed WAL, the
# build before the WAL-extending VFS (A) and after it (B), alternating A B B A, then two runs of
# C when it is given. In run 42, B was the VFS with chunks of up to 32 MiB and C the final one
# (up to 4 MiB). Nothing else running, ~40 GB free on /tmp:
#   A=<readpast_bench before> B=<readpast_bench after> [C=<another>] OUT=<dir> [HOLD=300] \
#     bash sqlite_held_ab.sh
# summarize_held.py OUT/*.jsonl prints what docs/benchmarks.md reports.
set -euo pipefail
: "${A:?readpast_bench before}" "${B:?readpast_bench after}" "${OUT:?output directory}"
HOLD=${HOLD:-300}
mkdir -p "$OUT"
run() {  # label binary
  "$2" run --engine sqlite --suites snapshot --systems readpast \
    --snapshot-holder read-checkpointed --snapshot-baseline-seconds 60 \
    --snapshot-seconds "$HOLD" --snapshot-tail-seconds 30 --out "$OUT/$1.jsonl" \
    > "$OUT/$1.log" 2>&1
}
run A1 "$A"; run B1 "$B"; run B2 "$B"; run A2 "$A"
if [[ -n "${C:-}" ]]; then run C1 "$C"; run C2 "$C"; fi
