#!/usr/bin/env bash
# Run 37: readpast_bench's enqueue and latency suites (readpast beside the raw-SQL ceiling)
# before and after schema 11, whose insert trigger also registers lanes and writes marks.
# A and B alternate on one cluster (bench/pg_server.sh), each run in a fresh database, the
# order swapped every round.
#   A=<readpast_bench before> B=<readpast_bench after> ab_suites.sh URL_BASE OUT [ROUNDS]
set -euo pipefail
URL_BASE=$1 OUT=$2 ROUNDS=${3:-3}
: "${A:?readpast_bench before}" "${B:?readpast_bench after}"
mkdir -p "$OUT"
for round in $(seq 1 "$ROUNDS"); do
  order="A B"; (( round % 2 == 0 )) && order="B A"
  for side in $order; do
    db="suites_${side,,}_$round"
    psql -q "$URL_BASE/postgres" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
    echo "[run37 $(date -u +%H:%M:%S)] round $round $side" >&2
    "${!side}" run --engine postgres --pg-url "$URL_BASE/$db" --suites enqueue,latency \
      --systems raw,readpast --out "$OUT/$side-$round.jsonl" >/dev/null
    psql -q "$URL_BASE/postgres" -c "DROP DATABASE $db"
  done
done
python3 - "$OUT" <<'PY'
import glob, json, os, sys, statistics
rows = {}
for path in sorted(glob.glob(os.path.join(sys.argv[1], '*.jsonl'))):
    side = os.path.basename(path)[0]
    for r in map(json.loads, open(path)):
        if r.get('system') in ('raw', 'readpast') and 'value' in r and r.get('metric') != 'meta':
            key = (r['system'], r['metric'], r.get('unit', ''))
            rows.setdefault(key, {}).setdefault(side, []).append(r['value'])
for key in sorted(rows):
    a, b = rows[key].get('A', []), rows[key].get('B', [])
    if not a or not b:
        continue
    ma, mb = statistics.median(a), statistics.median(b)
    print(f"{key[0]:8} {key[1]:28} {key[2]:6} A {ma:10.1f} B {mb:10.1f} B/A {mb / ma:.2f}")
PY
