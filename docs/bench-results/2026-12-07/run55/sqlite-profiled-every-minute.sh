#!/usr/bin/env bash
# Run 55 (docs/benchmarks.md): run 54's profiled SQLite hold (a reader held on a checkpointed
# WAL, the machine sampled every 5 s), with the bench process profiled for 15 s once in the
# baseline and then 20 s into every minute of the hold, so that a slow stretch cannot fall
# between two profiles as it did in run 54. Each profile costs the process a little CPU while
# it runs; profiles.log says when each ran.
#   R=<readpast_bench, Release> OUT=<dir> bash sqlite-profiled-every-minute.sh
#   python3 docs/bench-results/2026-12-06/run50/held_sampled.py OUT
#   python3 docs/bench-results/2026-12-07/run55/profile_shares.py OUT
set -euo pipefail
HOLD=${HOLD:-600} BASELINE=${BASELINE:-60}
PROFILES="baseline:$(( BASELINE / 2 ))"
for (( m = 0; m < HOLD / 60; m++ )); do
  PROFILES+=" $(printf 'hold-%03d' $(( m * 60 + 20 ))):$(( BASELINE + m * 60 + 20 ))"
done
HOLD=$HOLD BASELINE=$BASELINE PROFILES=$PROFILES \
  exec bash "$(dirname "$0")/../run54/sqlite-profiled.sh"
