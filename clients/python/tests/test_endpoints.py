"""Every v1 route through the sync client, checked against what the real server stored and returned."""

from __future__ import annotations

import datetime
import hashlib
import time
import uuid
from typing import Iterable

import pytest

from loci_client import BadRequest, Client, Conflict, Forbidden, NotFound, Policy
from loci_client.models import Artifact, ContextPack

from .conftest import Server, TenantFactory


def test_health_version_openapi(server: Server, admin: Client) -> None:
    anon = Client(server.url, "")
    h = anon.health()
    assert h.status == "ok" and h.version and h.uptime_s is not None and h.uptime_s >= 0
    assert h.storage is None  # storage counters only with a valid key
    authed = admin.health()
    assert authed.storage is not None and "next_seq" in authed.storage
    assert admin.version() == h.version
    doc = anon.openapi()
    assert doc["openapi"].startswith("3.1") and "/v1/context-pack" in doc["paths"]
    anon.close()


def test_register_and_duplicate_email_is_conflict(admin: Client) -> None:
    email = f"{uuid.uuid4().hex[:10]}@example.test"
    reg = admin.register(email, "team")
    assert reg.plan == "team" and reg.api_key.startswith("lk_") and len(reg.api_key) == 46
    with pytest.raises(Conflict) as exc:
        admin.register(email, "team")
    assert exc.value.status == 409 and exc.value.detail


def test_keys_create_list_revoke(server: Server, new_tenant: TenantFactory) -> None:
    c, reg = new_tenant("pro")
    created = c.create_key()
    assert created.api_key.startswith(created.prefix)
    keys = {k.id: k for k in c.list_keys()}
    assert created.id in keys and len(keys) == 2 and not keys[created.id].revoked
    with Client(server.url, created.api_key) as second:
        assert second.get_plan().tenant_id == reg.tenant_id
        revoked = c.revoke_key(created.id)
        assert revoked.id == created.id and revoked.revoked is True
        assert {k.id: k for k in c.list_keys()}[created.id].revoked


def test_ingest_replay_get_status_erase(tenant: Client, ws: str) -> None:
    text = "The deploy window is Tuesday 14:00 UTC."
    first = tenant.ingest(
        ws, "alice", "note", text, idempotency_key="deploy-1", metadata={"team": "infra"}, session_id="s1"
    )
    # A string payload is hashed as its decoded UTF-8 text.
    assert first.content_hash == "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    assert first.indexed and len(first.span_ids) == 1 and not first.idempotent_replay
    again = tenant.ingest(
        ws, "alice", "note", text, idempotency_key="deploy-1", metadata={"team": "infra"}, session_id="s1"
    )
    assert again.idempotent_replay and again.artifact_id == first.artifact_id

    art = tenant.get_artifact(first.artifact_id)
    assert isinstance(art, Artifact)
    assert art.raw_payload == text and art.metadata == {"team": "infra"} and art.session_id == "s1"
    assert art.idempotency_key == "deploy-1" and art.actor_id == "alice" and art.workspace_id == ws
    assert [s.span_id for s in art.spans] == first.span_ids and art.spans[0].token_count > 0
    assert art.permissions is not None and art.permissions.visibility == "public"

    st = tenant.artifact_status(first.artifact_id)
    assert st.status == "indexed" and st.indexed and st.span_count == 1 and st.total_tokens > 0
    assert st.embedding in ("pending", "embedded")

    erased = tenant.erase_artifact(first.artifact_id)
    assert erased.artifacts_erased == 1 and erased.spans_erased == 1 and erased.workspace_id == ws
    with pytest.raises(NotFound):
        tenant.get_artifact(first.artifact_id)
    with pytest.raises(NotFound):
        tenant.erase_artifact(first.artifact_id)


def _ingest_corpus(c: Client, ws: str) -> dict:
    ids = {}
    ids["deploy"] = c.ingest(
        ws, "alice", "note", {"content": "The deploy window is Tuesday at 14:00 UTC."}, metadata={"team": "infra"}
    ).artifact_id
    ids["colour"] = c.ingest(
        ws, "bob", "chat_turn", {"role": "user", "content": "My favourite colour is teal."}, metadata={"team": "ux"}
    ).artifact_id
    ids["runbook"] = c.ingest(
        ws,
        "alice",
        "document",
        {"title": "Deploy runbook", "content": "Before the deploy window opens, freeze merges and notify on-call."},
        metadata={"team": "infra"},
    ).artifact_id
    wait_embedded(c, ids.values())
    return ids


def wait_embedded(c: Client, artifact_ids: Iterable[str], timeout: float = 20.0) -> None:
    """Waits until every artifact has its vectors: the data version moves when they land, and with it packs."""
    deadline = time.monotonic() + timeout
    for artifact_id in artifact_ids:
        while c.artifact_status(artifact_id).embedding != "embedded":
            assert time.monotonic() < deadline, f"{artifact_id} not embedded after {timeout}s"
            time.sleep(0.02)


