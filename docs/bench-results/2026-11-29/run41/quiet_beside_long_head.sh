#!/usr/bin/env bash
# Run 41: quiet_beside_long_head.cpp for builds A and B, alternating, each run on a fresh
# schema of one cluster (bench/pg_server.sh):
#   A=<quiet built at 9eda085> B=<quiet built after> bash quiet_beside_long_head.sh URL [ROUNDS]
set -euo pipefail
URL=$1 ROUNDS=${2:-5}
: "${A:?quiet before}" "${B:?quiet after}"
for round in $(seq 1 "$ROUNDS"); do
  order="A B"; (( round % 2 == 0 )) && order="B A"
  for side in $order; do
    psql -q "$URL" -c 'DROP SCHEMA IF EXISTS readpast CASCADE' 2>/dev/null
    "${!side}" "$URL" fill
    psql -q "$URL" -c 'ALTER TABLE readpast.live SET (autovacuum_enabled = off)' -c CHECKPOINT
    echo "round $round $side: $("${!side}" "$URL" measure)"
  done
done
