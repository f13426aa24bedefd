#!/usr/bin/env bash
# Run 55 (docs/benchmarks.md): run 54's profiled SQLite hold (run 50's held_sampled.sh: a
# reader held on a checkpointed WAL, the machine sampled every 5 s), with the bench process
# profiled for PROFILE_S seconds once in the baseline and then at the start of every minute
# of the hold, so that a slow stretch cannot fall between two profiles as it did in run 54.
# The profiles are DWARF call graphs at 250 Hz (Debian's libsqlite3 has no frame pointers);
# each costs the process a little CPU while it runs, so held.jsonl's windows that overlap one
# are listed in profiles.log.
#   R=<readpast_bench, Release> OUT=<dir> bash sqlite-profiled-every-minute.sh
#   python3 docs/bench-results/2026-12-06/run50/held_sampled.py OUT
#   python3 docs/bench-results/2026-12-07/run55/profile_shares.py OUT
set -euo pipefail
: "${R:?readpast_bench}" "${OUT:?output directory}"
HOLD=${HOLD:-600} BASELINE=${BASELINE:-60} TAIL=${TAIL:-60} PROFILE_S=${PROFILE_S:-15}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
R=$R OUT=$OUT HOLD=$HOLD BASELINE=$BASELINE TAIL=$TAIL \
  bash "$HERE/../../2026-12-06/run50/held_sampled.sh" &
runner=$!
profile() {  # name, seconds after the start
  local wait=$(( $2 - SECONDS ))
  (( wait > 0 )) && sleep "$wait"
  local pid
  pid=$(pgrep -n -f "run --engine sqlite --suites snapshot") || return 0
  echo "profile $1 from ${SECONDS}s to $(( SECONDS + PROFILE_S ))s (pid $pid)" >> "$OUT/profiles.log"
  perf record -q -F 250 -e cpu-clock --call-graph dwarf,16384 -p "$pid" \
    -o "$OUT/$1.perf" -- sleep "$PROFILE_S" >> "$OUT/profiles.log" 2>&1 || true
}
SECONDS=0
profile baseline $(( BASELINE / 2 ))
for (( m = 0; m < HOLD / 60; m++ )); do
  profile "$(printf 'hold-%03d' $(( m * 60 + 20 )))" $(( BASELINE + m * 60 + 20 ))
done
wait "$runner"
# Whole reports first, cut after: with pipefail, `head` closing a pipe would end the script.
for f in "$OUT"/*.perf; do
  p=${f%.perf}
  perf report -i "$f" --no-children --sort dso,sym -g none 2>/dev/null \
    | grep -v '^#' | grep -v '^$' > "$p.self.txt" || true
  sed -i '41,$d' "$p.self.txt"
done
