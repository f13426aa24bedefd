#!/usr/bin/env bash
# Two builds of readpast_bench, A (before a change) and B (after), alternating on one
# PostgreSQL cluster (bench/pg_server.sh): the peer harness' parts (readpast_bench harness:
# enqueue, drain, latency; BENCH_N and the other BENCH_* settings from the environment), each
# side in a database of its own, a CHECKPOINT before each run, the order swapped every round
# so that neither side always runs on a cooler server. Prints each metric's medians and the
# median of the per-round ratios B/A.
#   A=<readpast_bench before> B=<readpast_bench after> bench/ab.sh URL_BASE OUT [ROUNDS] [PARTS…]
# URL_BASE is the cluster's URL without a database (bench/pg_server.sh's, less "/bench").
set -euo pipefail
URL_BASE=$1 OUT=$2 ROUNDS=${3:-4}
shift $(( $# < 3 ? $# : 3 ))
PARTS=("${@:-drain}")
: "${A:?readpast_bench before}" "${B:?readpast_bench after}"
mkdir -p "$OUT"
for side in A B; do
  psql -q "$URL_BASE/postgres" -c "DROP DATABASE IF EXISTS side_${side,,}" \
    -c "CREATE DATABASE side_${side,,}"
done
for round in $(seq 1 "$ROUNDS"); do
  order="A B"; (( round % 2 == 0 )) && order="B A"
  for side in $order; do
    echo "[ab $(date -u +%H:%M:%S)] round $round $side: ${PARTS[*]}" >&2
    psql -q "$URL_BASE/side_${side,,}" -c CHECKPOINT
    BENCH_PG_URL="$URL_BASE/side_${side,,}" "${!side}" harness "${PARTS[@]}" \
      > "$OUT/$side-$round.jsonl"
  done
done
python3 - "$OUT" <<'PY'
import glob, json, os, sys, statistics
rows = {}
for path in sorted(glob.glob(os.path.join(sys.argv[1], '*.jsonl'))):
    side, round_ = os.path.basename(path)[:-len('.jsonl')].split('-')
    for line in open(path):
        if line.startswith('{'):
            r = json.loads(line)
            if 'value' in r:
                rows.setdefault(r['metric'], {}).setdefault(side, {})[round_] = r['value']
for metric, sides in sorted(rows.items()):
    a, b = sides.get('A', {}), sides.get('B', {})
    if not a or not b:
        continue
    paired = [b[k] / a[k] for k in a if k in b and a[k]]
    print(f"{metric:26} A {statistics.median(a.values()):9.0f}  B {statistics.median(b.values()):9.0f}"
          f"  paired B/A median {statistics.median(paired):.3f} ({min(paired):.2f}-{max(paired):.2f},"
          f" {len(paired)} rounds)")
PY
