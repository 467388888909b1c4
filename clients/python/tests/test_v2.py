"""v2: batch ingest with idempotency keys, wait_for_embedding, asynchronous jobs, and profiles."""

from __future__ import annotations

import pytest

from loci_client import ArtifactInput, BadRequest, Client, Conflict


def _items(tag: str) -> list:
    return [
        ArtifactInput("note", {"content": f"{tag}: the standup moved to 09:30."}, idempotency_key=f"{tag}-0"),
        ArtifactInput(
            "chat_turn",
            {"role": "user", "content": f"{tag}: I prefer window seats on flights."},
            idempotency_key=f"{tag}-1",
            session_id="trip",
            metadata={"topic": "travel"},
        ),
        {"artifact_type": "document", "raw_payload": {"title": "Budget", "content": f"{tag}: Q3 budget is 40k EUR."},
         "idempotency_key": f"{tag}-2"},
    ]


def test_batch_wait_for_embedding_and_keyed_replay(tenant: Client, ws: str) -> None:
    first = tenant.ingest_batch(ws, "agent", _items("b1"), wait_for_embedding=True)
    assert first.workspace_id == ws and len(first.ingested) == 3
    assert all(i.embedding == "embedded" and not i.idempotent_replay and i.span_ids for i in first.ingested)
    # Resending the same keyed batch (what a retry after a lost answer does) stores nothing new.
    again = tenant.ingest_batch(ws, "agent", _items("b1"))
    assert [i.artifact_id for i in again.ingested] == [i.artifact_id for i in first.ingested]
    assert all(i.idempotent_replay for i in again.ingested)
    assert len(list(tenant.iter_artifacts(ws))) == 3
    art = tenant.get_artifact(first.ingested[1].artifact_id)
    assert art.session_id == "trip" and art.metadata == {"topic": "travel"} and art.actor_id == "agent"


def test_batch_key_reused_for_another_artifact_is_conflict(tenant: Client, ws: str) -> None:
    stored = tenant.ingest_batch(ws, "agent", [ArtifactInput("note", "original", idempotency_key="k")])
    with pytest.raises(Conflict) as exc:
        tenant.ingest_batch(ws, "agent", [ArtifactInput("note", "different", idempotency_key="k")])
    assert "artifacts[0].idempotency_key" in exc.value.detail
    assert stored.ingested[0].artifact_id in exc.value.detail
    with pytest.raises(BadRequest) as bad:
        tenant.ingest_batch(
            ws, "agent", [ArtifactInput("note", "x", idempotency_key="d"), ArtifactInput("note", "y", idempotency_key="d")]
        )
    assert "artifacts[1]" in bad.value.detail


def test_queue_batch_and_poll_jobs_to_done(tenant: Client, ws: str) -> None:
    queued = tenant.queue_batch(ws, "agent", _items("q1"))
    assert queued.workspace_id == ws and len(queued.queued_jobs) == 3
    assert [j.idempotency_key for j in queued.queued_jobs] == ["q1-0", "q1-1", "q1-2"]
    assert all(j.status in ("pending", "processing", "done") for j in queued.queued_jobs)
    done = [tenant.wait_for_job(j.job_id, timeout=30, poll_interval=0.05) for j in queued.queued_jobs]
    assert all(j.status == "done" and j.artifact_id and j.error_message is None for j in done)
    assert done[0].workspace_id == ws
    art = tenant.get_artifact(done[2].artifact_id)  # type: ignore[arg-type]
    assert art.raw_payload == {"title": "Budget", "content": "q1: Q3 budget is 40k EUR."}
    assert tenant.artifact_status(art.artifact_id).status == "indexed"
    assert tenant.get_job(queued.queued_jobs[0].job_id).status == "done"


def test_v2_pack_profiles_and_snippets(tenant: Client, ws: str) -> None:
    ingested = tenant.ingest_batch(ws, "agent", _items("p1"), wait_for_embedding=True)
    ids = [i.artifact_id for i in ingested.ingested]
    pack = tenant.context_pack_v2(ws, "what is the Q3 budget?", 1000, profile="high_recall")
    assert pack.serving_profile == "high_recall" and pack.token_accounting.budget == 1000
    assert pack.token_accounting.used <= 1000 and pack.token_accounting.snippets == len(pack.snippets)
    top = {s.artifact_id: s for s in pack.snippets}
    assert ids[2] in top and top[ids[2]].content == "Title: Budget\n\np1: Q3 budget is 40k EUR."
    assert pack.citation_count == len(top)
    fast = tenant.context_pack_v2(ws, "budget", 500, profile="low_latency")
    assert fast.serving_profile == "low_latency"
    assert any("semantic" in a for a in fast.assumptions)
    travel = tenant.context_pack_v2(ws, "standup seats budget", 500, metadata={"topic": "travel"})
    assert {s.artifact_id for s in travel.snippets} == {ids[1]}
    receipt = tenant.get_receipt(travel.receipt_id)
    assert receipt.raw.get("metadata_filter") == {"topic": "travel"}
