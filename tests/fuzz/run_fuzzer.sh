#!/usr/bin/env bash
# run_fuzzer.sh FUZZER CORPUS_DIR SECONDS
# Replays the checked-in corpus, then fuzzes for SECONDS; what it finds goes to a scratch
# directory (printed), never into the corpus. Exit 0 when nothing crashed.
set -euo pipefail
fuzzer=$(realpath "$1") corpus=$(realpath "$2") seconds=$3
scratch=$(mktemp -d "${TMPDIR:-/tmp}/readpast-fuzz-XXXXXX")
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/new"
cd "$scratch"
# -rss_limit_mb: no input may make a parser hold much memory; -timeout: or take long.
set +e
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=1024 -print_final_stats=1 \
  -artifact_prefix="$scratch/" "$scratch/new" "$corpus" >"$scratch/log" 2>&1
status=$?
set -e
if [ "$status" -ne 0 ]; then
  tail -n 60 "$scratch/log"
  echo "run_fuzzer.sh: $(basename "$fuzzer") failed; the input and the log are in $scratch" >&2
  trap - EXIT
else
  grep -E '^(Done|stat::new_units_added|stat::peak_rss_mb)' "$scratch/log" || true
fi
exit "$status"
