#!/usr/bin/env bash
# Run 25 (docs/benchmarks.md): where issue 18 starts. The snapshot suite with what the issue's
# goals need measured (a fixed offered rate and the backlog, lease percentiles, sizes on disk,
# a tail after the hold), on PostgreSQL for readpast and for the ring prototype of
# docs/postgres-storage.md (bench/raw_ring_subject.cpp), and on SQLite. As root, from the
# repository's root, with nothing else running; B is a Release build of readpast_bench:
#   B=build-bench/bench/readpast_bench bash docs/bench-results/2026-11-26/run25/run25.sh
# About 60 minutes, and ~25 GB free under /tmp for the SQLite WAL of a 5-minute hold.
set -euo pipefail
OUT=${OUT:-docs/bench-results/2026-11-26/run25}
B=${B:?a Release readpast_bench}
source bench/pg_throwaway.sh run25 "${PORT:-25440}"
hold=(--snapshot-baseline-seconds 60 --snapshot-seconds 600)
# 1. readpast at a fixed 6,000 jobs/s (the fresh check), 2 minutes after the hold.
"$B" run --engine postgres --pg-url "$URL" --suites snapshot --systems readpast \
  --snapshot-rate 6000 "${hold[@]}" --snapshot-tail-seconds 120 --out "$OUT/pg-readpast-6000.jsonl"
# 2. The ring prototype, the producer keeping 20,000 jobs waiting (the workers' ceiling).
"$B" run --engine postgres --pg-url "$URL" --suites snapshot --systems ring \
  "${hold[@]}" --snapshot-tail-seconds 60 --out "$OUT/pg-ring-backlog.jsonl"
# 3. The ring prototype at a fixed 6,000 jobs/s.
"$B" run --engine postgres --pg-url "$URL" --suites snapshot --systems ring \
  --snapshot-rate 6000 "${hold[@]}" --snapshot-tail-seconds 60 --out "$OUT/pg-ring-6000.jsonl"
# 3b. The same at 6,000 jobs/s, shorter, with each window's frontier lag and truncations, and
#     again with the prototype's statements kept on their generic plans.
"$B" run --engine postgres --pg-url "$URL" --suites snapshot --systems ring --snapshot-rate 6000 \
  --snapshot-baseline-seconds 30 --snapshot-seconds 300 --out "$OUT/pg-ring-6000-diag.jsonl"
RING_PLAN_CACHE_MODE=force_generic_plan "$B" run --engine postgres --pg-url "$URL" \
  --suites snapshot --systems ring --snapshot-rate 6000 --snapshot-baseline-seconds 30 \
  --snapshot-seconds 180 --out "$OUT/pg-ring-6000-generic.jsonl"
# 4. SQLite: readpast, a read transaction held 5 minutes, 2 minutes after it.
"$B" run --engine sqlite --suites snapshot --systems readpast --snapshot-baseline-seconds 40 \
  --snapshot-seconds 300 --snapshot-tail-seconds 120 --out "$OUT/sqlite-readpast.jsonl"
