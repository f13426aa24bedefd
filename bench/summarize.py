#!/usr/bin/env python3
"""Summarise readpast_bench JSON lines (bench/run.sh) into Markdown, and write plot data.

    python3 bench/summarize.py RESULTS/*.jsonl [--peers PEERS_DIR] [--plot-data DIR]

For every (engine, metric, system) it reports the median over the runs found and the spread
((max - min) / median); readpast's percentage of the raw-SQL ceiling is the median of the
per-run percentages (each measured against the ceiling of its own run). Then the targets of
issue 5, evaluated from the same numbers. With --peers, the peer harness' result files of
bench/peers/run.sh are read too (run-*.jsonl, workers.jsonl). Standard library only.
"""
import argparse
import glob
import json
import os
import statistics
from collections import OrderedDict, defaultdict


def load(paths):
    rows = []
    for path in paths:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    r = json.loads(line)
                    r["_file"] = os.path.basename(path)
                    rows.append(r)
    return rows


def med(values):
    values = [v for v in values if isinstance(v, (int, float))]
    return statistics.median(values) if values else None


def spread(values):
    values = [v for v in values if isinstance(v, (int, float))]
    if len(values) < 2 or not statistics.median(values):
        return None
    return (max(values) - min(values)) / statistics.median(values)


def fmt(v, unit=""):
    if v is None:
        return "–"
    if unit in ("ms", "us", "ratio") or abs(v) < 100:
        return f"{v:.2f}"
    return f"{v:,.0f}"


def group(rows):
    g = OrderedDict()
    for r in rows:
        if r.get("system") == "_meta" or r.get("metric") == "snapshot_window":
            continue
        key = (r.get("engine", "postgres") + (" (synchronous=normal)" if r.get("sqlite_synchronous") == "normal" else ""),
               r["metric"], r["system"])
        g.setdefault(key, []).append(r)
    return g


def table(rows):
    g = group(rows)
    out = ["| engine | metric | system | runs | median | spread | unit | % of raw (median) |",
           "|---|---|---|---|---|---|---|---|"]
    for (engine, metric, system), rs in g.items():
        vals = [r["value"] for r in rs]
        pcts = [r.get("pct_of_ceiling") for r in rs]
        unit = rs[0].get("unit", "")
        s = spread(vals)
        out.append(f"| {engine} | {metric} | {system} | {len(rs)} | {fmt(med(vals), unit)} | "
                   f"{'' if s is None else f'{s * 100:.0f}%'} | {unit} | {fmt(med(pcts))} |")
    return "\n".join(out)


def value(g, engine, metric, system, field="value"):
    rs = g.get((engine, metric, system), [])
    return med([r.get(field) for r in rs])


def peers_best(peer_rows, metrics_prefix="drain_"):
    """Highest median drain of each peer system over its variants (harness runs)."""
    by = defaultdict(list)
    for r in peer_rows:
        if r.get("metric", "").startswith(metrics_prefix) and r.get("system") not in ("readpast", "_meta"):
            by[(r["system"], r["metric"])].append(r.get("value"))
    best = {}
    for (system, metric), vals in by.items():
        m = med(vals)
        if m is not None and (system not in best or m > best[system][1]):
            best[system] = (metric, m)
    return best


def targets(rows, peer_rows):
    g = group(rows)
    pg, sq, mdb = "postgres", "sqlite", "mariadb"
    lines = ["| target | measured | met? |", "|---|---|---|"]

    def row(name, measured, ok):
        lines.append(f"| {name} | {measured} | {'yes' if ok else ('–' if ok is None else '**no**')} |")

    drain = [(m, value(g, pg, m, "readpast", "pct_of_ceiling")) for m in
             ("drain_w8_b100", "drain_w8_b1000", "drain_w16_b1000")]
    for m, pct in drain:
        row(f"PostgreSQL {m} ≥ 90% of raw SQL", f"{fmt(pct)}%", None if pct is None else pct >= 90)
    if peer_rows:
        best = peers_best([r for r in peer_rows if r.get("_file", "").startswith("run-")])
        ours = peers_best([dict(r, system="readpast*") for r in peer_rows
                           if r.get("system") == "readpast" and r.get("_file", "").startswith("run-")])
        top = max(((s, m, v) for s, (m, v) in best.items() if s not in ("sql-reference",)
                   and not s.startswith("beanstalkd")), key=lambda x: x[2], default=None)
        if top and ours:
            rm, rv = ours["readpast*"]
            row("PostgreSQL drain ≥ 1.5× the fastest PostgreSQL peer",
                f"readpast {rm} {fmt(rv)} vs {top[0]} {top[1]} {fmt(top[2])}: {rv / top[2]:.2f}×",
                rv >= 1.5 * top[2])
    for m in ("enqueue_batch100", "enqueue_batch1000", "enqueue_single"):
        pct = value(g, pg, m, "readpast", "pct_of_ceiling")
        row(f"PostgreSQL {m} ≥ 80% of raw SQL", f"{fmt(pct)}%", None if pct is None else pct >= 80)
    p50, p99 = value(g, pg, "latency_p50", "readpast"), value(g, pg, "latency_p99", "readpast")
    row("PostgreSQL add → start p50 ≤ 1 ms", f"{fmt(p50, 'ms')} ms", None if p50 is None else p50 <= 1)
    row("PostgreSQL add → start p99 ≤ 2 ms", f"{fmt(p99, 'ms')} ms", None if p99 is None else p99 <= 2)
    for engine in (pg, sq, mdb):
        depth_rows = [r for r in rows if r.get("engine") == engine and r.get("system") == "readpast"
                      and r.get("metric", "").startswith("lease_us_depth")]
        # Deepest against shallowest within one file (one run): depths from different runs
        # would compare different machines' moods.
        runs = defaultdict(list)
        for r in depth_rows:
            runs[(r["batch"], r["_file"])].append(r)
        for (b, _), rs in sorted(runs.items(), key=lambda kv: (max(r["depth"] for r in kv[1]), kv[0][0])):
            rs.sort(key=lambda r: r["depth"])
            if len(rs) >= 2:
                ratio = rs[-1]["value"] / rs[0]["value"]
                row(f"{engine} lease(max_jobs={b}) at {rs[-1]['depth']:,} jobs within 1.5× of {rs[0]['depth']:,}",
                    f"{fmt(rs[0]['value'], 'us')} → {fmt(rs[-1]['value'], 'us')} µs: {ratio:.2f}×", ratio <= 1.5)
    for engine in (pg, sq, mdb):
        ratio = value(g, engine, "snapshot_held_ratio", "readpast")
        if ratio is not None:
            row(f"{engine}: throughput with a snapshot held ≥ 50% of normal", f"{ratio * 100:.0f}%", ratio >= 0.5)
    for engine in (sq, sq + " (synchronous=normal)"):
        for m in ("drain_w4_b1_p4", "drain_w4_b10_p4", "drain_w4_b100_p4", "drain_w4_b1000_p4"):
            pct = value(g, engine, m, "readpast", "pct_of_ceiling")
            if pct is not None:
                row(f"{engine}: {m} (4 processes) ≥ 80% of raw SQLite", f"{fmt(pct)}%", pct >= 80)
    return "\n".join(lines)


