#!/usr/bin/env bash
# Run 61 (docs/benchmarks.md): what the engine's snapshot probe costs a call, before
# (`horizon`, the commit before run 61) and after (`oldest_snapshot`, which also names the
# holder), with 40 other sessions open and one of them holding a REPEATABLE READ snapshot.
# Each statement is run by pgbench, one client, 20,000 times, three rounds, alternating.
#   R=<readpast> bash docs/bench-results/2026-12-07/run61/probe-cost.sh
set -euo pipefail
cd "$(dirname "$0")/../../../.."
: "${R:?set R to a readpast binary of run 61}"
source bench/pg_throwaway.sh run61-probe 55461
"$R" --db "$URL" init >/dev/null
sql_of() {  # the text of statement $2 of statements.sql ($1: a commit, or - for the work tree)
  if [ "$1" = - ]; then cat src/engines/postgres/sql/statements.sql
  else git show "$1:src/engines/postgres/sql/statements.sql"; fi |
    awk -v name="$2" '$0 == "-- name: " name {on=1; next} /^-- name: /{on=0} on' |
    grep -v '^--' | sed 's/:"schema"/readpast/g'
}
sql_of 00d53f9 horizon > "$DIR/before.sql"
sql_of - oldest_snapshot > "$DIR/after.sql"
# 40 idle sessions, one of them in a transaction with a snapshot, for as long as the runs last.
for i in $(seq 1 39); do (psql "$URL" -qc 'SELECT pg_sleep(600)' >/dev/null 2>&1 &); done
(printf 'BEGIN ISOLATION LEVEL REPEATABLE READ;\nSELECT count(*) FROM readpast.jobs;\nSELECT pg_sleep(600);\n' |
  psql "$URL" -q >/dev/null 2>&1 &)
sleep 2
for round in 1 2 3; do
  for side in before after; do
    tps=$(pgbench -n -f "$DIR/$side.sql" -t 20000 -c 1 "$URL" 2>/dev/null |
      awk '/latency average/ {print $4}')
    echo "round $round $side latency_ms $tps"
  done
done
