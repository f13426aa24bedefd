#!/usr/bin/env bash
# Run 39: the backlog regime without a hold (the snapshot suite's 2 producers and 8 workers, a
# 240-second baseline, then a 10-second hold), with every autovacuum pass logged, on a
# throwaway cluster; MODE is readpast's lease_lanes URL parameter (auto: leases from the head
# while no snapshot is held; always: by lane). From the repository's root:
#   B=<readpast_bench of this commit> OUT=<dir> bash docs/bench-results/2026-11-29/run39/clean_backlog.sh auto|always
# Writes OUT/clean-MODE.jsonl and OUT/clean-MODE-autovacuum.txt. About 5 minutes.
set -euo pipefail
MODE=${1:?auto or always}
B=${B:?an optimised readpast_bench} OUT=${OUT:?a directory for the results}
mkdir -p "$OUT"
source bench/pg_throwaway.sh "clean39-$MODE" "${PORT:-25444}"
cat >>"$DIR/data/postgresql.conf" <<CONF
log_autovacuum_min_duration = 0
log_line_prefix = '%m [%p] '
CONF
psql -XAtq "$URL" -c "SELECT pg_reload_conf()" >/dev/null
"$B" run --engine postgres --pg-url "$URL" --readpast-pg-url "$URL?lease_lanes=$MODE" \
  --suites snapshot --systems readpast --snapshot-producers 2 \
  --snapshot-baseline-seconds 240 --snapshot-seconds 10 --snapshot-tail-seconds 10 \
  --out "$OUT/clean-$MODE.jsonl"
grep -o '^[0-9-]* [0-9:.]* UTC \[[0-9]*\] LOG:  automatic vacuum of table "[a-z_.]*live"' \
  "$DIR/data.log" >"$OUT/clean-$MODE-autovacuum.txt" || true
