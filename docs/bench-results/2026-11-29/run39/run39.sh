#!/usr/bin/env bash
# Run 39 (docs/benchmarks.md, "The lease's plan pinned, and autovacuum behind the backlog
# regime's dips"): run 37's held backlog regime with every autovacuum pass logged, from the
# repository's root:
#   B=<readpast_bench of this commit> OUT=<dir> bash docs/bench-results/2026-11-29/run39/run39.sh
# Writes OUT/auto-backlog-2producers.jsonl and OUT/autovacuum.txt, the passes over readpast's
# tables with their start (end minus elapsed) and duration. About 12.5 minutes.
set -euo pipefail
OUT=${OUT:?a directory for the results}
mkdir -p "$OUT"
EXTRA_CONF="log_autovacuum_min_duration = 0
log_line_prefix = '%m [%p] '" OUT=$OUT \
  bash docs/bench-results/2026-11-28/run37/run37.sh backlog
python3 - /tmp/run37-auto-backlog-2producers.log >"$OUT/autovacuum.txt" <<'PY'
import datetime, re, sys
lines = open(sys.argv[1]).read().split('\n')
print('start (UTC)      elapsed  what')
for i, line in enumerate(lines):
    m = re.match(r'(\S+ \S+) UTC \[\d+\] LOG:  automatic (vacuum|analyze) of table "\w+\.readpast\.(\w+)"', line)
    if not m:
        continue
    end = datetime.datetime.fromisoformat(m.group(1))
    elapsed = next(float(e.group(1)) for e in (re.search(r'elapsed: ([\d.]+) s', l)
                                               for l in lines[i + 1:i + 20]) if e)
    start = end - datetime.timedelta(seconds=elapsed)
    print(f'{start.time()}  {elapsed:6.2f} s  {m.group(2)} {m.group(3)}')
PY
