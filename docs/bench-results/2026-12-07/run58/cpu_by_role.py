# Run 58 (docs/benchmarks.md): the CPU of one perf record of profile.sh, by role (the workers' and
# the producers' backends, the benchmark, the server's own processes) and by symbol; writes
# agg-<name>.json beside it.  python3 cpu_by_role.py <dir> <name>
import sys, subprocess, collections, json, re
d = sys.argv[1]; name = sys.argv[2]; t0 = None
# classify pids
cls = {}
for line in open(f"{d}/act-{name}.txt"):
    p = line.rstrip("\n").split("|")
    if len(p) < 3: continue
    pid, bt, q = p[0], p[1], p[2]
    if bt != "client backend": cls[pid] = bt.replace(" ", "_"); continue
    if "lease" in q or "complete" in q or "next_due" in q or "LISTEN" in q: c = "pg_worker"
    elif "INSERT INTO" in q: c = "pg_producer"
    else: c = cls.get(pid, "pg_other")
    if cls.get(pid) in (None, "pg_other"): cls[pid] = c
out = subprocess.run(["perf", "script", "-i", f"{d}/perf-{name}.data", "-F", "comm,pid,ip,sym,dso"],
                     capture_output=True, text=True).stdout
bycls = collections.Counter(); bysym = collections.defaultdict(collections.Counter)
total = 0
for line in out.splitlines():
    m = re.match(r"\s*(\S+)\s+(\d+)\s+([0-9a-f]+)\s+(.*)$", line)
    if not m: continue
    comm, pid = m.group(1), m.group(2)
    rest = m.group(4)
    # rest: "sym+off (dso)" or "[unknown] (dso)"
    mm = re.match(r"(.*)\s+\((.*)\)\s*$", rest)
    sym, dso = (mm.group(1), mm.group(2)) if mm else (rest, "?")
    sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
    if comm == "postgres": c = cls.get(pid, "pg_unknown")
    elif comm.startswith("readpast") : c = "bench"
    elif comm == "swapper": c = "idle"
    else: c = "other:" + comm
    bycls[c] += 1; total += 1
    dsos = dso.split("/")[-1]
    if dsos.startswith("["): dsos = "kernel"
    bysym[c][sym if dsos != "kernel" else "[k] " + sym] += 1
    bysym[c]["@" + dsos] += 1
print(name, "samples", total)
for c, n in bycls.most_common(): print(f"  {c:28s} {n:7d} {n/total:6.1%}")
json.dump({"bycls": bycls, "bysym": {k: dict(v) for k, v in bysym.items()}}, open(f"{d}/agg-{name}.json", "w"))

# Per job: the windows the record covered (profile.sh starts it when the window ending at
# `start` s of its phase is written, for 30 s), their mean jobs/s, and each role's samples per
# million jobs.
PERIODS = {"base": ("baseline", 20), "held1": ("held", 100), "held2": ("held", 220)}
phase, start = PERIODS[name]
windows = [w for w in map(json.loads, open(f"{d}/held.jsonl"))
           if w.get("metric") == "snapshot_window" and w["phase"] == phase
           and start < w["t_s"] <= start + 30]
rate = sum(w["value"] for w in windows) / len(windows)
jobs = rate * 30
print(f"  jobs/s in the record: {rate:.0f}; samples per million jobs:")
for c in ("pg_worker", "pg_producer", "bench"):
    print(f"    {c:26s} {bycls[c] / jobs * 1e6:8.0f}")
