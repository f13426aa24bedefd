# Run 54 (docs/benchmarks.md): paired medians B/A of a file of run 44's keyed.sh output, one line per
# phase, with the range of the rounds' ratios:  python3 summarize.py scheduled.txt
import re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    m = re.match(r'round (\d+) ([AB]): (.*)', line)
    if not m: continue
    f = m.group(3).split()
    runs[(int(m.group(1)), m.group(2))] = {f[i]: float(f[i + 1]) for i in range(0, len(f), 2)}
rounds = sorted({r for r, _ in runs if (r, 'A') in runs and (r, 'B') in runs})
for name in runs[(rounds[0], 'A')]:
    a = [runs[(r, 'A')][name] for r in rounds]; b = [runs[(r, 'B')][name] for r in rounds]
    ratios = [y / x for x, y in zip(a, b)]
    print(f"{name:14} A {statistics.median(a):9.0f}  B {statistics.median(b):9.0f}  "
          f"paired median B/A {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})")
