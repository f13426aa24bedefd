#!/usr/bin/env bash
# bench/held.sh — the snapshot suite's held backlog regime (docs/benchmarks.md, runs 46-61) for
# builds side by side: each side given runs once, in the order given, on one throwaway
# PostgreSQL cluster (bench/pg_throwaway.sh), a fresh database per run, then one row per run
# from bench/held_table.py. A side is a letter whose binaries are <letter>=<readpast_bench>
# R<letter>=<readpast>; SETUP_<letter>, if set, is a shell command run instead of
# `readpast init` to make that side's schema (with BASE, DB and CLI in its environment: the
# cluster's URL without a database, the database's name, the side's readpast). From the
# repository's root, with nothing else running on the machine:
#   A=<bench> RA=<readpast> C=<bench> RC=<readpast> OUT=<dir> bash bench/held.sh A C C A
# Knobs: WARMUP, BASELINE, HOLD, TAIL seconds (30, 60, 600, 60; WARMUP=0 for binaries older
# than run 61, which have no warm-up); HOLDER (read; none for the
# control run whose "held" windows show the host's own spread); PRODUCERS (2); PORT (25461).
set -euo pipefail
OUT=${OUT:?set OUT to a directory for the results}
mkdir -p "$OUT"
source bench/pg_throwaway.sh held "${PORT:-25461}"
BASE=${URL%/*}
n=0
for side in "$@"; do
  n=$((n + 1))
  db=$(echo "${side}$n" | tr 'A-Z' 'a-z')
  bench_var=$side cli_var=R$side setup_var=SETUP_$side
  bench=${!bench_var:?set $side to a readpast_bench} cli=${!cli_var:?set R$side to a readpast}
  warmup=()
  if [[ ${WARMUP:-30} != 0 ]]; then
    if ! "$bench" run --help | grep -q -- --snapshot-warmup-seconds; then
      echo "bench/held.sh: $bench has no --snapshot-warmup-seconds (before run 61): set WARMUP=0" >&2
      exit 2
    fi
    warmup=(--snapshot-warmup-seconds "${WARMUP:-30}")
  fi
  psql -XAtq "$BASE/postgres" -c "CREATE DATABASE $db"
  if [[ -n ${!setup_var:-} ]]; then
    BASE=$BASE DB=$db CLI=$cli bash -c "${!setup_var}"
  else
    "$cli" --db "$BASE/$db" init >/dev/null
  fi
  psql -XAtq "$BASE/$db" -c "ALTER DATABASE $db SET jit = off"
  echo "$(date -u +%T) start $db" >>"$OUT/times.txt"
  "$bench" run --engine postgres --pg-url "$BASE/$db" --readpast-pg-url "$BASE/$db" \
    --suites snapshot --systems readpast \
    "${warmup[@]}" --snapshot-baseline-seconds "${BASELINE:-60}" \
    --snapshot-seconds "${HOLD:-600}" --snapshot-tail-seconds "${TAIL:-60}" \
    --snapshot-producers "${PRODUCERS:-2}" --snapshot-holder "${HOLDER:-read}" \
    --out "$OUT/held-$db.jsonl" >"$OUT/held-$db.log" 2>&1
  echo "$(date -u +%T) end $db" >>"$OUT/times.txt"
  psql -XAtq "$BASE/$db" -c "SELECT relname, pg_total_relation_size(relid) FROM pg_stat_user_tables
    WHERE schemaname = 'readpast' ORDER BY 2 DESC LIMIT 8" >"$OUT/sizes-$db.txt"
  psql -XAtq "$BASE/postgres" -c "DROP DATABASE $db"
done
cp "$DIR/data.log" "$OUT/server.log"
python3 bench/held_table.py "$OUT"/held-*.jsonl | tee "$OUT/table.md"
