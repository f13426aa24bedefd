#!/usr/bin/env bash
# Runs the dashboard's browser tests (CTest label "browser"): node's test runner over
# dashboard.test.mjs and pages.test.mjs, with playwright-core from node_modules (installed by
# scripts/install-deps.sh with `npm ci`) driving Debian's /usr/bin/chromium.
#   tests/browser/run.sh READPAST_BINARY SCREENSHOT_DIR
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -d node_modules/playwright-core ]; then
  echo "tests/browser: node_modules missing; run scripts/install-deps.sh (npm ci)" >&2
  exit 1
fi
export READPAST_CLI=$1
export READPAST_SCREENSHOTS=$2
exec node --test --test-reporter=spec dashboard.test.mjs pages.test.mjs
