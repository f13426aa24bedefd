#!/usr/bin/env python3
"""Run 46: the backends' CPU samples per thousand jobs, by function (self time), in the baseline
and at 110 and 290 s into the hold, from profile.sh's perf files, and the functions that grew
most. The jobs per interval come from the windows of held-main.jsonl that the interval covers.
  python3 per_job.py DIR      (DIR: profile.sh's OUT, with perf-*.data and held-main.jsonl)
"""
import json
import re
import subprocess
import sys

out = sys.argv[1]
windows = [json.loads(line) for line in open(f'{out}/held-main.jsonl')]
windows = [w for w in windows if w.get('metric') == 'snapshot_window']


def rate(phase, first, last):
    """Median of the jobs/s of `phase`'s windows first..last (0-based)."""
    ws = [w['value'] for w in windows if w['phase'] == phase][first:last + 1]
    return sorted(ws)[len(ws) // 2]


# perf ran for 15 s from 30 s into the baseline, and from 110 and 290 s into the hold.
phases = {'baseline': rate('baseline', 3, 4) * 15, 'held110': rate('held', 11, 12) * 15,
          'held290': rate('held', 29, 30) * 15}
samples = {}
for name in phases:
    report = subprocess.run(['perf', 'report', '-i', f'{out}/perf-{name}.data', '-n',
                             '--no-children', '--comm', 'postgres', '--sort', 'sym', '-g', 'none'],
                            capture_output=True, text=True, check=True).stdout
    samples[name] = {m.group(2).strip(): int(m.group(1)) for m in
                     (re.match(r'\s*[\d.]+%\s+(\d+)\s+\[.\]\s+(.*)$', l) for l in report.split('\n'))
                     if m}
per_job = {n: {s: c / phases[n] * 1000 for s, c in samples[n].items()} for n in phases}
print('jobs in each 15-s interval:', {n: round(j) for n, j in phases.items()})
print('backends\' samples per 1,000 jobs: ' +
      ', '.join(f'{n} {sum(per_job[n].values()):.2f}' for n in phases))
rows = sorted(set(per_job['baseline']) | set(per_job['held290']),
              key=lambda s: per_job['held290'].get(s, 0) - per_job['baseline'].get(s, 0),
              reverse=True)
print(f"{'function':40s} {'baseline':>9s} {'held110':>9s} {'held290':>9s} {'growth':>8s}")
for s in rows[:30]:
    b, h1, h = (per_job[n].get(s, 0) for n in ('baseline', 'held110', 'held290'))
    print(f'{s[:40]:40s} {b:9.3f} {h1:9.3f} {h:9.3f} {h - b:+8.3f}')