def test_context_pack_v1_is_deterministic_and_cited(tenant: Client, ws: str) -> None:
    ids = _ingest_corpus(tenant, ws)
    pack = tenant.context_pack(ws, "when is the deploy window?", 512)
    assert isinstance(pack, ContextPack)
    assert not pack.abstain_flag and 0 < pack.confidence <= 1
    cited = {c.artifact_id: c for c in pack.citations}
    assert ids["deploy"] in cited and ids["runbook"] in cited
    deploy = cited[ids["deploy"]]
    n = deploy.index
    # Each line starts with its artifact's date and time (UTC) and speaker (here the note's actor).
    head = deploy.timestamp[:10] + " " + deploy.timestamp[11:16] + " alice: "
    assert f"[cite:{n}] {head}The deploy window is Tuesday at 14:00 UTC.\n" in pack.context_text
    assert deploy.actor_id == "alice" and deploy.session_id is None
    assert pack.total_tokens <= 512
    lines = pack.evidence_lines()
    assert lines[n] == head + "The deploy window is Tuesday at 14:00 UTC."
    # Line breaks inside a span are flattened in context_text: one line per citation.
    assert lines[cited[ids["runbook"]].index].endswith(
        " alice: Title: Deploy runbook  Before the deploy window opens, freeze merges and notify on-call."
    )
    assert set(lines) == {c.index for c in pack.citations}
    same = tenant.context_pack(ws, "when is the deploy window?", 512)
    assert same.pack_hash == pack.pack_hash and same.receipt_id == pack.receipt_id


def test_context_pack_dated_evidence_and_window(tenant: Client, ws: str) -> None:
    days = {}
    for day, text in [
        ("2026-10-01", "Maya: The launch is on November 20."),
        ("2026-10-13", "Maya: The launch is pushed to December 4."),
        ("2026-11-02", "Maya: The launch moved again, to December 11."),
    ]:
        r = tenant.ingest(
            ws, "u-maya", "chat_turn", {"role": "user", "content": text}, session_id="s1", timestamp=f"{day}T14:30:00Z"
        )
        days[r.artifact_id] = day
    pack = tenant.context_pack(ws, "when is the launch?", 600)
    assert len(pack.citations) == 3
    assert "] 2026-10-13 14:30 Maya: The launch is pushed to December 4.\n" in pack.context_text
    for c in pack.citations:
        assert (c.timestamp, c.actor_id, c.session_id) == (f"{days[c.artifact_id]}T14:30:00Z", "u-maya", "s1")
    assert tenant.get_receipt(pack.receipt_id).evidence == pack.citations

    windowed = tenant.context_pack(ws, "when is the launch?", 600, since="2026-10-13T14:30:00Z", until="2026-11-01")
    assert [days[c.artifact_id] for c in windowed.citations] == ["2026-10-13"]
    receipt = tenant.get_receipt(windowed.receipt_id)
    assert (receipt.since, receipt.until) == ("2026-10-13T14:30:00Z", "2026-11-01T00:00:00Z")

    v2 = tenant.context_pack_v2(ws, "when is the launch?", 600, since=datetime.datetime(2026, 10, 2))
    assert sorted(days[s.artifact_id] for s in v2.snippets) == ["2026-10-13", "2026-11-02"]
    for s in v2.snippets:
        assert (s.timestamp, s.actor_id, s.session_id) == (f"{days[s.artifact_id]}T14:30:00Z", "u-maya", "s1")
    assert "] 2026-11-02 14:30 Maya: The launch moved again" in v2.context_text
    assert isinstance(v2.conflicts, list)

    with pytest.raises(BadRequest) as err:
        tenant.context_pack(ws, "launch", since="2026-11-02", until="2026-10-01")
    assert err.value.detail.startswith("since: 2026-11-02T00:00:00Z is after until (2026-10-01T00:00:00Z)")


def test_context_pack_metadata_filter_and_policy(tenant: Client, ws: str) -> None:
    ids = _ingest_corpus(tenant, ws)
    ux = tenant.context_pack(ws, "deploy window colour", 512, metadata={"team": "ux"})
    assert {c.artifact_id for c in ux.citations} == {ids["colour"]}
    notes = tenant.context_pack(ws, "deploy window", 512, policy=Policy(allowed_sources=["note"]))
    assert {c.source_type for c in notes.citations} == {"note"}
    receipt = tenant.get_receipt(notes.receipt_id)
    assert receipt.policy_summary.get("allowed_sources") == ["note"]
    assert any(e.reason == "POLICY" and e.artifact_id == ids["runbook"] for e in receipt.exclusions)
    as_dict = tenant.context_pack(ws, "deploy window", 512, policy={"allowed_sources": ["note"]})
    assert as_dict.pack_hash == notes.pack_hash


