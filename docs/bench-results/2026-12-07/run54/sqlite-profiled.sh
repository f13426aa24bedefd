#!/usr/bin/env bash
# Run 54 (docs/benchmarks.md): one SQLite held run (run 50's held_sampled.sh: a reader held on
# a checkpointed WAL) with the bench process profiled by perf for PROFILE_S seconds at three
# moments: in the baseline, early in the hold and late in it, where runs 50 and 51 saw the
# CPU a job costs grow. Call graphs by DWARF unwinding (Debian's libsqlite3 has no frame
# pointers and no symbols here, so its own functions show as addresses; the callers in
# readpast name what each statement costs).
#   R=<readpast_bench, Release> OUT=<dir> bash sqlite-profiled.sh
# PROFILES ("name:second name:second …", from the script's start) chooses other moments
# (run 55's sqlite-profiled-every-minute.sh).
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
PROFILES=${PROFILES:-"baseline:$(( BASELINE / 2 )) hold-early:$(( BASELINE + 60 )) hold-late:$(( BASELINE + HOLD - 90 ))"}
SECONDS=0
for p in $PROFILES; do profile "${p%%:*}" "${p##*:}"; done
wait "$runner"
# Whole reports first, cut after: with pipefail, `head` closing a pipe would end the script.
for p in $PROFILES; do
  p=${p%%:*}
  [ -f "$OUT/$p.perf" ] || continue
  perf report -i "$OUT/$p.perf" --no-children --sort dso -g none 2>/dev/null \
    | grep -v '^#' | grep -v '^$' > "$OUT/$p.dso.txt" || true
  perf report -i "$OUT/$p.perf" --no-children --sort dso,sym -g none 2>/dev/null \
    | grep -v '^#' | grep -v '^$' > "$OUT/$p.self.txt" || true
  sed -i '41,$d' "$OUT/$p.self.txt"
done
