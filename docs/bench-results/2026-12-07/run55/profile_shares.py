#!/usr/bin/env python3
"""Run 55: one line per profile of sqlite-profiled-every-minute.sh (OUT/*.self.txt), in time
order, with the share of the bench process' samples in the functions that runs 50-54 named:
the WAL index's lookup, the kernel copying written frames into the page cache and zeroing
new pages, SQLite's interpreter, and the kernel as a whole. Beside each, the jobs/s of the
held.jsonl windows that the profile overlapped, as a ratio of the baseline's median.

    python3 profile_shares.py OUT
"""
import glob
import json
import os
import re
import statistics
import sys

FUNCTIONS = {
    'WalFindFrame': 'sqlite3WalFindFrame',
    'copy_folio': 'copy_folio_from_iter_atomic',
    'clear_page': 'clear_page_erms',
    'VdbeExec': 'sqlite3VdbeExec',
}


def shares(path):
    found = dict.fromkeys(FUNCTIONS, 0.0)
    kernel = 0.0
    for line in open(path):
        m = re.match(r'\s*([\d.]+)%\s+(\S+)\s+\[(.)\]\s+(\S+)', line)
        if not m:
            continue
        share, dso, _, symbol = float(m.group(1)), m.group(2), m.group(3), m.group(4)
        if dso == '[kernel.kallsyms]':
            kernel += share  # of the 40 lines kept: a lower bound
        for name, wanted in FUNCTIONS.items():
            if symbol == wanted:
                found[name] += share
    return found, kernel


def windows(out):
    """(phase, start s, end s, jobs/s) of each window, from the start of the baseline; the
    script's clock starts a few seconds earlier (the bench's set-up and prefill), so the
    windows beside a profile are those of about the same time, not exactly."""
    rows = [json.loads(line) for line in open(os.path.join(out, 'held.jsonl'))]
    rows = [r for r in rows if r.get('metric') == 'snapshot_window']
    result, offset = [], 0.0
    for phase in ('baseline', 'held', 'after'):
        mine = [r for r in rows if r.get('phase') == phase]
        previous = 0.0
        for r in mine:
            result.append((phase, offset + previous, offset + r['t_s'], r['value']))
            previous = r['t_s']
        offset += previous
    return result


def main(out):
    spans = {}
    for line in open(os.path.join(out, 'profiles.log')):
        m = re.match(r'profile (\S+) from (\d+)s to (\d+)s', line)
        if m:
            spans[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    wins = windows(out)
    base = statistics.median(w[3] for w in wins if w[0] == 'baseline') if wins else None
    print(f'{"profile":12} {"s":>9} ' + ' '.join(f'{n:>12}' for n in FUNCTIONS)
          + f' {"kernel>=":>9} {"windows":>12}')
    for path in sorted(glob.glob(os.path.join(out, '*.self.txt')),
                       key=lambda p: spans.get(os.path.basename(p)[:-9], (0, 0))[0]):
        name = os.path.basename(path)[:-len('.self.txt')]
        found, kernel = shares(path)
        start, end = spans.get(name, (0, 0))
        near = [w[3] / base for w in wins if base and w[1] < end and w[2] > start]
        ratios = ' '.join(f'{r:.2f}' for r in near)
        print(f'{name:12} {start:>4}-{end:<4} '
              + ' '.join(f'{found[n]:>11.2f}%' for n in FUNCTIONS)
              + f' {kernel:>8.1f}% {ratios:>12}')


if __name__ == '__main__':
    main(sys.argv[1])
