#!/usr/bin/env bash
# Run 48 (docs/benchmarks.md): drains of 200,000 jobs, readpast::Worker's beside the harness'
# fastest raw subject, with the bench process' own CPU time (enqueue included).
#   R=<readpast_bench> bash client-cpu.sh
set -euo pipefail
cd "$(dirname "$0")/../../../.."
: "${R:?set R to a readpast_bench}"
source bench/pg_throwaway.sh r48cpu 25447
for d in drain_worker drain_batch1000_delete; do
  for i in 1 2; do
    /usr/bin/time -f "$d: client user %U s, sys %S s, wall %e s" \
      env BENCH_PG_URL="$URL" BENCH_N=200000 READPAST_HARNESS_DRAINS=$d "$R" harness drain
  done
done
