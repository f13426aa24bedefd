#!/usr/bin/env bash
# Run 23 (docs/benchmarks.md): the metrics a Queue records (every leased job counted and timed
# in memory, flushed every 5 s by the worker's reporting thread), the worker's heartbeat
# into readpast_workers and the cancel subscription, before and after, on readpast::Worker's
# drain (the peer harness' drain_worker) against PostgreSQL, alternating, three rounds each.
# BEFORE is readpast_bench built at 15bd344 (before the metrics), AFTER at the commit that
# added this script. BEFORE cannot open a database that AFTER has upgraded (schema 6 against
# 4), so every run gets a fresh server. As root, from the repository's root:
#   BEFORE=/tmp/bench-before AFTER=build-bench/bench/readpast_bench \
#     bash docs/bench-results/2026-11-25/run23/run23.sh
set -euo pipefail
OUT=${OUT:-docs/bench-results/2026-11-25/run23}
N=${N:-100000}
DIR=$(mktemp -d /tmp/run23-XXXXXX); chmod 755 "$DIR"
cleanup() { bench/pg_server.sh destroy "$DIR/data" >/dev/null 2>&1 || true; rm -rf "$DIR"; }
trap cleanup EXIT
for r in 1 2 3; do
  for v in before after; do
    bin=$BEFORE; [ "$v" = after ] && bin=$AFTER
    echo "[$(date +%T)] round $r $v"
    URL=$(bench/pg_server.sh start "$DIR/data" "${PORT:-25433}")
    BENCH_PG_URL="$URL" BENCH_N="$N" "$bin" harness drain > "$OUT/$v-$r.jsonl"
    bench/pg_server.sh destroy "$DIR/data" >/dev/null
  done
done
