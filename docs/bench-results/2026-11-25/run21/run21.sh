#!/usr/bin/env bash
# Run 21 (docs/benchmarks.md): MariaDB after migration 3 in its final form (besides the
# hand-out index and the unique one, one secondary index), readpast beside the raw-SQL ceiling
# of the same lifecycle on the same throwaway server: run19.sh's steps and sizes, written into
# this run's folder. As root, from the repository's root, with readpast_bench built
# (run19.sh says how):
#   ROUNDS=3 bash docs/bench-results/2026-11-25/run21/run21.sh
set -euo pipefail
export OUT=${OUT:-docs/bench-results/2026-11-25/run21}
exec bash "$(dirname "$0")/../run19/run19.sh" "$@"
