# Run 59: the two rings' set-up, sourced by held-rings.sh, profile-rings.sh and clean-cpu.sh
# (from the repository's root, after bench/pg_throwaway.sh, whose DIR holds the dumps).
# shellcheck shell=bash

# make_rings_db BASE DB CLI SEGMENTS: fills the empty database DB with the schema that CLI's
# `init` makes (CLI built with run 57's running ring as migration 23), `live` turned into a
# ready ring of SEGMENTS segments by ready_ring_schema.py.
make_rings_db() {
  local base=$1 db=$2 cli=$3 segments=$4
  psql -XAtq "$base/postgres" -c "CREATE DATABASE ${db}_made"
  "$cli" --db "$base/${db}_made" init >/dev/null
  pg_dump -s -n readpast "$base/${db}_made" >"$DIR/schema-$db.sql"
  RING=$segments python3 docs/bench-results/2026-12-07/run59/ready_ring_schema.py \
    "$DIR/schema-$db.sql" "$DIR/ring-$db.sql"
  psql -XAtq -v ON_ERROR_STOP=1 "$base/$db" -f "$DIR/ring-$db.sql" >/dev/null
  pg_dump -a -t readpast.schema_version "$base/${db}_made" | psql -XAtq "$base/$db" >/dev/null
  psql -XAtq "$base/postgres" -c "DROP DATABASE ${db}_made"
  # Run 43: a plan made on a just-truncated segment reads it sequentially.
  psql -XAtq "$base/$db" -c "ALTER DATABASE $db SET enable_seqscan = off" \
    -c "ALTER DATABASE $db SET enable_bitmapscan = off"
}

# rotate_rings BASE DB PERIOD_S: forever, rotate_running() then rotate_ready(), PERIOD_S / 2
# seconds apart, so that each ring turns every PERIOD_S; one line a call on stdout (its result
# and how long it took, psql's connection included). Run it in the background and kill it.
rotate_rings() {
  local base=$1 db=$2 half f t0 r
  half=$(bc <<<"$3 / 2")
  while :; do
    for f in rotate_running rotate_ready; do
      t0=$(date +%s%N)
      r=$(psql -XAtq "$base/$db" -c "SELECT readpast.$f()" 2>&1 | tr '\n' ' ') || true
      echo "$(date -u +%T) $f $r $((($(date +%s%N) - t0) / 1000000)) ms"
      sleep "$half"
    done
  done
}
