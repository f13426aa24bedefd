import glob, json, os, sys, statistics
rows = {}
for d in sys.argv[1:]:
    for path in sorted(glob.glob(os.path.join(d, '*.jsonl'))):
        side, rnd = os.path.basename(path)[:-6].split('-')
        for r in map(json.loads, open(path)):
            if 'value' in r and r.get('metric') not in ('meta',):
                rows.setdefault(r['metric'], {}).setdefault((d, rnd), {})[side] = r['value']
for m in sorted(rows):
    ratios = [v['B'] / v['A'] for v in rows[m].values() if 'A' in v and 'B' in v and v['A']]
    if ratios:
        print(f"{m:24} paired B/A median {statistics.median(ratios):.3f}  ({len(ratios)} rounds, {min(ratios):.2f}-{max(ratios):.2f})")
