#!/usr/bin/env bash
# readpast beside its peers — pg-boss, graphile-worker, beanstalkd and the plain-SQL reference —
# on one fresh PostgreSQL, through the peer harness (shared/peers, README.md there).
#
#   bench/peers/run.sh [OUT_DIR]        default OUT_DIR: bench-results/peers-<UTC time>
#
# The harness directory is treated as read-only: it is copied to a temporary directory and
# run there (run-all.sh writes its results and node_modules next to itself), with
# BENCH_EXTRA_DIR pointing at bench/peers/extra.d, whose `readpast` runs
# `readpast_bench harness`. Then, on a fresh cluster again, the drains of pg-boss,
# graphile-worker and readpast at 1, 4, 8 and 16 workers (workers.sh), for the plot.
#
# Environment (defaults in brackets):
#   PEERS_DIR [/work/shared/peers]  the harness
#   PEERS_RUNS [3]                  run-all.sh runs (the summary gives per-run values and the median)
#   PEERS_WORKERS ["1 4 8 16"]      concurrencies of the drain-vs-workers runs ("" skips them)
#   BENCH_BUILD_DIR [build-bench]   and every BENCH_* knob of run-all.sh (BENCH_N, ...)
# Needs, as root: apt-get install postgresql beanstalkd (the harness checks), and the npm
# registry for `npm ci` in the copy's node/ (run-all.sh does it when node_modules is missing).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=${1:-$ROOT/bench-results/peers-$STAMP}
PEERS_DIR=${PEERS_DIR:-/work/shared/peers}
RUNS=${PEERS_RUNS:-3}
WORKERS=${PEERS_WORKERS-"1 4 8 16"}
BUILD=${BENCH_BUILD_DIR:-$ROOT/build-bench}
mkdir -p "$OUT"
say() { echo "[peers $(date -u +%H:%M:%S)] $*" >&2; }

if [[ $(id -u) -eq 0 ]]; then
  for p in postgresql beanstalkd; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || \
      { apt-get update >/dev/null; apt-get install -y --no-install-recommends "$p" >/dev/null; }
  done
fi

say "building readpast_bench (Release) in $BUILD"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DREADPAST_BUILD_BENCH=ON \
  -DREADPAST_BUILD_TESTS=OFF >/dev/null
cmake --build "$BUILD" --target readpast_bench >/dev/null
export READPAST_BENCH=$BUILD/bench/readpast_bench

WORK=$(mktemp -d /tmp/readpast-peers-XXXXXX)
cleanup() { local rc=$?; rm -rf "$WORK"; say "done (rc=$rc): $OUT"; }
trap cleanup EXIT
cp -r "$PEERS_DIR/." "$WORK/"
chmod -R u+w "$WORK"
rm -f "$WORK"/results/*.jsonl "$WORK"/results/*.log
# npm ci takes minutes: its result is kept in the build directory and copied on later runs.
CACHE=$BUILD/peers-node_modules
if [[ ! -x $CACHE/.bin/node ]]; then
  say "npm ci in the harness copy (kept in $CACHE)"
  (cd "$WORK/node" && npm ci --no-audit --no-fund >/dev/null 2>&1)
  rm -rf "$CACHE" && cp -a "$WORK/node/node_modules" "$CACHE"
else
  cp -a "$CACHE" "$WORK/node/node_modules"
fi
export BENCH_EXTRA_DIR=$ROOT/bench/peers/extra.d
{
  echo "harness: $PEERS_DIR (copied), extra: $BENCH_EXTRA_DIR"
  echo "load before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
} >"$OUT/run-info.txt"

for run in $(seq "$RUNS"); do
  say "run-all.sh, run $run of $RUNS"
  (cd "$WORK" && ./run-all.sh "$OUT/run-$run.jsonl")
done
python3 "$WORK/summarize.py" "$OUT"/run-*.jsonl >"$OUT/summary.md"

if [[ -n $WORKERS ]]; then
  say "drains at ${WORKERS} workers"
  WORKERS="$WORKERS" bench/peers/workers.sh "$WORK" "$OUT/workers.jsonl"
fi
say "summary: $OUT/summary.md"
