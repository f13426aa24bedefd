#!/usr/bin/env bash
# Installs what is needed, then builds readpast and runs every test, in four
# configurations (CI runs exactly this, through .ci/run):
#   1. strict:  GCC, warnings as errors, optimised (-O1); the tests that the sanitizer
#               build does not run (below: the fault tests of tests/chaos in their short
#               form, scripts/reliability.sh --long runs the soak; the browser tests; the
#               multi-process suite; the reruns; the benchmark's smoke tests; the build checks)
#   2. asan:    clang, AddressSanitizer + UndefinedBehaviorSanitizer, every other test (the
#               conformance suite on every engine, the HTTP server's API and attack tests...)
#   3. tsan:    clang, ThreadSanitizer, the tests of the worker runtime, the command line and
#               the HTTP server (on SQLite: their threads are the same on every engine)
#   4. fuzz:    clang, the libFuzzer targets of tests/fuzz (parsers only), a short run each
# Each test runs in one of strict and asan, not in both: under ASan + UBSan a test asserts what
# it asserts in the plain build, and memory errors and undefined behaviour fail it besides.
# Running the same tests in both cost about 400 s of CI's time. Both builds compile all the
# code, so GCC's warnings and clang's see all of it.
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

# run_config NAME LABEL_REGEX EXCLUDE_REGEX EXCLUDE_NAMES TARGETS CMAKE_ARGS...
# (empty LABEL/TARGETS: all of them; empty EXCLUDE/EXCLUDE_NAMES: none)
run_config() {
  local name=$1 label_regex=$2 exclude_regex=$3 exclude_names=$4 targets=$5
  shift 5
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
  [ -n "$exclude_names" ] && args+=(-E "$exclude_names")
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
  cmake -S "$root/tests/fuzz" -B "$dir" -G Ninja -DCMAKE_CXX_COMPILER="$clang" \
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

# Every configuration is a unity build (CMAKE_UNITY_BUILD: each target's sources compiled a
# few at a time as one unit, so the heavy headers are parsed and their templates instantiated
# once per unit), and so is scripts/demo.sh's: measured on 2 cores, the strict build takes
# 169 s instead of ~330, the asan build (with GCC, then) 287 s instead of 476, the tsan build
# 171 s instead of 304. A file that compiles only beside another (a missing #include) is
# therefore not caught here; it is not hit by either of the README's commands either, whose
# builds batch the files the same way.
#
# The sanitizer builds use clang 16, measured on 2 cores: the ASan + UBSan build took 196 s at
# -O0, 459 s at -O1, and 673 s with GCC at -O1 (GCC's UBSan alone doubled its time); its tests
# ran in 531 s at -O0 and 443 s at -O1, so -O0 is the shorter total. The TSan build took 298 s
# at -O1 against GCC's 393 s at -O2, its tests 175 s against 196.
unity=-DCMAKE_UNITY_BUILD=ON
clang=clang++-16
# The labels of the tests that run in strict only; asan runs every other test.
strict_only="chaos|browser|multiprocess|rerun|bench|build"
for config in $configs; do
  case "$config" in
    # Optimised (-O1: the warnings that need the optimiser's flow analysis run from -O1 on;
    # at -O2 the two largest units measured took 8% and 36% longer to compile) but without
    # debug info, and the sanitizer builds with line tables only (enough for their reports):
    # full debug info was a large part of CI's build time. The release build's own warnings
    # at -O3 have their test (tests/release).
    #
    # strict runs the tests that asan does not: the fault tests (label chaos; under ASan they
    # take minutes the CI budget does not have, scripts/reliability.sh runs them on demand);
    # the multi-process suite (processes killed and histories checked; its worker and engine
    # code run under ASan in the worker and conformance suites); the reruns (label rerun: the
    # command line's suite on MariaDB and through PgBouncer, and PgBouncer's conformance,
    # SQL-function and server reruns; the engines' own code runs under ASan in
    # conformance.mariadb and conformance.postgres); the browser tests; the benchmark's smoke
    # tests (the benchmark is built here only); the build checks.
    strict) run_config strict "$strict_only" "" "" "" "$unity" -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -DNDEBUG" -DREADPAST_BUILD_BENCH=ON ;;
    asan)   run_config asan "" "$strict_only" "" "" "$unity" -DCMAKE_CXX_COMPILER="$clang" -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-gline-tables-only -O0" -DREADPAST_SANITIZE=address,undefined ;;
    #
    # tsan leaves out the command line's refusals of bad input (CliBadInputTest,
    # UsageErrorTest: one single-threaded command each, nothing to race; asan runs them):
    # 55 tests; without them tsan's tests took 127 s instead of 171.
    tsan)   run_config tsan "cli|worker|server" "postgres|mariadb|chaos|browser" "CliBadInputTest|UsageErrorTest" "readpast_cli readpast_cli_tests readpast_worker_tests readpast_server_tests readpast_serve_command_tests" "$unity" -DCMAKE_CXX_COMPILER="$clang" -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" -DREADPAST_SANITIZE=thread ;;
    fuzz)   run_fuzz_config ;;
    *) echo "unknown configuration '$config' (strict, asan, tsan, fuzz)" >&2; exit 2 ;;
  esac
done

if [ ${#failed_configs[@]} -gt 0 ]; then
  echo "failed configurations: ${failed_configs[*]}"
fi
echo "readpast: $total_passed passed, $total_failed failed, in ${SECONDS}s"
[ ${#failed_configs[@]} -eq 0 ]
