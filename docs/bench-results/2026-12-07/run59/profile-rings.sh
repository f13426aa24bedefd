#!/usr/bin/env bash
# Run 59 (docs/benchmarks.md): run 58's profile.sh (perf by role: 30 s in the baseline from its
# 20th second, twice in a hold of 300 s, from its 100th and 220th) on the two rings of
# held-rings.sh when RINGS=1 (binaries built with run 57's running ring as migration 23, the
# ready ring made by ready_ring_schema.py, both rotated every 10 s), or on the schema `init`
# makes otherwise. Root (perf), from the repository's root, nothing else running:
#   B=<readpast_bench> R=<readpast> RINGS=1 OUT=<dir> bash docs/bench-results/2026-12-07/run59/profile-rings.sh
#   python3 docs/bench-results/2026-12-07/run58/cpu_by_role.py <dir> base   (then held1, held2)
set -euo pipefail
OUT=${OUT:?}; B=${B:?}; R=${R:?}
HERE=docs/bench-results/2026-12-07/run59
mkdir -p "$OUT"
source bench/pg_throwaway.sh r59p "${PORT:-25459}"
source $HERE/rings.sh
BASE=${URL%/*}
db=p1
psql -XAtq "$BASE/postgres" -c "CREATE DATABASE $db"
rotator=
if [[ -n ${RINGS:-} ]]; then
  make_rings_db "$BASE" "$db" "$R" 4
  rotate_rings "$BASE" "$db" 10 >/dev/null &
  rotator=$!
else
  "$R" --db "$BASE/$db" init >/dev/null
fi
psql -XAtq "$BASE/$db" -c "ALTER DATABASE $db SET jit = off"
"$B" run --engine postgres --pg-url "$BASE/$db" --readpast-pg-url "$BASE/$db" \
  --suites snapshot --systems readpast \
  --snapshot-baseline-seconds 60 --snapshot-seconds "${HOLD:-300}" --snapshot-tail-seconds 0 \
  --snapshot-producers 2 --out "$OUT/held.jsonl" >"$OUT/held.log" 2>&1 &
bp=$!
wait_for() { # phase t_s
  until grep -q "\"phase\":\"$1\".*\"t_s\":$2\.0" "$OUT/held.jsonl" 2>/dev/null; do sleep 0.5; kill -0 $bp || exit 1; done
}
prof() { # name
  psql -XAt "$BASE/$db" -c "SELECT pid, backend_type, left(query, 60) FROM pg_stat_activity" > "$OUT/act-$1.txt"
  perf record -a -F 397 -o "$OUT/perf-$1.data" -- sleep "${PERF_S:-30}" 2> "$OUT/perf-$1.err"
  psql -XAt "$BASE/$db" -c "SELECT pid, backend_type, left(query, 60) FROM pg_stat_activity" >> "$OUT/act-$1.txt"
}
wait_for baseline 20; echo "$(date +%s) base" >> "$OUT/times.txt"; prof base
wait_for held 100; echo "$(date +%s) held1" >> "$OUT/times.txt"; prof held1
wait_for held 220; echo "$(date +%s) held2" >> "$OUT/times.txt"; prof held2
wait $bp
[[ -n $rotator ]] && kill "$rotator"
python3 docs/bench-results/2026-11-29/run43/summarize.py --held "$OUT/held.jsonl" | tee "$OUT/held.txt"
