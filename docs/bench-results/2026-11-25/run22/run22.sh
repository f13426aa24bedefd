#!/usr/bin/env bash
# Run 22 (docs/benchmarks.md): the worker's lease check (096d3d9: every 0.4 s between
# extends, a read of whether running jobs' leases still hold) before and after, on
# readpast::Worker's drain (the peer harness' drain_worker) against PostgreSQL, alternating,
# three rounds each. BEFORE is readpast_bench built with kLeaseCheck in src/worker/runtime.cpp
# set to 400000 ms (the check never comes; the heartbeat extends as before 096d3d9), AFTER as
# committed. As root, from the repository's root:
#   BEFORE=/tmp/bench-before AFTER=build-bench/bench/readpast_bench \
#     bash docs/bench-results/2026-11-25/run22/run22.sh
set -euo pipefail
OUT=${OUT:-docs/bench-results/2026-11-25/run22}
N=${N:-100000}
DIR=$(mktemp -d /tmp/run22-XXXXXX); chmod 755 "$DIR"
cleanup() { bench/pg_server.sh destroy "$DIR/data" >/dev/null 2>&1 || true; rm -rf "$DIR"; }
trap cleanup EXIT
URL=$(bench/pg_server.sh start "$DIR/data" "${PORT:-25433}")
for r in 1 2 3; do
  for v in before after; do
    bin=$BEFORE; [ "$v" = after ] && bin=$AFTER
    echo "[$(date +%T)] round $r $v"
    BENCH_PG_URL="$URL" BENCH_N="$N" "$bin" harness drain > "$OUT/$v-$r.jsonl"
  done
done