def plot_data(rows, peer_rows, outdir):
    os.makedirs(outdir, exist_ok=True)
    g = group(rows)
    # Throughput vs workers, PostgreSQL, one process: readpast and raw at each lease batch.
    with open(os.path.join(outdir, "workers.dat"), "w") as f:
        f.write("# workers readpast_b1 raw_b1 readpast_b10 raw_b10 readpast_b100 raw_b100 readpast_b1000 raw_b1000\n")
        for w in (1, 4, 8, 16):
            cells = []
            for b in (1, 10, 100, 1000):
                for system in ("readpast", "raw-sql"):
                    v = value(g, "postgres", f"drain_w{w}_b{b}", system)
                    cells.append("NaN" if v is None else f"{v:.1f}")
            f.write(f"{w} " + " ".join(cells) + "\n")
    # Peers vs workers (bench/peers/workers.sh).
    with open(os.path.join(outdir, "peers_workers.dat"), "w") as f:
        series = [("pg-boss", "drain_batch100"), ("graphile-worker", "drain_perfpreset"),
                  ("readpast", "drain_batch100"), ("readpast", "drain_batch100_delete"),
                  ("readpast", "drain_batch1000_delete"), ("readpast", "drain_worker")]
        f.write("# workers " + " ".join(f"{s}:{m}" for s, m in series) + "\n")
        w_rows = [r for r in peer_rows if r.get("_file") == "workers.jsonl"]
        for w in sorted({r.get("concurrency") for r in w_rows if r.get("concurrency")}):
            cells = []
            for s, m in series:
                v = med([r["value"] for r in w_rows if r["system"] == s and r["metric"] == m
                         and r.get("concurrency") == w])
                cells.append("NaN" if v is None else f"{v:.1f}")
            f.write(f"{w} " + " ".join(cells) + "\n")
    # Lease latency vs queue depth.
    with open(os.path.join(outdir, "depth.dat"), "w") as f:
        cols = [(e, s, b) for e in ("postgres", "sqlite") for s in ("readpast", "raw-sql" if e == "postgres" else "raw-sqlite")
                for b in (1, 100)]
        f.write("# depth " + " ".join(f"{e}:{s}:b{b}" for e, s, b in cols) + "\n")
        depths = sorted({r["depth"] for r in rows if r.get("metric", "").startswith("lease_us_depth")})
        for d in depths:
            cells = []
            for e, s, b in cols:
                v = value(g, e, f"lease_us_depth{d}_b{b}", s)
                if v is None and e == "sqlite":
                    v = value(g, "sqlite (synchronous=normal)", f"lease_us_depth{d}_b{b}", s)
                cells.append("NaN" if v is None else f"{v:.1f}")
            f.write(f"{d} " + " ".join(cells) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--peers", help="directory of bench/peers/run.sh results")
    ap.add_argument("--plot-data", help="write gnuplot data files here")
    args = ap.parse_args()
    rows = load(args.files)
    peer_rows = load(sorted(glob.glob(os.path.join(args.peers, "*.jsonl")))) if args.peers else []
    metas = [r for r in rows if r.get("system") == "_meta"]
    for m in metas[:2]:
        server = m.get("postgres") or (m.get("mariadb") and "MariaDB " + m["mariadb"])
        print(f"<!-- {m.get('_file')}: {server or 'sqlite ' + str(m.get('sqlite'))}; "
              f"load at start {m.get('loadavg_at_start')} -->")
    print("## Results\n")
    print(table(rows))
    print("\n## Targets (issue 5)\n")
    print(targets(rows, peer_rows))
    if args.plot_data:
        plot_data(rows, peer_rows, args.plot_data)


if __name__ == "__main__":
    main()
