#!/usr/bin/env bash
# Run 26 (docs/benchmarks.md) on the ring prototype (bench/raw_ring_subject.cpp), with a lease
# whose plans no estimate can turn into a walk of a segment (a TID-scan DELETE, no bitmap
# scans, the generic plan kept). As root, from the repository's root, with nothing else
# running; B is an optimised build of readpast_bench; each part on a fresh PostgreSQL 15
# cluster (bench/pg_server.sh):
#   B=build-bench/bench/readpast_bench bash docs/bench-results/2026-11-27/run26/run26.sh gate
#   B=build-bench/bench/readpast_bench bash docs/bench-results/2026-11-27/run26/run26.sh costs
# gate: the design's gate, 60 s baseline, a REPEATABLE READ held 600 s, 60 s after (~30 min);
# costs: what the gate leaves open, 30 s baseline and 180 s holds, then clean costs (~15 min).
set -euo pipefail
part=${1:?gate or costs}
OUT=${OUT:-docs/bench-results/2026-11-27/run26}
B=${B:?an optimised readpast_bench}
source bench/pg_throwaway.sh run26 "${PORT:-25442}"
ring=(run --engine postgres --pg-url "$URL" --suites snapshot --systems ring)
case "$part" in
  gate)
    hold=(--snapshot-baseline-seconds 60 --snapshot-seconds 600 --snapshot-tail-seconds 60)
    # 1. The fixed load: 6,000 jobs/s offered.
    "$B" "${ring[@]}" --snapshot-rate 6000 "${hold[@]}" --out "$OUT/pg-ring-6000.jsonl"
    # 2. The producer keeping 20,000 jobs waiting (the workers' ceiling on this machine).
    "$B" "${ring[@]}" "${hold[@]}" --out "$OUT/pg-ring-backlog.jsonl"
    ;;
  costs)
    short=(--snapshot-rate 6000 --snapshot-baseline-seconds 30 --snapshot-seconds 180)
    # 3. The lease through a PL/pgSQL function that carries its planner settings, nothing
    #    set on the session (what the engine can do behind a transaction-mode pooler).
    RING_LEASE=function "$B" "${ring[@]}" "${short[@]}" --out "$OUT/pg-ring-6000-function.jsonl"
    # 4. A holder that has written (it holds an xid, so pg_snapshot_xmin stops and with it
    #    the frontier): the long-writer case of the design's section 13.
    "$B" "${ring[@]}" "${short[@]}" --snapshot-holder write --out "$OUT/pg-ring-6000-writer.jsonl"
    # 5. Clean costs beside the raw-SQL ceiling: the drain, and one lease at 10,000 and
    #    1,000,000 queued (the design's risk 6: a lease of one job merges four segments).
    "$B" run --engine postgres --pg-url "$URL" --suites drain,depth --systems raw,ring \
      --depths 10000,1000000 --out "$OUT/pg-ring-clean.jsonl"
    ;;
  *) echo "run26.sh: gate or costs" >&2; exit 2 ;;
esac
