#!/usr/bin/env python3
"""Run 42: one line per snapshot-suite file: baseline median, the hold's windows against it
(median, worst, below 0.80, last minute), lease p99 and the largest size on disk.
Usage: summarize_held.py FILE.jsonl..."""
import json
import statistics
import sys

for path in sys.argv[1:]:
    windows = {"baseline": [], "held": [], "after": []}
    p99 = {"baseline": [], "held": []}
    summary = {}
    for line in open(path):
        r = json.loads(line)
        if r.get("metric") == "snapshot_window":
            windows[r["phase"]].append(r["value"])
            if r["phase"] in p99:
                p99[r["phase"]].append(r["lease_p99_us"] / 1000)
        elif r.get("metric") == "snapshot_held_ratio":
            summary = r
    base = statistics.median(windows["baseline"])
    held = [w / base for w in windows["held"]]
    last = held[-6:]
    print(f"{path}: baseline {base:,.0f} jobs/s; hold: median {statistics.median(held):.2f}, "
          f"worst {min(held):.2f}, {sum(h < 0.8 for h in held)} of {len(held)} below 0.80, "
          f"last minute {sum(last) / len(last):.2f}, mean {sum(held) / len(held):.2f}; "
          f"lease p99 median window {statistics.median(p99['baseline']):.0f} -> "
          f"{statistics.median(p99['held']):.0f} ms (worst {max(p99['held']):.0f}); "
          f"largest {summary.get('storage_bytes_max_held', 0) / 1e9:.1f} GB; "
          f"after: {' '.join(f'{w / base:.2f}' for w in windows['after'])}")
    print("  windows: " + " ".join(f"{h:.2f}" for h in held))
