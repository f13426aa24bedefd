#!/usr/bin/env bash
# ctest bench.smoke.mariadb: every suite with tiny sizes (--quick) on a throwaway MariaDB
# server (mariadb_server.sh) on a free loopback port; the server is removed afterwards.
#
#   smoke_mariadb.sh PATH/TO/readpast_bench
set -euo pipefail
BENCH=$1
HERE=$(cd "$(dirname "$0")" && pwd)
DIR=$(mktemp -d /tmp/readpast-bench-smoke-mdb-XXXXXX)
chmod 755 "$DIR"  # the server runs as the mysql user when we are root
trap '"$HERE/mariadb_server.sh" destroy "$DIR/data" >/dev/null 2>&1 || true; rm -rf "$DIR"' EXIT
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL=$("$HERE/mariadb_server.sh" start "$DIR/data" "$PORT")
"$BENCH" run --engine mariadb --mariadb-url "$URL" --quick \
  --suites enqueue,drain,latency,depth,snapshot --out "$DIR/out.jsonl"
cat "$DIR/out.jsonl"
# Both subjects in every suite.
for system in raw-mariadb readpast; do
  for metric in enqueue_single drain_w2_b10 latency_w2_p50 lease_us_depth1000_b1 snapshot_held_ratio; do
    grep -q "\"metric\":\"$metric\".*\"system\":\"$system\"" "$DIR/out.jsonl" ||
      { echo "smoke_mariadb: no $metric line for $system" >&2; exit 1; }
  done
done
