#!/usr/bin/env bash
# Run 55 (docs/benchmarks.md): how many of the Worker's statements the server has in flight
# during a drain. One harness drain (drain_worker, N jobs) on a throwaway cluster that logs
# every statement's duration; from the log's end times (millisecond steps) and durations,
# the share of the drain with 0, 1, 2, … leases, completions and statements of either kind
# in flight, sampled every 0.05 ms.
#   R=<readpast_bench> N=20000 bash docs/bench-results/2026-12-07/run55/inflight.sh
set -euo pipefail
cd "$(dirname "$0")/../../../.."
: "${R:?set R to a readpast_bench}"
N=${N:-20000}
source bench/pg_throwaway.sh r55inflight 25456
psql "$URL" -qc "ALTER SYSTEM SET log_min_duration_statement=0" \
  -c "ALTER SYSTEM SET log_line_prefix='%m [%p] '" -c "SELECT pg_reload_conf()" >/dev/null
sleep 1
BENCH_PG_URL=$URL BENCH_N=$N READPAST_HARNESS_DRAINS=drain_worker "$R" harness drain |
  grep -o '"value":[0-9.]*'
python3 - "$DIR/data.log" <<'PY'
import collections, datetime, re, sys
events = []
for line in open(sys.argv[1]):
    m = re.match(r'(\S+ \S+) UTC \[\d+\] LOG:  duration: ([\d.]+) ms  execute readpast_(lease|complete_delete):', line)
    if m:
        end = datetime.datetime.strptime(m.group(1), '%Y-%m-%d %H:%M:%S.%f').timestamp() * 1000
        events.append((end - float(m.group(2)), end, m.group(3)))
start = min(e[0] for e in events if e[2] == 'lease')
stop = max(e[1] for e in events)
print(f'drain {stop - start:.1f} ms: {sum(e[2] == "lease" for e in events)} leases, '
      f'{sum(e[2] != "lease" for e in events)} completions')
for kind in ('lease', 'complete_delete', None):
    counts = collections.Counter()
    t = start
    while t < stop:
        counts[sum(1 for e in events if (kind is None or e[2] == kind) and e[0] <= t < e[1])] += 1
        t += 0.05
    total = sum(counts.values())
    print(f'{kind or "either":16} in flight:',
          ', '.join(f'{k}: {v / total:.2f}' for k, v in sorted(counts.items())))
PY
