#!/usr/bin/env bash
# Run 41: swaps lease_head_walk() of a schema-14 database between its definition (sync) and
# the same with set_config('synchronous_commit', 'off', true) as its first statement (async),
# so that a lease's commit does not wait for its WAL flush. drain-worker.txt alternated the two
# before each harness drain_worker:
#   bash swap.sh URL async|sync
set -euo pipefail
URL=$1 MODE=$2
def=$(psql -Atq "$URL" -c "SELECT pg_get_functiondef('readpast.lease_head_walk'::regproc)")
def=$(printf '%s\n' "$def" | grep -v "^PERFORM set_config('synchronous_commit'")
if [ "$MODE" = async ]; then
  def=$(printf '%s\n' "$def" | sed "0,/^BEGIN$/s//BEGIN\nPERFORM set_config('synchronous_commit', 'off', true);/")
fi
printf '%s\n' "$def" | psql -q "$URL"
