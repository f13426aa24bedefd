#!/usr/bin/env bash
# Run 53 (docs/benchmarks.md): a lease's update joined to its pick by a nested loop (the plan
# the statistics of a live analysed empty chose until schema 18) or by a hash join (schema 18's
# enable_nestloop off). On a fresh database at schema 18 whose live was analysed empty, with
# autovacuum off on it so that nothing corrects those statistics: leases of 254 (a Worker of 8
# threads and 500 ahead), 1,000 (the peer harness) and 10,000 (the API's limit) jobs, five of
# each size, by lease_head_walk() as it is and by a copy of it with nested loops allowed.
#   R=<readpast CLI of schema 18> bash lease-join.sh URL_BASE   (a cluster's URL, no database)
set -euo pipefail
URL_BASE=$1
: "${R:?readpast CLI}"
psql -q "$URL_BASE/postgres" -c 'DROP DATABASE IF EXISTS lease_join' -c 'CREATE DATABASE lease_join'
URL=$URL_BASE/lease_join
"$R" init --db "$URL" >/dev/null
# The copy: the function's definition as the server has it, renamed, its nested loops allowed.
psql -qAt "$URL" -c "SELECT pg_get_functiondef('readpast.lease_head_walk'::regproc)" \
  | sed -e 's/FUNCTION readpast.lease_head_walk(/FUNCTION readpast.lease_nested(/' \
        -e '/SET enable_nestloop TO .off./d' | psql -q "$URL"
psql -q "$URL" -c 'ALTER TABLE readpast.live SET (autovacuum_enabled = off)' -c 'ANALYZE readpast.live'
for n in 254 1000 10000; do
  for fn in lease_nested lease_head_walk; do
    psql -q "$URL" -c "INSERT INTO readpast.live (queue, payload) SELECT '$fn-$n', 'x' FROM generate_series(1, 5 * $n)"
    {
      echo '\timing on'
      for i in 1 2 3 4 5; do
        echo "SELECT count(*) FROM readpast.$fn('$fn-$n', 'w', 30000000, ARRAY(SELECT gen_random_uuid() FROM generate_series(1, $n)), $n);"
      done
    } | psql -q "$URL" | awk -v fn="$fn" -v n="$n" '/^Time:/ { t = t " " $2 } END { print fn, n, "ms:" t }'
  done
done
