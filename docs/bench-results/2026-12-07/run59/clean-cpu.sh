#!/usr/bin/env bash
# Run 59 (docs/benchmarks.md): the server's CPU per job without a hold, for variants of the
# rings, to tell which part of them costs what. Each run is the snapshot suite's backlog regime
# (2 producers, 8 workers) for a 60-s baseline (and 5 s of hold, which the suite needs); the
# CPU time (utime + stime) of every postgres process is read from /proc at the baseline's 20th
# and 50th second, and divided by the jobs completed in between (its windows). Variants, each
# on a fresh database of one throwaway cluster:
#   s22       A's schema, as `init` makes it
#   running   C's binaries, the schema as `init` makes it: run 57's running ring alone
#   ready1    C's, live turned into a ready ring of 1 segment (and segment 9), never rotated
#   ready4    C's, a ready ring of 4 segments (and 9), never rotated
#   rings     C's, 4 segments, both rings rotated every 10 s as held-rings.sh does
# From the repository's root, nothing else running:
#   A=<bench> RA=<readpast> C=<bench> RC=<readpast> OUT=<dir> \
#     bash docs/bench-results/2026-12-07/run59/clean-cpu.sh s22 running ready1 ready4 rings ...
set -euo pipefail
OUT=${OUT:?}
HERE=docs/bench-results/2026-12-07/run59
mkdir -p "$OUT"
source bench/pg_throwaway.sh r59c "${PORT:-25460}"
source $HERE/rings.sh
BASE=${URL%/*}
cpu_ticks() {  # the postgres processes' utime + stime, in clock ticks
  local t=0 f
  for f in /proc/[0-9]*/stat; do
    read -r line <"$f" 2>/dev/null || continue
    [[ $line == *"(postgres)"* ]] || continue
    set -- ${line##*) }
    t=$((t + ${12} + ${13}))
  done
  echo $t
}
n=0
for v in "$@"; do
  n=$((n + 1))
  db=$v$n
  psql -XAtq "$BASE/postgres" -c "CREATE DATABASE $db"
  bench=$C cli=$RC rotator=
  case $v in
    s22) bench=$A cli=$RA; "$cli" --db "$BASE/$db" init >/dev/null ;;
    running) "$cli" --db "$BASE/$db" init >/dev/null ;;
    ready1 | ready4 | rings)
      ring=4; [[ $v == ready1 ]] && ring=1
      make_rings_db "$BASE" "$db" "$cli" $ring
      if [[ $v == rings ]]; then
        rotate_rings "$BASE" "$db" 10 >/dev/null &
        rotator=$!
      fi
      ;;
    *) echo "unknown variant $v" >&2; exit 2 ;;
  esac
  psql -XAtq "$BASE/$db" -c "ALTER DATABASE $db SET jit = off"
  "$bench" run --engine postgres --pg-url "$BASE/$db" --readpast-pg-url "$BASE/$db" \
    --suites snapshot --systems readpast --snapshot-baseline-seconds 60 --snapshot-seconds 5 \
    --snapshot-producers 2 --out "$OUT/$db.jsonl" >"$OUT/$db.log" 2>&1 &
  bp=$!
  wait_for() {
    until grep -q "\"phase\":\"baseline\".*\"t_s\":$1\.0" "$OUT/$db.jsonl" 2>/dev/null; do
      sleep 0.2; kill -0 $bp
    done
  }
  wait_for 20; c0=$(cpu_ticks)
  wait_for 50; c1=$(cpu_ticks)
  wait $bp
  [[ -n $rotator ]] && kill "$rotator"
  python3 - "$OUT/$db.jsonl" "$v" "$((c1 - c0))" "$(getconf CLK_TCK)" <<'PY' | tee -a "$OUT/clean.txt"
import json, sys
path, v, ticks, hz = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
w = [x for x in map(json.loads, (l for l in open(path) if l.startswith('{')))
     if x.get('metric') == 'snapshot_window' and x['phase'] == 'baseline' and 20 < x['t_s'] <= 50]
jobs = sum(x['value'] for x in w) * 10
print(f"{v:8s} jobs/s {jobs / 30:8.0f}  server CPU per job {ticks / hz / jobs * 1e6:6.1f} us")
PY
  psql -XAtq "$BASE/postgres" -c "DROP DATABASE $db"
done
