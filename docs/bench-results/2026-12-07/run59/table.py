#!/usr/bin/env python3
"""Run 59: one row per run of the snapshot suite (held-rings.sh's held-*.jsonl files).

  python3 table.py FILE...

Per run: the holder, the baseline minute's median and the range of its six windows as a
fraction of it, the median, worst and count below 0.90 of the "held" phase's windows (nothing
held in a control run), the median of the hold's first and last minutes, the lease p99 of the
two phases, and the readpast schema's size during the hold.
"""
import json
import statistics as st
import sys

print('| run | holder | baseline (its windows) | held median | worst | below 0.90 | first → last minute | lease p99 ms | size in the hold |')
print('|---|---|---:|---:|---:|---:|---|---|---|')
for path in sys.argv[1:]:
    lines = [json.loads(l) for l in open(path) if l.startswith('{')]
    w = [l for l in lines if l.get('metric') == 'snapshot_window']
    s = next(l for l in lines if l.get('metric') == 'snapshot_held_ratio')
    base = [x['value'] for x in w if x['phase'] == 'baseline']
    held = [x for x in w if x['phase'] == 'held']
    rates = [x['value'] for x in held]
    b = st.median(base)
    sizes = [x['storage_bytes'] for x in held]
    name = path.rsplit('/', 2)[-2] + '/' + path.rsplit('-', 1)[-1].split('.')[0]
    print(f"| {name} | {s['holder']} | {b:,.0f} ({min(base) / b:.2f}–{max(base) / b:.2f}) "
          f"| {st.median(rates):,.0f} ({st.median(rates) / b:.2f}) "
          f"| {min(rates) / b:.2f} | {sum(r < 0.9 * b for r in rates)}/{len(rates)} "
          f"| {st.median(rates[:6]):,.0f} → {st.median(rates[-6:]):,.0f} "
          f"| {s['lease_p99_us_baseline'] / 1000:.1f} → {s['lease_p99_us_held'] / 1000:.1f} "
          f"| {min(sizes) / 1e9:.2f} → {max(sizes) / 1e9:.2f} GB |")
