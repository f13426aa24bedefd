#!/usr/bin/env bash
# Plots of docs/benchmarks.md (gnuplot, PNG) from a bench/run.sh result directory and,
# optionally, a bench/peers/run.sh one:
#
#   bench/plot.sh RESULTS_DIR [PEERS_DIR] [OUT_DIR]     OUT_DIR defaults to RESULTS_DIR
#
# throughput-vs-workers.png   PostgreSQL drain throughput vs workers: readpast and the raw-SQL
#                             ceiling (lease batch 100 and 1000), pg-boss and graphile-worker
# lease-vs-depth.png          lease latency (p50) vs queue depth, both engines
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
RESULTS=$1
PEERS=${2:-}
OUT=${3:-$RESULTS}
DATA=$(mktemp -d)
trap 'rm -rf "$DATA"' EXIT
files=("$RESULTS"/*.jsonl)
python3 "$HERE/summarize.py" "${files[@]}" ${PEERS:+--peers "$PEERS"} --plot-data "$DATA" >/dev/null
mkdir -p "$OUT"

# One plot clause per series that has at least one number (a missing run leaves NaN).
series() {  # FILE COLUMN TITLE STYLE
  [[ -f $1 ]] && awk -v c="$2" '!/^#/ && $c != "NaN" && $c != "" {found=1} END {exit !found}' "$1" || return 0
  printf '%s"%s" using 1:%s with linespoints %s title "%s"' "${sep:-}" "$1" "$2" "$4" "$3"
  sep=", "
}

sep=
clauses=$(
  series "$DATA/workers.dat" 6 "readpast, lease batch 100" "lw 2 pt 7"
  series "$DATA/workers.dat" 7 "raw SQL ceiling, batch 100" "lw 2 pt 6 dt 2"
  series "$DATA/workers.dat" 8 "readpast, lease batch 1000" "lw 2 pt 5"
  series "$DATA/workers.dat" 9 "raw SQL ceiling, batch 1000" "lw 2 pt 4 dt 2"
  series "$DATA/peers_workers.dat" 4 "readpast via the harness, batch 100, rows kept" "lw 2 pt 13"
  series "$DATA/peers_workers.dat" 7 "readpast::Worker via the harness, prefetch 500" "lw 3 pt 15"
  series "$DATA/peers_workers.dat" 2 "pg-boss 12, batchSize 100" "lw 2 pt 9"
  series "$DATA/peers_workers.dat" 3 "graphile-worker 0.18, perf preset" "lw 2 pt 11"
)
if [[ -n $clauses ]]; then
  gnuplot <<GP
set terminal pngcairo size 900,560 font "sans,11"
set output "$OUT/throughput-vs-workers.png"
set title "PostgreSQL drain throughput vs workers (2 cores, trivial handler)"
set xlabel "workers (threads of one process)"
set ylabel "jobs/s"
set logscale x 2
set xtics (1, 4, 8, 16)
set key top left
set grid
set yrange [0:*]
plot $clauses
GP
fi

sep=
clauses=$(
  series "$DATA/depth.dat" 2 "PostgreSQL readpast, max jobs 1" "lw 2 pt 7"
  series "$DATA/depth.dat" 4 "PostgreSQL raw SQL, 1" "lw 2 pt 6 dt 2"
  series "$DATA/depth.dat" 3 "PostgreSQL readpast, max jobs 100" "lw 2 pt 5"
  series "$DATA/depth.dat" 5 "PostgreSQL raw SQL, 100" "lw 2 pt 4 dt 2"
  series "$DATA/depth.dat" 6 "SQLite readpast, 1" "lw 2 pt 9"
  series "$DATA/depth.dat" 8 "SQLite raw SQL, 1" "lw 2 pt 8 dt 2"
)
if [[ -n $clauses ]]; then
  gnuplot <<GP
set terminal pngcairo size 900,560 font "sans,11"
set output "$OUT/lease-vs-depth.png"
set title "Lease latency (p50, one connection) vs queue depth"
set xlabel "jobs waiting in the queue"
set ylabel "µs per lease call"
set logscale x 10
set logscale y 10
set format x "10^{%L}"
set key top left
set grid
plot $clauses
GP
fi
echo "plots in $OUT" >&2
