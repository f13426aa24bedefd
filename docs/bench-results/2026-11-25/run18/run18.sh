#!/usr/bin/env bash
# Run 18 (docs/benchmarks.md): before (33df3ff) and after alternating; PostgreSQL direct,
# with pool_mode=transaction (direct, unprepared), and through PgBouncer in transaction mode;
# SQLite. Run from the repository's root, as root (the servers run as `postgres`), with the
# two builds made first:
#   git worktree add /tmp/bench-before 33df3ff
#   cmake -S /tmp/bench-before -B /tmp/bench-before/build -G Ninja -DCMAKE_BUILD_TYPE=Release \
#     -DREADPAST_BUILD_BENCH=ON -DREADPAST_BUILD_TESTS=OFF && cmake --build /tmp/bench-before/build --target readpast_bench
#   (the same for this checkout into build-bench)
#   ROUNDS=5 bash docs/bench-results/2026-11-25/run18/run18.sh
set -euo pipefail
BEFORE=${BEFORE:-/tmp/bench-before/build/bench/readpast_bench}
AFTER=${AFTER:-build-bench/bench/readpast_bench}
OUT=${OUT:-docs/bench-results/2026-11-25/run18}
ROUNDS=${ROUNDS:-3}
mkdir -p "$OUT"

SIZES=(--systems readpast --suites enqueue,drain --n-single 5000 --n-batch 50000 --enqueue-batches 100 --drain-batches 1,100 --drain-n-small 10000 --drain-n-large 50000)
[[ ${QUICK:-0} == 1 ]] && SIZES+=(--quick)
PG_DIR=$(mktemp -d /tmp/run18-pg-XXXXXX); chmod 755 "$PG_DIR"
PGB_DIR=$(mktemp -d /tmp/run18-pgb-XXXXXX); chown postgres "$PGB_DIR"
cleanup() { [[ -f $PGB_DIR/pid ]] && kill "$(cat "$PGB_DIR/pid")" 2>/dev/null || true; bench/pg_server.sh destroy "$PG_DIR/data" >/dev/null 2>&1 || true; rm -rf "$PG_DIR" "$PGB_DIR"; }
trap cleanup EXIT
URL=$(bench/pg_server.sh start "$PG_DIR/data" 55440)
echo "pg: $URL"
cat > "$PGB_DIR/pgbouncer.ini" <<INI
[databases]
* = host=127.0.0.1 port=55440
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = 56440
unix_socket_dir =
auth_type = trust
auth_file = $PGB_DIR/users.txt
pool_mode = transaction
max_client_conn = 1000
default_pool_size = 20
logfile = $PGB_DIR/pgbouncer.log
pidfile = $PGB_DIR/pid
INI
echo '"postgres" ""' > "$PGB_DIR/users.txt"; chown postgres "$PGB_DIR"/*
runuser -u postgres -- /usr/sbin/pgbouncer -d "$PGB_DIR/pgbouncer.ini"; sleep 1
PGB_URL=$(echo "$URL" | sed 's/:55440\//:56440\//')
echo "pgbouncer: $PGB_URL"
if [[ ${FIRST:-1} == 1 ]]; then { echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"; echo "before: 33df3ff; after: $(git rev-parse --short HEAD)"; echo "pg: $URL"; } > "$OUT/run-info.txt"; fi
for r in $(seq "${FIRST:-1}" "$ROUNDS"); do
  echo "[$(date +%T)] round $r postgres"
  "$BEFORE" run --engine postgres --pg-url "$URL" "${SIZES[@]}" --drain-shapes 1x1,1x8 --out "$OUT/pg-before-$r.jsonl"
  "$AFTER" run --engine postgres --pg-url "$URL" "${SIZES[@]}" --drain-shapes 1x1,1x8 --out "$OUT/pg-after-$r.jsonl"
  "$AFTER" run --engine postgres --pg-url "$URL" --readpast-pg-url "$URL?pool_mode=transaction" "${SIZES[@]}" --drain-shapes 1x1,1x8 --out "$OUT/pg-unprepared-$r.jsonl"
  "$AFTER" run --engine postgres --pg-url "$URL" --readpast-pg-url "$PGB_URL?pool_mode=transaction" "${SIZES[@]}" --drain-shapes 1x1,1x8 --out "$OUT/pg-pgbouncer-$r.jsonl"
done
bench/pg_server.sh stop "$PG_DIR/data"
for r in $(seq "${FIRST:-1}" "$ROUNDS"); do
  echo "[$(date +%T)] round $r sqlite"
  "$BEFORE" run --engine sqlite "${SIZES[@]}" --drain-shapes 1x1,1x4,4x1 --out "$OUT/sqlite-before-$r.jsonl"
  "$AFTER" run --engine sqlite "${SIZES[@]}" --drain-shapes 1x1,1x4,4x1 --out "$OUT/sqlite-after-$r.jsonl"
done
echo "[$(date +%T)] done"
