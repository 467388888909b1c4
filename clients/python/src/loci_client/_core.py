"""What the sync and async clients share: settings, the retry policy, and each endpoint as a ``Call``.

A ``Call`` says everything about one request but how it is sent: method, path, query, body, whether sending it
twice is harmless, and how to turn the answer into its model. ``Client`` and ``AsyncClient`` only send Calls, so
the two cannot drift apart.
"""

from __future__ import annotations

import os
import random
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, Generic, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union
from urllib.parse import quote

import httpx

from . import models as m
from ._version import __version__
from .errors import LociConnectionError, LociError, LociTimeout, ServiceUnavailable, error_for_status

T = TypeVar("T")

DEFAULT_URL = "http://127.0.0.1:3000"
DEFAULT_TIMEOUT = 30.0
USER_AGENT = f"loci-client-python/{__version__}"


def resolve_settings(
    base_url: Union[str, Sequence[str], None], api_key: Optional[str]
) -> Tuple[Tuple[str, ...], Optional[str]]:
    """The server URLs and API key: the arguments, else LOCI_URL and LOCI_API_KEY, else the local default, no key.

    ``base_url`` is one URL or a list of them (the nodes of a cluster); LOCI_URL may list several, comma-separated.
    """
    if base_url is None or base_url == "":
        env = os.environ.get("LOCI_URL") or DEFAULT_URL
        urls = [u.strip() for u in env.split(",")]
    elif isinstance(base_url, str):
        urls = [base_url]
    else:
        urls = list(base_url)
        for u in urls:
            if not isinstance(u, str):
                raise TypeError(f"base_url: every URL must be a string, got {type(u).__name__}")
    out = tuple(u.rstrip("/") for u in urls if u and u.strip())
    if not out:
        raise ValueError("base_url: no server URL given")
    key = api_key if api_key is not None else os.environ.get("LOCI_API_KEY")
    return out, (key or None)


def parse_data_version(value: str) -> Optional[Tuple[int, ...]]:
    """The numbers of an ``X-Loci-Data-Version`` value (``65.12.10``), or None when it is not one."""
    parts = value.strip().split(".")
    if not all(p.isdigit() and p.isascii() for p in parts):
        return None
    return tuple(int(p) for p in parts)


def merge_data_versions(seen: Optional[str], new: str) -> Optional[str]:
    """The data version to remember after ``seen`` once an answer carried ``new``.

    Versions of the same cluster have the same number of parts (control stream, then each shard): the result is
    their element-wise maximum, which every node reaches once it has applied all that either answer reflected.
    Versions of different lengths do not compare (another cluster behind the same URLs): the newer one is kept.
    A malformed ``new`` leaves ``seen`` as it was.
    """
    b = parse_data_version(new)
    if b is None:
        return seen
    a = parse_data_version(seen) if seen is not None else None
    if a is None or len(a) != len(b):
        return ".".join(map(str, b))
    return ".".join(str(max(x, y)) for x, y in zip(a, b))


class Nodes:
    """The servers a client sends to, the one that answered last, and the highest data version it has seen.

    With one URL the client behaves as a single-server client always did: it sends no
    ``X-Loci-Min-Data-Version``. With several (a cluster), every request carries the highest
    ``X-Loci-Data-Version`` seen so far, so that a node a request fails over to first applies everything the
    nodes before it had acknowledged (read your writes across nodes). Safe to share between threads.
    """

    def __init__(self, urls: Tuple[str, ...]) -> None:
        self.urls = urls
        self._current = 0
        self._version: Optional[str] = None
        self._lock = threading.Lock()

    @property
    def current(self) -> int:
        """The index of the node that answered last (where the next request starts)."""
        return self._current

    def answered(self, index: int) -> None:
        self._current = index

    def next(self, index: int) -> int:
        return (index + 1) % len(self.urls)

    @property
    def data_version(self) -> Optional[str]:
        return self._version

    def observe(self, headers: httpx.Headers) -> None:
        """Remembers the data version an answer carried (any answer: errors too reflect what the node applied)."""
        value = headers.get("x-loci-data-version")
        if value:
            with self._lock:
                self._version = merge_data_versions(self._version, value)

    def headers(self, base: Dict[str, str]) -> Dict[str, str]:
        """The headers of the next request: ``base``, plus the minimum data version with several nodes."""
        version = self._version
        if len(self.urls) < 2 or version is None:
            return base
        return {**base, "X-Loci-Min-Data-Version": version}


