#!/usr/bin/env bash
# The reliability run behind docs/reliability.md: every fault test on both engines, the
# hostile-input tests, the history checker's own tests, and every fuzz target; then the
# checker's figures as a Markdown table.
#
#   scripts/reliability.sh           the short run (what CI runs too): about 5 minutes
#   scripts/reliability.sh --long    the soak: 100,000-job drains under SIGKILL, 10 server
#                                    crashes, 12 network fault cycles, ...; each fuzz target
#                                    for 5 minutes. About an hour on 2 cores.
#   --fuzz-seconds N                 how long each fuzz target runs (default 10; --long: 300)
#
# Run as root on Debian 12 (it installs what it needs with scripts/install-deps.sh; the
# network tests need a network namespace, the disk-full test a tmpfs). Output, in
# build-reliability/: figures.jsonl (one line per checked run), figures.md (the table),
# ctest.log and fuzz.log. Exit 0 when every test passed and no run lost or doubled a job.
# READPAST_RELIABILITY_BUILD / READPAST_FUZZ_BUILD name other build directories to reuse.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

long=0
fuzz_seconds=10
while [ $# -gt 0 ]; do
  case "$1" in
    --long) long=1; fuzz_seconds=300 ;;
    --fuzz-seconds) fuzz_seconds=$2; shift ;;
    *) echo "usage: scripts/reliability.sh [--long] [--fuzz-seconds N]" >&2; exit 2 ;;
  esac
  shift
done

bash scripts/install-deps.sh
out="$root/build-reliability"
mkdir -p "$out"
figures="$out/figures.jsonl"
: >"$figures"

echo "== build (RelWithDebInfo)"
build=${READPAST_RELIABILITY_BUILD:-$out/build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREADPAST_WERROR=ON >/dev/null
cmake --build "$build" -j "$(nproc)" --target readpast_cli mp_worker chaos_job chaos_figures \
  readpast_chaos_tests readpast_network_tests readpast_hostile_tests readpast_unit_tests \
  readpast_multiprocess_tests

echo "== fault, hostile-input and checker tests$([ $long = 1 ] && echo ' (long)')"
set +e
READPAST_FIGURES="$figures" READPAST_CHAOS_LONG=$long \
  ctest --test-dir "$build" -L 'chaos|hostile|unit|multiprocess' --output-on-failure \
  --timeout 7200 2>&1 | tee "$out/ctest.log"
tests_status=${PIPESTATUS[0]}
set -e

echo "== fuzz targets, ${fuzz_seconds}s each"
set +e
READPAST_FUZZ_BUILD="${READPAST_FUZZ_BUILD:-$out/fuzz}" bash scripts/fuzz.sh "$fuzz_seconds" 2>&1 | tee "$out/fuzz.log"
fuzz_status=${PIPESTATUS[0]}
set -e

echo "== figures"
set +e
"$build/tests/chaos/chaos_figures" "$figures" | tee "$out/figures.md"
figures_status=${PIPESTATUS[0]}
set -e
grep -E '^(==|Done|#[0-9]+.*DONE)' "$out/fuzz.log" | grep -E 'Done|==' || true
echo "tests: $([ $tests_status = 0 ] && echo passed || echo FAILED), fuzz: $([ $fuzz_status = 0 ] && echo passed || echo FAILED), figures: $([ $figures_status = 0 ] && echo 'no job lost or completed twice' || echo VIOLATIONS)"
[ $tests_status = 0 ] && [ $fuzz_status = 0 ] && [ $figures_status = 0 ]
