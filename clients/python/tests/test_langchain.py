"""The LangChain adapters with the real langchain-core: retriever documents and chat history in a workspace."""

from __future__ import annotations

import pytest

pytest.importorskip("langchain_core")

from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from loci_client import ArtifactInput, AsyncClient, Client
from loci_client.langchain import LociChatMessageHistory, LociRetriever

from .conftest import Server

LONG = (
    "The on-call rotation changes every Monday at 09:00 UTC; the outgoing engineer hands over open incidents, "
    "pending deploys and any alert that fired twice in the week, in the #ops channel, before leaving."
)


def _corpus(c: Client, ws: str) -> list:
    res = c.ingest_batch(
        ws,
        "agent",
        [
            ArtifactInput("document", LONG, metadata={"team": "ops"}),
            ArtifactInput("note", "The cafeteria closes at 15:00 on Fridays.", metadata={"team": "facilities"}),
        ],
        wait_for_embedding=True,
    )
    return [i.artifact_id for i in res.ingested]


@pytest.mark.parametrize("api_version", ["v1", "v2"])
def test_retriever_documents_carry_citations(tenant: Client, ws: str, api_version: str) -> None:
    ids = _corpus(tenant, ws)
    retriever = LociRetriever(client=tenant, workspace_id=ws, api_version=api_version, max_tokens=512)
    docs = retriever.invoke("when does the on-call rotation change?")
    assert docs and all(isinstance(d, Document) for d in docs)
    by_artifact = {d.metadata["artifact_id"]: d for d in docs}
    top = by_artifact[ids[0]]
    # The whole span, not the 160-character preview of a v1 citation.
    assert top.page_content == LONG and len(LONG) > 160
    receipt = tenant.get_receipt(top.metadata["receipt_id"])
    in_citation_order = sorted(docs, key=lambda d: d.metadata["citation"])
    assert [e.span_id for e in receipt.evidence] == [d.metadata["span_id"] for d in in_citation_order]
    assert top.id == top.metadata["span_id"]
    assert top.metadata["span_id"] in {s.span_id for s in tenant.get_artifact(ids[0]).spans}
    assert top.metadata["confidence"] == receipt.confidence and top.metadata["abstain"] is receipt.abstain_flag
    assert isinstance(top.metadata["score"], float) and top.metadata["citation"] >= 1
    # When and who: the artifact's time, actor and session (none here), as in the pack's citations.
    cite = next(e for e in receipt.evidence if e.span_id == top.metadata["span_id"])
    assert top.metadata["timestamp"] == cite.timestamp and top.metadata["timestamp"].endswith("Z")
    assert top.metadata["actor_id"] == "agent" and top.metadata["session_id"] is None

    ops_only = LociRetriever(client=tenant, workspace_id=ws, api_version=api_version, metadata_filter={"team": "facilities"})
    assert {d.metadata["artifact_id"] for d in ops_only.invoke("when does it close?")} == {ids[1]}


@pytest.mark.parametrize("api_version", ["v1", "v2"])
def test_retriever_window_and_dated_turns(tenant: Client, ws: str, api_version: str) -> None:
    days = {}
    turns = [("2026-10-01", "Maya: the offsite is in Porto."), ("2026-10-20", "Maya: the offsite moved to Lisbon.")]
    for day, text in turns:
        r = tenant.ingest(
            ws, "u-maya", "chat_turn", {"role": "user", "content": text}, session_id="s1", timestamp=f"{day}T09:15:00Z"
        )
        days[r.artifact_id] = (day, text)
    docs = LociRetriever(client=tenant, workspace_id=ws, api_version=api_version).invoke("where is the offsite?")
    assert sorted(days[d.metadata["artifact_id"]][0] for d in docs) == ["2026-10-01", "2026-10-20"]
    for d in docs:
        day, text = days[d.metadata["artifact_id"]]
        # The span's text (a turn's starts with its speaker), the date in the metadata.
        assert d.page_content == text
        dated = (d.metadata["timestamp"], d.metadata["actor_id"], d.metadata["session_id"])
        assert dated == (f"{day}T09:15:00Z", "u-maya", "s1")
    late = LociRetriever(client=tenant, workspace_id=ws, api_version=api_version, since="2026-10-02")
    assert [days[d.metadata["artifact_id"]][0] for d in late.invoke("where is the offsite?")] == ["2026-10-20"]


