#!/usr/bin/env bash
# The whole benchmark of docs/benchmarks.md, from nothing: installs what it needs (as root,
# from Debian's packages), builds readpast_bench (Release), starts a throwaway PostgreSQL 15
# with the peer harness' settings (pg_server.sh), runs every suite on PostgreSQL, on SQLite
# and on a throwaway MariaDB with comparable settings (mariadb_server.sh), stops the servers,
# and writes JSON lines, a summary and the plots.
#
#   bench/run.sh [OUT_DIR]          default OUT_DIR: bench-results/<UTC time>
#
# Environment (defaults in brackets):
#   BENCH_REPEAT [3]              runs of the enqueue, drain and latency suites (the summary
#                                 reports their median)
#   BENCH_DEPTHS [10000,1000000]  queue depths for the lease-cost suite (add 10000000 for 10M;
#                                 that prefill takes several minutes and ~4 GB of disk)
#   BENCH_SNAPSHOT_SECONDS [600]  how long the snapshot suite holds its transaction open
#   BENCH_SNAPSHOT_BASELINE [60]  its baseline phase
#   BENCH_SQLITE_SNAPSHOT_SECONDS [120]  the same on SQLite (a read transaction that keeps
#                                 checkpoints from completing)
#   BENCH_ENGINES ["postgres sqlite mariadb"]
#   BENCH_QUICK [0]               1: tiny sizes (a smoke run of this script)
#   BENCH_PG_PORT [55434]  BENCH_MARIADB_PORT [23306]  BENCH_BUILD_DIR [build-bench]
#
# Takes about three hours with the defaults (the PostgreSQL and MariaDB snapshot suites alone
# are 2 x 11 minutes each). Check `uptime` first: the numbers are only as quiet as the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=${1:-$ROOT/bench-results/$STAMP}
REPEAT=${BENCH_REPEAT:-3}
DEPTHS=${BENCH_DEPTHS:-10000,1000000}
SNAPSHOT_SECONDS=${BENCH_SNAPSHOT_SECONDS:-600}
SNAPSHOT_BASELINE=${BENCH_SNAPSHOT_BASELINE:-60}
SQLITE_SNAPSHOT_SECONDS=${BENCH_SQLITE_SNAPSHOT_SECONDS:-120}
ENGINES=${BENCH_ENGINES:-"postgres sqlite mariadb"}
QUICK=${BENCH_QUICK:-0}
PORT=${BENCH_PG_PORT:-55434}
# Below the kernel's ephemeral ports (32768-60999): a client socket or one in TIME-WAIT on
# the port makes mariadbd fail to bind.
MARIADB_PORT=${BENCH_MARIADB_PORT:-23306}
BUILD=${BENCH_BUILD_DIR:-$ROOT/build-bench}
mkdir -p "$OUT"
say() { echo "[bench $(date -u +%H:%M:%S)] $*" >&2; }

# ---- prerequisites ----------------------------------------------------------------------
if [[ $(id -u) -eq 0 ]]; then
  bash scripts/install-deps.sh >/dev/null
  command -v gnuplot >/dev/null || { apt-get update >/dev/null; apt-get install -y --no-install-recommends gnuplot-nox >/dev/null; }
fi
command -v gnuplot >/dev/null || say "gnuplot missing (apt-get install gnuplot-nox): no plots"

# ---- build ------------------------------------------------------------------------------
say "building readpast_bench (Release) in $BUILD"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DREADPAST_BUILD_BENCH=ON \
  -DREADPAST_BUILD_TESTS=OFF >/dev/null
cmake --build "$BUILD" --target readpast_bench >/dev/null
BENCH=$BUILD/bench/readpast_bench

