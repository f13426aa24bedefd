#!/usr/bin/env bash
# Run 48 (docs/benchmarks.md): readpast::Worker's drain alone (the harness' drain_worker,
# BENCH_N=20000), builds A and B alternating on one throwaway cluster, ROUNDS rounds
# (bench/ab.sh: paired B/A medians), then the medians of first_job_ms and elapsed_s.
#   A=<readpast_bench before> B=<readpast_bench after> bash ab-worker.sh OUT [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../../../.."
OUT=${1:?an output directory} ROUNDS=${2:-60}
source bench/pg_throwaway.sh r48ab 25448
READPAST_HARNESS_DRAINS=drain_worker bash bench/ab.sh "${URL%/*}" "$OUT" "$ROUNDS" drain
python3 - "$OUT" <<'PY'
import glob, json, os, statistics as st, sys
for side in 'AB':
    rows = [r for f in glob.glob(os.path.join(sys.argv[1], side + '-*.jsonl'))
            for r in map(json.loads, open(f)) if r.get('metric') == 'drain_worker']
    print(side, 'runs', len(rows),
          'jobs/s median', round(st.median(r['value'] for r in rows)),
          'first_job_ms median', st.median(r['first_job_ms'] for r in rows),
          'elapsed_s median', round(st.median(r['elapsed_s'] for r in rows), 4))
PY
