#!/usr/bin/env python3
"""Lines the 10-s windows of held_sampled.sh's run up with the machine's samples: per window,
its throughput against the baseline's median, then what the kernel did in it (CPU shares of
user, system, iowait and steal; page cache; pages scanned and direct-reclaim stalls; the
disk's writes, flushes and discards). Usage: held_sampled.py OUT"""
import json
import statistics
import sys

out = sys.argv[1]
windows = [json.loads(l) for l in open(f"{out}/held.jsonl")]
windows = [w for w in windows if w.get("metric") == "snapshot_window"]
ended = float(open(f"{out}/ended").read())
base = statistics.median(w["value"] for w in windows if w["phase"] == "baseline")

samples = []
cur = None
for line in open(f"{out}/system.log"):
    parts = line.split()
    if not parts:
        continue
    if parts[0] == "T":
        cur = {"t": float(parts[1])}
        samples.append(cur)
    elif parts[0] == "cpu":
        cur["cpu"] = [int(x) for x in parts[1:9]]
    elif len(parts) == 2:
        cur[parts[0]] = int(parts[1])
    elif len(parts) > 14:
        f = [int(x) for x in parts[3:]]
        cur["wsec"], cur["flush"], cur["dsec"] = f[6], f[15] if len(f) > 15 else 0, f[13]


def at(t):
    return min(samples, key=lambda s: abs(s["t"] - t))


print("phase  t_s  ratio  user sys iowait steal  cacheGB  scanK  dstall cstall  wMB/s flush/s discGB")
n = len(windows)
for i, w in enumerate(windows):
    end = ended - (n - 1 - i) * 10.0
    a, b = at(end - 10.0), at(end)
    if a is b or "cpu" not in a or "cpu" not in b:
        continue
    dt = b["t"] - a["t"]
    cpu = [y - x for x, y in zip(a["cpu"], b["cpu"])]
    tot = sum(cpu) or 1
    user, system, iowait, steal = (cpu[0] + cpu[1]) / tot, cpu[2] / tot, cpu[4] / tot, cpu[7] / tot
    d = lambda k: b.get(k, 0) - a.get(k, 0)
    scan = d("pgscan_kswapd") + d("pgscan_direct")
    stall = d("allocstall_normal") + d("allocstall_movable")
    print(f"{w['phase']:8} {w['t_s']:5.0f} {w['value'] / base:5.2f}  {user:4.2f} {system:4.2f} {iowait:4.2f} "
          f"{steal:4.2f}  {b.get('nr_file_pages', 0) * 4096 / 1e9:6.1f}  {scan / 1000:6.0f}  {stall:5d} "
          f"{d('compact_stall'):5d}  {d('wsec') * 512 / 1e6 / dt:6.0f} {d('flush') / dt:6.0f} "
          f"{d('dsec') * 512 / 1e9:5.2f}")
