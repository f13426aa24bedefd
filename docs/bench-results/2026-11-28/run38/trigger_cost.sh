#!/usr/bin/env bash
# Run 38: the server time of the insert trigger's function (notify_inserted) per single-row
# INSERT, as each schema defined it: migration 1 (the wake-up only, unchanged up to 10), 11
# (also a probe of `lanes` and a statement for marks), 12 (one read of the inserted rows for
# both). Each body is taken from its migration file and installed in turn on a schema made by
# `readpast init`; pgbench runs one client of single-row INSERTs, and track_functions times
# the function. About 90 s. Run from the repository's root.
#   trigger_cost.sh URL (a database readpast may init, e.g. postgresql://postgres@127.0.0.1:25443/postgres)
#   READPAST=<readpast CLI> (default build-ci/strict/src/cli/readpast)
set -euo pipefail
URL=$1
READPAST=${READPAST:-build-ci/strict/src/cli/readpast}
MIGRATIONS=src/engines/postgres/sql/migrations
"$READPAST" --db "$URL" init >/dev/null
psql -Xq "$URL" -c "ALTER SYSTEM SET track_functions = 'all'" -c "SELECT pg_reload_conf()" >/dev/null
script=$(mktemp)
trap 'rm -f "$script"' EXIT
echo "INSERT INTO readpast.live (queue, payload, priority, run_at, max_attempts)
  VALUES ('q', '\x7b7d'::bytea, 0, statement_timestamp(), 25) RETURNING id;" >"$script"
for round in 1 2 3; do
  for file in 0001_jobs.sql 0011_lease_lanes.sql 0012_lanes_found_by_leases.sql; do
    # The function's definition: from its CREATE to the end of its body.
    awk '/FUNCTION :"schema".notify_inserted\(\)/ {on = 1} on {print} on && /^\$fn\$;/ {exit}' \
      "$MIGRATIONS/$file" |
      sed -e 's/^CREATE FUNCTION/CREATE OR REPLACE FUNCTION/' -e 's/:"schema"/"readpast"/g' \
        -e "s/:'channel'/'readpast.jobs'/g" | psql -Xq "$URL" -v ON_ERROR_STOP=1 -f -
    psql -Xq "$URL" -c "TRUNCATE readpast.live CASCADE" -c "VACUUM ANALYZE readpast.live" \
      -c "SELECT pg_stat_reset()" >/dev/null
    tps=$(pgbench -n -M prepared -c 1 -T 8 -f "$script" "$URL" 2>/dev/null | awk '/^tps/ {print $3}')
    sleep 1  # the backends report their function counts when they exit
    us=$(psql -XAtq "$URL" -c "SELECT round((total_time * 1000 / calls)::numeric, 1)
      FROM pg_stat_user_functions WHERE funcname = 'notify_inserted'")
    printf 'round %d  %-32s  %6.0f inserts/s  %5s us per call of notify_inserted\n' \
      "$round" "$file" "$tps" "$us"
  done
done
psql -Xq "$URL" -c "ALTER SYSTEM RESET track_functions" -c "SELECT pg_reload_conf()" >/dev/null
