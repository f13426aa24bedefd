#!/usr/bin/env bash
# Run 37 (docs/benchmarks.md, "Leases by lane while a snapshot is held"): main's lease from
# the head with the lanes of run 36 turned on only while another session holds an old
# snapshot (src/engines/postgres/lease_mode.hpp, lease_lanes=auto, the default).
#   B=<readpast_bench of this commit> bash docs/bench-results/2026-11-28/run37/run37.sh
# Each held run is a throwaway cluster (bench/pg_throwaway.sh) with auto_explain logging every
# statement slower than 250 ms, so that a plan the hold flips shows in its log; the count of
# such statements is printed after each run. About 12.5 minutes per run. EXTRA_CONF: more lines
# for postgresql.conf (run 39 logs autovacuum with it).
# The clean A/B of the drains (ab-clean-drains.txt, 7 rounds) is
#   A=<readpast_bench of main before> B=<this one> \
#     bash docs/bench-results/2026-11-28/run33/ab_drain.sh postgresql://postgres@127.0.0.1:25443 OUT 7
set -euo pipefail
OUT=${OUT:-docs/bench-results/2026-11-28/run37}
B=${B:?an optimised readpast_bench}
held() {
  local name=$1
  shift
  (
    source bench/pg_throwaway.sh "run37-$name" "${PORT:-25444}"
    cat >>"$DIR/data/postgresql.conf" <<CONF
session_preload_libraries = 'auto_explain'
auto_explain.log_min_duration = '250ms'
auto_explain.log_analyze = on
auto_explain.log_timing = off
auto_explain.log_buffers = on
auto_explain.log_nested_statements = on
${EXTRA_CONF:-}
CONF
    psql -XAtq "$URL" -c "SELECT pg_reload_conf()" >/dev/null
    "$B" run --engine postgres --pg-url "$URL" --suites snapshot --systems readpast \
      --snapshot-baseline-seconds 60 --snapshot-seconds 600 --snapshot-tail-seconds 60 \
      "$@" --out "$OUT/$name.jsonl"
    echo "$name: statements over 250 ms: $(grep -c 'duration:' "$DIR/data.log" || true)"
    cp "$DIR/data.log" "/tmp/run37-$name.log"
  )
}
case "${1:-all}" in
  6000) held auto-6000 --snapshot-rate 6000 ;;
  backlog) held auto-backlog-2producers --snapshot-producers 2 ;;
  all)
    held auto-6000 --snapshot-rate 6000
    held auto-backlog-2producers --snapshot-producers 2
    ;;
esac
# The enqueue and latency suites against main (ab-suites.txt, 3 rounds):
#   A=<readpast_bench of main before> B=<this one> \
#     bash docs/bench-results/2026-11-28/run37/ab_suites.sh postgresql://postgres@127.0.0.1:25443 OUT 3
