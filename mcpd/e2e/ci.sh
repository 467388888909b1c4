#!/usr/bin/env bash
# CI entry of the MCP end-to-end tests: the official Python MCP SDK (`mcp`
# from PyPI) drives `loci mcp` over stdio and `loci serve`'s POST /mcp over
# streamable HTTP. Needs Go and Python >= 3.10 on PATH.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
start=$(date +%s)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd ../.. && go build -o "$work/loci" ./cmd/loci)
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check -r requirements.txt
LOCI_BIN="$work/loci" "$work/venv/bin/python" -m pytest -q test_mcp_clients.py
echo "mcpd/e2e: ci.sh passed in $(( $(date +%s) - start )) s"