def test_feedback_pin_and_mark_wrong_change_packs(tenant: Client, ws: str) -> None:
    ids = _ingest_corpus(tenant, ws)
    pinned = tenant.feedback(ws, "pin", ids["colour"], actor_id="alice", reason="always relevant")
    assert pinned.action == "pin" and pinned.applied == 1 and pinned.feedback_id
    pack = tenant.context_pack(ws, "deploy window", 512)
    assert pack.citations[0].artifact_id == ids["colour"] and pack.citations[0].pinned
    assert "PINNED CONTEXT" in pack.prefix_text

    wrong = tenant.feedback(ws, "mark_wrong", ids["deploy"])
    assert wrong.applied == 1
    after = tenant.context_pack(ws, "when is the deploy window?", 512)
    assert ids["deploy"] not in {c.artifact_id for c in after.citations}
    receipt = tenant.get_receipt(after.receipt_id)
    assert any(e.reason == "MARKED_WRONG" and e.artifact_id == ids["deploy"] for e in receipt.exclusions)
    assert receipt.query == "when is the deploy window?" and receipt.workspace_id == ws
    assert receipt.token_accounting.budget == 512
    assert [e.span_id for e in receipt.evidence] == [c.span_id for c in after.citations]
    assert {ch.channel for ch in receipt.channel_contributions} >= {"lexical"}


def test_receipts_list_and_get(tenant: Client, ws: str) -> None:
    _ingest_corpus(tenant, ws)
    packs = [tenant.context_pack(ws, q, 256) for q in ("deploy window", "favourite colour", "runbook merges")]
    page = tenant.list_receipts(ws, limit=2)
    assert page.total == 3 and page.limit == 2 and page.offset == 0
    assert [r.id for r in page.receipts] == [packs[2].receipt_id, packs[1].receipt_id]  # newest first
    by_hash = tenant.list_receipts(ws, pack_hash=packs[0].pack_hash)
    assert [r.id for r in by_hash.receipts] == [packs[0].receipt_id]
    assert by_hash.receipts[0].query == "deploy window"
    with pytest.raises(NotFound):
        tenant.get_receipt(str(uuid.uuid4()))


def test_workspaces_list_and_erase(tenant: Client, ws: str) -> None:
    ids = _ingest_corpus(tenant, ws)
    tenant.feedback(ws, "pin", ids["deploy"])
    tenant.context_pack(ws, "deploy", 256)
    mine = {w.workspace_id: w for w in tenant.list_workspaces()}
    assert mine[ws].artifact_count == 3 and mine[ws].span_count >= 3 and mine[ws].data_version >= 1
    erased = tenant.erase_workspace(ws)
    assert (erased.artifacts_erased, erased.feedback_erased, erased.receipts_erased) == (3, 1, 1)
    assert ws not in {w.workspace_id for w in tenant.list_workspaces()}
    assert tenant.list_artifacts(ws).artifacts == []


def test_workspace_settings_and_retention(tenant: Client, ws: str) -> None:
    assert tenant.get_workspace_settings(ws).retention_days is None
    old = tenant.ingest(ws, "a", "note", "an old note", timestamp="2020-01-01T00:00:00Z").artifact_id
    new = tenant.ingest(ws, "a", "note", "a new note", timestamp="2026-01-10T00:00:00Z").artifact_id
    s = tenant.set_workspace_settings(ws, 30)
    assert s.retention_days == 30 and s.workspace_id == ws
    assert tenant.get_workspace_settings(ws).retention_days == 30
    assert [a.artifact_id for a in tenant.iter_artifacts(ws)] == [new]
    with pytest.raises(NotFound):
        tenant.get_artifact(old)
    assert tenant.set_workspace_settings(ws, None).retention_days is None
    with pytest.raises(BadRequest) as exc:
        tenant.set_workspace_settings(ws, 0)
    assert "retention_days" in exc.value.detail


def test_billing_plans_plan_usage(admin: Client, new_tenant: TenantFactory, ws: str) -> None:
    plans = {p.name: p for p in admin.list_plans()}
    assert (plans["free"].rpm, plans["free"].v2, plans["free"].workspaces) == (30, False, 1)
    assert plans["enterprise"].workspaces is None and plans["pro"].rpm == 120
    c, reg = new_tenant("pro")
    c.ingest(ws, "a", "note", "one")
    c.ingest(ws, "a", "note", "two")
    p = c.get_plan()
    assert (p.tenant_id, p.plan, p.rpm, p.v2, p.workspaces, p.workspaces_used) == (reg.tenant_id, "pro", 120, True, 5, 1)
    changed = admin.set_plan(reg.tenant_id, "team")
    assert changed.plan == "team" and changed.rpm == 300
    assert c.get_plan().plan == "team"
    assert admin.get_plan(reg.tenant_id).plan == "team"
    u = c.usage()  # raw bytes count the payloads' JSON as sent, quotes included
    assert u.tenant_id == reg.tenant_id and u.artifacts_ingested == 2 and u.raw_bytes_stored == len('"one""two"')
    assert u.requests["POST /v1/ingest"] == 2 and u.requests["GET /v1/billing/plan"] == 2
    assert admin.usage(u.period, tenant_id=reg.tenant_id).artifacts_ingested == 2
    assert c.usage("2001-01").artifacts_ingested == 0
    # The admin lists every tenant with its plan and workspaces; a tenant key may not.
    tenants = {t.tenant_id: t for t in admin.list_tenants()}
    mine = tenants[reg.tenant_id]
    assert mine.plan == "team" and [w.workspace_id for w in mine.workspaces] == [ws]
    with pytest.raises(Forbidden):
        c.list_tenants()
