#!/bin/sh
# The issue-21 batch attack on POST /mcp: one 0.5 MB JSON-RPC batch of 10,000
# tools/list calls from a free-plan key; time of the answer, RSS before/after.
# Usage: mcpd/e2e/batch-attack.sh path/to/loci (needs curl and python3; it
# measures and asserts nothing: the tests are TestMCPBatchesAreCappedAndCounted).
set -e
BIN=${1:?loci binary}
PORT=${PORT:-39471}
DATA=$(mktemp -d)
API_KEY=bench-admin-key "$BIN" serve --addr 127.0.0.1:$PORT --data "$DATA" --embedder none >/dev/null 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DATA" "$DATA.batch.json" "$DATA.answer.json"' EXIT
until curl -sf http://127.0.0.1:$PORT/health >/dev/null; do sleep 0.2; done
KEY=$(curl -s -H 'X-API-Key: bench-admin-key' -H 'Content-Type: application/json' \
  -d '{"email":"attacker@example.com","plan":"free"}' http://127.0.0.1:$PORT/v1/register | sed 's/.*"api_key":"\([^"]*\)".*/\1/')
python3 -c 'import json; print(json.dumps([{"jsonrpc":"2.0","id":i,"method":"tools/list"} for i in range(1,10001)], separators=(",",":")))' > "$DATA.batch.json"
echo "batch: $(wc -c < "$DATA.batch.json") bytes"
echo "RSS before: $(grep VmRSS /proc/$PID/status)"
curl -s -o "$DATA.answer.json" -w 'status %{http_code}, %{size_download} bytes, %{time_total} s\n' \
  -H "X-API-Key: $KEY" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
  --data-binary @"$DATA.batch.json" http://127.0.0.1:$PORT/mcp
echo "RSS after: $(grep VmRSS /proc/$PID/status); peak $(grep VmHWM /proc/$PID/status)"
head -c 300 "$DATA.answer.json"; echo