def default_headers(api_key: Optional[str]) -> Dict[str, str]:
    headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
    if api_key:
        headers["X-API-Key"] = api_key
    return headers


@dataclass(frozen=True)
class RetryPolicy:
    """When and how long the client waits before sending a request again.

    Retried, for every request: 429 (rate limit, job backlog) and 503 that the server marks as temporary (while it
    starts: body status ``starting`` or a ``Retry-After``). Both are refusals made before any work, so resending
    cannot store anything twice. A connection that could not be opened is retried too (nothing was sent).

    A request that was sent but whose answer was lost (a read timeout, a dropped connection) is resent only when
    that is harmless: reads, ``PUT`` of settings and plans, context packs (they store only a receipt whose id is
    derived from the request and the data, so a resent pack finds the same receipt), and ingests in which every
    artifact has an ``idempotency_key`` (the server returns the stored artifact instead of storing a second one).
    Feedback, registration, key creation and erasures are never resent after they may have arrived.

    The wait before attempt ``n`` (0-based retry count) is ``min(backoff_max, backoff_base * 2**n)`` with equal
    jitter (half fixed, half random), and never less than the server's ``Retry-After``. A ``Retry-After`` above
    ``max_retry_after`` is not waited for: the error is raised at once.

    With several server URLs (a cluster), a request first moves on to the next node, without waiting, when a
    node cannot be reached, when it answers 503 with ``Retry-After`` (or ``starting``), or, for a request that is
    harmless to resend as above, when its answer was lost. Each node is tried once per round; once every node
    has failed, the rules above decide whether to wait and start another round (``max_retries`` counts rounds).
    A 429 stays with its node (rate limits are counted per node), and no other 4xx is ever resent.
    """

    max_retries: int = 3
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    max_retry_after: float = 60.0
    retry_statuses: Tuple[int, ...] = (429, 503)

    def backoff(self, retry: int, rng: Callable[[], float] = random.random) -> float:
        """The jittered exponential wait before retry number ``retry`` (0-based)."""
        cap = min(self.backoff_max, self.backoff_base * (2.0**retry))
        return cap / 2 + rng() * cap / 2

    def delay_for(self, retry: int, error: LociError, rng: Callable[[], float] = random.random) -> Optional[float]:
        """The wait before resending after ``error``, or None when it must not be resent."""
        if retry >= self.max_retries or error.status not in self.retry_statuses:
            return None
        retry_after = error.retry_after
        if error.status == 503 and retry_after is None:
            if not (isinstance(error, ServiceUnavailable) and error.reason == "starting"):
                return None  # degraded storage: waiting a moment will not help
        wait = self.backoff(retry, rng)
        if retry_after is not None:
            if retry_after > self.max_retry_after:
                return None
            # Wait what the server asked, plus a little jitter so that clients refused together do not return
            # together.
            wait = retry_after + rng() * min(1.0, self.backoff_base)
        return wait


#: Called before each retry with (retry number from 1, seconds to wait, the error or transport exception).
RetryHook = Callable[[int, float, BaseException], None]


@dataclass
class Call(Generic[T]):
    """One API request and the parsing of its answer."""

    method: str
    path: str
    parse: Callable[[int, httpx.Headers, Any], T]
    params: Optional[Dict[str, Any]] = None
    json: Any = None
    #: Whether sending it twice has the effect of sending it once (see RetryPolicy).
    idempotent: bool = False
    #: Statuses that are answers rather than errors (GET /health returns its 503 body).
    ok_statuses: Tuple[int, ...] = ()


def seg(value: str) -> str:
    """Percent-encodes one path segment, so that an id with / or .. stays inside its segment."""
    if not isinstance(value, str) or value == "":
        raise ValueError("path parameters must be non-empty strings")
    out = quote(value, safe="")
    if out in (".", ".."):
        out = out.replace(".", "%2E")
    return out


def _params(query: m._Request) -> Dict[str, Any]:
    return query.to_dict()


