#!/usr/bin/env bash
# Installs what is needed, then builds readpast and runs every test, in four
# configurations (CI runs exactly this, through .ci/run):
#   1. strict:  warnings as errors, every test (the fault tests of tests/chaos included,
#               in their short form, scripts/reliability.sh --long runs the soak; the HTTP
#               server's API and browser tests too)
#   2. asan:    AddressSanitizer + UndefinedBehaviorSanitizer, every test but the fault tests,
#               the browser tests, the multi-process suite and the reruns (label rerun: a
#               suite's C++ run again over another engine or connection path); the HTTP
#               server's API and attack tests included
#   3. tsan:    ThreadSanitizer, the tests of the worker runtime, the command line and the
#               HTTP server (on SQLite: their threads are the same on every engine)
#   4. fuzz:    the libFuzzer targets of tests/fuzz (clang, parsers only), a short run each
# Set READPAST_TEST_CONFIGS="strict" (space-separated) to run fewer. Run as root (the
# network fault tests need a network namespace, the disk-full test a tmpfs).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

bash scripts/install-deps.sh

configs=${READPAST_TEST_CONFIGS:-"strict asan tsan fuzz"}
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
  echo "== $name: configure and build (${SECONDS}s into the run)"
  cmake -S "$root" -B "$dir" -G Ninja -DREADPAST_WERROR=ON "$@" >/dev/null
  if [ -n "$targets" ]; then
    # shellcheck disable=SC2086
    cmake --build "$dir" -j "$jobs" --target $targets
  else
    cmake --build "$dir" -j "$jobs"
  fi
  echo "== $name: test (${SECONDS}s into the run)"
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

# The fuzz targets: a project of their own (tests/fuzz) built with clang.
run_fuzz_config() {
  local dir="$root/build-ci/fuzz"
  echo "== fuzz: configure and build (${SECONDS}s into the run)"
  cmake -S "$root/tests/fuzz" -B "$dir" -G Ninja -DCMAKE_CXX_COMPILER=clang++ \
    -DREADPAST_FUZZ_SECONDS="${READPAST_FUZZ_SECONDS:-5}" >/dev/null
  cmake --build "$dir" -j "$jobs"
  echo "== fuzz: run (${SECONDS}s into the run)"
  local log="$dir/ctest.log"
  set +e
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  set -e
  local summary failed
  summary=$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -n1)
  failed=$(sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\1/' <<<"$summary")
  total_passed=$((total_passed + $(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$summary") - failed))
  total_failed=$((total_failed + failed))
  if [ "$rc" -ne 0 ]; then failed_configs+=("fuzz"); fi
}

# strict and asan are unity builds (CMAKE_UNITY_BUILD: each target's sources compiled a few
# at a time as one unit, so the heavy headers are parsed and their templates instantiated
# once per unit): measured on 2 cores, the strict build takes 169 s instead of ~330 and the
# asan build 287 s instead of 476. tsan builds the library and the readpast command one file
# at a time, as a user's build does (everything scripts/demo.sh builds), so that a file that
# compiles only beside another (a missing #include) still fails CI; its test programs are
# unity builds (READPAST_UNITY_TESTS).
unity=-DCMAKE_UNITY_BUILD=ON
for config in $configs; do
  case "$config" in
    # Optimised as released (-O2: the warnings that need the optimiser's flow analysis) but
    # without debug info, and the sanitizer builds with line tables only (-g1, enough for
    # their reports): full debug info was a large part of CI's build time.
    strict) run_config strict "" "" "" "$unity" -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG" -DREADPAST_BUILD_BENCH=ON ;;
    # The fault tests (label chaos) run in strict only: under ASan they take minutes the CI
    # budget does not have (scripts/reliability.sh runs them on demand). So do the suites
    # whose C++ ASan already sees elsewhere: the multi-process suite (processes killed and
    # histories checked; its worker and engine code run under ASan in the worker and
    # conformance suites) and the reruns (label rerun: the command line's suite on MariaDB and
    # through PgBouncer, and PgBouncer's conformance, SQL-function and server reruns; the
    # engines' own code runs under ASan in conformance.mariadb and conformance.postgres).
    # Together they were 2,300 of ASan's 3,250 test-seconds in CI's configuration.
    asan)   run_config asan "" "chaos|browser|multiprocess|rerun" "" "$unity" -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-g1 -O1" -DREADPAST_SANITIZE=address,undefined ;;
    tsan)   run_config tsan "cli|worker|server" "postgres|mariadb|chaos|browser" "readpast_cli readpast_cli_tests readpast_worker_tests readpast_server_tests readpast_serve_command_tests" -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" -DREADPAST_SANITIZE=thread -DREADPAST_UNITY_TESTS=ON ;;
    fuzz)   run_fuzz_config ;;
    *) echo "unknown configuration '$config' (strict, asan, tsan, fuzz)" >&2; exit 2 ;;
  esac
done

if [ ${#failed_configs[@]} -gt 0 ]; then
  echo "failed configurations: ${failed_configs[*]}"
fi
echo "readpast: $total_passed passed, $total_failed failed, in ${SECONDS}s"
[ ${#failed_configs[@]} -eq 0 ]
