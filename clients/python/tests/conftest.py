"""Fixtures: one real ``loci serve`` for the session, built from this repository, and tenants on it.

The server runs with authentication on (an admin key in API_KEY), open registration limited to 2 per 3 s per
address (so a registration retry can be shown to succeed within seconds), a 1 MiB body limit (so a 413 costs
little), and the default embedder, the built-in MiniLM encoder: it is what users run, and it starts as fast as
the alternatives (measured: /health ready 0.10 s after exec, a 2-artifact batch embedded in 13 ms; GloVe 0.04 s
and 38 ms; the suite takes the same time with either). ``LOCI_TEST_EMBEDDER=glove`` chooses the other
built-in one.

``LOCI_BIN`` runs an already built binary instead of building ``./cmd/loci``.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, List, Tuple

import httpx
import pytest

from loci_client import Client, RateLimited, RetryPolicy
from loci_client.models import Registration

REPO = Path(__file__).resolve().parents[3]
ADMIN_KEY = "admin-" + uuid.uuid4().hex
FREE_RPM = 30
EMBEDDER = os.environ.get("LOCI_TEST_EMBEDDER", "minilm")


@dataclass
class Server:
    url: str
    admin_key: str
    data_dir: Path
    log: Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    work = Path(tempfile.mkdtemp(prefix="loci-pytest-"))
    binary = os.environ.get("LOCI_BIN")
    if not binary:
        binary = str(work / "loci")
        subprocess.run(["go", "build", "-o", binary, "./cmd/loci"], cwd=REPO, check=True)
    port = _free_port()
    data = work / "data"
    log = work / "serve.log"
    env = dict(os.environ, API_KEY=ADMIN_KEY)
    cmd = [
        binary,
        "serve",
        "--addr",
        f"127.0.0.1:{port}",
        "--data",
        str(data),
        "--embedder",
        EMBEDDER,
        "--open-registration",
        "true",
        "--register-limit",
        "2",
        "--register-window",
        "3s",
        "--max-request-size",
        str(1 << 20),
        "--log-level",
        "warn",
    ]
    with open(log, "wb") as logf:
        proc = subprocess.Popen(cmd, env=env, stdout=logf, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"loci serve exited with {proc.returncode}:\n{log.read_text()}")
            try:
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"loci serve not ready after 60 s:\n{log.read_text()}")
            time.sleep(0.05)
        yield Server(url=url, admin_key=ADMIN_KEY, data_dir=data, log=log)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(scope="session")
def admin(server: Server) -> Iterator[Client]:
    with Client(server.url, server.admin_key) as c:
        yield c


TenantFactory = Callable[[str], Tuple[Client, Registration]]


@pytest.fixture(scope="session")
def new_tenant(server: Server, admin: Client) -> Iterator[TenantFactory]:
    """Registers a tenant on a plan and returns a client with its key (closed at the end of the session)."""
    clients: List[Client] = []

    def make(plan: str) -> Tuple[Client, Registration]:
        reg = admin.register(f"{uuid.uuid4().hex[:12]}@example.test", plan)  # type: ignore[arg-type]
        c = Client(server.url, reg.api_key)
        clients.append(c)
        return c, reg

    yield make
    for c in clients:
        c.close()


@pytest.fixture(scope="session")
def tenant(new_tenant: TenantFactory) -> Client:
    """An enterprise tenant (1000 requests per minute, v2, unlimited workspaces) for the endpoint tests."""
    return new_tenant("enterprise")[0]


@pytest.fixture
def ws() -> str:
    """A fresh workspace id per test."""
    return "ws-" + uuid.uuid4().hex[:16]


@dataclass
class FreeTenant:
    client: Client
    registration: Registration
    filled_at: float


@pytest.fixture(scope="session", autouse=True)
def free_tenant(new_tenant: TenantFactory) -> FreeTenant:
    """A free tenant (30 requests per minute) whose window is filled as the session starts.

    The rate limit tests run last: the window's oldest request leaves it 60 s after this, so the test that
    waits for a free slot waits only what is left of that minute after the rest of the suite.
    """
    c, reg = new_tenant("free")
    fill_window(c)
    return FreeTenant(client=c, registration=reg, filled_at=time.monotonic())


def fill_window(c: Client) -> int:
    """Sends requests without retrying until the server answers 429; returns how many were accepted."""
    probe = Client(c.base_url, c.api_key, retry=RetryPolicy(max_retries=0))
    try:
        for n in range(FREE_RPM + 1):
            try:
                probe.list_plans()
            except RateLimited:
                return n
        raise AssertionError(f"no 429 after {FREE_RPM + 1} requests on a {FREE_RPM}-rpm plan")
    finally:
        probe.close()


def pytest_collection_modifyitems(items: List[pytest.Item]) -> None:
    """Runs the tests marked ``last`` (the rate limit window tests) after every other test."""
    items.sort(key=lambda item: item.get_closest_marker("last") is not None)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "last: run after every other test (waits on the free plan's window)")