def _model(cls: Any) -> Callable[[int, httpx.Headers, Any], Any]:
    return lambda status, headers, body: cls.from_dict(body)


# ---------------------------------------------------------------------------------------------------------------
# Endpoints


def health() -> Call[m.Health]:
    def parse(status: int, headers: httpx.Headers, body: Any) -> m.Health:
        if status != 200 and not (isinstance(body, Mapping) and "status" in body):
            raise error_for_status(status, body, headers)  # a 503 from the connection cap, not from /health
        return m.Health.from_dict(body)

    return Call("GET", "/health", parse, idempotent=True, ok_statuses=(503,))


def openapi() -> Call[Dict[str, Any]]:
    return Call("GET", "/openapi.json", lambda s, h, b: b, idempotent=True)


def register(req: m.RegisterRequest) -> Call[m.Registration]:
    return Call("POST", "/v1/register", _model(m.Registration), json=req.to_dict())


def create_key() -> Call[m.KeyCreated]:
    return Call("POST", "/v1/keys", _model(m.KeyCreated))


def list_keys() -> Call[List[m.KeyInfo]]:
    return Call("GET", "/v1/keys", lambda s, h, b: m.KeyList.from_dict(b).keys, idempotent=True)


def revoke_key(key_id: str) -> Call[m.KeyRevoked]:
    return Call("DELETE", f"/v1/keys/{seg(key_id)}", _model(m.KeyRevoked))


def ingest(req: m.IngestRequest) -> Call[m.IngestResult]:
    def parse(status: int, headers: httpx.Headers, body: Any) -> m.IngestResult:
        data = dict(body)
        data["idempotent_replay"] = headers.get("idempotent-replay") == "true"
        return m.IngestResult.from_dict(data)

    return Call("POST", "/v1/ingest", parse, json=req.to_dict(), idempotent=bool(req.idempotency_key))


def ingest_batch(req: m.BatchIngestRequest) -> Call[m.BatchIngestResult]:
    return Call("POST", "/v2/ingest", _model(m.BatchIngestResult), json=req.to_dict(), idempotent=req.fully_keyed)


def ingest_batch_queued(req: m.BatchIngestRequest) -> Call[m.BatchQueued]:
    return Call("POST", "/v2/ingest", _model(m.BatchQueued), json=req.to_dict(), idempotent=req.fully_keyed)


def get_artifact(artifact_id: str) -> Call[m.Artifact]:
    return Call("GET", f"/v1/artifacts/{seg(artifact_id)}", _model(m.Artifact), idempotent=True)


def artifact_status(artifact_id: str) -> Call[m.ArtifactStatus]:
    return Call("GET", f"/v1/artifacts/{seg(artifact_id)}/status", _model(m.ArtifactStatus), idempotent=True)


def erase_artifact(artifact_id: str) -> Call[m.ArtifactErased]:
    return Call("DELETE", f"/v1/artifacts/{seg(artifact_id)}", _model(m.ArtifactErased))


def context_pack(req: m.ContextPackRequest) -> Call[m.ContextPack]:
    return Call("POST", "/v1/context-pack", _model(m.ContextPack), json=req.to_dict(), idempotent=True)


def context_pack_v2(req: m.ContextPackV2Request) -> Call[m.ContextPackV2]:
    return Call("POST", "/v2/context-pack", _model(m.ContextPackV2), json=req.to_dict(), idempotent=True)


def feedback(req: m.FeedbackRequest) -> Call[m.FeedbackResult]:
    return Call("POST", "/v1/feedback", _model(m.FeedbackResult), json=req.to_dict())


def list_receipts(query: m.ReceiptListQuery) -> Call[m.ReceiptPage]:
    return Call("GET", "/v1/receipts", _model(m.ReceiptPage), params=_params(query), idempotent=True)


def get_receipt(receipt_id: str) -> Call[m.Receipt]:
    return Call("GET", f"/v1/receipts/{seg(receipt_id)}", _model(m.Receipt), idempotent=True)


def list_workspaces() -> Call[List[m.WorkspaceSummary]]:
    return Call("GET", "/v1/workspaces", lambda s, h, b: m.WorkspaceList.from_dict(b).workspaces, idempotent=True)


