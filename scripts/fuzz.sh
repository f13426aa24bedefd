#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, clang) and runs each for SECONDS (default 600):
#   scripts/fuzz.sh [SECONDS] [TARGET...]
# What a run finds is kept in a scratch directory it prints; the checked-in corpus is read,
# never written. Copy an input worth keeping into tests/fuzz/corpus/TARGET/ by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
shift || true
dir=${READPAST_FUZZ_BUILD:-build-fuzz}
cmake -S tests/fuzz -B "$dir" -G Ninja -DCMAKE_CXX_COMPILER=clang++-16 >/dev/null
cmake --build "$dir"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cd tests/fuzz && ls fuzz_*.cpp | sed 's/\.cpp$//')
fi
status=0
for t in "${targets[@]}"; do
  echo "== $t: ${seconds}s"
  tests/fuzz/run_fuzzer.sh "$dir/$t" "tests/fuzz/corpus/$t" "$seconds" || status=1
done
exit $status