# ---- PostgreSQL -------------------------------------------------------------------------
PG_DIR=$(mktemp -d /tmp/readpast-bench-pg-XXXXXX)
chmod 755 "$PG_DIR"  # the servers run as the postgres and mysql users when we are root
cleanup() {
  local rc=$?
  bench/pg_server.sh destroy "$PG_DIR/data" >/dev/null 2>&1 || true
  bench/mariadb_server.sh destroy "$PG_DIR/mariadb" >/dev/null 2>&1 || true
  rm -rf "$PG_DIR"
  say "done (rc=$rc): $OUT"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

common=()
if [[ $QUICK == 1 ]]; then common+=(--quick); REPEAT=1; fi
{
  echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo "load before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "command: bench/run.sh $* (BENCH_REPEAT=$REPEAT BENCH_DEPTHS=$DEPTHS BENCH_SNAPSHOT_SECONDS=$SNAPSHOT_SECONDS)"
} >"$OUT/run-info.txt"

for engine in $ENGINES; do
  target=()
  if [[ $engine == postgres ]]; then
    say "fresh PostgreSQL cluster in $PG_DIR/data on port $PORT"
    URL=$(bench/pg_server.sh start "$PG_DIR/data" "$PORT")
    target=(--engine postgres --pg-url "$URL")
  elif [[ $engine == mariadb ]]; then
    say "fresh MariaDB server in $PG_DIR/mariadb on port $MARIADB_PORT"
    MARIADB_URL=$(bench/mariadb_server.sh start "$PG_DIR/mariadb" "$MARIADB_PORT")
    target=(--engine mariadb --mariadb-url "$MARIADB_URL")
  else
    target=(--engine sqlite --sqlite-dir "$PG_DIR/sqlite")
  fi
  for run in $(seq "$REPEAT"); do
    say "$engine: enqueue, drain, latency (run $run of $REPEAT)"
    "$BENCH" run "${target[@]}" "${common[@]}" --suites enqueue,drain,latency \
      --out "$OUT/$engine-run$run.jsonl"
    # The same latency with one worker thread: no herd of idle threads woken together.
    "$BENCH" run "${target[@]}" "${common[@]}" --suites latency --latency-workers 1 \
      --out "$OUT/$engine-run$run.jsonl"
  done
  # Lease cost vs depth without the commit's disk flush, which does not depend on the depth
  # and on this kind of VM varies between 0.03 and 10 ms with the neighbours' I/O.
  say "$engine: lease cost vs queue depth ($DEPTHS), commits not flushed"
  if [[ $engine == postgres ]]; then
    PGOPTIONS="-c synchronous_commit=off" "$BENCH" run "${target[@]}" "${common[@]}" \
      --suites depth --depths "$DEPTHS" --out "$OUT/$engine-depth.jsonl"
  elif [[ $engine == mariadb ]]; then
    # MariaDB has no per-session synchronous_commit: the server's setting, for this suite
    # only (2: the redo log written at every commit, flushed about once a second).
    mariadb_set() {
      mariadb --no-defaults -h 127.0.0.1 -P "$MARIADB_PORT" -u bench -e "SET GLOBAL $1"
    }
    mariadb_set "innodb_flush_log_at_trx_commit = 2"
    "$BENCH" run "${target[@]}" "${common[@]}" --suites depth --depths "$DEPTHS" \
      --out "$OUT/$engine-depth.jsonl"
    mariadb_set "innodb_flush_log_at_trx_commit = 1"
  else
    "$BENCH" run "${target[@]}" "${common[@]}" --suites depth --depths "$DEPTHS" \
      --sqlite-synchronous normal --out "$OUT/$engine-depth.jsonl"
  fi
  if [[ $engine == sqlite ]]; then
    # The same drains with synchronous=normal: what the CPU allows when commits are not
    # each flushed to disk (the disk's flush latency dominates synchronous=full).
    say "sqlite: drain with synchronous=normal"
    "$BENCH" run "${target[@]}" "${common[@]}" --suites drain --sqlite-synchronous normal \
      --out "$OUT/sqlite-normal.jsonl"
  fi
  held=$SNAPSHOT_SECONDS
  [[ $engine == sqlite ]] && held=$SQLITE_SNAPSHOT_SECONDS
  say "$engine: throughput while a snapshot is held (${held}s)"
  "$BENCH" run "${target[@]}" "${common[@]}" --suites snapshot \
    --snapshot-seconds "$held" --snapshot-baseline-seconds "$SNAPSHOT_BASELINE" \
    --out "$OUT/$engine-snapshot.jsonl"
  if [[ $engine == postgres ]]; then bench/pg_server.sh stop "$PG_DIR/data"; fi
  if [[ $engine == mariadb ]]; then bench/mariadb_server.sh stop "$PG_DIR/mariadb"; fi
done

PEERS=${BENCH_PEERS_DIR:-}  # a bench/peers/run.sh result directory, for the plot and targets
python3 bench/summarize.py "$OUT"/*.jsonl ${PEERS:+--peers "$PEERS"} >"$OUT/summary.md"
if command -v gnuplot >/dev/null; then bench/plot.sh "$OUT" "$PEERS" || say "plotting failed"; fi
say "summary: $OUT/summary.md"
