#!/usr/bin/env bash
# Run 33 (docs/benchmarks.md): the peer harness' drains (readpast_bench harness drain: 20,000
# jobs, 8 threads; batches of 1 and 100 with completed jobs kept, batches of 100 and 1,000
# deleted on completion, readpast::Worker) before and after migration 10, A and B alternating
# on one PostgreSQL cluster (bench/pg_server.sh), each side in a database of its own, the
# order swapped every round.
#   A=<readpast_bench before> B=<readpast_bench after> ab_drain.sh URL_BASE OUT [ROUNDS]
set -euo pipefail
URL_BASE=$1 OUT=$2 ROUNDS=${3:-3}
: "${A:?readpast_bench before}" "${B:?readpast_bench after}"
mkdir -p "$OUT"
for side in A B; do
  psql -q "$URL_BASE/postgres" -c "DROP DATABASE IF EXISTS side_${side,,}" -c "CREATE DATABASE side_${side,,}"
done
for round in $(seq 1 "$ROUNDS"); do
  # A first in odd rounds, B first in even ones: neither side always runs on a cooler server.
  order="A B"; (( round % 2 == 0 )) && order="B A"
  for side in $order; do
    echo "[run33 $(date -u +%H:%M:%S)] round $round $side" >&2
    psql -q "$URL_BASE/side_${side,,}" -c CHECKPOINT
    BENCH_PG_URL="$URL_BASE/side_${side,,}" "${!side}" harness drain > "$OUT/$side-$round.jsonl"
  done
done
python3 - "$OUT" <<'PY'
import glob, json, os, sys, statistics
rows = {}
for path in sorted(glob.glob(os.path.join(sys.argv[1], '*.jsonl'))):
    side = os.path.basename(path)[0]
    for r in map(json.loads, open(path)):
        if 'value' in r:
            rows.setdefault((r['metric'], side), []).append(r['value'])
for metric in sorted({m for m, _ in rows}):
    a, b = rows.get((metric, 'A'), []), rows.get((metric, 'B'), [])
    ma, mb = statistics.median(a), statistics.median(b)
    print(f"{metric:24} A {ma:9.0f} ({', '.join(f'{x:.0f}' for x in a)})  "
          f"B {mb:9.0f} ({', '.join(f'{x:.0f}' for x in b)})  B/A {mb / ma:.2f}")
PY
