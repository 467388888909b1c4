"""The synchronous client of the Loci HTTP API."""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Set, Tuple, TypeVar, Union

import httpx

from . import _core
from . import models as m
from ._core import Call, RetryHook, RetryPolicy
from .errors import DecodeError, LociError, error_for_status

T = TypeVar("T")


class Client:
    """A synchronous Loci client. Every method is one API call (with retries as ``retry`` allows).

    ``base_url`` is one server URL or a list of a cluster's nodes (default ``LOCI_URL``, comma-separated for
    several, else ``http://127.0.0.1:3000``); with several, a request fails over to the next node as
    ``RetryPolicy`` describes, and reads what earlier answers acknowledged (``data_version``). ``api_key`` defaults
    to ``LOCI_API_KEY`` (a server without ``API_KEY`` needs none). ``timeout`` is seconds per attempt (or an ``httpx.Timeout``).
    ``on_retry`` is told of each retry before its wait (for logging); ``sleep`` performs every wait (retries and
    polling). ``http_client`` replaces the connection pool (proxies, custom transports; ``timeout`` is then its own).
    Use it as a context manager, or call ``close()``.
    """

    def __init__(
        self,
        base_url: Union[str, Sequence[str], None] = None,
        api_key: Optional[str] = None,
        *,
        timeout: Union[float, httpx.Timeout] = _core.DEFAULT_TIMEOUT,
        retry: Optional[RetryPolicy] = None,
        on_retry: Optional[RetryHook] = None,
        sleep: Callable[[float], None] = time.sleep,
        http_client: Optional[httpx.Client] = None,
    ) -> None:
        urls, self.api_key = _core.resolve_settings(base_url, api_key)
        #: Every server URL the client sends to, in the order given.
        self.base_urls: Tuple[str, ...] = urls
        self._nodes = _core.Nodes(urls)
        self.retry = retry or RetryPolicy()
        self._on_retry = on_retry
        self._sleep = sleep
        self._owns_http = http_client is None
        self._http = http_client or httpx.Client(timeout=timeout)
        self._headers = _core.default_headers(self.api_key)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Closes the connection pool (unless it was passed in as ``http_client``)."""
        if self._owns_http:
            self._http.close()

    @property
    def base_url(self) -> str:
        """The URL of the server that answered last (with one URL, that URL)."""
        return self.base_urls[self._nodes.current]

    @property
    def data_version(self) -> Optional[str]:
        """The highest ``X-Loci-Data-Version`` the client has seen (element-wise), or None before any.

        With several ``base_url``s it is sent as ``X-Loci-Min-Data-Version`` on every request: whichever node
        answers has applied at least what the client already saw acknowledged (its own writes included).
        """
        return self._nodes.data_version

    def _send(self, call: Call[T]) -> T:
        nodes = self._nodes
        node = nodes.current
        sent = 0  # requests sent, failovers and retries included
        rounds = 0  # retries of the policy (waits), each starting a new round of the nodes
        tried = 0  # nodes tried in this round
        while True:
            sent += 1
            tried += 1
            try:
                resp = self._http.request(
                    call.method,
                    nodes.urls[node] + call.path,
                    params=call.params or None,
                    json=call.json,
                    headers=nodes.headers(self._headers),
                )
            except httpx.TransportError as exc:
                if not _core.is_safe_transport_retry(exc, call):
                    raise _core.transport_error(exc, sent) from exc
                if tried < len(nodes.urls):
                    node = nodes.next(node)
                    self._failover(sent, exc)
                    continue
                if rounds >= self.retry.max_retries:
                    raise _core.transport_error(exc, sent) from exc
                delay = self.retry.backoff(rounds)
                rounds += 1
                tried = 0
                node = nodes.next(node)
                self._wait(sent, delay, exc)
                continue
            nodes.observe(resp.headers)
            body = _core.decode_body(resp)
            if 200 <= resp.status_code < 300 or resp.status_code in call.ok_statuses:
                nodes.answered(node)
                try:
                    return call.parse(resp.status_code, resp.headers, body)
                except (TypeError, KeyError, ValueError, AttributeError) as exc:
                    raise DecodeError(resp.status_code, f"unexpected response: {exc}", headers=resp.headers) from exc
            err = error_for_status(resp.status_code, body, resp.headers, attempts=sent)
            if _core.fails_over(err) and tried < len(nodes.urls):
                node = nodes.next(node)
                self._failover(sent, err)
                continue
            if _core.fails_over(err):
                node = nodes.next(node)  # every node refused: the next round starts after this one
            else:
                nodes.answered(node)
            delay_s = self.retry.delay_for(rounds, err)
            if delay_s is None:
                raise err
            rounds += 1
            tried = 0
            self._wait(sent, delay_s, err)

    def _wait(self, retry: int, delay: float, cause: BaseException) -> None:
        if self._on_retry is not None:
            self._on_retry(retry, delay, cause)
        self._sleep(delay)

    def _failover(self, retry: int, cause: BaseException) -> None:
        """Tells ``on_retry`` of resend number ``retry``, sent at once to the next node."""
        if self._on_retry is not None:
            self._on_retry(retry, 0.0, cause)

    # -- system --------------------------------------------------------------------------------------------

    def health(self) -> m.Health:
        """``GET /health``. A 503 (starting, degraded) is returned as a Health with its status and reason."""
        return self._send(_core.health())

    def version(self) -> str:
        """The server's version, from ``GET /health``."""
        return self.health().version or ""

    def openapi(self) -> Dict[str, Any]:
        """``GET /openapi.json``: the server's API description."""
        return self._send(_core.openapi())

    def wait_until_ready(self, timeout: float = 30.0, interval: float = 0.1) -> m.Health:
        """Polls ``GET /health`` until it is ``ok`` (or raises TimeoutError), for a server just started."""
        deadline = time.monotonic() + timeout
        last: Union[m.Health, LociError, None] = None
        while True:
            try:
                last = self.health()
                if last.status == "ok":
                    return last
            except LociError as exc:
                last = exc
            if time.monotonic() >= deadline:
                raise TimeoutError(f"server at {self.base_url} not ready after {timeout}s: {last}")
            self._sleep(interval)

    # -- tenants and keys ----------------------------------------------------------------------------------

    def register(self, email: str, plan: Optional[m.PlanName] = None) -> m.Registration:
        """``POST /v1/register``: a new tenant and its first key (admin key, or open registration for free)."""
        return self._send(_core.register(m.RegisterRequest(email=email, plan=plan)))

    def create_key(self) -> m.KeyCreated:
        """``POST /v1/keys``: a new key for the caller's tenant."""
        return self._send(_core.create_key())

    def list_keys(self) -> List[m.KeyInfo]:
        """``GET /v1/keys``: the tenant's keys, revoked ones included."""
        return self._send(_core.list_keys())

    def revoke_key(self, key_id: str) -> m.KeyRevoked:
        """``DELETE /v1/keys/{key_id}``: revokes a key at once (a tenant keeps at least one: 409)."""
        return self._send(_core.revoke_key(key_id))

    # -- artifacts -----------------------------------------------------------------------------------------

    def ingest(
        self,
        workspace_id: str,
        actor_id: str,
        artifact_type: m.ArtifactType,
        raw_payload: Any = None,
        *,
        timestamp: Optional[m.Timestamp] = None,
        permissions: Union[m.Permissions, Mapping[str, Any], None] = None,
        idempotency_key: Optional[str] = None,
        session_id: Optional[str] = None,
        thread_id: Optional[str] = None,
        metadata: Optional[Dict[str, str]] = None,
    ) -> m.IngestResult:
        """``POST /v1/ingest``: stores one artifact. With an ``idempotency_key`` a resend returns the stored one."""
        req = m.IngestRequest(
            workspace_id=workspace_id,
            actor_id=actor_id,
            artifact_type=artifact_type,
            raw_payload=raw_payload,
            timestamp=timestamp,
            permissions=_core.as_permissions(permissions),
            idempotency_key=idempotency_key,
            session_id=session_id,
            thread_id=thread_id,
            metadata=metadata,
        )
        return self._send(_core.ingest(req))

    def ingest_batch(
        self,
        workspace_id: str,
        actor_id: str,
        artifacts: Sequence[Union[m.ArtifactInput, Mapping[str, Any]]],
        *,
        wait_for_embedding: bool = False,
    ) -> m.BatchIngestResult:
        """``POST /v2/ingest``: stores and indexes up to 1,000 artifacts; all or nothing.

        ``wait_for_embedding`` answers once every item is embedded (at most 20 s), so a pack asked next sees them
        in the semantic channel; where packs run late interaction it also waits for the items' token rows, so
        that the packs asked next do not compute them.
        """
        req = m.BatchIngestRequest(
            workspace_id=workspace_id,
            actor_id=actor_id,
            artifacts=_core.artifact_items(artifacts),
            wait_for_embedding=True if wait_for_embedding else None,
        )
        return self._send(_core.ingest_batch(req))

    def queue_batch(
        self,
        workspace_id: str,
        actor_id: str,
        artifacts: Sequence[Union[m.ArtifactInput, Mapping[str, Any]]],
    ) -> m.BatchQueued:
        """``POST /v2/ingest`` with ``async_index``: stores the batch and queues one indexing job per item (202)."""
        req = m.BatchIngestRequest(
            workspace_id=workspace_id,
            actor_id=actor_id,
            artifacts=_core.artifact_items(artifacts),
            async_index=True,
        )
        return self._send(_core.ingest_batch_queued(req))

    def get_artifact(self, artifact_id: str) -> m.Artifact:
        """``GET /v1/artifacts/{id}``: the artifact, its payload exactly as ingested."""
        return self._send(_core.get_artifact(artifact_id))

    def artifact_status(self, artifact_id: str) -> m.ArtifactStatus:
        """``GET /v1/artifacts/{id}/status``: indexing and embedding progress."""
        return self._send(_core.artifact_status(artifact_id))

    def erase_artifact(self, artifact_id: str) -> m.ArtifactErased:
        """``DELETE /v1/artifacts/{id}``: unreadable and unsearchable at once; again, or not yours, is 404."""
        return self._send(_core.erase_artifact(artifact_id))

    # -- context packs -------------------------------------------------------------------------------------

    def context_pack(
        self,
        workspace_id: str,
        query: str,
        max_tokens: Optional[int] = None,
        *,
        actor_id: Optional[str] = None,
        session_id: Optional[str] = None,
        metadata: Optional[Dict[str, str]] = None,
        policy: Union[m.Policy, Mapping[str, Any], None] = None,
        mode: Optional[m.PackMode] = None,
        as_of: Optional[m.Timestamp] = None,
        max_latency_ms: Optional[float] = None,
        max_cost_usd: Optional[float] = None,
        min_confidence: Optional[float] = None,
        min_evidence_tokens: Optional[int] = None,
        max_spans_per_artifact: Optional[int] = None,
        diversity_decay: Optional[float] = None,
        redundancy_jaccard_threshold: Optional[float] = None,
        temporal_half_life_hours: Optional[float] = None,
        min_relevance: Optional[float] = None,
        rerank_depth: Optional[int] = None,
        late_depth: Optional[int] = None,
        since: Optional[m.Timestamp] = None,
        until: Optional[m.Timestamp] = None,
    ) -> m.ContextPack:
        """``POST /v1/context-pack``: evidence for ``query`` within ``max_tokens`` (server default 4096).

        ``metadata`` keeps only artifacts holding every given key/value; ``policy`` filters by source, actor
        and RBAC tags; ``since`` and ``until`` (inclusive) keep only artifacts of that time. Each evidence line
        of ``context_text`` starts with its date, time and speaker. Check ``abstain_flag`` before using
        ``context_text``.
        """
        req = m.ContextPackRequest(
            workspace_id=workspace_id,
            query=query,
            max_tokens=max_tokens,
            actor_id=actor_id,
            session_id=session_id,
            metadata=metadata,
            policy=_core.as_policy(policy),
            mode=mode,
            as_of=as_of,
            max_latency_ms=max_latency_ms,
            max_cost_usd=max_cost_usd,
            min_confidence=min_confidence,
            min_evidence_tokens=min_evidence_tokens,
            max_spans_per_artifact=max_spans_per_artifact,
            diversity_decay=diversity_decay,
            redundancy_jaccard_threshold=redundancy_jaccard_threshold,
            temporal_half_life_hours=temporal_half_life_hours,
            min_relevance=min_relevance,
            rerank_depth=rerank_depth,
            late_depth=late_depth,
            since=since,
            until=until,
        )
        return self._send(_core.context_pack(req))

    def context_pack_v2(
        self,
        workspace_id: str,
        query: str,
        max_tokens: int = 4096,
        *,
        profile: Optional[m.Profile] = None,
        actor_id: Optional[str] = None,
        session_id: Optional[str] = None,
        metadata: Optional[Dict[str, str]] = None,
        policy: Union[m.Policy, Mapping[str, Any], None] = None,
        mode: Optional[m.PackMode] = None,
        as_of: Optional[m.Timestamp] = None,
        max_latency_ms: Optional[float] = None,
        max_cost_usd: Optional[float] = None,
        min_confidence: Optional[float] = None,
        min_evidence_tokens: Optional[int] = None,
        max_spans_per_artifact: Optional[int] = None,
        diversity_decay: Optional[float] = None,
        redundancy_jaccard_threshold: Optional[float] = None,
        temporal_half_life_hours: Optional[float] = None,
        min_relevance: Optional[float] = None,
        rerank_depth: Optional[int] = None,
        late_depth: Optional[int] = None,
        since: Optional[m.Timestamp] = None,
        until: Optional[m.Timestamp] = None,
    ) -> m.ContextPackV2:
        """``POST /v2/context-pack``: a pack as snippets (full span text) with a serving ``profile``."""
        req = m.ContextPackV2Request(
            workspace_id=workspace_id,
            query=query,
            max_tokens=max_tokens,
            profile=profile,
            actor_id=actor_id,
            session_id=session_id,
            metadata=metadata,
            policy=_core.as_policy(policy),
            mode=mode,
            as_of=as_of,
            max_latency_ms=max_latency_ms,
            max_cost_usd=max_cost_usd,
            min_confidence=min_confidence,
            min_evidence_tokens=min_evidence_tokens,
            max_spans_per_artifact=max_spans_per_artifact,
            diversity_decay=diversity_decay,
            redundancy_jaccard_threshold=redundancy_jaccard_threshold,
            temporal_half_life_hours=temporal_half_life_hours,
            min_relevance=min_relevance,
            rerank_depth=rerank_depth,
            late_depth=late_depth,
            since=since,
            until=until,
        )
        return self._send(_core.context_pack_v2(req))

    # -- feedback and receipts -----------------------------------------------------------------------------

    def feedback(
        self,
        workspace_id: str,
        action: m.FeedbackAction,
        artifact_id: Optional[str] = None,
        *,
        span_id: Optional[str] = None,
        actor_id: Optional[str] = None,
        reason: Optional[str] = None,
        conflict_id: Optional[str] = None,
        preferred_span_id: Optional[str] = None,
    ) -> m.FeedbackResult:
        """``POST /v1/feedback``: pin, unpin, private, mark_wrong, outdated, clear a span (or every span of the
        artifact when ``span_id`` is None), or resolve_conflict by ``conflict_id``."""
        req = m.FeedbackRequest(
            workspace_id=workspace_id,
            action=action,
            artifact_id=artifact_id,
            span_id=span_id,
            actor_id=actor_id,
            reason=reason,
            conflict_id=conflict_id,
            preferred_span_id=preferred_span_id,
        )
        return self._send(_core.feedback(req))

    def list_receipts(
        self,
        workspace_id: str,
        *,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        pack_hash: Optional[str] = None,
    ) -> m.ReceiptPage:
        """``GET /v1/receipts``: one page of a workspace's receipts, newest first."""
        query = m.ReceiptListQuery(workspace_id=workspace_id, limit=limit, offset=offset, pack_hash=pack_hash)
        return self._send(_core.list_receipts(query))

    def iter_receipts(
        self, workspace_id: str, *, pack_hash: Optional[str] = None, page_size: int = 100
    ) -> Iterator[m.ReceiptSummary]:
        """Every receipt of the workspace, newest first, fetching pages of ``page_size`` by offset.

        Packs made while iterating shift the offsets (newest first), so a receipt may reappear on the next
        page; the iterator yields each id once.
        """
        seen: Set[str] = set()
        offset = 0
        while True:
            page = self.list_receipts(workspace_id, limit=page_size, offset=offset, pack_hash=pack_hash)
            for r in page.receipts:
                if r.id not in seen:
                    seen.add(r.id)
                    yield r
            offset += len(page.receipts)
            if not page.receipts or offset >= page.total:
                return

    def get_receipt(self, receipt_id: str) -> m.Receipt:
        """``GET /v1/receipts/{id}``: the full decision receipt."""
        return self._send(_core.get_receipt(receipt_id))

    # -- workspaces ----------------------------------------------------------------------------------------

    def list_workspaces(self) -> List[m.WorkspaceSummary]:
        """``GET /v1/workspaces``: the caller's workspaces that hold artifacts (a workspace is created by its
        first ingest; there is no separate create call)."""
        return self._send(_core.list_workspaces())

    def erase_workspace(self, workspace_id: str) -> m.WorkspaceErased:
        """``DELETE /v1/workspaces/{id}``: erases its artifacts, spans, feedback and receipts."""
        return self._send(_core.erase_workspace(workspace_id))

    def list_artifacts(
        self,
        workspace_id: str,
        *,
        session_id: Optional[str] = None,
        actor_id: Optional[str] = None,
        artifact_type: Optional[m.ArtifactType] = None,
        since: Optional[m.Timestamp] = None,
        until: Optional[m.Timestamp] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> m.ArtifactPage:
        """``GET /v1/workspaces/{id}/artifacts``: one page, newest first; pass ``next_cursor`` back as ``cursor``."""
        query = m.ArtifactListQuery(
            session_id=session_id,
            actor_id=actor_id,
            artifact_type=artifact_type,
            since=since,
            until=until,
            limit=limit,
            cursor=cursor,
        )
        return self._send(_core.list_artifacts(workspace_id, query))

    def iter_artifacts(
        self,
        workspace_id: str,
        *,
        session_id: Optional[str] = None,
        actor_id: Optional[str] = None,
        artifact_type: Optional[m.ArtifactType] = None,
        since: Optional[m.Timestamp] = None,
        until: Optional[m.Timestamp] = None,
        page_size: int = 100,
    ) -> Iterator[m.ArtifactSummary]:
        """Every matching artifact, newest first, following the cursor (exact while new artifacts arrive)."""
        cursor: Optional[str] = None
        while True:
            page = self.list_artifacts(
                workspace_id,
                session_id=session_id,
                actor_id=actor_id,
                artifact_type=artifact_type,
                since=since,
                until=until,
                limit=page_size,
                cursor=cursor,
            )
            yield from page.artifacts
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def get_workspace_settings(self, workspace_id: str) -> m.WorkspaceSettings:
        """``GET /v1/workspaces/{id}/settings``."""
        return self._send(_core.get_workspace_settings(workspace_id))

    def set_workspace_settings(self, workspace_id: str, retention_days: Optional[int]) -> m.WorkspaceSettings:
        """``PUT /v1/workspaces/{id}/settings``: retention in days (1..36500), or None to clear it."""
        req = m.WorkspaceSettingsChange(retention_days=retention_days)
        return self._send(_core.set_workspace_settings(workspace_id, req))

    # -- billing -------------------------------------------------------------------------------------------

    def list_plans(self) -> List[m.Plan]:
        """``GET /v1/billing/plans``: the plan catalogue."""
        return self._send(_core.list_plans())

    def list_tenants(self) -> List[m.TenantInfo]:
        """``GET /v1/tenants`` (admin key only): every tenant with its plan and workspaces."""
        return self._send(_core.list_tenants())

    def get_plan(self, tenant_id: Optional[str] = None) -> m.TenantPlan:
        """``GET /v1/billing/plan``: the caller's plan, or (admin key) another tenant's."""
        return self._send(_core.get_plan(tenant_id))

    def set_plan(self, tenant_id: str, plan: m.PlanName) -> m.TenantPlan:
        """``PUT /v1/billing/plan`` (admin key only)."""
        return self._send(_core.set_plan(m.PlanChangeRequest(tenant_id=tenant_id, plan=plan)))

    def usage(self, period: Optional[str] = None, *, tenant_id: Optional[str] = None) -> m.Usage:
        """``GET /v1/billing/usage``: counts of a month (``YYYY-MM``, default the current one)."""
        return self._send(_core.usage(m.UsageQuery(period=period, tenant_id=tenant_id)))

    # -- v2 jobs -------------------------------------------------------------------------------------------

    def get_job(self, job_id: str) -> m.Job:
        """``GET /v2/jobs/{id}``: an indexing job of ``queue_batch``."""
        return self._send(_core.get_job(job_id))

    def wait_for_job(
        self, job_id: str, *, timeout: float = 120.0, poll_interval: float = 2.0, max_poll_interval: float = 30.0
    ) -> m.Job:
        """Polls a job until it is done or failed (a failed job is returned, not raised), doubling the interval
        up to ``max_poll_interval`` as the API suggests; TimeoutError after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        interval = poll_interval
        while True:
            job = self.get_job(job_id)
            if job.finished:
                return job
            now = time.monotonic()
            if now >= deadline:
                raise TimeoutError(f"job {job_id} still {job.status} after {timeout}s")
            self._sleep(min(interval, deadline - now))
            interval = min(interval * 2, max_poll_interval)
