#!/usr/bin/env bash
# Run 37: how long `readpast init` holds live while it upgrades schema 10 to 11 (lanes), at
# 10,000 and 1,000,000 live jobs (SIZES="..." for others) in 100 lanes (10 queues, 10
# priorities each).
# The time is the whole `readpast init`: process start and connection included (~0.05 s).
#   OLD=<readpast of main before schema 11> NEW=<readpast of this commit> \
#     bash docs/bench-results/2026-11-28/run37/upgrade11.sh
set -euo pipefail
: "${OLD:?readpast with schema 10}" "${NEW:?readpast with schema 11}"
source bench/pg_throwaway.sh run37-upgrade "${PORT:-25445}"
for n in ${SIZES:-10000 1000000}; do
  db="up_$n"
  psql -XAtq "$URL" -c "CREATE DATABASE $db"
  u="${URL%/*}/$db"
  "$OLD" --db "$u" init >/dev/null
  psql -XAtq "$u" -c "INSERT INTO readpast.live (queue, priority)
                      SELECT 'q' || (i % 10), (i / 10) % 10 FROM generate_series(1, $n) i" \
                  -c "VACUUM ANALYZE readpast.live"
  start=$(date +%s.%N)
  "$NEW" --db "$u" init >/dev/null
  end=$(date +%s.%N)
  echo "$n live jobs in 100 lanes: init took $(echo "$end - $start" | bc) s"
  psql -XAtq "$URL" -c "DROP DATABASE $db"
done
