#!/usr/bin/env bash
# Run 48 (docs/benchmarks.md): where a drain's statements spend their time. One drain
# (D: drain_worker or drain_batch1000_delete, N jobs) on a throwaway cluster logging every
# statement's duration; prints calls, total and mean ms per prepared statement.
#   R=<readpast_bench> D=drain_worker N=20000 bash statements.sh
set -euo pipefail
cd "$(dirname "$0")/../../../.."
: "${R:?set R to a readpast_bench}"
D=${D:-drain_worker} N=${N:-20000}
source bench/pg_throwaway.sh r48dur 25446
psql "$URL" -qc "ALTER SYSTEM SET log_min_duration_statement=0" \
  -c "ALTER SYSTEM SET log_line_prefix='%m [%p] '" -c "SELECT pg_reload_conf()" >/dev/null
sleep 1
BENCH_PG_URL=$URL BENCH_N=$N READPAST_HARNESS_DRAINS=$D "$R" harness drain
python3 - "$DIR/data.log" <<'PY'
import re, sys
stats = {}
for line in open(sys.argv[1]):
    m = re.match(r'\S+ \S+ UTC \[\d+\] LOG:  duration: ([\d.]+) ms  execute ([^:]*):', line)
    if m:
        s = stats.setdefault(m.group(2), [0, 0.0])
        s[0] += 1
        s[1] += float(m.group(1))
for name, (calls, ms) in sorted(stats.items(), key=lambda kv: -kv[1][1])[:6]:
    print(f'{name:28} {calls:5} calls {ms:9.1f} ms {ms / calls:7.2f} ms/call')
PY