def test_retriever_abstention(tenant: Client, ws: str) -> None:
    # Two tokens of evidence are below the server's min_evidence_tokens (5): the pack abstains but still cites.
    tenant.ingest_batch(ws, "a", [ArtifactInput("note", "teal")], wait_for_embedding=True)
    docs = LociRetriever(client=tenant, workspace_id=ws).invoke("teal")
    assert len(docs) == 1 and docs[0].metadata["abstain"] is True
    assert LociRetriever(client=tenant, workspace_id=ws, include_abstained=False).invoke("teal") == []


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_retriever_ainvoke_with_async_client(server: Server, tenant: Client, ws: str, anyio_backend: str) -> None:
    ids = _corpus(tenant, ws)
    async with AsyncClient(server.url, tenant.api_key) as ac:
        docs = await LociRetriever(async_client=ac, workspace_id=ws, profile="high_recall").ainvoke("on-call rotation")
    assert ids[0] in {d.metadata["artifact_id"] for d in docs}
    assert docs[0].metadata["serving_profile"] == "high_recall"


def test_chat_history_round_trip(tenant: Client, ws: str) -> None:
    history = LociChatMessageHistory(ws, "session-1", client=tenant, actor_id="user-42")
    assert history.messages == []
    history.add_user_message("Hi! I'm allergic to peanuts.")
    history.add_ai_message("Noted: no peanuts.")
    history.add_messages(
        [SystemMessage(content="Be brief."), ToolMessage(content="menu: satay", tool_call_id="call-1")]
    )
    msgs = history.messages
    assert [type(m) for m in msgs] == [HumanMessage, AIMessage, SystemMessage, ToolMessage]
    assert [m.content for m in msgs] == ["Hi! I'm allergic to peanuts.", "Noted: no peanuts.", "Be brief.", "menu: satay"]
    assert isinstance(msgs[3], ToolMessage) and msgs[3].tool_call_id == "call-1"
    # Stored as chat turns Loci indexes: recall finds what the user said.
    stored = list(tenant.iter_artifacts(ws, session_id="session-1"))
    assert len(stored) == 4 and {a.artifact_type for a in stored} == {"chat_turn"}
    assert all(a.actor_id == "user-42" and a.idempotency_key for a in stored)
    pack = tenant.context_pack(ws, "what is the user allergic to?", 256, session_id="session-1")
    assert "user: Hi! I'm allergic to peanuts." in pack.context_text

    other = LociChatMessageHistory(ws, "session-2", client=tenant)
    assert other.messages == []
    history.clear()
    assert history.messages == []


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_chat_history_async(server: Server, tenant: Client, ws: str, anyio_backend: str) -> None:
    async with AsyncClient(server.url, tenant.api_key) as ac:
        history = LociChatMessageHistory(ws, "s-async", async_client=ac)
        await history.aadd_messages([HumanMessage(content="first"), AIMessage(content="second")])
        assert [m.content for m in await history.aget_messages()] == ["first", "second"]
        await history.aclear()
        assert await history.aget_messages() == []


@pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")
def test_chat_history_with_runnable_with_message_history(tenant: Client, ws: str) -> None:
    """The history plugs into LangChain's RunnableWithMessageHistory; the "model" here echoes what it was given."""
    from langchain_core.runnables import RunnableLambda
    from langchain_core.runnables.history import RunnableWithMessageHistory

    seen: list = []

    def model(messages: list) -> AIMessage:
        seen.append([m.content for m in messages])
        return AIMessage(content=f"reply {len(messages)}")

    chain = RunnableWithMessageHistory(
        RunnableLambda(model), lambda session_id: LociChatMessageHistory(ws, session_id, client=tenant)
    )
    cfg = {"configurable": {"session_id": "rwmh"}}
    assert chain.invoke([HumanMessage(content="one")], config=cfg).content == "reply 1"
    assert chain.invoke([HumanMessage(content="two")], config=cfg).content == "reply 3"
    assert seen[1] == ["one", "reply 1", "two"]
    assert [m.content for m in LociChatMessageHistory(ws, "rwmh", client=tenant).messages] == [
        "one", "reply 1", "two", "reply 3"
    ]
