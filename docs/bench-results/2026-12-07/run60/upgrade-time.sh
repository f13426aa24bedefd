#!/usr/bin/env bash
# Run 60 (docs/benchmarks.md): how long `readpast init` holds `live` when it upgrades a
# schema-22 database to schema 23 (0023_running_ring.sql), with AVAILABLE due jobs and RUNNING
# leases in flight, for each pair given. The upgrade is one transaction that takes ACCESS
# EXCLUSIVE on live first, so its time is the time nothing reads or writes live.
#   OLD=<readpast of schema 22> NEW=<readpast of schema 23> \
#     bash docs/bench-results/2026-12-07/run60/upgrade-time.sh 10000:1000 1000000:10000 ...
set -euo pipefail
source bench/pg_throwaway.sh r60up "${PORT:-25460}"
BASE=${URL%/*}
n=0
for pair in "$@"; do
  n=$((n + 1))
  available=${pair%:*} running=${pair#*:}
  db=up$n
  psql -XAtq "$BASE/postgres" -c "CREATE DATABASE $db"
  "${OLD:?}" --db "$BASE/$db" init >/dev/null
  psql -XAtq "$BASE/$db" <<SQL
INSERT INTO readpast.live (queue, payload)
SELECT 'q', convert_to('{"n":' || i || '}', 'UTF8') FROM generate_series(1, $available) i;
INSERT INTO readpast.live (queue, state, attempts, lease_token, leased_by, lease_expires_at,
                           started_at, payload)
SELECT 'q', 'running', 1, gen_random_uuid(), 'w', now() + interval '1 hour', now(),
       convert_to('{"n":' || i || '}', 'UTF8')
FROM generate_series(1, $running) i;
VACUUM ANALYZE readpast.live;
CHECKPOINT;
SQL
  start=$(date +%s.%N)
  "${NEW:?}" --db "$BASE/$db" init >/dev/null
  end=$(date +%s.%N)
  moved=$(psql -XAtq "$BASE/$db" -c "SELECT count(*) FROM readpast.running")
  left=$(psql -XAtq "$BASE/$db" -c "SELECT count(*) FROM readpast.live")
  printf '%s available, %s running: init %.2f s (running %s, live %s)\n' \
    "$available" "$running" "$(echo "$end - $start" | bc)" "$moved" "$left"
  psql -XAtq "$BASE/postgres" -c "DROP DATABASE $db"
done
