"""Paging helpers: the artifact listing's cursor and the receipt listing's offset, across several pages."""

from __future__ import annotations

from loci_client import ArtifactInput, Client


def test_iter_artifacts_follows_the_cursor(tenant: Client, ws: str) -> None:
    items = [
        ArtifactInput(
            "note",
            f"note number {i}",
            timestamp=f"2026-01-01T00:00:{i:02d}Z",
            session_id="even" if i % 2 == 0 else "odd",
        )
        for i in range(11)
    ]
    ids = [x.artifact_id for x in tenant.ingest_batch(ws, "a", items).ingested]
    newest_first = list(reversed(ids))

    first = tenant.list_artifacts(ws, limit=4)
    assert [a.artifact_id for a in first.artifacts] == newest_first[:4] and first.next_cursor
    second = tenant.list_artifacts(ws, limit=4, cursor=first.next_cursor)
    assert [a.artifact_id for a in second.artifacts] == newest_first[4:8]

    assert [a.artifact_id for a in tenant.iter_artifacts(ws, page_size=4)] == newest_first
    evens = [a.artifact_id for a in tenant.iter_artifacts(ws, session_id="even", page_size=2)]
    assert evens == [ids[i] for i in (10, 8, 6, 4, 2, 0)]
    window = [
        a.artifact_id
        for a in tenant.iter_artifacts(ws, since="2026-01-01T00:00:03Z", until="2026-01-01T00:00:07Z", page_size=2)
    ]
    assert window == [ids[i] for i in (7, 6, 5, 4, 3)]
    assert list(tenant.iter_artifacts(ws, artifact_type="email")) == []

    # Artifacts arriving while paging sort before the cursor: the listing stays exact.
    pages = tenant.list_artifacts(ws, limit=5)
    tenant.ingest(ws, "a", "note", "late arrival", timestamp="2026-01-01T00:01:00Z")
    rest = tenant.list_artifacts(ws, limit=50, cursor=pages.next_cursor)
    assert [a.artifact_id for a in pages.artifacts + rest.artifacts] == newest_first


def test_iter_receipts_follows_offsets(tenant: Client, ws: str) -> None:
    tenant.ingest(ws, "a", "note", "Receipts explain every pack.")
    receipts = [tenant.context_pack(ws, f"question {i} about receipts", 128).receipt_id for i in range(7)]
    listed = [r.id for r in tenant.iter_receipts(ws, page_size=3)]
    assert listed == list(reversed(receipts))
    page = tenant.list_receipts(ws, limit=3, offset=6)
    assert page.total == 7 and [r.id for r in page.receipts] == [receipts[0]]
