#!/usr/bin/env bash
# Run 54 (docs/benchmarks.md): what readpast::Worker does before its first lease. Three
# drain_worker runs of the peer harness' size (20,000 jobs) on a throwaway cluster that logs
# every statement's phases (parse, bind, execute) and every connection; prints, for the last
# run, each logged step from the worker's first connection to the end of its first lease, in
# ms from that connection.
#   R=<readpast_bench> bash first-lease.sh
set -euo pipefail
cd "$(dirname "$0")/../../../.."
: "${R:?set R to a readpast_bench}"
source bench/pg_throwaway.sh r54first 25454
psql "$URL" -qc "ALTER SYSTEM SET log_min_duration_statement=0" \
  -c "ALTER SYSTEM SET log_connections=on" -c "ALTER SYSTEM SET log_line_prefix='%m [%p] '" \
  -c "SELECT pg_reload_conf()" >/dev/null
sleep 1
for _ in 1 2 3; do
  BENCH_PG_URL=$URL BENCH_N=20000 READPAST_HARNESS_DRAINS=drain_worker "$R" harness drain |
    grep -o '"first_job_ms":[0-9]*'
done
python3 - "$DIR/data.log" <<'PY'
import re, sys
from datetime import datetime
steps = []
for line in open(sys.argv[1]):
    m = re.match(r'(\S+ \S+) UTC \[(\d+)\] LOG:  (.*)', line)
    if m:
        steps.append((datetime.fromisoformat(m.group(1)), m.group(2), m.group(3)))
# The last run's worker: its Queue::open is the last connection before the last CHECKPOINT's
# end that is followed by the schema check; its first lease is the first execute of the lease.
start = max(i for i, s in enumerate(steps) if 'statement: CHECKPOINT' in s[2])
first = next(i for i in range(start, len(steps)) if 'execute readpast_lease' in steps[i][2])
t0 = steps[start + 1][0]
for t, pid, what in steps[start + 1:first + 1]:
    what = re.sub(r'(statement|parse|bind|execute) (readpast_\w+):.*', r'\1 \2', what)
    print(f'{(t - t0).total_seconds() * 1000:7.1f} ms  [{pid}] {what[:90]}')
PY
