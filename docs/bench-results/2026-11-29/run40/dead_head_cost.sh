#!/usr/bin/env bash
# Run 40: what a dead head costs a lease from the head with no snapshot held. 400,000 jobs, the
# first 300,000 deleted (as completions leave them, their entries still in jobs_lease_idx and
# jobs_due_idx), autovacuum off for the table; then five leases of one job through
# lease_head_walk() in one session, each printing walked_pages and its time: the first marks
# the entries dead, the next ones skip them page by page; after a VACUUM, five more. From the
# repository's root, with a cluster from bench/pg_server.sh and a readpast built from this commit:
#   bash docs/bench-results/2026-11-29/run40/dead_head_cost.sh postgresql://postgres@127.0.0.1:25443 build/src/cli/readpast
set -euo pipefail
URL_BASE=$1 READPAST=$2
U=$URL_BASE/dead_head
psql -Xq "$URL_BASE/postgres" -c "DROP DATABASE IF EXISTS dead_head" -c "CREATE DATABASE dead_head"
"$READPAST" init --db "$U" >/dev/null
psql -Xq "$U" <<'SQL'
ALTER TABLE readpast.live SET (autovacuum_enabled = off);
INSERT INTO readpast.live (queue, run_at)
  SELECT 'q', now() - interval '1 hour' + g * interval '1 millisecond'
  FROM generate_series(1, 400000) g;
DELETE FROM readpast.live WHERE id <= 300000;
SQL
# One session: its first call plans the function's statement (a few ms), on another queue.
leases() {
  {
    echo "SELECT count(*) FROM readpast.lease_head_walk('warm', 'w', 30000000, '{}', 1);"
    echo '\timing on'
    for i in 1 2 3 4 5; do
      echo "SELECT '$1 lease $i: walked_pages ' || walked_pages
            FROM readpast.lease_head_walk('q', 'w', 30000000, '{}', 1) WHERE id IS NULL;"
    done
  } | psql -XAtq "$U" | tail -n +2
}
leases dead
psql -Xq "$U" -c "VACUUM readpast.live"
leases vacuumed
psql -Xq "$URL_BASE/postgres" -c "DROP DATABASE dead_head"
