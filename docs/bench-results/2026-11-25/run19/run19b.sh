#!/usr/bin/env bash
# Run 19b (docs/benchmarks.md): after 42d8bec (a batch enqueue is one statement on MariaDB),
# the suites it changes: enqueue three times, and the snapshot suite (whose producer enqueues
# batches of 100). Same server settings and sizes as run19.sh; run it the same way.
set -euo pipefail
BENCH=${BENCH:-build-bench/bench/readpast_bench}
OUT=${OUT:-docs/bench-results/2026-11-25/run19}
PORT=${PORT:-23310}
SNAPSHOT_SECONDS=${SNAPSHOT_SECONDS:-120}
DIR=$(mktemp -d /tmp/run19b-mariadb-XXXXXX); chmod 755 "$DIR"
cleanup() { bench/mariadb_server.sh destroy "$DIR/data" >/dev/null 2>&1 || true; rm -rf "$DIR"; }
trap cleanup EXIT
URL=$(bench/mariadb_server.sh start "$DIR/data" "$PORT")
{ echo "run 19b, load before: $(cut -d' ' -f1-3 /proc/loadavg)"; echo "commit: $(git rev-parse --short HEAD)"; } >> "$OUT/run-info.txt"
for r in 1 2 3; do
  echo "[$(date +%T)] round $r: enqueue"
  "$BENCH" run --engine mariadb --mariadb-url "$URL" --suites enqueue --n-single 5000 --n-batch 50000 --enqueue-batches 100,1000 --out "$OUT/mariadb-b-enqueue-$r.jsonl"
done
echo "[$(date +%T)] snapshot: ${SNAPSHOT_SECONDS} s held"
"$BENCH" run --engine mariadb --mariadb-url "$URL" --suites snapshot --snapshot-seconds "$SNAPSHOT_SECONDS" --snapshot-baseline-seconds 30 --out "$OUT/mariadb-b-snapshot.jsonl"
echo "[$(date +%T)] done"
