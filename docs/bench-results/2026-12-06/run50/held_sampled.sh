#!/usr/bin/env bash
# Run 50: one SQLite held run (as held_ab.sh of run 49) with the machine sampled every 5 s
# beside it: /proc/vmstat (page cache, reclaim, compaction), /proc/stat (CPU by kind) and
# /proc/diskstats (the disk's writes, flushes and discards), to line the hold's slow windows
# up with what the kernel did then.
#   R=<readpast_bench> OUT=<dir> bash held_sampled.sh
#   python3 held_sampled.py OUT    (prints one line per 10-s window)
set -euo pipefail
: "${R:?readpast_bench}" "${OUT:?output directory}"
HOLD=${HOLD:-600} BASELINE=${BASELINE:-60} TAIL=${TAIL:-60}
mkdir -p "$OUT/d"  # first: findmnt needs the directory to exist
disk=$(findmnt -no SOURCE --target "$OUT" | sed 's|/dev/||')
rm -rf "${OUT:?}/d/"*
(
  while true; do
    now=$(date +%s.%N)
    echo "T $now"
    grep -E '^(nr_free_pages|nr_file_pages|nr_dirty|nr_writeback|pgscan_kswapd|pgscan_direct|pgsteal_kswapd|pgsteal_direct|allocstall_normal|allocstall_movable|compact_stall|compact_fail|compact_success|pgfault|pgmajfault|thp_fault_alloc|workingset_refault_file) ' /proc/vmstat
    head -1 /proc/stat
    grep -w "$disk" /proc/diskstats
    sleep 5
  done
) > "$OUT/system.log" 2>&1 &
sampler=$!
trap 'kill $sampler 2>/dev/null' EXIT
"$R" run --engine sqlite --suites snapshot --systems readpast \
  --snapshot-holder read-checkpointed --snapshot-baseline-seconds "$BASELINE" \
  --snapshot-seconds "$HOLD" --snapshot-tail-seconds "$TAIL" --sqlite-dir "$OUT/d" \
  --out "$OUT/held.jsonl" > "$OUT/held.log" 2>&1
date +%s.%N > "$OUT/ended"
rm -rf "$OUT/d"