def erase_workspace(workspace_id: str) -> Call[m.WorkspaceErased]:
    return Call("DELETE", f"/v1/workspaces/{seg(workspace_id)}", _model(m.WorkspaceErased))


def list_artifacts(workspace_id: str, query: m.ArtifactListQuery) -> Call[m.ArtifactPage]:
    return Call(
        "GET",
        f"/v1/workspaces/{seg(workspace_id)}/artifacts",
        _model(m.ArtifactPage),
        params=_params(query),
        idempotent=True,
    )


def get_workspace_settings(workspace_id: str) -> Call[m.WorkspaceSettings]:
    return Call("GET", f"/v1/workspaces/{seg(workspace_id)}/settings", _model(m.WorkspaceSettings), idempotent=True)


def set_workspace_settings(workspace_id: str, req: m.WorkspaceSettingsChange) -> Call[m.WorkspaceSettings]:
    return Call(
        "PUT",
        f"/v1/workspaces/{seg(workspace_id)}/settings",
        _model(m.WorkspaceSettings),
        json=req.to_dict(),
        idempotent=True,
    )


def list_plans() -> Call[List[m.Plan]]:
    return Call("GET", "/v1/billing/plans", lambda s, h, b: m.PlanList.from_dict(b).plans, idempotent=True)


def list_tenants() -> Call[List[m.TenantInfo]]:
    return Call("GET", "/v1/tenants", lambda s, h, b: m.TenantList.from_dict(b).tenants, idempotent=True)


def get_plan(tenant_id: Optional[str]) -> Call[m.TenantPlan]:
    params = {"tenant_id": tenant_id} if tenant_id is not None else None
    return Call("GET", "/v1/billing/plan", _model(m.TenantPlan), params=params, idempotent=True)


def set_plan(req: m.PlanChangeRequest) -> Call[m.TenantPlan]:
    return Call("PUT", "/v1/billing/plan", _model(m.TenantPlan), json=req.to_dict(), idempotent=True)


def usage(query: m.UsageQuery) -> Call[m.Usage]:
    return Call("GET", "/v1/billing/usage", _model(m.Usage), params=_params(query), idempotent=True)


def get_job(job_id: str) -> Call[m.Job]:
    return Call("GET", f"/v2/jobs/{seg(job_id)}", _model(m.Job), idempotent=True)


# ---------------------------------------------------------------------------------------------------------------
# Request builders shared by both clients' keyword-argument methods.


def artifact_items(
    artifacts: Sequence[Union[m.ArtifactInput, Mapping[str, Any]]],
) -> List[Union[m.ArtifactInput, Dict[str, Any]]]:
    items: List[Union[m.ArtifactInput, Dict[str, Any]]] = []
    for a in artifacts:
        items.append(a if isinstance(a, m.ArtifactInput) else dict(a))
    return items


def as_policy(policy: Union[m.Policy, Mapping[str, Any], None]) -> Union[m.Policy, Dict[str, Any], None]:
    if policy is None or isinstance(policy, m.Policy):
        return policy
    return dict(policy)


def as_permissions(
    permissions: Union[m.Permissions, Mapping[str, Any], None],
) -> Union[m.Permissions, Dict[str, Any], None]:
    if permissions is None or isinstance(permissions, m.Permissions):
        return permissions
    return dict(permissions)


def is_safe_transport_retry(exc: httpx.TransportError, call: Call[Any]) -> bool:
    """Whether a transport failure may be retried: the connection never opened, or resending is harmless."""
    if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)):
        return True
    return call.idempotent


def fails_over(error: LociError) -> bool:
    """Whether another node may take a request this node refused: a 503 that marks the refusal as temporary."""
    if error.status != 503:
        return False
    return error.retry_after is not None or (isinstance(error, ServiceUnavailable) and error.reason == "starting")


def transport_error(exc: httpx.TransportError, attempts: int) -> LociError:
    cls = LociTimeout if isinstance(exc, httpx.TimeoutException) else LociConnectionError
    return cls(0, f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__, attempts=attempts)


def decode_body(response: httpx.Response) -> Any:
    """The JSON body, or the text when it is not JSON (an error page of a proxy, say)."""
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        return response.text
