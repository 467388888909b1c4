"""Several server URLs: failover to the next node, the data version carried across nodes, and a real cluster.

Nodes that misbehave (a refused connection, a 503, a lost answer) are stood for by a dead port and tiny local
HTTP servers; every request that succeeds is served by the real ``loci serve`` of the session. The last test runs
a real cluster: three ``nats-server`` processes and two ``loci serve --cluster-nats`` nodes, one of them killed.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

import httpx
import pytest

from loci_client import AsyncClient, BadRequest, Client, LociConnectionError, RetryPolicy, ServiceUnavailable
from loci_client._core import merge_data_versions, resolve_settings

from .conftest import REPO, Server, TenantFactory, _free_port


def dead_url() -> str:
    """A loopback URL nothing listens on (the port was free a moment ago)."""
    return f"http://127.0.0.1:{_free_port()}"


class Recorder:
    """A tiny HTTP server standing for a node: records each request's headers and answers as ``reply`` says."""

    def __init__(self, reply: str, version: str = "") -> None:
        self.reply = reply  # "503": 503 with Retry-After; "drop": read the request, close without answering; "ok"
        self.version = version
        self.requests: List[Dict[str, str]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                recorder.requests.append({k.lower(): v for k, v in self.headers.items()})
                if recorder.reply == "drop":
                    self.close_connection = True
                    return
                status, body = (503, b'{"detail":"not now"}') if recorder.reply == "503" else (200, b'{"plans":[]}')
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                if status == 503:
                    self.send_header("Retry-After", "1")
                if recorder.version:
                    self.send_header("X-Loci-Data-Version", recorder.version)
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = _any

            def log_message(self, *args: object) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> "Recorder":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def test_merge_data_versions() -> None:
    assert merge_data_versions(None, "65.12.10") == "65.12.10"
    assert merge_data_versions("65.12.10", "64.13.10") == "65.13.10"  # element-wise, not the later one
    assert merge_data_versions("7.100.3", "70.2.30") == "70.100.30"  # numbers, not strings
    assert merge_data_versions("65.12.10", "3.4") == "3.4"  # another length: the latest wins
    assert merge_data_versions("3.4", "3.4") == "3.4"
    for bad in ("", "1..2", "a.1", "-1.2", " ", "1.2."):
        assert merge_data_versions("5.5", bad) == "5.5"
    assert merge_data_versions(None, "x") is None


def test_urls_from_list_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_settings(["http://a:1/", "http://b:2"], "k") == (("http://a:1", "http://b:2"), "k")
    assert resolve_settings("http://a:1/", None)[0] == ("http://a:1",)
    monkeypatch.setenv("LOCI_URL", " http://a:1 , http://b:2/,")
    assert resolve_settings(None, None)[0] == ("http://a:1", "http://b:2")
    with Client() as c:
        assert c.base_urls == ("http://a:1", "http://b:2") and c.base_url == "http://a:1"
    with pytest.raises(ValueError, match="base_url"):
        resolve_settings([], None)


def test_dead_first_url_every_call_works(server: Server, new_tenant: TenantFactory, ws: str) -> None:
    reg = new_tenant("enterprise")[1]
    retries: List[Tuple[int, float]] = []
    slept: List[float] = []
    with Client([dead_url(), server.url], reg.api_key, on_retry=lambda n, d, e: retries.append((n, d)),
                sleep=slept.append) as c:
        assert c.base_url == c.base_urls[0]
        stored = c.ingest(ws, "alice", "note", "The failover drill is on Friday.")  # a write without a key
        assert c.base_url == server.url  # the node that answered is where the next request starts
        assert retries == [(1, 0.0)] and slept == []  # moved on at once, without waiting
        assert c.get_artifact(stored.artifact_id).artifact_id == stored.artifact_id
        pack = c.context_pack(ws, "when is the failover drill?", 512)
        assert stored.artifact_id in {cit.artifact_id for cit in pack.citations}
        c.feedback(ws, "pin", stored.artifact_id, actor_id="alice")
        assert [w.workspace_id for w in c.list_workspaces()] == [ws]
        assert len(retries) == 1  # only the first request met the dead node
        assert c.data_version is None  # a single-node server sends no data version
        with pytest.raises(BadRequest):
            c.ingest(ws, "alice", "not-a-type", "x")  # type: ignore[arg-type]

    # A new client starts at the dead node again: every request of it fails over.
    async def run() -> None:
        async with AsyncClient([dead_url(), server.url], reg.api_key) as ac:
            got = await ac.get_artifact(stored.artifact_id)
            assert got.artifact_id == stored.artifact_id and ac.base_url == server.url

    asyncio.run(run())


def test_every_node_dead_raises_connection_error() -> None:
    with Client([dead_url(), dead_url()], "k", retry=RetryPolicy(max_retries=1), sleep=lambda s: None) as c:
        with pytest.raises(LociConnectionError) as exc:
            c.list_plans()
    assert exc.value.attempts == 4  # two rounds of two nodes


def test_min_data_version_sent_only_with_several_urls() -> None:
    with Recorder("ok", version="5.1.2") as one, Recorder("ok", version="4.3.2") as other:
        with Client(one.url, "k") as c:
            c.list_plans()
            c.list_plans()
            assert c.data_version == "5.1.2"
        assert [("x-loci-min-data-version" in h) for h in one.requests] == [False, False]

        with Client([one.url, other.url], "k") as c:
            c.list_plans()
            assert c.data_version == "5.1.2"
            c.list_plans()
        assert one.requests[2].get("x-loci-min-data-version") is None  # nothing seen yet
        assert one.requests[3]["x-loci-min-data-version"] == "5.1.2"

        one.reply = "503"
        with Client([one.url, other.url], "k") as c:
            c.list_plans()  # the version of one's 503 is kept too, merged with other's answer
            assert c.base_url == other.url and c.data_version == "5.3.2"
            c.list_plans()
        assert other.requests[-1]["x-loci-min-data-version"] == "5.3.2"


def test_503_fails_over_to_the_next_node(server: Server, new_tenant: TenantFactory, ws: str) -> None:
    reg = new_tenant("enterprise")[1]
    slept: List[float] = []
    with Recorder("503") as busy:
        with Client([busy.url, server.url], reg.api_key, sleep=slept.append) as c:
            stored = c.ingest(ws, "bob", "note", "Rotate the signing key monthly.")
            assert c.get_artifact(stored.artifact_id).content_hash == stored.content_hash
        assert len(busy.requests) == 1 and slept == []

        # Every node refusing: the 503 is raised once each was tried (no policy retries here).
        with Client([busy.url, busy.url], reg.api_key, retry=RetryPolicy(max_retries=0)) as c:
            with pytest.raises(ServiceUnavailable) as exc:
                c.list_plans()
        assert exc.value.attempts == 2 and exc.value.retry_after == 1.0


def test_lost_answer_is_resent_only_when_harmless(server: Server, new_tenant: TenantFactory, ws: str) -> None:
    reg = new_tenant("enterprise")[1]
    with Client(server.url, reg.api_key) as c:
        stored = c.ingest(ws, "carol", "note", "Backups run at 02:00.")
    with Recorder("drop") as dropper:
        with Client([dropper.url, server.url], reg.api_key) as c:
            # A pack is a read: resent to the real node.
            pack = c.context_pack(ws, "when do backups run?", 512)
            assert stored.artifact_id in {cit.artifact_id for cit in pack.citations}
        assert len(dropper.requests) == 1
        with Client([dropper.url, server.url], reg.api_key) as c:
            # Feedback may have been applied by the node that dropped the answer: not resent.
            with pytest.raises(LociConnectionError) as exc:
                c.feedback(ws, "pin", stored.artifact_id)
            assert exc.value.attempts == 1
            # An ingest with an idempotency key is answered by the stored artifact if it arrived: resent.
            keyed = c.ingest(ws, "carol", "note", "Restores are tested weekly.", idempotency_key="restore-1")
            assert keyed.indexed
        assert len(dropper.requests) == 3


# ---------------------------------------------------------------------------------------------------------------
# A real cluster


def _nats_cluster(work: Path) -> Tuple[List[subprocess.Popen], str]:
    """Three nats-server processes with JetStream, routed to each other; returns them and their client URLs."""
    names = ["n1", "n2", "n3"]
    client_ports = [_free_port() for _ in names]
    route_ports = [_free_port() for _ in names]
    procs: List[subprocess.Popen] = []
    for i, name in enumerate(names):
        routes = "\n".join(f'    "nats-route://127.0.0.1:{p}"' for j, p in enumerate(route_ports) if j != i)
        conf = work / f"{name}.conf"
        conf.write_text(
            f'server_name: "{name}"\nlisten: "127.0.0.1:{client_ports[i]}"\n'
            f'jetstream {{\n  store_dir: "{work / name}"\n  max_memory_store: 64MB\n  max_file_store: 1GB\n}}\n'
            f'cluster {{\n  name: "loci-pytest"\n  listen: "127.0.0.1:{route_ports[i]}"\n  routes: [\n{routes}\n  ]\n}}\n'
        )
        with open(work / f"{name}.log", "wb") as log:
            procs.append(subprocess.Popen(["nats-server", "-c", str(conf)], stdout=log, stderr=subprocess.STDOUT))
    return procs, ",".join(f"nats://127.0.0.1:{p}" for p in client_ports)


def _wait_healthy(url: str, proc: subprocess.Popen, log: Path, timeout: float = 45) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"loci serve exited with {proc.returncode}:\n{log.read_text()}")
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{url} not healthy after {timeout} s:\n{log.read_text()}")
        time.sleep(0.05)


