#!/usr/bin/env bash
# Run 20 (docs/benchmarks.md): MariaDB after migration 3 (indexes a lease does not touch),
# readpast beside the raw-SQL ceiling of the same lifecycle on the same throwaway server:
# run19.sh's steps and sizes, written into this run's folder. As root, from the repository's
# root, with readpast_bench built (run19.sh says how):
#   ROUNDS=3 bash docs/bench-results/2026-11-25/run20/run20.sh
set -euo pipefail
export OUT=${OUT:-docs/bench-results/2026-11-25/run20}
exec bash "$(dirname "$0")/../run19/run19.sh" "$@"
