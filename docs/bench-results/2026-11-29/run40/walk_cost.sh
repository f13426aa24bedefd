#!/usr/bin/env bash
# Run 40: the server's cost of one lease of one job, schema 13's lease_head() against schema
# 14's lease_head_walk() (the same statement, and the pages it read in one more row): pgbench,
# one client, prepared, commits not flushed, a queue of 200,000 jobs refilled before each
# 12-second round, three rounds of each. From the repository's root, with a cluster from
# bench/pg_server.sh and a readpast built from this commit:
#   bash docs/bench-results/2026-11-29/run40/walk_cost.sh postgresql://postgres@127.0.0.1:25443 build/src/cli/readpast
set -euo pipefail
URL_BASE=$1 READPAST=$2
U=$URL_BASE/walk_cost
psql -Xq "$URL_BASE/postgres" -c "DROP DATABASE IF EXISTS walk_cost" -c "CREATE DATABASE walk_cost"
"$READPAST" init --db "$U" >/dev/null
# lease_head13: migration 13's function under another name.
sed -e 's/:"schema"/"readpast"/g' -e 's/FUNCTION "readpast".lease_head(/FUNCTION "readpast".lease_head13(/' \
  src/engines/postgres/sql/migrations/0013_lease_head_pinned.sql |
  python3 -c "
import sys
s = sys.stdin.read()
print(s[:s.index('-- The SQL interface')])" | psql -Xq "$U"
TOKEN="'{00000000-0000-0000-0000-000000000001}'"
DIR=$(mktemp -d)
echo "SELECT * FROM readpast.lease_head13('q', 'w', 30000000, $TOKEN, 1);" >"$DIR/head13.sql"
echo "SELECT * FROM readpast.lease_head_walk('q', 'w', 30000000, $TOKEN, 1);" >"$DIR/walk.sql"
for round in 1 2 3; do
  for v in head13 walk; do
    psql -Xq "$U" -c "TRUNCATE readpast.live" \
      -c "INSERT INTO readpast.live (queue) SELECT 'q' FROM generate_series(1, 200000)" \
      -c "VACUUM ANALYZE readpast.live" -c CHECKPOINT
    printf '%-6s round %s: ' "$v" "$round"
    PGOPTIONS='-c synchronous_commit=off' pgbench -n -M prepared -c 1 -T 12 -f "$DIR/$v.sql" "$U" 2>&1 |
      grep -E 'latency average|^tps' | tr '\n' ' '
    echo
  done
done
rm -rf "$DIR"
psql -Xq "$URL_BASE/postgres" -c "DROP DATABASE walk_cost"
