#!/usr/bin/env python3
"""Run 45: paired B/A ratios of the SQLite enqueue and drain suites, by shape.

    python3 summarize_drain.py DIR   (DIR holds A1.jsonl, B1.jsonl, ... of drain_ab.sh)

Rounds pair A_k with B_k; prints each shape's medians and the median and range of B_k/A_k.
"""
import json
import statistics
import sys
from pathlib import Path


def shapes(path):
    out = {}
    for line in path.open():
        row = json.loads(line)
        if row.get("metric") == "meta" or row.get("system") != "readpast":
            continue
        name = row["metric"] + ("_" + row["form"] if row.get("form") else "")
        out[name] = row["value"]
    return out


def main():
    directory = Path(sys.argv[1])
    runs = {p.stem: shapes(p) for p in sorted(directory.glob("*.jsonl"))}
    rounds = sorted({k[1:] for k in runs if k[0] == "A"} & {k[1:] for k in runs if k[0] == "B"})
    names = [n for n in runs["A" + rounds[0]]]
    medians = []
    for name in names:
        a = [runs["A" + r][name] for r in rounds if name in runs["A" + r]]
        b = [runs["B" + r][name] for r in rounds if name in runs["B" + r]]
        ratios = [runs["B" + r][name] / runs["A" + r][name] for r in rounds
                  if name in runs["A" + r] and name in runs["B" + r]]
        m = statistics.median(ratios)
        medians.append(m)
        print(f"{name:34s} A {statistics.median(a):>10,.0f}  B {statistics.median(b):>10,.0f}  "
              f"B/A median {m:.2f} ({min(ratios):.2f}-{max(ratios):.2f})")
    print(f"shapes: {len(medians)}, median of the paired medians {statistics.median(medians):.2f}, "
          f"{sum(m > 1 for m in medians)} above 1, range {min(medians):.2f}-{max(medians):.2f}")


if __name__ == "__main__":
    main()
