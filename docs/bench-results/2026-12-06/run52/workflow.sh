#!/usr/bin/env bash
# Run 52: workflow.cpp for builds A and B, alternating, each run on a fresh schema of one
# cluster (bench/pg_server.sh), a CHECKPOINT before each:
#   A=<workflow built at 2066682> B=<workflow built at schema 17> bash workflow.sh URL [ROUNDS] [N]
set -euo pipefail
URL=$1 ROUNDS=${2:-6} N=${3:-10000}
: "${A:?workflow before}" "${B:?workflow after}"
for round in $(seq 1 "$ROUNDS"); do
  order="A B"; (( round % 2 == 0 )) && order="B A"
  for side in $order; do
    psql -q "$URL" -c 'DROP SCHEMA IF EXISTS readpast CASCADE' -c CHECKPOINT 2>/dev/null
    echo "round $round $side: $("${!side}" "$URL" "$N")"
  done
done
