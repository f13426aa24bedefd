#!/usr/bin/env bash
# Run 59 (docs/benchmarks.md): run 46's held backlog regime (BASELINE s of baseline, 60 by
# default; a hold of HOLD s, 600 by default; then TAIL s, 60 by default; 2 producers) for the
# sides given, in that order, on one throwaway cluster, a fresh database per run. A side is a
# letter whose binaries are given as <letter>=<readpast_bench> R<letter>=<readpast>. A side
# named in RINGS (e.g. RINGS=C) is run 57's running ring (its binaries built with
# run57/running_ring_prototype.sql as migration 23) with `live` turned into the ready ring by
# ready_ring_schema.py (RING segments, 4 by default), both rings rotated every ROTATE_S
# seconds (10 by default) by this script, the ready ring half a period after the running one.
# From the repository's root, nothing else running:
#   A=<bench> RA=<readpast> C=<bench> RC=<readpast> RINGS=C OUT=<dir> \
#     bash docs/bench-results/2026-12-07/run59/held-rings.sh A C C A
set -euo pipefail
OUT=${OUT:?}
HERE=docs/bench-results/2026-12-07/run59
ROTATE_S=${ROTATE_S:-10}
mkdir -p "$OUT"
source bench/pg_throwaway.sh r59 "${PORT:-25458}"
source $HERE/rings.sh
BASE=${URL%/*}
n=0
for side in "$@"; do
  n=$((n + 1))
  db=$(echo "${side}$n" | tr 'A-Z' 'a-z')
  bench_var=$side cli_var=R$side
  bench=${!bench_var:?} cli=${!cli_var:?}
  psql -XAtq "$BASE/postgres" -c "CREATE DATABASE $db"
  rotator=
  if [[ " ${RINGS:-} " == *" $side "* ]]; then
    make_rings_db "$BASE" "$db" "$cli" "${RING:-4}"
    rotate_rings "$BASE" "$db" "$ROTATE_S" >>"$OUT/rotate-$db.txt" &
    rotator=$!
  else
    "$cli" --db "$BASE/$db" init >/dev/null
  fi
  psql -XAtq "$BASE/$db" -c "ALTER DATABASE $db SET jit = off"
  echo "$(date -u +%T) start $db" >>"$OUT/times.txt"
  "$bench" run --engine postgres --pg-url "$BASE/$db" --readpast-pg-url "$BASE/$db" \
    --suites snapshot --systems readpast \
    --snapshot-baseline-seconds "${BASELINE:-60}" --snapshot-seconds "${HOLD:-600}" \
    --snapshot-tail-seconds "${TAIL:-60}" \
    --snapshot-producers 2 --snapshot-holder "${HOLDER:-read}" \
    --out "$OUT/held-$db.jsonl" >"$OUT/held-$db.log" 2>&1
  echo "$(date -u +%T) end $db" >>"$OUT/times.txt"
  [[ -n $rotator ]] && kill "$rotator"
  psql -XAtq "$BASE/$db" -c "SELECT relname, pg_total_relation_size(relid) FROM pg_stat_user_tables
    WHERE schemaname = 'readpast' ORDER BY 2 DESC LIMIT 8" >"$OUT/sizes-$db.txt"
  python3 docs/bench-results/2026-11-29/run43/summarize.py --held "$OUT/held-$db.jsonl" | tee -a "$OUT/held.txt"
  psql -XAtq "$BASE/postgres" -c "DROP DATABASE $db"
done
cp "$DIR/data.log" "$OUT/server.log"
