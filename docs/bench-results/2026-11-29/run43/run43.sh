#!/usr/bin/env bash
# Run 43 (docs/benchmarks.md, "The ring as partitions of live, prototyped by hand"): schema 14
# with `live` partitioned into a ring of segments that a script rotates and truncates, against
# main's schema, in the snapshot suite's backlog regime (2 producers). From the repository's
# root, with nothing else running:
#   B=<readpast_bench> R=<readpast> OUT=<dir> bash docs/bench-results/2026-11-29/run43/run43.sh clean
#   B=... R=... OUT=... bash docs/bench-results/2026-11-29/run43/run43.sh lanes
#   B=... R=... OUT=... bash docs/bench-results/2026-11-29/run43/run43.sh held [VARIANT...]
# clean: 30-s baselines (and 10 s of hold) of the variants, each round in an order and its
#   reverse (about 15 minutes); lanes: main and the ring of 2 with autovacuum, with the
#   leases by lane or as the engine chooses (about 7 minutes); held: the 10-minute hold of
#   each variant named (main, ring2 or ring2av; by default ring2av, then main), about 13
#   minutes each. One throwaway cluster (bench/pg_throwaway.sh), a database per variant:
#   main    schema 14 as `readpast init` makes it
#   one     live partitioned, one segment, no rotation: what partitioning costs by itself
#   ring2   2 segments rotated every 10 s, and segment 9 (the moved rows)
#   ring2av the same with autovacuum on the segments (live's settings)
#   ring2p  ring2av with the leases pruned to the current and the previous segment (and 9)
#   ring4   4 segments and segment 9
#   ring4p  ring4 with the leases pruned so
# The ring databases run with enable_seqscan, enable_bitmapscan and jit off (run 43 says why).
set -euo pipefail
B=${B:?a readpast_bench}
R=${R:?a readpast CLI}
OUT=${OUT:?a directory for the results}
HERE=docs/bench-results/2026-11-29/run43
mkdir -p "$OUT"
source bench/pg_throwaway.sh run43 "${PORT:-25444}"
BASE=${URL%/*}

make_variant() {  # NAME RING STABLE [autovacuum] [pruned]
  local name=$1 ring=$2 stable=$3
  RING=$ring STABLE=$stable python3 $HERE/ring_schema.py "$DIR/schema.sql" "$DIR/$name.sql"
  psql -XAtq "$BASE/postgres" -c "CREATE DATABASE $name"
  psql -XAtq -v ON_ERROR_STOP=1 "$BASE/$name" -f "$DIR/$name.sql" >/dev/null
  pg_dump -a -t readpast.schema_version "$BASE/main" | psql -XAtq "$BASE/$name" >/dev/null
  psql -XAtq "$BASE/$name" -c "ALTER DATABASE $name SET jit = off" \
    -c "ALTER DATABASE $name SET enable_seqscan = off" \
    -c "ALTER DATABASE $name SET enable_bitmapscan = off"
  if [[ "${4:-}" == autovacuum ]]; then
    for ((k = 0; k < ring; k++)); do
      psql -XAtq "$BASE/$name" -c "ALTER TABLE readpast.live_$k SET (autovacuum_enabled = on,
        autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000,
        autovacuum_vacuum_insert_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02,
        autovacuum_vacuum_cost_delay = 0)"
    done
  fi
  if [[ "${5:-}" == pruned ]]; then
    RING=$ring python3 $HERE/prune_lease.py "$DIR/$name.sql" "$DIR/$name-pruned.sql"
    psql -XAtq -v ON_ERROR_STOP=1 "$BASE/$name" -f "$DIR/$name-pruned.sql"
  fi
}

psql -XAtq "$BASE/postgres" -c "CREATE DATABASE main"
"$R" --db "$BASE/main" init >/dev/null
psql -XAtq "$BASE/main" -c "ALTER DATABASE main SET jit = off"
pg_dump -s -n readpast "$BASE/main" >"$DIR/schema.sql"
ring_of() { case $1 in ring2*) echo 2 ;; ring4*) echo 4 ;; *) echo 1 ;; esac; }

# One run of the suite on database $1 with its rotation; $2: baseline s, $3: hold s, $4: tail s.
run() {
  local db=$1 ring pid=
  ring=$(ring_of "$db")
  psql -XAtq "$BASE/$db" -c "TRUNCATE readpast.live"
  if ((ring > 1)); then
    psql -XAtq "$BASE/$db" -c "SELECT setval('readpast.live_cur', 0)" >/dev/null
    RING=$ring bash $HERE/rotate.sh "$BASE/$db" "$OUT/rotate-$db.log" &
    pid=$!
  fi
  "$B" run --engine postgres --pg-url "$BASE/$db" \
    --readpast-pg-url "$BASE/$db${LANES:+?lease_lanes=$LANES}" --suites snapshot --systems readpast \
    --snapshot-baseline-seconds "$2" --snapshot-seconds "$3" --snapshot-tail-seconds "$4" \
    --snapshot-producers 2 --out "$5" >"$5.log" 2>&1
  [[ -n "$pid" ]] && kill "$pid"
  return 0
}

case "${1:?clean, lanes or held}" in
  clean)
    make_variant one 1 0
    make_variant ring2 2 1
    make_variant ring2av 2 1 autovacuum
    make_variant ring2p 2 1 autovacuum pruned
    make_variant ring4 4 1
    make_variant ring4p 4 1 '' pruned
    n=0
    for db in main one ring2 ring4 ring4 ring2 one main \
      main ring2av ring2p ring4 ring4p ring4p ring4 ring2p ring2av main; do
      n=$((n + 1))
      run "$db" 30 10 0 "$OUT/clean-$n-$db.jsonl"
      python3 $HERE/summarize.py "$OUT/clean-$n-$db.jsonl"
    done | tee "$OUT/clean.txt"
    ;;
  lanes)
    # The leases by lane without a hold (lease_lanes=always), as a hold makes the engine take
    # them: what of the hold's cost is the lanes' own.
    make_variant ring2av 2 1 autovacuum
    n=0
    for v in main main:always ring2av:always ring2av ring2av ring2av:always main:always main; do
      n=$((n + 1))
      db=${v%%:*}
      LANES=$([[ $v == *:always ]] && echo always || true)
      LANES=$LANES run "$db" 30 10 0 "$OUT/lanes-$n-${v/:/-}.jsonl"
      python3 $HERE/summarize.py "$OUT/lanes-$n-${v/:/-}.jsonl"
    done | tee "$OUT/lanes.txt"
    ;;
  held)
    # The variants to hold, in order (default: ring2av main).
    shift
    variants=("$@")
    ((${#variants[@]} > 0)) || variants=(ring2av main)
    for db in "${variants[@]}"; do
      case $db in
        ring2) make_variant ring2 2 1 ;;
        ring2av) make_variant ring2av 2 1 autovacuum ;;
      esac
    done
    for db in "${variants[@]}"; do
      run "$db" 60 600 60 "$OUT/held-$db.jsonl"
      python3 $HERE/summarize.py --held "$OUT/held-$db.jsonl"
    done | tee "$OUT/held.txt"
    ;;
esac
