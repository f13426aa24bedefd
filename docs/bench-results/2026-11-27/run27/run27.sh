#!/usr/bin/env bash
# Run 27 (docs/benchmarks.md): SQLite's write transactions on one connection per process, before
# (A) and after (B), alternating: the drain suite, and the snapshot suite with a read
# transaction held 120 s. As root, from the repository's root, with nothing else running:
#   A=OLD/readpast_bench B=build-bench/bench/readpast_bench bash docs/bench-results/2026-11-27/run27/run27.sh
set -euo pipefail
OUT=${OUT:-docs/bench-results/2026-11-27/run27}
A=${A:?the build before}; B=${B:?the build after}
mkdir -p "$OUT"
for round in 1 2; do
  for side in A B; do
    bin=${!side}
    "$bin" run --engine sqlite --suites drain --systems readpast --out "$OUT/drain-$side$round.jsonl"
    "$bin" run --engine sqlite --suites snapshot --systems readpast --snapshot-baseline-seconds 40 \
      --snapshot-seconds 120 --snapshot-tail-seconds 30 --out "$OUT/snapshot-$side$round.jsonl"
  done
done
