#!/usr/bin/env bash
# Run 33: how long the upgrade to schema 10 (migration 0010) holds its lock, for a backlog of
# LIVE jobs (available; every hundredth running with a lease) and a history of DONE finished
# jobs. Each size gets a fresh database at schema 9 in the PostgreSQL at URL_BASE (a
# bench/pg_server.sh cluster), filled with plain SQL, vacuumed, then migrated by psql in one
# transaction as `readpast init` runs it (the same expansion of :"schema" and :'channel').
#
#   upgrade_time.sh postgresql://postgres@127.0.0.1:55461 "10000:0 1000000:1000000 ..."
set -euo pipefail
URL_BASE=$1
SIZES=${2:-"10000:0 10000:1000000 1000000:0 1000000:1000000"}
ROOT=$(cd "$(dirname "$0")/../../../.." && pwd)
MIG=$ROOT/src/engines/postgres/sql/migrations
expand() { sed -e 's/:"schema"/"readpast"/g' -e "s/:'channel'/'readpast.jobs'/g" \
               -e 's/:"channel"/"readpast.jobs"/g' "$@"; }
for size in $SIZES; do
  live=${size%%:*} done=${size##*:}
  db=upgrade_${live}_${done}
  psql -q "$URL_BASE/postgres" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
  url="$URL_BASE/$db"
  {
    echo 'CREATE SCHEMA readpast;'
    echo 'CREATE TABLE readpast.schema_version (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());'
    for f in "$MIG"/000[1-9]_*.sql; do expand "$f"; done
    echo "INSERT INTO readpast.schema_version (version) SELECT generate_series(1, 9);"
    echo "INSERT INTO readpast.jobs (queue, state, attempts, finished_at, payload)
          SELECT 'q', 'succeeded', 1, now(), convert_to('{\"seq\":' || i || '}', 'UTF8')
          FROM generate_series(1, $done) i;"
    echo "INSERT INTO readpast.jobs (queue, state, attempts, lease_token, leased_by,
                                     lease_expires_at, started_at, payload)
          SELECT 'q', CASE WHEN i % 100 = 0 THEN 'running' ELSE 'available' END,
                 CASE WHEN i % 100 = 0 THEN 1 ELSE 0 END,
                 CASE WHEN i % 100 = 0 THEN gen_random_uuid() END,
                 CASE WHEN i % 100 = 0 THEN 'w' END,
                 CASE WHEN i % 100 = 0 THEN now() + interval '1 hour' END,
                 CASE WHEN i % 100 = 0 THEN now() END,
                 convert_to('{\"seq\":' || i || '}', 'UTF8')
          FROM generate_series(1, $live) i;"
  } | psql -q -v ON_ERROR_STOP=1 "$url" >/dev/null
  psql -q "$url" -c "VACUUM ANALYZE readpast.jobs" -c CHECKPOINT
  start=$(date +%s.%N)
  { echo 'BEGIN;'; expand "$MIG"/0010_*.sql; echo "INSERT INTO readpast.schema_version (version) VALUES (10);"; echo 'COMMIT;'; } |
    psql -q -v ON_ERROR_STOP=1 "$url" >/dev/null
  end=$(date +%s.%N)
  echo "{\"live\": $live, \"done\": $done, \"upgrade_s\": $(echo "$end - $start" | bc -l | sed 's/^\./0./'), " \
       "\"live_rows\": $(psql -Atq "$url" -c 'SELECT count(*) FROM readpast.live'), " \
       "\"done_rows\": $(psql -Atq "$url" -c 'SELECT count(*) FROM readpast.done')}"
  psql -q "$URL_BASE/postgres" -c "DROP DATABASE $db"
done
