#!/usr/bin/env bash
# Run 39: the server's cost of one lease of one job, schema 12's plain statement against schema
# 13's lease_head() call, and lease_head() without its settings (planned on every call):
# pgbench, one client, prepared, commits not flushed, a queue of 200,000 jobs refilled before
# each 12-second round, two rounds of each. From the repository's root, with a cluster from
# bench/pg_server.sh and a readpast built from this commit:
#   bash docs/bench-results/2026-11-29/run39/lease_call_cost.sh postgresql://postgres@127.0.0.1:25443 build/src/cli/readpast
set -euo pipefail
URL_BASE=$1 READPAST=$2
HERE=docs/bench-results/2026-11-29/run39
U=$URL_BASE/lease_cost
psql -Xq "$URL_BASE/postgres" -c "DROP DATABASE IF EXISTS lease_cost" -c "CREATE DATABASE lease_cost"
"$READPAST" init --db "$U" >/dev/null
# lease_head0: the same function without its SET clauses.
sed -e 's/:"schema"/"readpast"/g' -e 's/FUNCTION "readpast".lease_head(/FUNCTION "readpast".lease_head0(/' \
  src/engines/postgres/sql/migrations/0013_lease_head_pinned.sql |
  python3 -c "
import re, sys
s = sys.stdin.read()
s = s[:s.index('-- The SQL interface')]
print(re.sub(r'\nSET [^\n]*(?=\n)', '', s))" | psql -Xq "$U"
TOKEN="'{00000000-0000-0000-0000-000000000001}'"
DIR=$(mktemp -d)
echo "SELECT * FROM readpast.lease_head('q', 'w', 30000000, $TOKEN, 1);" >"$DIR/head.sql"
echo "SELECT * FROM readpast.lease_head0('q', 'w', 30000000, $TOKEN, 1);" >"$DIR/head0.sql"
cp "$HERE/lease-plain.sql" "$DIR/plain.sql"
for round in 1 2; do
  for v in plain head head0; do
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
psql -Xq "$URL_BASE/postgres" -c "DROP DATABASE lease_cost"
