# Run 58 (docs/benchmarks.md): readpast::Worker's drain over graphile-worker's performance preset in each
# run of run30.sh's output directory, and the median ratio per side.  python3 peers_summary.py <dir>
import json, glob, os, statistics as st, sys
d = sys.argv[1]
ratios = {}
for f in sorted(glob.glob(os.path.join(d, "*.jsonl"))):
    g = w = None
    for l in open(f):
        x = json.loads(l)
        if x.get("system") == "graphile-worker" and x.get("metric") == "drain_perfpreset": g = x["value"]
        if x.get("system") == "readpast" and x.get("metric") == "drain_worker": w = x["value"]
    if g and w:
        r = w / g
        ratios.setdefault(os.path.basename(f)[0], []).append((r, g, w))
        print(os.path.basename(f), "graphile", g, "drain_worker", w, "ratio", round(r, 2))
for side, rs in ratios.items():
    print(side, "median ratio", round(st.median(r for r, _, _ in rs), 2), "range", round(min(r for r, _, _ in rs), 2), "-", round(max(r for r, _, _ in rs), 2),
          "at 1.5 or more:", sum(r >= 1.5 for r, _, _ in rs), "of", len(rs),
          "graphile median", round(st.median(g for _, g, _ in rs)), "readpast median", round(st.median(w for _, _, w in rs)))
