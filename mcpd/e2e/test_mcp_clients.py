"""Loci's MCP server driven by a third-party client: the official Python SDK
(`mcp` from PyPI), over stdio (`loci mcp`, engine embedded) and over
streamable HTTP (POST /mcp of `loci serve`, with API keys)."""

import asyncio
import json
import os
import socket
import subprocess
import time
import urllib.request

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

LOCI = os.environ["LOCI_BIN"]
ADMIN = "admin-key-for-the-mcp-e2e-test"


def structured(result):
    assert not result.is_error, result.content
    return result.structured_content or json.loads(result.content[0].text)


async def exercise(session: ClientSession, ws: str):
    """remember, recall, feedback, recall again, explain, list, forget."""
    await session.initialize()
    names = sorted(t.name for t in (await session.list_tools()).tools)
    assert names == ["explain", "feedback", "forget", "list", "recall", "remember"]

    stored = structured(await session.call_tool("remember", {"workspace_id": ws, "memories": [
        {"content": "Maya is allergic to peanuts and carries an epinephrine pen.", "artifact_type": "chat_turn", "role": "user"},
        {"content": "Maya's sister Lena lives in Porto and visits every August."},
    ]}))["stored"]
    assert len(stored) == 2 and all(s["spans"] >= 1 for s in stored)

    recall = structured(await session.call_tool("recall", {"workspace_id": ws, "query": "what is Maya allergic to?"}))
    assert not recall["abstain"]
    assert recall["citations"][0]["artifact_id"] == stored[0]["artifact_id"]
    assert "[cite:1]" in recall["context_text"] and "peanuts" in recall["context_text"]

    top = recall["citations"][0]
    fb = structured(await session.call_tool("feedback", {"workspace_id": ws, "action": "mark_wrong",
                                                         "artifact_id": top["artifact_id"], "span_id": top["span_id"]}))
    assert fb["action"] == "mark_wrong" and fb["applied"] == 1
    again = structured(await session.call_tool("recall", {"workspace_id": ws, "query": "what is Maya allergic to?"}))
    assert top["span_id"] not in [c["span_id"] for c in again["citations"]]

    receipt = json.loads((await session.call_tool("explain", {"receipt_id": recall["receipt_id"]})).content[0].text)
    assert receipt["id"] == recall["receipt_id"] and len(receipt["evidence"]) == len(recall["citations"])

    listing = json.loads((await session.call_tool("list", {"workspace_id": ws})).content[0].text)
    assert [a["artifact_id"] for a in listing["artifacts"]] == [s["artifact_id"] for s in reversed(stored)]

    gone = structured(await session.call_tool("forget", {"artifact_id": stored[1]["artifact_id"]}))
    assert gone["artifact_id"] == stored[1]["artifact_id"]
    bad = await session.call_tool("remember", {"workspace_id": ws, "memories": [{"content": "x", "artifact_type": "poem"}]})
    assert bad.is_error and 'memories[0].artifact_type: unknown value "poem"' in bad.content[0].text
    return stored


def test_stdio(tmp_path):
    params = StdioServerParameters(command=LOCI, args=["mcp", "--data", str(tmp_path / "data"), "--embedder", "glove"],
                                   env={"PATH": os.environ.get("PATH", "")})

    async def run():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                return await exercise(session, "family")

    stored = asyncio.run(run())

    # The memories are durable: a new process over the same directory finds them.
    async def reopen():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return json.loads((await session.call_tool("list", {"workspace_id": "family"})).content[0].text)

    listing = asyncio.run(reopen())
    assert [a["artifact_id"] for a in listing["artifacts"]] == [stored[0]["artifact_id"]]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(tmp_path):
    port = free_port()
    proc = subprocess.Popen([LOCI, "serve", "--addr", f"127.0.0.1:{port}", "--data", str(tmp_path / "data"), "--embedder", "glove"],
                            env={**os.environ, "API_KEY": ADMIN}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            with urllib.request.urlopen(base + "/health") as r:
                if r.status == 200:
                    break
        except OSError:
            time.sleep(0.05)
    yield base
    proc.terminate()
    assert proc.wait(timeout=20) == 0


def register(base, email):
    req = urllib.request.Request(base + "/v1/register", data=json.dumps({"email": email, "plan": "pro"}).encode(),
                                 headers={"X-API-Key": ADMIN, "Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return json.load(r)["api_key"]


def test_streamable_http(server):
    key_a, key_b = register(server, "a@example.com"), register(server, "b@example.com")

    async def session_of(key, body):
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {key}"}) as http:
            async with streamable_http_client(server + "/mcp", http_client=http) as (read, write, *_):
                async with ClientSession(read, write) as session:
                    return await body(session)

    stored = asyncio.run(session_of(key_a, lambda s: exercise(s, "family")))

    async def other_tenant(session):
        await session.initialize()
        recall = structured(await session.call_tool("recall", {"workspace_id": "family", "query": "what is Maya allergic to?"}))
        forget = await session.call_tool("forget", {"artifact_id": stored[0]["artifact_id"]})
        return recall, forget

    recall, forget = asyncio.run(session_of(key_b, other_tenant))
    assert recall["abstain"] and recall["citations"] == []
    assert forget.is_error and "not found" in forget.content[0].text

    # Without a key the endpoint refuses before any MCP processing.
    req = urllib.request.Request(server + "/mcp", data=b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
                                 headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req)
    assert e.value.code == 401
