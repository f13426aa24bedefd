#!/usr/bin/env python3
"""Run 51: clean_ab.sh's results: per metric (suite, shape, batch), the median per side and
the median of the per-round ratios B/A. Usage: clean_ab.py OUT"""
import collections
import glob
import json
import os
import statistics
import sys

out = sys.argv[1]
values = collections.defaultdict(lambda: collections.defaultdict(dict))
for path in glob.glob(os.path.join(out, "*-*.jsonl")):
    side, round_ = os.path.basename(path)[:-6].split("-")
    for line in open(path):
        r = json.loads(line)
        if r.get("unit") != "jobs/s":
            continue
        key = " ".join(str(r.get(k, "")) for k in ("suite", "metric", "shape", "batch"))
        values[key][side][round_] = r["value"]
for key in sorted(values):
    a, b = values[key]["A"], values[key]["B"]
    rounds = sorted(set(a) & set(b))
    if not rounds:
        continue
    ratios = [b[r] / a[r] for r in rounds if a[r] > 0]
    print(f"{key:45} A {statistics.median(a.values()):10.0f}  B {statistics.median(b.values()):10.0f}"
          f"  B/A {statistics.median(ratios):5.3f} ({min(ratios):.3f}-{max(ratios):.3f})")
