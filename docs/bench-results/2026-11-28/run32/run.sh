#!/usr/bin/env bash
# Runs each read against today's table (one) and the view (jobs), A B A B, 5 s each, prepared statements as the engine uses, one client.
set -euo pipefail
URL=$1
for q in get list listdesc listqueue liststate; do
  for round in 1 2; do
    for t in one jobs; do
      lat=$(pgbench -n -M prepared -T 5 -c 1 -f "$q"_"$t".sql "$URL" 2>/dev/null | sed -n 's/^latency average = \([0-9.]*\) ms/\1/p')
      echo "$q $t round$round ${lat} ms"
    done
  done
done
