#!/usr/bin/env bash
# Run 28 (docs/benchmarks.md): SQLite's checkpoint attempts paced after one that moved nothing
# (src/engines/sqlite/sqlite_checkpoint_pacer.hpp), before (A) and after (B), alternating.
# Part `hold`: the snapshot suite with a read transaction held 120 s that begins on a fully
# checkpointed WAL (--snapshot-holder read-checkpointed), two rounds, then one round with the
# plain holder. Part `more`: B alone, one more hold of each kind. Part `drain`: the drain
# suite, one round each, for the path without a reader; the 16-thread shapes ran twice more
# (--drain-shapes 1x16, files drain16-*).
# As root, from the repository's root, with nothing else running:
#   A=OLD/readpast_bench B=build-ci/strict/bench/readpast_bench \
#     bash docs/bench-results/2026-11-27/run28/run28.sh hold drain
set -euo pipefail
OUT=${OUT:-docs/bench-results/2026-11-27/run28}
A=${A:?the build before}; B=${B:?the build after}
mkdir -p "$OUT"
snapshot() {  # snapshot SIDE HOLDER FILE
  local bin=${!1}
  "$bin" run --engine sqlite --suites snapshot --systems readpast --snapshot-holder "$2" \
    --snapshot-baseline-seconds 40 --snapshot-seconds 120 --snapshot-tail-seconds 20 \
    --out "$OUT/$3"
}
for part in "$@"; do
  case $part in
    hold)
      for round in 1 2; do
        for side in A B; do snapshot "$side" read-checkpointed "checkpointed-$side$round.jsonl"; done
      done
      for side in A B; do snapshot "$side" read "read-${side}1.jsonl"; done
      ;;
    more)  # B alone, after the full test suite had run: one more hold of each kind
      snapshot B read-checkpointed checkpointed-B3.jsonl
      snapshot B read read-B2.jsonl
      ;;
    drain)
      for side in A B; do
        "${!side}" run --engine sqlite --suites drain --systems readpast --out "$OUT/drain-$side.jsonl"
      done
      ;;
    *) echo "unknown part $part (hold, more, drain)" >&2; exit 2 ;;
  esac
done
