#!/usr/bin/env bash
# Run 42: the SQLite snapshot suite as in sqlite_held_ab.sh, each run started with the page cache
# full. On the benchmark machine (a VM) memory that is freed goes back to the host, and the
# first touch of it costs about 3 s a GB (touch.c): a held WAL that grows into it pays that on
# the one writer's path until the cache has covered the machine's memory. A sparse file read
# into the cache (no disk space, nothing written) makes the WAL's pages come from reclaimed
# cache instead, as on a server whose cache is full. Nothing else running:
#   OUT=<dir> bash warm_held.sh LABEL=<readpast_bench>[:HOLD_SECONDS] ...
set -euo pipefail
: "${OUT:?output directory}"
mkdir -p "$OUT"
warm=${WARM_FILE:-/tmp/readpast-warm.bin}
truncate -s "$(awk '/MemTotal/ {print $2}' /proc/meminfo)K" "$warm"
trap 'rm -f "$warm"' EXIT
for spec in "$@"; do
  label=${spec%%=*}; rest=${spec#*=}; bin=${rest%%:*}; hold=300
  [[ "$rest" == *:* ]] && hold=${rest##*:}
  cat "$warm" > /dev/null
  grep -E 'MemFree|^Cached' /proc/meminfo > "$OUT/$label.meminfo"
  "$bin" run --engine sqlite --suites snapshot --systems readpast \
    --snapshot-holder read-checkpointed --snapshot-baseline-seconds 60 \
    --snapshot-seconds "$hold" --snapshot-tail-seconds 30 --out "$OUT/$label.jsonl" \
    > "$OUT/$label.log" 2>&1
done
