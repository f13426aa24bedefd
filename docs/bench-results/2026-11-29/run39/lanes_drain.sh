#!/usr/bin/env bash
# Run 39 (docs/benchmarks.md): from the repository's root, with a cluster from bench/pg_server.sh:
#   B=<readpast_bench of this commit> bash docs/bench-results/2026-11-29/run39/lanes_drain.sh postgresql://postgres@127.0.0.1:25443 OUT 3
# The drain suite with leases from the head (lease_lanes=never: no snapshot is held, so auto is
# the same) against leases by lane always, alternating, a fresh database per run.
set -euo pipefail
URL_BASE=$1 OUT=$2 ROUNDS=${3:-3}
B=${B:?readpast_bench}
mkdir -p "$OUT"
for round in $(seq 1 "$ROUNDS"); do
  order="never always"; (( round % 2 == 0 )) && order="always never"
  for mode in $order; do
    db="lanes_${mode}_$round"
    psql -q "$URL_BASE/postgres" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
    echo "[lanes $(date -u +%H:%M:%S)] round $round $mode" >&2
    "$B" run --engine postgres --pg-url "$URL_BASE/$db" --readpast-pg-url "$URL_BASE/$db?lease_lanes=$mode" \
      --suites drain --systems readpast --out "$OUT/$mode-$round.jsonl" >/dev/null
    psql -q "$URL_BASE/postgres" -c "DROP DATABASE $db"
  done
done
python3 - "$OUT" <<'PY'
import glob, json, os, sys, statistics
rows = {}
for path in sorted(glob.glob(os.path.join(sys.argv[1], '*.jsonl'))):
    mode = os.path.basename(path).split('-')[0]
    for r in map(json.loads, open(path)):
        if r.get('system') == 'readpast' and 'value' in r and r.get('metric') != 'meta':
            rows.setdefault(r['metric'], {}).setdefault(mode, []).append(r['value'])
for metric, by in sorted(rows.items()):
    n, a = by.get('never', []), by.get('always', [])
    if n and a:
        print(f"{metric:32} never {statistics.median(n):9.0f}  always {statistics.median(a):9.0f}  always/never {statistics.median(a) / statistics.median(n):.2f}")
PY
