#!/usr/bin/env bash
# Run 26 (docs/benchmarks.md): the gate of docs/postgres-storage.md again, on the ring
# prototype (bench/raw_ring_subject.cpp) with a lease whose plans no estimate can turn into a
# walk of a segment (a TID-scan DELETE, no bitmap scans, the generic plan kept). One fresh
# PostgreSQL 15 cluster (bench/pg_server.sh), 60 s baseline, a REPEATABLE READ transaction
# held 600 s, 60 s after it; 8 worker threads leasing 100. As root, from the repository's
# root, with nothing else running; B is an optimised build of readpast_bench:
#   B=build-bench/bench/readpast_bench bash docs/bench-results/2026-11-27/run26/run26.sh
# About 30 minutes.
set -euo pipefail
OUT=${OUT:-docs/bench-results/2026-11-27/run26}
B=${B:?an optimised readpast_bench}
DIR=$(mktemp -d /tmp/run26-XXXXXX); chmod 755 "$DIR"
cleanup() { bench/pg_server.sh destroy "$DIR/data" >/dev/null 2>&1 || true; rm -rf "$DIR"; }
trap cleanup EXIT
URL=$(bench/pg_server.sh start "$DIR/data" "${PORT:-25442}")
hold=(--snapshot-baseline-seconds 60 --snapshot-seconds 600 --snapshot-tail-seconds 60)
# 1. The fixed load: 6,000 jobs/s offered.
"$B" run --engine postgres --pg-url "$URL" --suites snapshot --systems ring \
  --snapshot-rate 6000 "${hold[@]}" --out "$OUT/pg-ring-6000.jsonl"
# 2. The producer keeping 20,000 jobs waiting (the workers' ceiling on this machine).
"$B" run --engine postgres --pg-url "$URL" --suites snapshot --systems ring \
  "${hold[@]}" --out "$OUT/pg-ring-backlog.jsonl"
