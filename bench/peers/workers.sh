#!/usr/bin/env bash
# Drain throughput against the number of workers, for readpast and the PostgreSQL peers, on
# one fresh cluster with the harness' settings: for each concurrency C, the harness' own drain
# procedures with BENCH_CONCURRENCY=C: pg-boss drain_batch100 (node pgboss.js drain),
# graphile-worker drain_perfpreset (node graphile.js drain) and readpast's drains
# (readpast_bench harness drain). The raw-SQL line of the plot comes from readpast_bench's own
# drain suite (bench/run.sh), which measures it at the same worker counts.
#
#   bench/peers/workers.sh HARNESS_COPY OUT.jsonl      (called by bench/peers/run.sh)
# env: WORKERS ["1 4 8 16"], READPAST_BENCH (the binary), BENCH_PG_PORT [55432], BENCH_N.
set -euo pipefail
WORK=$1
OUT=$2
WORKERS=${WORKERS:-"1 4 8 16"}
PORT=${BENCH_PG_PORT:-55432}
PG_DIR=$(mktemp -d /tmp/readpast-peers-pg-XXXXXX)/data
chmod 755 "$(dirname "$PG_DIR")"  # pg.sh runs the server as the postgres user when we are root
NODE=$WORK/node/node_modules/.bin/node
trap '"$WORK/pg.sh" destroy "$PG_DIR" >/dev/null 2>&1 || true; rm -rf "$(dirname "$PG_DIR")"' EXIT
"$WORK/pg.sh" start "$PG_DIR" "$PORT" >&2
export BENCH_PG_URL="postgres://postgres@127.0.0.1:$PORT/bench"
: >"$OUT"
for c in $WORKERS; do
  export BENCH_CONCURRENCY=$c
  echo "[workers] concurrency $c" >&2
  (cd "$WORK/node" && BENCH_ONLY=drain_batch100 "$NODE" pgboss.js drain) | grep '^{' >>"$OUT" || echo "[workers] pg-boss failed at $c" >&2
  (cd "$WORK/node" && BENCH_GW_DRAIN=perfpreset "$NODE" graphile.js drain) | grep '^{' >>"$OUT" || echo "[workers] graphile failed at $c" >&2
  "$READPAST_BENCH" harness drain | grep '^{' >>"$OUT" || echo "[workers] readpast failed at $c" >&2
done
