"""The LlamaIndex retriever with the real llama-index-core: NodeWithScore per cited span."""

from __future__ import annotations

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.schema import MetadataMode, NodeRelationship, NodeWithScore, QueryBundle

from loci_client import ArtifactInput, AsyncClient, Client
from loci_client.llama_index import LociRetriever

from .conftest import Server

FACTS = [
    "The Lisbon office opens at 08:30 and the badge reader is on the left of the main door.",
    "Expense reports above 500 EUR need a director's approval before payment.",
]


def _corpus(c: Client, ws: str) -> list:
    res = c.ingest_batch(ws, "kb", [ArtifactInput("document", f) for f in FACTS], wait_for_embedding=True)
    return [i.artifact_id for i in res.ingested]


@pytest.mark.parametrize("api_version", ["v1", "v2"])
def test_retrieve_nodes(tenant: Client, ws: str, api_version: str) -> None:
    ids = _corpus(tenant, ws)
    retriever = LociRetriever(ws, client=tenant, api_version=api_version, max_tokens=400)
    nodes = retriever.retrieve("who approves large expense reports?")
    assert nodes and all(isinstance(n, NodeWithScore) for n in nodes)
    by_artifact = {n.node.metadata["artifact_id"]: n for n in nodes}
    hit = by_artifact[ids[1]]
    assert hit.node.get_content(metadata_mode=MetadataMode.LLM) == FACTS[1]
    assert hit.node.node_id == hit.node.metadata["span_id"]
    assert hit.node.relationships[NodeRelationship.SOURCE].node_id == ids[1]
    assert hit.score == hit.node.metadata["score"] and hit.score is not None and hit.score > 0
    receipt = tenant.get_receipt(hit.node.metadata["receipt_id"])
    assert {e.span_id for e in receipt.evidence} == {n.node.node_id for n in nodes}
    assert retriever.last_recall is not None and retriever.last_recall.receipt_id == receipt.id
    assert hit.node.metadata["abstain"] is receipt.abstain_flag
    # When and who, in the metadata (kept out of the text the model reads, which is the span's).
    cite = next(e for e in receipt.evidence if e.span_id == hit.node.node_id)
    assert hit.node.metadata["timestamp"] == cite.timestamp and hit.node.metadata["timestamp"].endswith("Z")
    assert hit.node.metadata["actor_id"] == "kb" and hit.node.metadata["session_id"] is None
    early = LociRetriever(ws, client=tenant, api_version=api_version, until="2000-01-01")
    assert early.retrieve("who approves large expense reports?") == []
    # A QueryBundle works as well as a string.
    again = retriever.retrieve(QueryBundle("who approves large expense reports?"))
    assert [n.node.node_id for n in again] == [n.node.node_id for n in nodes]


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_aretrieve_with_async_client(server: Server, tenant: Client, ws: str, anyio_backend: str) -> None:
    ids = _corpus(tenant, ws)
    async with AsyncClient(server.url, tenant.api_key) as ac:
        nodes = await LociRetriever(ws, async_client=ac, profile="low_latency").aretrieve("Lisbon office badge reader")
    assert nodes[0].node.metadata["artifact_id"] == ids[0]
    assert nodes[0].node.metadata["serving_profile"] == "low_latency"
