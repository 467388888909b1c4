"""AsyncClient: the same methods as Client, the same answers from the same server."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from loci_client import ArtifactInput, AsyncClient, BadRequest, Client, NotFound, Unauthorized

from .conftest import Server

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _public(cls: type) -> dict:
    return {n: f for n, f in vars(cls).items() if callable(f) and not n.startswith("_")}


def test_same_methods_and_signatures() -> None:
    sync, aio = _public(Client), _public(AsyncClient)
    assert set(sync) == set(aio)
    for name, f in sync.items():
        a = aio[name]
        assert inspect.signature(f).parameters == inspect.signature(a).parameters, name
        if name.startswith("iter_"):
            assert inspect.isasyncgenfunction(a), name
        else:
            assert inspect.iscoroutinefunction(a), name


async def test_async_flow_matches_sync(server: Server, tenant: Client, ws: str) -> None:
    async with AsyncClient(server.url, tenant.api_key) as c:
        assert (await c.health()).status == "ok"
        one = await c.ingest(ws, "a", "note", "Async clients share the event loop.", idempotency_key="a1")
        assert (await c.ingest(ws, "a", "note", "Async clients share the event loop.", idempotency_key="a1")).idempotent_replay
        batch = await c.ingest_batch(
            ws, "a", [ArtifactInput("note", f"async batch item {i}") for i in range(5)], wait_for_embedding=True
        )
        assert len(batch.ingested) == 5 and all(i.embedding == "embedded" for i in batch.ingested)
        while (await c.artifact_status(one.artifact_id)).embedding != "embedded":
            await asyncio.sleep(0.02)
        pack = await c.context_pack(ws, "async clients event loop", 256)
        sync_pack = tenant.context_pack(ws, "async clients event loop", 256)
        assert pack.pack_hash == sync_pack.pack_hash and pack.receipt_id == sync_pack.receipt_id
        assert one.artifact_id in {x.artifact_id for x in pack.citations}
        v2 = await c.context_pack_v2(ws, "batch item", 256, profile="balanced")
        assert v2.snippets and v2.serving_profile in ("balanced", "high_recall")
        listed = [a.artifact_id async for a in c.iter_artifacts(ws, page_size=2)]
        assert listed == [a.artifact_id for a in tenant.iter_artifacts(ws, page_size=50)] and len(listed) == 6
        receipts = [r.id async for r in c.iter_receipts(ws, page_size=1)]
        assert receipts == [v2.receipt_id, pack.receipt_id]
        assert (await c.get_receipt(pack.receipt_id)).pack_hash == pack.pack_hash
        queued = await c.queue_batch(ws, "a", [ArtifactInput("note", "queued async")])
        job = await c.wait_for_job(queued.queued_jobs[0].job_id, poll_interval=0.05, timeout=30)
        assert job.status == "done" and job.artifact_id
        fb = await c.feedback(ws, "outdated", job.artifact_id)
        assert fb.applied == 1
        assert (await c.set_workspace_settings(ws, 3650)).retention_days == 3650
        assert (await c.get_workspace_settings(ws)).retention_days == 3650
        assert ws in {w.workspace_id for w in await c.list_workspaces()}
        assert (await c.usage()).context_packs >= 2
        assert {p.name for p in await c.list_plans()} == {"free", "pro", "team", "enterprise"}
        assert (await c.get_plan()).plan == "enterprise"
        assert len(await c.list_keys()) >= 1
        with pytest.raises(BadRequest) as exc:
            await c.ingest(ws, "a", "nope", "x")  # type: ignore[arg-type]
        assert "artifact_type" in exc.value.detail
        erased = await c.erase_artifact(one.artifact_id)
        assert erased.artifacts_erased == 1
        with pytest.raises(NotFound):
            await c.get_artifact(one.artifact_id)
        assert (await c.erase_workspace(ws)).artifacts_erased == 6
    async with AsyncClient(server.url, "") as anon:
        with pytest.raises(Unauthorized):
            await anon.list_keys()