@contextmanager
def _loci_cluster(binary: str) -> Iterator[Tuple[List[str], List[subprocess.Popen], str]]:
    work = Path(tempfile.mkdtemp(prefix="loci-pytest-cluster-"))
    procs: List[subprocess.Popen] = []
    try:
        nats, nats_urls = _nats_cluster(work)
        procs += nats
        admin_key = "admin-" + uuid.uuid4().hex
        urls: List[str] = []
        nodes: List[subprocess.Popen] = []
        for name in ("n1", "n2"):
            port = _free_port()
            log = work / f"loci-{name}.log"
            cmd = [binary, "serve", "--addr", f"127.0.0.1:{port}", "--data", str(work / f"loci-{name}"),
                   "--cluster-nats", nats_urls, "--cluster-node", name, "--cluster-shards", "2",
                   "--embedder", "glove", "--log-level", "warn"]
            with open(log, "wb") as logf:
                p = subprocess.Popen(cmd, env=dict(os.environ, API_KEY=admin_key), stdout=logf,
                                     stderr=subprocess.STDOUT)
            procs.append(p)
            nodes.append(p)
            urls.append(f"http://127.0.0.1:{port}")
            # One after the other: two nodes creating a new cluster's settings together can fail to read back
            # the embedder the other one recorded (cluster/node.go checkEmbedder: "nats: key not found").
            _wait_healthy(urls[-1], p, log)
        yield urls, nodes, admin_key
    finally:
        for p in reversed(procs):  # Loci nodes first, then NATS
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in reversed(procs):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(scope="module")
def loci_binary(server: Server) -> str:
    """The binary the session's server runs (LOCI_BIN, else the one conftest built next to its data)."""
    return os.environ.get("LOCI_BIN") or str(server.data_dir.parent / "loci")


def test_real_cluster_node_killed(loci_binary: str, ws: str) -> None:
    if shutil.which("nats-server") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("nats-server is not on PATH and CI=true (install Debian's nats-server)")
        pytest.skip("nats-server is not on PATH")
    with _loci_cluster(loci_binary) as (urls, nodes, admin_key):
        with Client(urls, admin_key) as admin:
            reg = admin.register(f"{uuid.uuid4().hex[:12]}@example.test", "enterprise")
        with Client(urls, reg.api_key) as c:
            stored = c.ingest(ws, "dana", "note", "The cluster drill restores node two from the log.")
            used = c.base_urls.index(c.base_url)
            seen = c.data_version
            assert seen is not None and len(seen.split(".")) == 3  # control stream and two shards
            nodes[used].send_signal(signal.SIGKILL)
            nodes[used].wait(timeout=10)
            pack = c.context_pack(ws, "what does the cluster drill restore?", 512)
            assert c.base_url == urls[1 - used]
            assert stored.artifact_id in {cit.artifact_id for cit in pack.citations}
            assert merge_data_versions(seen, c.data_version or "") == c.data_version  # not behind what was seen
