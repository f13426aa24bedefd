#!/usr/bin/env bash
# Run 30 (docs/benchmarks.md): readpast_bench's drains, readpast::Worker's among them, beside
# graphile-worker's, A and B alternating, each run on a fresh cluster of the peer harness
# (shared/peers, run-all.sh with BENCH_PARTS="graphile extra").
#   A=<readpast_bench> B=<readpast_bench> bash docs/bench-results/2026-11-27/run30/run30.sh [OUT] [ROUNDS]
# With SWAP=1 the order of A and B alternates between rounds (A first in the first round).
# A: built at the commit of this run's section; B: the same with worker-settling-slots.patch
# applied (git apply), both configured as scripts/test.sh's strict configuration with
# -DREADPAST_BUILD_BENCH=ON.
set -euo pipefail
cd "$(dirname "$0")/../../../.."
ROOT=$(pwd)
OUT=${1:-$ROOT/bench-results/run30-$(date -u +%Y%m%dT%H%M%SZ)}
ROUNDS=${2:-3}
PEERS_DIR=${PEERS_DIR:-/work/shared/peers}
: "${A:?set A to the readpast_bench before}" "${B:?set B to the readpast_bench after}"
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/readpast-run30-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cp -r "$PEERS_DIR/." "$WORK/" && chmod -R u+w "$WORK"
(cd "$WORK/node" && npm ci --no-audit --no-fund >/dev/null 2>&1)
for round in $(seq 1 "$ROUNDS"); do
  # SWAP=1 (run 39): B first in even rounds, so that neither side always runs second.
  order="A B"; [ -n "${SWAP:-}" ] && (( round % 2 == 0 )) && order="B A"
  for side in $order; do
    echo "[run30 $(date -u +%H:%M:%S)] round $round $side" >&2
    (cd "$WORK" && READPAST_BENCH=${!side} BENCH_EXTRA_DIR=$ROOT/bench/peers/extra.d \
      READPAST_HARNESS_PARTS=drain BENCH_PARTS="graphile extra" \
      ./run-all.sh "$OUT/$side-$round.jsonl" >/dev/null 2>&1) || echo "run failed: $side $round" >&2
  done
done
python3 - "$OUT" <<'PY'
import glob, json, os, sys
for path in sorted(glob.glob(os.path.join(sys.argv[1], '*.jsonl'))):
    rows = {(r['system'], r['metric']): r['value'] for r in map(json.loads, open(path)) if 'value' in r}
    g = rows.get(('graphile-worker', 'drain_perfpreset'))
    w = rows.get(('readpast', 'drain_worker'))
    print(os.path.basename(path), 'graphile', g, 'drain_worker', w, 'ratio', round(w / g, 2) if g and w else None)
PY
