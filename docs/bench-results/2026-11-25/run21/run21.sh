#!/usr/bin/env bash
# Run 21 (docs/benchmarks.md): MariaDB after migration 3 in its final form (besides the
# hand-out index and the unique one, one secondary index), readpast beside the raw-SQL ceiling
# of the same lifecycle on the same throwaway server (bench/mariadb_server.sh), every suite. Run from the
# repository's root, as root (the server runs as `mysql`), with readpast_bench built first:
#   cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DREADPAST_BUILD_BENCH=ON \
#     -DREADPAST_BUILD_TESTS=OFF && cmake --build build-bench --target readpast_bench
#   ROUNDS=3 bash docs/bench-results/2026-11-25/run21/run21.sh
set -euo pipefail
BENCH=${BENCH:-build-bench/bench/readpast_bench}
OUT=${OUT:-docs/bench-results/2026-11-25/run21}
ROUNDS=${ROUNDS:-3}
PORT=${PORT:-23310}
SNAPSHOT_SECONDS=${SNAPSHOT_SECONDS:-120}
mkdir -p "$OUT"
DIR=$(mktemp -d /tmp/run21-mariadb-XXXXXX); chmod 755 "$DIR"
cleanup() { bench/mariadb_server.sh destroy "$DIR/data" >/dev/null 2>&1 || true; rm -rf "$DIR"; }
trap cleanup EXIT
URL=$(bench/mariadb_server.sh start "$DIR/data" "$PORT")
SQL=(mariadb --no-defaults -h 127.0.0.1 -P "$PORT" -u bench)
{ echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"; echo "commit: $(git rev-parse --short HEAD)"; echo "mariadb: $URL"; } > "$OUT/run-info.txt"
SIZES=(--n-single 5000 --n-batch 50000 --enqueue-batches 100,1000 --drain-shapes 1x1,1x4,1x8,1x16 --drain-batches 1,10,100 --drain-n-small 10000 --drain-n-large 50000)
for r in $(seq 1 "$ROUNDS"); do
  echo "[$(date +%T)] round $r: enqueue, drain"
  "$BENCH" run --engine mariadb --mariadb-url "$URL" --suites enqueue,drain "${SIZES[@]}" --out "$OUT/mariadb-$r.jsonl"
done
echo "[$(date +%T)] latency: 8 idle workers, then 1"
"$BENCH" run --engine mariadb --mariadb-url "$URL" --suites latency --latency-seconds 30 --out "$OUT/mariadb-latency.jsonl"
"$BENCH" run --engine mariadb --mariadb-url "$URL" --suites latency --latency-seconds 30 --latency-workers 1 --out "$OUT/mariadb-latency.jsonl"
echo "[$(date +%T)] depth (commits not flushed, as the PostgreSQL depth suite runs with synchronous_commit off)"
"${SQL[@]}" -e "SET GLOBAL innodb_flush_log_at_trx_commit = 2"
"$BENCH" run --engine mariadb --mariadb-url "$URL" --suites depth --depths 10000,1000000 --depth-cycles 500 --out "$OUT/mariadb-depth.jsonl"
"${SQL[@]}" -e "SET GLOBAL innodb_flush_log_at_trx_commit = 1"
echo "[$(date +%T)] snapshot: ${SNAPSHOT_SECONDS} s held"
"$BENCH" run --engine mariadb --mariadb-url "$URL" --suites snapshot --snapshot-seconds "$SNAPSHOT_SECONDS" --snapshot-baseline-seconds 30 --out "$OUT/mariadb-snapshot.jsonl"
echo "[$(date +%T)] done"
