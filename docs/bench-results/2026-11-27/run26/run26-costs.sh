#!/usr/bin/env bash
# Run 26, second part (docs/benchmarks.md): what the gate leaves open about the ring
# prototype (bench/raw_ring_subject.cpp) before the engine is built on it. One fresh
# PostgreSQL 15 cluster, as root, from the repository's root, with nothing else running:
#   B=build-bench/bench/readpast_bench bash docs/bench-results/2026-11-27/run26/run26-costs.sh
# About 15 minutes.
set -euo pipefail
OUT=${OUT:-docs/bench-results/2026-11-27/run26}
B=${B:?an optimised readpast_bench}
DIR=$(mktemp -d /tmp/run26c-XXXXXX); chmod 755 "$DIR"
cleanup() { bench/pg_server.sh destroy "$DIR/data" >/dev/null 2>&1 || true; rm -rf "$DIR"; }
trap cleanup EXIT
URL=$(bench/pg_server.sh start "$DIR/data" "${PORT:-25443}")
short=(--snapshot-rate 6000 --snapshot-baseline-seconds 30 --snapshot-seconds 180)
# 3. The lease through a PL/pgSQL function that carries its planner settings, nothing set on
#    the session (what the engine can do behind a transaction-mode pooler).
RING_LEASE=function "$B" run --engine postgres --pg-url "$URL" --suites snapshot \
  --systems ring "${short[@]}" --out "$OUT/pg-ring-6000-function.jsonl"
# 4. A holder that has written (it holds an xid, so pg_snapshot_xmin stops and with it the
#    frontier): the long-writer case of the design's section 13, no goal in the issue.
"$B" run --engine postgres --pg-url "$URL" --suites snapshot --systems ring "${short[@]}" \
  --snapshot-holder write --out "$OUT/pg-ring-6000-writer.jsonl"
# 5. Clean costs beside the raw-SQL ceiling: the drain, and one lease at 10,000 and
#    1,000,000 queued (the design's risk 6: a lease of one job merges four segments).
"$B" run --engine postgres --pg-url "$URL" --suites drain,depth --systems raw,ring \
  --depths 10000,1000000 --out "$OUT/pg-ring-clean.jsonl"
