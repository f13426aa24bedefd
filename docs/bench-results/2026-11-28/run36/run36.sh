#!/usr/bin/env bash
# Run 36 (docs/benchmarks.md): the lease frontier with its lease's plan pinned, under issue 18's
# held snapshot:
#   1. a fixed offered load of 6,000 jobs/s, a REPEATABLE READ held 600 s, 60 s before and after
#      (attempt 5);
#   2. the backlog regime: two producers keeping 20,000 jobs waiting, the same hold (attempt 6).
# 8 worker threads leasing 100, on a fresh PostgreSQL 15 cluster each (bench/pg_throwaway.sh),
# with auto_explain logging every statement over 250 ms to the cluster's log. As root, from the
# repository's root, with nothing else running (~26 min). B is readpast_bench built from main
# at 06adbb4 with frontier-pinned.patch applied (the frontier of run 34, its lease in a PL/pgSQL
# function whose settings pin the plan):
#   git worktree add /tmp/frontier 06adbb4 && git -C /tmp/frontier apply \
#     "$PWD/docs/bench-results/2026-11-28/run36/frontier-pinned.patch"
#   cmake -S /tmp/frontier -B /tmp/frontier/build-bench -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
#     -DCMAKE_UNITY_BUILD=ON -DREADPAST_BUILD_TESTS=OFF -DREADPAST_BUILD_EXAMPLES=OFF \
#     -DREADPAST_BUILD_BENCH=ON && ninja -C /tmp/frontier/build-bench readpast_bench
#   B=/tmp/frontier/build-bench/bench/readpast_bench bash docs/bench-results/2026-11-28/run36/run36.sh
# It writes pg-pinned-*.jsonl; the runs recorded here are attempt5-pinned-6000.jsonl and
# attempt6-pinned-backlog-2producers.jsonl. The patch as committed allows hash joins; attempts 5 and 6 ran with them off (and attempt 5
# with incremental sorts allowed), which cost the clean path but not the held figures.
# Attempts 1 and 2 are the same commands with B built from 06adbb4 with 5f8b508 reverted
# (the frontier as run 34 left it); the drains before and after are
#   A=<main> B=<this B> bash docs/bench-results/2026-11-28/run33/ab_drain.sh URL_BASE OUT 3
set -euo pipefail
OUT=${OUT:-docs/bench-results/2026-11-28/run36}
B=${B:?an optimised readpast_bench}
held() {
  local name=$1
  shift
  (
    source bench/pg_throwaway.sh "run36-$name" "${PORT:-25443}"
    cat >>"$DIR/data/postgresql.conf" <<CONF
session_preload_libraries = 'auto_explain'
auto_explain.log_min_duration = '250ms'
auto_explain.log_analyze = on
auto_explain.log_timing = off
auto_explain.log_buffers = on
auto_explain.log_nested_statements = on
CONF
    psql -XAtq "$URL" -c "SELECT pg_reload_conf()" >/dev/null
    "$B" run --engine postgres --pg-url "$URL" --suites snapshot --systems readpast \
      --snapshot-baseline-seconds 60 --snapshot-seconds 600 --snapshot-tail-seconds 60 \
      "$@" --out "$OUT/$name.jsonl"
    grep -c 'duration:' "$DIR/data.log" || true
  )
}
held pg-pinned-6000 --snapshot-rate 6000
held pg-pinned-backlog-2producers --snapshot-producers 2
