#!/usr/bin/env bash
# Run 46 (docs/benchmarks.md): main's held backlog regime (run 43's: 2 producers, 8 workers)
# with `perf record -a -g` for 15 s in the baseline (from 30 s) and from 110 and 290 s into the
# hold: where the machine's time goes once the hold has grown live. From the repository's root,
# nothing else running:
#   B=<readpast_bench> R=<readpast> OUT=<dir> bash docs/bench-results/2026-11-29/run46/profile/profile.sh
set -euo pipefail
B=${B:?}; R=${R:?}; OUT=${OUT:?}
mkdir -p "$OUT"
source bench/pg_throwaway.sh r46p "${PORT:-25448}"
BASE=${URL%/*}
psql -XAtq "$BASE/postgres" -c "CREATE DATABASE main"
"$R" --db "$BASE/main" init >/dev/null
psql -XAtq "$BASE/main" -c "ALTER DATABASE main SET jit = off"
"$B" run --engine postgres --pg-url "$BASE/main" --readpast-pg-url "$BASE/main" --suites snapshot \
  --systems readpast --snapshot-baseline-seconds 60 --snapshot-seconds 360 \
  --snapshot-tail-seconds 0 --snapshot-producers 2 --out "$OUT/held-main.jsonl" >"$OUT/held-main.log" 2>&1 &
pid=$!
for spec in 'baseline:snapshot baseline .* 30\.[0-9]s' 'held110:snapshot held .* 110\.[0-9]s' \
            'held290:snapshot held .* 290\.[0-9]s'; do
  name=${spec%%:*}; pattern=${spec#*:}
  until grep -qE "$pattern" "$OUT/held-main.log"; do sleep 0.2; done
  echo "$(date -u +%T) $name" >> "$OUT/times.txt"
  perf record -e cpu-clock -F 499 -a -g -o "$OUT/perf-$name.data" -- sleep 15 > /dev/null 2>&1
done
wait "$pid"
cp "$DIR/data.log" "$OUT/server.log"
