"""Authentication, plans and tenant isolation against the real server."""

from __future__ import annotations

import pytest

from loci_client import ArtifactInput, Client, Conflict, Forbidden, NotFound, Unauthorized

from .conftest import Server, TenantFactory


def test_no_key_and_bad_key_are_unauthorized(server: Server) -> None:
    with Client(server.url, "") as anon:
        with pytest.raises(Unauthorized) as exc:
            anon.list_workspaces()
        assert exc.value.status == 401 and exc.value.detail and exc.value.request_id
    with Client(server.url, "lk_" + "x" * 43) as bad:
        with pytest.raises(Unauthorized):
            bad.ingest("ws", "a", "note", "x")


def test_api_key_and_url_from_environment(server: Server, tenant: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCI_URL", server.url)
    monkeypatch.setenv("LOCI_API_KEY", tenant.api_key or "")
    with Client() as c:
        assert c.base_url == server.url
        assert c.get_plan().plan == "enterprise"


def test_tenant_b_cannot_see_tenant_a(new_tenant: TenantFactory, ws: str) -> None:
    a, _ = new_tenant("pro")
    b, _ = new_tenant("pro")
    art = a.ingest(ws, "alice", "note", "Alice's secret: the vault code is 4921.")
    pack = a.context_pack(ws, "vault code", 256)
    assert pack.citations and pack.citations[0].artifact_id == art.artifact_id
    job = a.queue_batch(ws, "alice", [ArtifactInput("note", "queued secret")]).queued_jobs[0]

    for call in (
        lambda: b.get_artifact(art.artifact_id),
        lambda: b.artifact_status(art.artifact_id),
        lambda: b.erase_artifact(art.artifact_id),
        lambda: b.get_receipt(pack.receipt_id),
        lambda: b.get_job(job.job_id),
    ):
        with pytest.raises(NotFound) as exc:
            call()
        assert exc.value.status == 404
    assert b.list_artifacts(ws).artifacts == []
    assert b.list_receipts(ws).total == 0
    assert ws not in {w.workspace_id for w in b.list_workspaces()}
    assert b.context_pack(ws, "vault code", 256).citations == []
    # Same workspace id, another tenant: separate data.
    b.ingest(ws, "bob", "note", "Bob's note")
    assert [x.artifact_id for x in a.iter_artifacts(ws)][-1] == art.artifact_id
    assert a.get_artifact(art.artifact_id).raw_payload == "Alice's secret: the vault code is 4921."


def test_plan_rules(admin: Client, new_tenant: TenantFactory, tenant: Client, ws: str) -> None:
    free, reg = new_tenant("free")
    with pytest.raises(Forbidden) as exc:
        free.context_pack_v2(ws, "anything", 100)
    assert "v2" in exc.value.detail
    free.ingest(ws, "a", "note", "first workspace")
    with pytest.raises(Forbidden):
        free.ingest(ws + "-2", "a", "note", "a second workspace is beyond plan free")
    with pytest.raises(Forbidden):
        tenant.set_plan(reg.tenant_id, "enterprise")  # admin key only
    with pytest.raises(Forbidden):
        tenant.get_plan(reg.tenant_id)
    with pytest.raises(NotFound):
        admin.get_plan("no-such-tenant")


def test_revoked_key_stops_and_last_key_stays(server: Server, new_tenant: TenantFactory) -> None:
    c, _ = new_tenant("pro")
    spare = c.create_key()
    c.revoke_key(spare.id)
    with Client(server.url, spare.api_key) as revoked:
        with pytest.raises(Unauthorized):
            revoked.list_keys()
    (own,) = [k for k in c.list_keys() if not k.revoked]
    with pytest.raises(Conflict):
        c.revoke_key(own.id)
