#!/usr/bin/env bash
# Run 57 (docs/benchmarks.md): run 46's held backlog regime (60-s baseline, a hold of HOLD s,
# 600 by default, then TAIL s, 60 by default; 2 producers; run 46's next-due/ab.sh) for the
# sides given, in that order, one throwaway cluster, a fresh database per run. A side is a
# letter whose binaries are given as <letter>=<readpast_bench> R<letter>=<readpast>; a side
# named in RING (e.g. RING=C) has the running ring of the prototype schema
# (running_ring_prototype.sql, beside this script, as migration 22), rotated by
# readpast.rotate_running() every ROTATE_S seconds (10 by default) from this script. From
# the repository's root, nothing else running:
#   A=<bench> RA=<readpast> C=<bench> RC=<readpast> RING=C OUT=<dir> \
#     bash docs/bench-results/2026-12-07/run57/held-ring.sh A C
set -euo pipefail
OUT=${OUT:?}
mkdir -p "$OUT"
source bench/pg_throwaway.sh r57 "${PORT:-25457}"
BASE=${URL%/*}
n=0
for side in "$@"; do
  n=$((n + 1))
  db=$(echo "${side}$n" | tr 'A-Z' 'a-z')
  bench_var=$side cli_var=R$side
  bench=${!bench_var:?} cli=${!cli_var:?}
  psql -XAtq "$BASE/postgres" -c "CREATE DATABASE $db"
  "$cli" --db "$BASE/$db" init >/dev/null
  psql -XAtq "$BASE/$db" -c "ALTER DATABASE $db SET jit = off"
  rotator=
  if [[ " ${RING:-} " == *" $side "* ]]; then
    (while sleep "${ROTATE_S:-10}"; do
       echo "$(date -u +%T) $(psql -XAtq "$BASE/$db" -c 'SELECT readpast.rotate_running()' 2>&1 | tr '\n' ' ')"
     done) >> "$OUT/rotate-$db.txt" &
    rotator=$!
  fi
  echo "$(date -u +%T) start $db" >> "$OUT/times.txt"
  "$bench" run --engine postgres --pg-url "$BASE/$db" --readpast-pg-url "$BASE/$db" \
    --suites snapshot --systems readpast \
    --snapshot-baseline-seconds 60 --snapshot-seconds "${HOLD:-600}" --snapshot-tail-seconds "${TAIL:-60}" \
    --snapshot-producers 2 --out "$OUT/held-$db.jsonl" >"$OUT/held-$db.log" 2>&1
  echo "$(date -u +%T) end $db" >> "$OUT/times.txt"
  [[ -n $rotator ]] && kill "$rotator"
  psql -XAtq "$BASE/$db" -c "SELECT relname, pg_total_relation_size(relid) FROM pg_stat_user_tables
    WHERE schemaname = 'readpast' ORDER BY 2 DESC LIMIT 6" > "$OUT/sizes-$db.txt"
  python3 docs/bench-results/2026-11-29/run43/summarize.py --held "$OUT/held-$db.jsonl" | tee -a "$OUT/held.txt"
  psql -XAtq "$BASE/postgres" -c "DROP DATABASE $db"
done
cp "$DIR/data.log" "$OUT/server.log"
