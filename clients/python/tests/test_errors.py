"""Errors: strict input surfaced as BadRequest.detail, 413, and which failures the client retries."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any, List, Tuple

import pytest

from loci_client import (
    BadRequest,
    Client,
    LociConnectionError,
    LociTimeout,
    PayloadTooLarge,
    RetryPolicy,
    ServiceUnavailable,
)
from loci_client.errors import RateLimited, error_for_status


def test_strict_input_names_the_field(tenant: Client, ws: str) -> None:
    with pytest.raises(BadRequest) as exc:
        tenant.ingest_batch(ws, "a", [{"artifact_type": "note", "raw_payload": "ok"},
                                      {"artifact_type": "note", "metdata": {"a": "b"}}])
    assert exc.value.status == 400 and exc.value.detail.startswith("artifacts[1].metdata: unknown field")
    with pytest.raises(BadRequest) as exc:
        tenant.context_pack(ws, "q", 100, policy={"rbac_requird": ["x"]})
    assert "policy.rbac_requird" in exc.value.detail
    with pytest.raises(BadRequest) as exc:
        tenant.ingest(ws, "a", "note", "x", metadata={"team": 7})  # type: ignore[dict-item]
    assert "metadata.team" in exc.value.detail and "string" in exc.value.detail
    with pytest.raises(BadRequest) as exc:
        tenant.ingest("bad/workspace", "a", "note", "x")
    assert "workspace_id" in exc.value.detail
    with pytest.raises(BadRequest) as exc:
        tenant.context_pack(ws, "", 100)
    assert "query" in exc.value.detail
    with pytest.raises(BadRequest) as exc:
        tenant.list_artifacts(ws, limit=501)
    assert "limit" in exc.value.detail
    assert tenant.list_artifacts(ws).artifacts == []  # nothing was stored by the refused requests


def test_path_segments_are_encoded(tenant: Client) -> None:
    # ".." and "a/b" stay inside their path segment: the server refuses the workspace id, never another route.
    for bad in ("..", "team/../prod"):
        with pytest.raises(BadRequest) as exc:
            tenant.list_artifacts(bad)
        assert "workspace" in exc.value.detail


def test_payload_too_large(tenant: Client, ws: str) -> None:
    with pytest.raises(PayloadTooLarge) as exc:
        tenant.ingest(ws, "a", "note", "x" * (2 << 20))
    assert exc.value.status == 413 and exc.value.detail
    assert exc.value.attempts == 1  # a 413 is not retried


class _SilentServer:
    """A loopback listener that accepts connections, reads the request and never answers (a lost response)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]
        self.accepted = 0
        self.conns: List[socket.socket] = []
        self._stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.sock.settimeout(0.1)
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            self.conns.append(conn)

    def close(self) -> None:
        self._stop = True
        self.thread.join()
        for c in self.conns:
            c.close()
        self.sock.close()


def _recording_client(url: str, retries: int = 2) -> Tuple[Client, List[Tuple[int, float, Any]]]:
    waits: List[Tuple[int, float, Any]] = []
    c = Client(
        url,
        "k",
        timeout=0.3,
        retry=RetryPolicy(max_retries=retries, backoff_base=0.01),
        on_retry=lambda n, d, e: waits.append((n, d, e)),
    )
    return c, waits


def test_lost_answers_are_resent_only_when_harmless() -> None:
    srv = _SilentServer()
    try:
        c, waits = _recording_client(srv.url)
        # Feedback is an append-only event: sent once, never resent after it may have arrived.
        with pytest.raises(LociTimeout) as exc:
            c.feedback("ws", "pin", "00000000-0000-0000-0000-000000000000")
        assert exc.value.status == 0 and exc.value.attempts == 1 and waits == []
        assert srv.accepted == 1
        # An ingest without an idempotency key could be stored twice: not resent either.
        with pytest.raises(LociTimeout):
            c.ingest("ws", "a", "note", "x")
        assert srv.accepted == 2 and waits == []
        # The same ingest with a key is resent: the server would return the stored artifact.
        with pytest.raises(LociTimeout) as exc:
            c.ingest("ws", "a", "note", "x", idempotency_key="evt-1")
        assert exc.value.attempts == 3 and [n for n, _, _ in waits] == [1, 2]
        # Reads and context packs are resent.
        waits.clear()
        with pytest.raises(LociTimeout):
            c.context_pack("ws", "q")
        assert len(waits) == 2
        deadline = time.monotonic() + 2
        while srv.accepted < 8 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert srv.accepted == 8
        c.close()
    finally:
        srv.close()


def test_refused_connection_is_retried_then_raised() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed when the block ends: nothing listens there
    c, waits = _recording_client(f"http://127.0.0.1:{port}")
    with pytest.raises(LociConnectionError) as exc:
        c.feedback("ws", "pin", "00000000-0000-0000-0000-000000000000")  # nothing was sent: safe to retry
    assert exc.value.attempts == 3 and len(waits) == 2
    c.close()


def test_retry_policy_delays() -> None:
    p = RetryPolicy(max_retries=3, backoff_base=0.5, backoff_max=4.0, max_retry_after=10.0)
    limited = error_for_status(429, {"detail": "rate limit"}, {"Retry-After": "7"})
    assert isinstance(limited, RateLimited) and limited.retry_after == 7.0
    assert 7.0 <= p.delay_for(0, limited, rng=lambda: 0.999) < 7.5  # type: ignore[operator]
    assert p.delay_for(3, limited) is None  # attempts exhausted
    too_long = error_for_status(429, {"detail": "rate limit"}, {"Retry-After": "11"})
    assert p.delay_for(0, too_long) is None  # longer than max_retry_after: raised at once
    starting = error_for_status(503, {"status": "starting", "reason": "recovering"}, {})
    assert isinstance(starting, ServiceUnavailable) and starting.reason == "starting"
    assert starting.detail == "recovering"
    assert p.delay_for(2, starting, rng=lambda: 0.0) == 1.0  # min(4, 0.5 * 2**2) / 2
    degraded = error_for_status(503, {"status": "degraded", "reason": "disk"}, {})
    assert p.delay_for(0, degraded) is None
    assert p.delay_for(0, error_for_status(400, {"detail": "x"}, {})) is None
    assert p.backoff(10, rng=lambda: 1.0) == 4.0  # capped
