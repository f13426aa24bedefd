#!/usr/bin/env bash
# Run 24 (docs/benchmarks.md): the plain path before and after issue 21's workflows
# (dependencies and groups, global limits, progress, error history, unique windows): the peer
# harness' enqueue, drain and latency parts through readpast_bench against PostgreSQL,
# alternating, three rounds each. BEFORE is readpast_bench built at 807dda7 (run 23's, the
# hot path as on main before issue 21), AFTER at the commit that added this script. BEFORE
# cannot open a database that AFTER has upgraded, so every run gets a fresh server. As root,
# from the repository's root, with nothing else running:
#   BEFORE=/tmp/bench-before AFTER=build-bench/bench/readpast_bench \
#     bash docs/bench-results/2026-11-26/run24/run24.sh
set -euo pipefail
OUT=${OUT:-docs/bench-results/2026-11-26/run24}
N=${N:-50000}
DIR=$(mktemp -d /tmp/run24-XXXXXX); chmod 755 "$DIR"
cleanup() { bench/pg_server.sh destroy "$DIR/data" >/dev/null 2>&1 || true; rm -rf "$DIR"; }
trap cleanup EXIT
for r in 1 2 3; do
  for v in before after; do
    bin=$BEFORE; [ "$v" = after ] && bin=$AFTER
    echo "[$(date +%T)] round $r $v"
    URL=$(bench/pg_server.sh start "$DIR/data" "${PORT:-25434}")
    BENCH_PG_URL="$URL" BENCH_N="$N" "$bin" harness > "$OUT/$v-$r.jsonl"
    bench/pg_server.sh destroy "$DIR/data" >/dev/null
  done
done
