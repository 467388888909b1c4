#!/usr/bin/env bash
# CI entry of the TypeScript client: installs the locked devDependencies,
# checks that src/generated/openapi.ts matches docs/openapi.yaml, builds the
# package, and runs its tests against a loci server built from this
# repository (needs Go and Node >= 18 on PATH).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

start=$(date +%s)
node -e 'if (+process.versions.node.split(".")[0] < 18) { console.error("clients/typescript needs Node >= 18, found " + process.version); process.exit(1) }'
command -v go >/dev/null || { echo "clients/typescript: the tests build loci with go, which is not on PATH" >&2; exit 1; }
npm ci --no-audit --no-fund
npm test
echo "clients/typescript: ci.sh passed in $(( $(date +%s) - start )) s"
