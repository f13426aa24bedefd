#!/usr/bin/env bash
# Installs what is needed, then builds readpast and runs every test, in three
# configurations (CI runs exactly this, through .ci/run):
#   1. strict:  warnings as errors, every test (the HTTP server's API and browser tests too)
#   2. asan:    AddressSanitizer + UndefinedBehaviorSanitizer, every test but the HTTP
#               server's API and browser tests
#   3. tsan:    ThreadSanitizer, the tests of the worker runtime and the command line
#               (on SQLite: the worker's threads are the same on every engine)
# Set READPAST_TEST_CONFIGS="strict" (space-separated) to run fewer. Run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

bash scripts/install-deps.sh

configs=${READPAST_TEST_CONFIGS:-"strict asan tsan"}
jobs=$(nproc)
total_passed=0
total_failed=0
failed_configs=()

echo "== clang-format check"
mapfile -t sources < <(git ls-files '*.cpp' '*.hpp' 2>/dev/null || find include src tests bench -name '*.[ch]pp')
clang-format --dry-run --Werror "${sources[@]}"

# run_config NAME LABEL_REGEX EXCLUDE_REGEX TARGETS CMAKE_ARGS...
# (empty LABEL/TARGETS: all of them; empty EXCLUDE: none)
run_config() {
  local name=$1 label_regex=$2 exclude_regex=$3 targets=$4
  shift 4
  local dir="$root/build-ci/$name"
  echo "== $name: configure and build"
  cmake -S "$root" -B "$dir" -G Ninja -DREADPAST_WERROR=ON "$@" >/dev/null
  if [ -n "$targets" ]; then
    # shellcheck disable=SC2086
    cmake --build "$dir" -j "$jobs" --target $targets
  else
    cmake --build "$dir" -j "$jobs"
  fi
  echo "== $name: test"
  local log="$dir/ctest.log"
  local args=(--test-dir "$dir" --output-on-failure -j "$jobs" --timeout 900)
  [ -n "$label_regex" ] && args+=(-L "$label_regex")
  [ -n "$exclude_regex" ] && args+=(-LE "$exclude_regex")
  set +e
  ctest "${args[@]}" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  set -e
  local summary passed failed
  summary=$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -n1)
  failed=$(sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\1/' <<<"$summary")
  passed=$(( $(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$summary") - failed ))
  total_passed=$((total_passed + passed))
  total_failed=$((total_failed + failed))
  if [ "$rc" -ne 0 ]; then failed_configs+=("$name"); fi
}

for config in $configs; do
  case "$config" in
    strict) run_config strict "" "" "" -DCMAKE_BUILD_TYPE=RelWithDebInfo ;;
    asan)   run_config asan "" "" "" -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-g -O1" -DREADPAST_SANITIZE=address,undefined -DREADPAST_BUILD_SERVER_TESTS=OFF ;;
    tsan)   run_config tsan "cli|worker" "postgres" "readpast_cli readpast_cli_tests readpast_worker_tests" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREADPAST_SANITIZE=thread ;;
    *) echo "unknown configuration '$config' (strict, asan, tsan)" >&2; exit 2 ;;
  esac
done

if [ ${#failed_configs[@]} -gt 0 ]; then
  echo "failed configurations: ${failed_configs[*]}"
fi
echo "readpast: $total_passed passed, $total_failed failed"
[ ${#failed_configs[@]} -eq 0 ]
