#!/usr/bin/env bash
# Run 41: the snapshot suite on SQLite with a read transaction held 10 minutes, and `perf
# record` of the benchmark process for 10 s at 50, 120, 200, 330 and 470 s into the hold
# (the baseline runs 60 s first). As root, nothing else running, ~75 GB free on /tmp:
#   BENCH=<readpast_bench> OUT=<dir> bash sqlite_held_perf.sh
set -euo pipefail
: "${BENCH:?readpast_bench}" "${OUT:?output directory}"
mkdir -p "$OUT"
"$BENCH" run --engine sqlite --suites snapshot --systems readpast \
  --snapshot-holder read-checkpointed --snapshot-baseline-seconds 60 --snapshot-seconds 600 \
  --snapshot-tail-seconds 30 --out "$OUT/held.jsonl" > "$OUT/log.txt" 2>&1 &
pid=$!
start=$(date +%s)
for t in 50 120 200 330 470; do
  wait_s=$(( t + 60 - ($(date +%s) - start) ))
  (( wait_s > 0 )) && sleep "$wait_s"
  perf record -F 499 -g -p "$pid" -o "$OUT/perf-$t.data" -- sleep 10 > /dev/null 2>&1
done
wait "$pid"
