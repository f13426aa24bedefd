#!/usr/bin/env bash
# Run 53: how long `readpast init` takes to upgrade schema 17 to 18 (the jobs scheduled for
# later moved from live to scheduled, under ACCESS EXCLUSIVE on live), by due and scheduled jobs:
#   OLD=<a program built at e81c51c that opens a queue with init_schema, e.g. run 53's
#   scheduled, run here as `$OLD URL 1`> R=<readpast of schema 18> bash upgrade.sh URL
set -euo pipefail
URL=$1
: "${OLD:?a schema-17 program}" "${R:?readpast of schema 18}"
for spec in "10000 1000" "1000000 100000" "10000000 100000"; do
  set -- $spec
  psql -q "$URL" -c 'DROP SCHEMA IF EXISTS readpast CASCADE' 2>/dev/null
  "$OLD" "$URL" 1 > /dev/null
  psql -q "$URL" -c "DELETE FROM readpast.live" -c "DELETE FROM readpast.done" \
    -c "INSERT INTO readpast.live (queue, payload) SELECT 'q', 'x' FROM generate_series(1, $1)" \
    -c "INSERT INTO readpast.live (queue, payload, run_at)
        SELECT 'later', 'x', now() + interval '1 day' FROM generate_series(1, $2)" \
    -c "VACUUM ANALYZE readpast.live" -c CHECKPOINT
  start=$(date +%s.%N)
  "$R" init --db "$URL" > /dev/null
  end=$(date +%s.%N)
  echo "due $1 scheduled $2: init $(echo "$end - $start" | bc) s," \
    "moved $(psql -qAt "$URL" -c 'SELECT count(*) FROM readpast.scheduled')"
done
