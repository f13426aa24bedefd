#!/usr/bin/env bash
# Installs what readpast needs to build, test and benchmark, from Debian 12's packages.
# Run as root. Safe to run again: apt-get skips what is already there.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libsqlite3-dev sqlite3 libpq-dev postgresql
  libexpected-dev libcli11-dev nlohmann-json3-dev libfmt-dev libspdlog-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libcpp-httplib-dev chromium fonts-dejavu-core
  clang clang-format clang-tidy libclang-rt-14-dev
  procps util-linux
  # Fault tests: packets dropped by the kernel (network), a clock that jumps (libfaketime).
  nftables libfaketime
)

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

# Node.js and npm for the browser tests (tests/browser): the machine's own when it has them
# (Node 18 or newer), else Debian's.
if ! command -v npm >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update
  apt-get install -y --no-install-recommends nodejs npm
fi
# playwright-core, exactly as locked; it drives /usr/bin/chromium and downloads no browser.
(cd "$(dirname "$0")/../tests/browser" && npm ci --no-audit --no-fund --loglevel=error)
