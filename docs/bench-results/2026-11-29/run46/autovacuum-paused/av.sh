#!/usr/bin/env bash
# Run 46 (docs/benchmarks.md, "Autovacuum paused while a snapshot is held: tried, not kept"):
# main's held backlog regime (run 43's) in a database whose name starts with noav, with
# autovacuum of live paused while the hold lasts (from outside, as vacuum-pause.patch does from
# the engine: ALTER TABLE once a session has been idle in transaction for 2 s, RESET after it
# ends), and in one named otherwise, as it is. From the repository's root, nothing else running:
#   B=<readpast_bench> R=<readpast> OUT=<dir> bash docs/bench-results/2026-11-29/run46/autovacuum-paused/av.sh noav main
set -euo pipefail
B=${B:?}; R=${R:?}; OUT=${OUT:?}
mkdir -p "$OUT"
source bench/pg_throwaway.sh r46 "${PORT:-25446}"
BASE=${URL%/*}
for db in "$@"; do
  name=${db}
  psql -XAtq "$BASE/postgres" -c "CREATE DATABASE $name"
  "$R" --db "$BASE/$name" init >/dev/null
  psql -XAtq "$BASE/$name" -c "ALTER DATABASE $name SET jit = off"
done
pauser() {  # DB: pause autovacuum on live while an idle-in-transaction session exists
  local db=$1 paused=0
  while true; do
    n=$(psql -XAtq "$BASE/$db" -c "SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction' AND now() - xact_start > interval '2 s'")
    if [[ $n -gt 0 && $paused -eq 0 ]]; then
      psql -XAtq "$BASE/$db" -c "SET lock_timeout = '5s'" -c "ALTER TABLE readpast.live SET (autovacuum_enabled = off)" && paused=1
      echo "$(date -u +%T) paused"
    elif [[ $n -eq 0 && $paused -eq 1 ]]; then
      psql -XAtq "$BASE/$db" -c "SET lock_timeout = '5s'" -c "ALTER TABLE readpast.live RESET (autovacuum_enabled)" && paused=0
      echo "$(date -u +%T) resumed"
    fi
    sleep 1
  done
}
for db in "$@"; do
  pid=
  if [[ $db == noav* ]]; then pauser "$db" > "$OUT/pauser-$db.log" 2>&1 & pid=$!; fi
  echo "$(date -u +%T) start $db" >> "$OUT/times.txt"
  "$B" run --engine postgres --pg-url "$BASE/$db" --readpast-pg-url "$BASE/$db" --suites snapshot --systems readpast \
    --snapshot-baseline-seconds 60 --snapshot-seconds 600 --snapshot-tail-seconds 60 \
    --snapshot-producers 2 --out "$OUT/held-$db.jsonl" >"$OUT/held-$db.log" 2>&1
  [[ -n "$pid" ]] && kill "$pid"
  echo "$(date -u +%T) end $db" >> "$OUT/times.txt"
  python3 docs/bench-results/2026-11-29/run43/summarize.py --held "$OUT/held-$db.jsonl" | tee -a "$OUT/held.txt"
done
grep -E 'automatic vacuum of table ".*readpast\.live"|elapsed' "$DIR/data.log" > "$OUT/autovacuum-raw.txt" || true
cp "$DIR/data.log" "$OUT/server.log" || true
