#!/usr/bin/env python3
"""One Markdown row per run of the snapshot suite (bench/held.sh's held-*.jsonl files).

  python3 bench/held_table.py FILE...

Per run: the holder; the baseline's median and the range of its windows as a fraction of it;
the median, worst and count below 0.90 of the "held" phase's windows (nothing is held in a
control run, HOLDER=none); the median of the hold's first and last minutes; the lease p99 of
the two phases; the readpast schema's size through the hold; the first three windows after
it. Windows of the phase "warmup" are left out. Standard library only.
"""
import json
import statistics as st
import sys

print('| run | holder | baseline (its windows) | held median | worst | below 0.90 '
      '| first → last minute | lease p99 ms | size in the hold | after |')
print('|---|---|---:|---:|---:|---:|---|---|---|---|')
for path in sys.argv[1:]:
    lines = [json.loads(l) for l in open(path) if l.startswith('{')]
    w = [l for l in lines if l.get('metric') == 'snapshot_window']
    s = next(l for l in lines if l.get('metric') == 'snapshot_held_ratio')
    base = [x['value'] for x in w if x['phase'] == 'baseline']
    held = [x for x in w if x['phase'] == 'held']
    after = [x['value'] for x in w if x['phase'] == 'after']
    rates = [x['value'] for x in held]
    b = st.median(base)
    sizes = [x['storage_bytes'] for x in held if 'storage_bytes' in x] or [0]
    name = path.rsplit('/', 1)[-1].removeprefix('held-').removesuffix('.jsonl')
    print(f"| {name} | {s['holder']} | {b:,.0f} ({min(base) / b:.2f}–{max(base) / b:.2f}) "
          f"| {st.median(rates):,.0f} ({st.median(rates) / b:.2f}) "
          f"| {min(rates) / b:.2f} | {sum(r < 0.9 * b for r in rates)}/{len(rates)} "
          f"| {st.median(rates[:6]):,.0f} → {st.median(rates[-6:]):,.0f} "
          f"| {s['lease_p99_us_baseline'] / 1000:.1f} → {s['lease_p99_us_held'] / 1000:.1f} "
          f"| {min(sizes) / 1e9:.2f} → {max(sizes) / 1e9:.2f} GB "
          f"| {' '.join(f'{x:,.0f}' for x in after[:3])} |")
