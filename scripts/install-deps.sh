#!/usr/bin/env bash
# Installs what readpast needs, from Debian 12's packages. Run as root. Safe to run again:
# apt-get skips what is already there.
#   scripts/install-deps.sh               to build, test and benchmark (scripts/test.sh)
#   scripts/install-deps.sh --build-only  to build the library and the readpast binary
#                                         (scripts/demo.sh)
set -euo pipefail

build_only=0
case "${1:-}" in
  "") ;;
  --build-only) build_only=1 ;;
  *) echo "usage: scripts/install-deps.sh [--build-only]" >&2; exit 2 ;;
esac

packages=(
  build-essential cmake ninja-build pkg-config git
  libsqlite3-dev sqlite3 libpq-dev libmariadb-dev
  libexpected-dev libcli11-dev nlohmann-json3-dev libfmt-dev libspdlog-dev
  # Schedules in a time zone (cron with --tz), read from tzdata.
  libcctz-dev tzdata
  # `readpast serve`'s HTTP: Boost.Beast and Asio (header-only).
  libboost-dev
)
if [ "$build_only" = 0 ]; then
  packages+=(
    postgresql mariadb-server libgtest-dev libgmock-dev libbenchmark-dev
    # PostgreSQL behind a pooler in transaction mode (tests/support/engines/postgres_pgbouncer.hpp).
    pgbouncer
    # The HTTP client of the server's API tests.
    libcpp-httplib-dev
    clang-format
    # The sanitizer and fuzz builds (scripts/test.sh): clang 16 and its sanitizer runtimes.
    clang-16 libclang-rt-16-dev
    procps util-linux
    # Browser tests of the dashboard: Debian's Chromium, driven by playwright-core (npm).
    chromium fonts-dejavu-core
    # Fault tests: packets dropped by the kernel (network), a clock that jumps (libfaketime).
    nftables libfaketime
  )
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps.sh: run as root (it calls apt-get)" >&2
  exit 1
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update
  apt-get install -y --no-install-recommends "${missing[@]}"
fi
[ "$build_only" = 1 ] && exit 0

# Node.js and npm for the browser tests (tests/browser): the machine's own when it has them
# (Node 18 or newer), else Debian's.
if ! command -v npm >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update
  apt-get install -y --no-install-recommends nodejs npm
fi
# playwright-core, exactly as locked; it drives /usr/bin/chromium and downloads no browser.
(cd "$(dirname "$0")/../tests/browser" && npm ci --no-audit --no-fund --loglevel=error)
