#!/usr/bin/env bash
# ctest bench.smoke.postgres: every suite with tiny sizes (--quick) on a throwaway PostgreSQL
# cluster (pg_server.sh) on a free loopback port, for the three subjects: the raw-SQL ceiling,
# the ring prototype of docs/postgres-storage.md (raw_ring_subject.cpp) and readpast. The
# snapshot suite runs three times: keeping a backlog, at a fixed offered rate with a holder
# that also writes, and as the control with nothing held. The cluster is removed afterwards.
#
#   smoke_postgres.sh PATH/TO/readpast_bench
set -euo pipefail
BENCH=$1
HERE=$(cd "$(dirname "$0")" && pwd)
PG_BIN=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
export PG_BIN
DIR=$(mktemp -d /tmp/readpast-bench-smoke-pg-XXXXXX)
chmod 755 "$DIR"  # the server runs as the postgres user when we are root
trap '"$HERE/pg_server.sh" destroy "$DIR/data" >/dev/null 2>&1 || true; rm -rf "$DIR"' EXIT
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL=$("$HERE/pg_server.sh" start "$DIR/data" "$PORT")
"$BENCH" run --engine postgres --pg-url "$URL" --quick --systems raw,ring,readpast \
  --suites enqueue,drain,latency,depth,snapshot --out "$DIR/out.jsonl"
# The offered rate shared by two producers, and the prototype's lease through its PL/pgSQL
# function (RING_LEASE=function, bench/raw_ring_subject.cpp).
RING_LEASE=function "$BENCH" run --engine postgres --pg-url "$URL" --quick --systems ring,readpast \
  --suites snapshot --snapshot-rate 2000 --snapshot-producers 2 --snapshot-holder write \
  --out "$DIR/rate.jsonl"
# The control: the same phases with nothing held (--snapshot-holder none).
"$BENCH" run --engine postgres --pg-url "$URL" --quick --systems readpast --suites snapshot \
  --snapshot-holder none --out "$DIR/control.jsonl"
cat "$DIR/out.jsonl" "$DIR/rate.jsonl" "$DIR/control.jsonl"
fail() { echo "smoke_postgres: $*" >&2; exit 1; }
for system in raw-sql raw-ring readpast; do
  for metric in enqueue_single drain_w2_b10 latency_w2_p50 lease_us_depth1000_b1 snapshot_held_ratio; do
    grep -q "\"metric\":\"$metric\".*\"system\":\"$system\"" "$DIR/out.jsonl" ||
      fail "no $metric line for $system"
  done
done
# The snapshot suite's windows carry the backlog, the lease percentiles and the size on disk;
# its summary, the worst window and the sizes before, during and after the hold.
python3 - "$DIR/out.jsonl" "$DIR/rate.jsonl" "$DIR/control.jsonl" <<'PY'
import json, sys
for path in sys.argv[1:]:
    lines = [json.loads(l) for l in open(path) if l.startswith("{")]
    windows = [l for l in lines if l.get("metric") == "snapshot_window"]
    summaries = [l for l in lines if l.get("metric") == "snapshot_held_ratio"]
    assert windows and summaries, path
    for w in windows:
        for key in ("backlog", "lease_p99_us", "storage_bytes", "phase"):
            assert key in w, (path, key, w)
    assert {w["phase"] for w in windows} == {"baseline", "held", "after"}, path
    for s in summaries:
        for key in ("min_window_ratio", "lease_p99_us_held", "backlog_end_held",
                    "storage_bytes_max_held", "storage_bytes_end_after"):
            assert key in s, (path, key, s["system"])
        assert s["storage_bytes_max_held"] > 0, (path, s["system"])
    if "rate" in path:
        # 2,000 jobs/s offered are carried: the backlog stays within a few batches.
        for s in summaries:
            assert s["offered_jobs_per_s"] == 2000 and s["backlog_end_held"] <= 1000, s
            assert s["holder"] == "write" and s["producers"] == 2, s
    if "control" in path:
        # Nothing held: no transaction, so no xmin to report.
        for s in summaries:
            assert s["holder"] == "none" and s["snapshot_xmin"] == "", s
PY
