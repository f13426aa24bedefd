#!/usr/bin/env python3
"""Run 43: one line per 10-s window, or the held run's summary (--held), of snapshot-suite
output files (readpast_bench --suites snapshot).
  python3 summarize.py [--held] FILE.jsonl...
"""
import json
import statistics as st
import sys

held = sys.argv[1] == '--held'
for f in sys.argv[2 if held else 1:]:
    rows = [json.loads(line) for line in open(f)]
    w = [d for d in rows if d.get('metric') == 'snapshot_window']
    if not held:
        print(f, ' '.join(str(round(d['value'])) for d in w), 'p99 ms',
              ' '.join(str(round(d['lease_p99_us'] / 1000, 1)) for d in w))
        continue
    by = {p: [d for d in w if d['phase'] == p] for p in ('baseline', 'held', 'after')}
    b = [d['value'] for d in by['baseline']]
    h = [d['value'] for d in by['held']]
    bm = st.median(b)
    print(f)
    print('  baseline median %.0f (%s)' % (bm, ' '.join('%.0f' % x for x in b)))
    print('  held: median %.0f (%.2f), mean %.0f, worst %.0f (%.2f), windows below 0.90: %d of %d,'
          ' last minute %.0f (%.2f)' % (st.median(h), st.median(h) / bm, st.mean(h), min(h),
                                         min(h) / bm, sum(x < 0.9 * bm for x in h), len(h),
                                         st.median(h[-6:]), st.median(h[-6:]) / bm))
    print('  after: %s' % ' '.join('%.0f' % d['value'] for d in by['after']))
    pb = [d['lease_p99_us'] / 1000 for d in by['baseline']]
    ph = [d['lease_p99_us'] / 1000 for d in by['held']]
    print('  lease p99 ms: baseline median %.1f; held median %.1f, worst %.1f'
          % (st.median(pb), st.median(ph), max(ph)))
    sz = [d['storage_bytes'] / 1e6 for d in by['held']]
    print('  storage MB during the hold: %.0f to %.0f, last %.0f' % (min(sz), max(sz), sz[-1]))
