#!/usr/bin/env bash
# Browser tests of the web console (console/e2e/console.test.mjs): installs
# Debian's chromium when missing, the test dependencies from the npm registry
# (npm ci, from the lock files), checks that the committed console/dist was
# built from the current sources, runs the front end's type check and unit
# tests, then the browser tests against a real `loci serve`.
# Screenshots go to $LOCI_E2E_SHOTS (default: a temporary directory, printed).
set -euo pipefail
cd "$(dirname "$0")"
here=$(pwd)

if [[ ! -x "${LOCI_CHROMIUM:-/usr/bin/chromium}" ]]; then
  echo "== apt-get install chromium"
  if ! command -v apt-get >/dev/null; then
    echo "error: ${LOCI_CHROMIUM:-/usr/bin/chromium} is missing and apt-get is not available: install chromium, or point LOCI_CHROMIUM at it" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
"${LOCI_CHROMIUM:-/usr/bin/chromium}" --version

echo "== console/web: npm ci, dist up to date, type check, unit tests"
cd "$here/../web"
npm ci --no-audit --no-fund --loglevel=error
node build.mjs --check
npm run --silent check
npm test --silent

echo "== console/e2e: npm ci, browser tests"
cd "$here"
npm ci --no-audit --no-fund --loglevel=error
npm test
