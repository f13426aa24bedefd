#!/usr/bin/env python3
"""Run 59: perf samples per million jobs, by role, for profile directories of profile-rings.sh
(or run 58's profile.sh) once cpu_by_role.py has written their agg-*.json.

  python3 compare_profiles.py DIR...

One row per directory and role: the baseline's samples per million jobs, the two held records'
and their ratio to it; and the kernel's copying of pages into the page cache
(copy_folio_from_iter_atomic), which run 58 found grew most under the hold.
"""
import json
import sys

PERIODS = {"base": ("baseline", 20), "held1": ("held", 100), "held2": ("held", 220)}


def jobs(d, name):
    phase, start = PERIODS[name]
    w = [x for x in map(json.loads, open(f"{d}/held.jsonl"))
         if x.get("metric") == "snapshot_window" and x["phase"] == phase
         and start < x["t_s"] <= start + 30]
    return sum(x["value"] for x in w) / len(w) * 30


print("| profile | role | baseline | held, 100–130 s | held, 220–250 s | page-cache copies, baseline → held |")
print("|---|---|---:|---:|---:|---|")
for d in sys.argv[1:]:
    agg = {n: json.load(open(f"{d}/agg-{n}.json")) for n in PERIODS}
    per = {n: 1e6 / jobs(d, n) for n in PERIODS}
    for role in ("pg_worker", "pg_producer"):
        v = {n: agg[n]["bycls"].get(role, 0) * per[n] for n in PERIODS}
        c = {n: agg[n]["bysym"].get(role, {}).get("[k] copy_folio_from_iter_atomic", 0) * per[n]
             for n in PERIODS}
        print(f"| {d.rstrip('/').split('/')[-1]} | {role} | {v['base']:,.0f} "
              f"| {v['held1']:,.0f} ({v['held1'] / v['base']:.2f}) "
              f"| {v['held2']:,.0f} ({v['held2'] / v['base']:.2f}) "
              f"| {c['base']:.0f} → {c['held1']:.0f}, {c['held2']:.0f} |")
