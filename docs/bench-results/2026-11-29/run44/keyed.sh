#!/usr/bin/env bash
# Run 44: keyed.cpp for builds A and B, alternating, each run on a fresh schema of one cluster
# (bench/pg_server.sh), a CHECKPOINT before each:
#   A=<keyed built at 8547ec7> B=<keyed built at schema 15> bash keyed.sh URL [ROUNDS] [N]
set -euo pipefail
URL=$1 ROUNDS=${2:-6} N=${3:-50000}
: "${A:?keyed before}" "${B:?keyed after}"
for round in $(seq 1 "$ROUNDS"); do
  order="A B"; (( round % 2 == 0 )) && order="B A"
  for side in $order; do
    psql -q "$URL" -c 'DROP SCHEMA IF EXISTS readpast CASCADE' -c CHECKPOINT 2>/dev/null
    echo "round $round $side: $("${!side}" "$URL" "$N")"
  done
done
