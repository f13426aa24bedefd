#!/usr/bin/env bash
# Run 34 (docs/benchmarks.md): issue 18's held-snapshot goals on readpast with the lease
# starting each lane at its frontier (schema 11, commits ff61a7a..e282f80; reverted from main in 5f8b508):
#   1. a fixed offered load of 6,000 jobs/s (the example), a REPEATABLE READ held
#      600 s, 60 s before and after;
#   2. the backlog regime: two producers keeping 20,000 jobs waiting, the same hold.
# 8 worker threads leasing 100. On a fresh PostgreSQL 15 cluster (bench/pg_throwaway.sh), as
# root, from the repository's root, with nothing else running (~26 min), B built from the
# commit to measure:
#   B=build-ci/strict/bench/readpast_bench bash docs/bench-results/2026-11-28/run34/run34.sh
# Recorded: attempts of case 1, each stopped once it had collapsed (attempt0-last-row.jsonl
# before 85eb6b8, its baseline only; attempt1-first.jsonl
# at ff61a7a + 85eb6b8, attempt2-bounded-probe.jsonl at 7078d80, attempt3-settles-by-id.jsonl
# at e282f80); case 2 was not run. ab-round1/ and ab-round2/ are the drains before and after
# (docs/bench-results/2026-11-28/run33/ab_drain.sh).
set -euo pipefail
OUT=${OUT:-docs/bench-results/2026-11-28/run34}
B=${B:?an optimised readpast_bench}
source bench/pg_throwaway.sh run34 "${PORT:-25443}"
"$B" run --engine postgres --pg-url "$URL" --suites snapshot --systems readpast \
  --snapshot-rate 6000 --snapshot-baseline-seconds 60 --snapshot-seconds 600 \
  --snapshot-tail-seconds 60 --out "$OUT/pg-readpast-6000.jsonl"
"$B" run --engine postgres --pg-url "$URL" --suites snapshot --systems readpast \
  --snapshot-producers 2 --snapshot-baseline-seconds 60 --snapshot-seconds 600 \
  --snapshot-tail-seconds 60 --out "$OUT/pg-readpast-backlog-2producers.jsonl"
