#!/usr/bin/env bash
# Run 52: how long `readpast init` takes to upgrade schema 16 to 17 (the waiting jobs moved,
# live's CHECK validated, all under ACCESS EXCLUSIVE on live), by live and waiting jobs:
#   OLD=<a program built at 2066682 that opens a queue with init_schema, e.g. run 52's
#   workflow, run here as `$OLD URL 1`> R=<readpast of schema 17> bash upgrade.sh URL
set -euo pipefail
URL=$1
: "${OLD:?a schema-16 program}" "${R:?readpast of schema 17}"
for spec in "10000 1000" "1000000 100000" "10000000 100000"; do
  set -- $spec
  psql -q "$URL" -c 'DROP SCHEMA IF EXISTS readpast CASCADE' 2>/dev/null
  "$OLD" "$URL" 1 > /dev/null
  psql -q "$URL" -c "DELETE FROM readpast.live" -c "DELETE FROM readpast.done" \
    -c "DELETE FROM readpast.dependencies" \
    -c "INSERT INTO readpast.live (queue, payload) SELECT 'q', 'x' FROM generate_series(1, $1)" \
    -c "INSERT INTO readpast.live (queue, payload, state, waiting_for)
        SELECT 'w', 'x', 'waiting', 1 FROM generate_series(1, $2)" \
    -c "VACUUM ANALYZE readpast.live" -c CHECKPOINT
  start=$(date +%s.%N)
  "$R" init --db "$URL" > /dev/null
  end=$(date +%s.%N)
  echo "live $1 waiting $2: init $(echo "$end - $start" | bc) s"
done
