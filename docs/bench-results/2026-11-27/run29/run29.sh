#!/usr/bin/env bash
# Run 29 (docs/benchmarks.md): issue 18's first goal on the ring prototype
# (bench/raw_ring_subject.cpp), which run 26 measured with one producer that could not keep
# the backlog ahead of the workers: the 8-worker drain with 20,000 jobs kept waiting by two
# producers, a REPEATABLE READ held 600 s, 60 s before and after; the lease as a PL/pgSQL
# function carrying its settings (RING_LEASE=function, the form the engine would use). On a
# fresh PostgreSQL 15 cluster (bench/pg_server.sh), as root, from the repository's root, with
# nothing else running (~14 min):
#   B=build-ci/strict/bench/readpast_bench bash docs/bench-results/2026-11-27/run29/run29.sh
set -euo pipefail
OUT=${OUT:-docs/bench-results/2026-11-27/run29}
B=${B:?an optimised readpast_bench}
source bench/pg_throwaway.sh run29 "${PORT:-25442}"
RING_LEASE=function "$B" run --engine postgres --pg-url "$URL" --suites snapshot --systems ring \
  --snapshot-producers 2 --snapshot-baseline-seconds 60 --snapshot-seconds 600 \
  --snapshot-tail-seconds 60 --out "$OUT/pg-ring-backlog-2producers.jsonl"
