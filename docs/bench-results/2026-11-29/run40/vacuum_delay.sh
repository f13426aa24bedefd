#!/usr/bin/env bash
# Run 40: the held backlog regime (run 37's: 2 producers, 8 workers, a 60-second baseline, a
# 600-second hold, 60 s after) with autovacuum's cost delay on `live` set to DELAY ms instead
# of the 0 the schema gives it, every autovacuum pass logged, on a throwaway cluster. A
# watcher sets the table's setting once the benchmark has created it (and again should the
# benchmark create it afresh). From the repository's root:
#   B=<readpast_bench of this commit> OUT=<dir> bash docs/bench-results/2026-11-29/run40/vacuum_delay.sh DELAY [HOLD_SECONDS]
# Writes OUT/delay-DELAY.jsonl and OUT/delay-DELAY-autovacuum.txt (each pass over live, with its
# elapsed line; run 40 kept the first line alone). About 12.5 minutes.
set -euo pipefail
DELAY=${1:?autovacuum_vacuum_cost_delay for live, in ms} HOLD=${2:-600}
B=${B:?an optimised readpast_bench} OUT=${OUT:?a directory for the results}
mkdir -p "$OUT"
source bench/pg_throwaway.sh "delay40-$DELAY" "${PORT:-25444}"
cat >>"$DIR/data/postgresql.conf" <<CONF
log_autovacuum_min_duration = 0
log_line_prefix = '%m [%p] '
CONF
psql -XAtq "$URL" -c "SELECT pg_reload_conf()" >/dev/null
(
  while sleep 0.5; do
    psql -XAtq "$URL" -c "DO \$\$ BEGIN
        IF to_regclass('readpast.live') IS NOT NULL AND NOT EXISTS (
             SELECT 1 FROM pg_class WHERE oid = 'readpast.live'::regclass
             AND 'autovacuum_vacuum_cost_delay=$DELAY' = ANY (reloptions)) THEN
          ALTER TABLE readpast.live SET (autovacuum_vacuum_cost_delay = $DELAY);
        END IF; END \$\$" >/dev/null 2>&1 || true
  done
) &
WATCHER=$!
trap 'kill $WATCHER 2>/dev/null || true; cleanup' EXIT
"$B" run --engine postgres --pg-url "$URL" --suites snapshot --systems readpast \
  --snapshot-producers 2 --snapshot-baseline-seconds 60 --snapshot-seconds "$HOLD" \
  --snapshot-tail-seconds 60 --out "$OUT/delay-$DELAY.jsonl"
grep -A12 'automatic vacuum of table "[a-z_.]*live"' "$DIR/data.log" |
  grep -E 'automatic vacuum|elapsed' >"$OUT/delay-$DELAY-autovacuum.txt" || true
