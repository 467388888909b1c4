"""Typed models of every request and response of the Loci HTTP API (docs/openapi.yaml).

Requests are dataclasses whose ``to_dict`` gives the JSON body: fields left at ``None`` are not sent, so the
server applies its documented defaults (the API is strict: it refuses unknown fields, so nothing else is added).
Responses are frozen dataclasses built by ``from_dict``: nested objects become their dataclasses, timestamps stay
the ISO 8601 strings the server sent (exactly as sent; ``datetime.fromisoformat`` reads them from Python 3.11), fields
the server adds in later versions are ignored rather than failing, and the whole decoded body stays in ``raw``.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from dataclasses import dataclass, field
from typing import (
    Any,
    ClassVar,
    Dict,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    Type,
    TypeVar,
    Union,
    get_args,
    get_origin,
    get_type_hints,
)

ArtifactType = Literal[
    "chat_turn",
    "tool_call",
    "tool_result",
    "document",
    "note",
    "meeting_transcript",
    "email",
    "calendar_event",
    "attachment",
]
PlanName = Literal["free", "pro", "team", "enterprise"]
FeedbackAction = Literal["pin", "unpin", "private", "mark_wrong", "outdated", "resolve_conflict", "clear"]
Profile = Literal["low_latency", "balanced", "high_recall"]
PackMode = Literal["relevance", "coverage"]
IndexStatus = Literal["pending", "indexing", "indexed", "failed"]
EmbeddingState = Literal["none", "pending", "embedded", "failed"]
JobStatus = Literal["pending", "processing", "done", "failed"]
ExclusionReason = Literal["BUDGET", "POLICY", "REDUNDANCY", "LOW_RELEVANCE", "PRIVATE", "MARKED_WRONG", "OUTDATED"]
Visibility = Literal["public", "private", "restricted"]
PrivacyLevel = Literal["default", "strict"]

#: A timestamp sent to the server: an ISO 8601 string, or a datetime (a naive one is read as UTC by the server).
Timestamp = Union[str, _dt.datetime]


def _encode(value: Any) -> Any:
    """Converts a request value to JSON: dataclasses to objects without their None fields, datetimes to ISO 8601."""
    if isinstance(value, _Request):
        return value.to_dict()
    if isinstance(value, _dt.datetime):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    return value


class _Request:
    """Base of request models: ``to_dict`` is the JSON body, None fields left out."""

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            v = getattr(self, f.name)
            if v is not None:
                out[f.name] = _encode(v)
        return out


# ---------------------------------------------------------------------------------------------------------------
# Requests


@dataclass
class Permissions(_Request):
    """Who may see an artifact in packs (artifact ``permissions``)."""

    visibility: Optional[Visibility] = None
    allowed_actors: Optional[List[str]] = None
    denied_actors: Optional[List[str]] = None
    rbac_tags: Optional[List[str]] = None


@dataclass
class Policy(_Request):
    """Per-request access control of a context pack (``policy``)."""

    allowed_sources: Optional[List[ArtifactType]] = None
    denied_sources: Optional[List[ArtifactType]] = None
    allowed_actors: Optional[List[str]] = None
    rbac_required: Optional[List[str]] = None
    privacy_level: Optional[PrivacyLevel] = None


@dataclass
class ArtifactInput(_Request):
    """One artifact of a v2 batch (``ArtifactInput``); workspace and actor are the batch's."""

    artifact_type: ArtifactType
    raw_payload: Any = None
    timestamp: Optional[Timestamp] = None
    permissions: Optional[Union[Permissions, Dict[str, Any]]] = None
    idempotency_key: Optional[str] = None
    session_id: Optional[str] = None
    thread_id: Optional[str] = None
    metadata: Optional[Dict[str, str]] = None
    blob_pointer: Optional[Union[str, Dict[str, Any]]] = None
    """attachment only: a reference to the binary content, stored in raw_payload, never fetched."""


@dataclass
class IngestRequest(_Request):
    """Body of ``POST /v1/ingest``: one artifact with its workspace and actor."""

    workspace_id: str
    actor_id: str
    artifact_type: ArtifactType
    raw_payload: Any = None
    timestamp: Optional[Timestamp] = None
    permissions: Optional[Union[Permissions, Dict[str, Any]]] = None
    idempotency_key: Optional[str] = None
    session_id: Optional[str] = None
    thread_id: Optional[str] = None
    metadata: Optional[Dict[str, str]] = None
    blob_pointer: Optional[Union[str, Dict[str, Any]]] = None
    """attachment only: a reference to the binary content, stored in raw_payload, never fetched."""


@dataclass
class BatchIngestRequest(_Request):
    """Body of ``POST /v2/ingest``: up to 1,000 artifacts of one workspace and actor."""

    workspace_id: str
    actor_id: str
    artifacts: List[Union[ArtifactInput, Dict[str, Any]]]
    async_index: Optional[bool] = None
    wait_for_embedding: Optional[bool] = None

    @property
    def fully_keyed(self) -> bool:
        """Whether every item carries an idempotency_key, which makes resending the batch safe."""
        for a in self.artifacts:
            key = a.idempotency_key if isinstance(a, ArtifactInput) else a.get("idempotency_key")
            if not key:
                return False
        return True


@dataclass
class ContextPackRequest(_Request):
    """Body of ``POST /v1/context-pack``. Unset tuning fields take the server's defaults."""

    workspace_id: str
    query: str
    max_tokens: Optional[int] = None
    actor_id: Optional[str] = None
    session_id: Optional[str] = None
    metadata: Optional[Dict[str, str]] = None
    mode: Optional[PackMode] = None
    policy: Optional[Union[Policy, Dict[str, Any]]] = None
    max_latency_ms: Optional[float] = None
    max_cost_usd: Optional[float] = None
    as_of: Optional[Timestamp] = None
    min_confidence: Optional[float] = None
    min_evidence_tokens: Optional[int] = None
    max_spans_per_artifact: Optional[int] = None
    diversity_decay: Optional[float] = None
    redundancy_jaccard_threshold: Optional[float] = None
    temporal_half_life_hours: Optional[float] = None
    min_relevance: Optional[float] = None
    """The relevance floor as a share of the best relevance (0-1; v1 default 0.4, v2 by profile)."""
    rerank_depth: Optional[int] = None
    """How many of the best candidates the relevance model rereads (0-100; v1 default 0, v2 by profile)."""
    late_depth: Optional[int] = None
    """How many of the best candidates the late-interaction model scores (0-100; left out: the server's depth in
    workspaces of at most its --late-max-spans spans, 0 in larger ones and in v2 low_latency)."""
    since: Optional[Timestamp] = None
    """Only spans of artifacts at or after this time (inclusive); pinned spans are kept whatever their time."""
    until: Optional[Timestamp] = None
    """Only spans of artifacts at or before this time (inclusive)."""


@dataclass
class ContextPackV2Request(ContextPackRequest):
    """Body of ``POST /v2/context-pack``: everything v1 takes plus ``profile``; ``max_tokens`` is required."""

    profile: Optional[Profile] = None

    def to_dict(self) -> Dict[str, Any]:
        if self.max_tokens is None:
            raise ValueError("max_tokens is required by the v2 context pack")
        return super().to_dict()


@dataclass
class FeedbackRequest(_Request):
    """Body of ``POST /v1/feedback``. ``artifact_id`` is needed by every action but ``resolve_conflict``."""

    workspace_id: str
    action: FeedbackAction
    artifact_id: Optional[str] = None
    span_id: Optional[str] = None
    actor_id: Optional[str] = None
    reason: Optional[str] = None
    conflict_id: Optional[str] = None
    preferred_span_id: Optional[str] = None


@dataclass
class RegisterRequest(_Request):
    """Body of ``POST /v1/register``."""

    email: str
    plan: Optional[PlanName] = None


@dataclass
class PlanChangeRequest(_Request):
    """Body of ``PUT /v1/billing/plan`` (admin key only)."""

    tenant_id: str
    plan: PlanName


@dataclass
class WorkspaceSettingsChange(_Request):
    """Body of ``PUT /v1/workspaces/{id}/settings``: ``retention_days`` None clears the retention (sent as null)."""

    retention_days: Optional[int]

    def to_dict(self) -> Dict[str, Any]:
        return {"retention_days": self.retention_days}


@dataclass
class ArtifactListQuery(_Request):
    """Query of ``GET /v1/workspaces/{id}/artifacts``: filters, page size and the cursor of the previous page."""

    session_id: Optional[str] = None
    actor_id: Optional[str] = None
    artifact_type: Optional[ArtifactType] = None
    since: Optional[Timestamp] = None
    until: Optional[Timestamp] = None
    limit: Optional[int] = None
    cursor: Optional[str] = None


@dataclass
class ReceiptListQuery(_Request):
    """Query of ``GET /v1/receipts``: offset paging, newest first."""

    workspace_id: str
    limit: Optional[int] = None
    offset: Optional[int] = None
    pack_hash: Optional[str] = None


@dataclass
class UsageQuery(_Request):
    """Query of ``GET /v1/billing/usage``: the month (YYYY-MM, default the current one) and, admin only, a tenant."""

    period: Optional[str] = None
    tenant_id: Optional[str] = None


# ---------------------------------------------------------------------------------------------------------------
# Responses

R = TypeVar("R", bound="_Response")


class _Response:
    """Base of response models: ``from_dict`` builds the dataclass from decoded JSON."""

    _hints: ClassVar[Dict[type, Dict[str, Any]]] = {}

    @classmethod
    def from_dict(cls: Type[R], data: Mapping[str, Any]) -> R:
        if not isinstance(data, Mapping):
            raise TypeError(f"{cls.__name__}: expected a JSON object, got {type(data).__name__}")
        hints = _Response._hints.get(cls)
        if hints is None:
            hints = get_type_hints(cls)
            _Response._hints[cls] = hints
        kwargs: Dict[str, Any] = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if f.name == "raw":
                kwargs["raw"] = dict(data)
                continue
            if f.name not in data:
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                    raise TypeError(f"{cls.__name__}: the response lacks the field {f.name!r}")
                continue
            kwargs[f.name] = _decode(hints[f.name], data[f.name])
        return cls(**kwargs)


def _decode(tp: Any, value: Any) -> Any:
    """Converts decoded JSON to the annotated type: nested response dataclasses, lists, dicts, optionals."""
    if value is None:
        return None
    origin = get_origin(tp)
    if origin is Union:
        for arg in get_args(tp):
            if arg is type(None):
                continue
            return _decode(arg, value)
        return value
    if origin in (list, List, Sequence):
        (item,) = get_args(tp) or (Any,)
        return [_decode(item, v) for v in value]
    if origin in (dict, Dict, Mapping):
        args = get_args(tp)
        item = args[1] if len(args) == 2 else Any
        return {k: _decode(item, v) for k, v in value.items()}
    if isinstance(tp, type) and issubclass(tp, _Response):
        return tp.from_dict(value)
    if isinstance(tp, type) and issubclass(tp, _Request) and dataclasses.is_dataclass(tp):
        names = {f.name for f in dataclasses.fields(tp)}
        return tp(**{k: v for k, v in value.items() if k in names})
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _raw() -> Any:
    return field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class Health(_Response):
    """``GET /health``: ``ok`` when serving; ``starting`` (recovering) or ``degraded`` with a ``reason`` on 503."""

    status: str
    version: Optional[str] = None
    uptime_s: Optional[int] = None
    reason: Optional[str] = None
    storage: Optional[Dict[str, Any]] = None
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class Registration(_Response):
    """``POST /v1/register``: the new tenant and its first key, shown only once."""

    tenant_id: str
    api_key: str
    plan: PlanName
    message: str
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class KeyCreated(_Response):
    """``POST /v1/keys``: a new key of the caller's tenant; ``api_key`` is shown only here."""

    id: str
    prefix: str
    created_at: str
    api_key: str
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class KeyInfo(_Response):
    """One entry of ``GET /v1/keys`` (no secret)."""

    id: str
    prefix: str
    created_at: str
    last_used_at: Optional[str]
    revoked: bool
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class KeyList(_Response):
    """``GET /v1/keys``."""

    keys: List[KeyInfo]
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class KeyRevoked(_Response):
    """``DELETE /v1/keys/{key_id}``."""

    id: str
    revoked: bool
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class IngestResult(_Response):
    """``POST /v1/ingest``. ``idempotent_replay`` is true when the idempotency_key returned a stored artifact (200)."""

    artifact_id: str
    content_hash: str
    indexed: bool
    span_ids: List[str] = field(default_factory=list)
    created: Optional[str] = None
    idempotent_replay: bool = False
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class Span(_Response):
    """A span (chunk) of an artifact: the unit of retrieval."""

    span_id: str
    start_offset: int
    end_offset: int
    token_count: int
    text: str = ""
    """The span's text."""
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class Artifact(_Response):
    """``GET /v1/artifacts/{id}``: the artifact with its payload exactly as ingested, metadata and spans."""

    artifact_id: str
    workspace_id: str
    actor_id: str
    artifact_type: ArtifactType
    raw_payload: Any
    content_hash: str
    timestamp: str
    created: str
    permissions: Optional[Permissions]
    idempotency_key: Optional[str]
    session_id: Optional[str]
    thread_id: Optional[str]
    metadata: Dict[str, str]
    status: IndexStatus
    spans: List[Span]
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class ArtifactStatus(_Response):
    """``GET /v1/artifacts/{id}/status``: indexing and embedding progress."""

    artifact_id: str
    workspace_id: str
    artifact_type: Optional[ArtifactType]
    status: IndexStatus
    indexed: bool
    span_count: int
    total_tokens: int
    indexed_at: Optional[str]
    error_message: Optional[str]
    embedding: EmbeddingState
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class ArtifactErased(_Response):
    """``DELETE /v1/artifacts/{id}``."""

    artifact_id: str
    workspace_id: str
    artifacts_erased: int
    spans_erased: int
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class Citation(_Response):
    """A cited span of a v1 pack (also the evidence entries of a receipt)."""

    index: int
    artifact_id: str
    span_id: str
    start_offset: int
    end_offset: int
    content_hash: str
    source_type: ArtifactType
    relevance_score: float
    content_preview: str
    pinned: bool
    timestamp: Optional[str] = None
    """The artifact's time, RFC 3339 in UTC (None only in receipts stored before servers sent it)."""
    actor_id: Optional[str] = None
    """The artifact's actor; None when it has none."""
    session_id: Optional[str] = None
    """The artifact's session; None when it has none."""
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class ClaimRef(_Response):
    """One side of a conflict."""

    artifact_id: str
    span_id: str
    content_hash: str
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class Conflict(_Response):
    """A contradiction between two included spans; ``id`` is what ``resolve_conflict`` feedback names."""

    id: str
    claim_a: ClaimRef
    claim_b: ClaimRef
    description: str
    resolution: Optional[str]
    resolved_by: Optional[str]
    #: The older claim's span, which ``superseded_by`` (the newer claim's span, cited first) supersedes; ``None``
    #: when the two are equally new (an extension of the contract).
    superseded_span_id: Optional[str] = None
    superseded_by: Optional[str] = None
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class ContextPack(_Response):
    """``POST /v1/context-pack``: prompt-ready text with ``[cite:N]`` markers. Check ``abstain_flag``."""

    context_text: str
    prefix_text: str
    working_set_text: str
    citations: List[Citation]
    confidence: float
    abstain_flag: bool
    abstain_reason: Optional[str]
    receipt_id: str
    total_tokens: int
    pack_hash: str
    conflicts: List[Conflict]
    raw: Dict[str, Any] = _raw()

    def evidence_lines(self) -> Dict[int, str]:
        """The text of each cited span as the pack shows it, by citation number.

        Every evidence line of ``context_text`` is one line starting ``[cite:N] `` (the server flattens line
        breaks inside spans), in the pinned and top-evidence sections. A line's text starts with its head, the
        artifact's UTC date, time and speaker (``2026-10-13 14:30 Maya: ...``); ``loci_client.recall.span_text``
        takes it off.
        """
        out: Dict[int, str] = {}
        for line in (self.prefix_text + self.working_set_text).splitlines():
            if not line.startswith("[cite:"):
                continue
            end = line.find("] ")
            if end < 0:
                continue
            try:
                n = int(line[len("[cite:") : end])
            except ValueError:
                continue
            out[n] = line[end + 2 :]
        return out


@dataclass(frozen=True)
class Snippet(_Response):
    """A retrieved span of a v2 pack, with its full text."""

    content: str
    artifact_id: str
    span_id: str
    score: float
    artifact_type: ArtifactType
    start_offset: int
    end_offset: int
    citation: int
    timestamp: Optional[str] = None
    """The artifact's time, RFC 3339 in UTC."""
    actor_id: Optional[str] = None
    """The artifact's actor; None when it has none."""
    session_id: Optional[str] = None
    """The artifact's session; None when it has none."""
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class V2TokenAccounting(_Response):
    """Token accounting of a v2 pack."""

    budget: int
    used: int
    snippets: int
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class ContextPackV2(_Response):
    """``POST /v2/context-pack``: snippets with the profile that actually ran."""

    snippets: List[Snippet]
    pack_hash: str
    serving_profile: Profile
    token_accounting: V2TokenAccounting
    citation_count: int
    receipt_id: str
    confidence: float
    abstain_flag: bool
    assumptions: List[str]
    context_text: str = ""
    """The prompt-ready text with dated ``[cite:N]`` lines, as v1's (an extension of the contract's v2 pack)."""
    conflicts: List[Conflict] = field(default_factory=list)
    """Contradictions among the snippets, as v1's (an extension of the contract's v2 pack)."""
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class FeedbackResult(_Response):
    """``POST /v1/feedback``: the recorded event; ``applied`` counts the spans it changed or confirmed."""

    feedback_id: str
    action: FeedbackAction
    applied: int
    created_at: str
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class ReceiptSummary(_Response):
    """One entry of ``GET /v1/receipts``."""

    id: str
    query: str
    timestamp: str
    actor_id: str
    confidence: float
    abstain_flag: bool
    pack_hash: str
    total_tokens: int
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class ReceiptPage(_Response):
    """``GET /v1/receipts``: one page, newest first; ``total`` matching receipts in the workspace."""

    receipts: List[ReceiptSummary]
    total: int
    limit: int
    offset: int
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class ChannelContribution(_Response):
    """What one retrieval channel (lexical, semantic, temporal) contributed to a pack."""

    channel: str
    candidate_count: int
    selected_count: int
    weight: float
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class Exclusion(_Response):
    """A considered span left out of a pack, with its reason."""

    span_id: str
    artifact_id: str
    reason: ExclusionReason
    detail: str
    relevance_score: float
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class TokenAccounting(_Response):
    """Token accounting of a receipt."""

    budget: int
    prefix_tokens: int
    working_set_tokens: int
    total_used: int
    remaining: int
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class Receipt(_Response):
    """``GET /v1/receipts/{id}``: what a pack included and excluded and why."""

    id: str
    query: str
    timestamp: str
    workspace_id: str
    evidence: List[Citation]
    channel_contributions: List[ChannelContribution]
    exclusions: List[Exclusion]
    conflicts: List[Conflict]
    token_accounting: TokenAccounting
    confidence: float
    abstain_flag: bool
    abstain_reason: Optional[str]
    assumptions: List[str]
    policy_summary: Dict[str, Any]
    pack_hash: str
    actor_id: Optional[str] = None
    since: Optional[str] = None
    """The pack's since bound (RFC 3339, UTC); None when the request had none."""
    until: Optional[str] = None
    """The pack's until bound; None when the request had none."""
    query_windows: Optional[List[Dict[str, Any]]] = None
    """The times the query names (expression, start, end), resolved against as_of; None when it names none."""
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class WorkspaceErased(_Response):
    """``DELETE /v1/workspaces/{id}``: counts of what was erased."""

    workspace_id: str
    artifacts_erased: int
    spans_erased: int
    feedback_erased: int
    receipts_erased: int
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class WorkspaceSummary(_Response):
    """One entry of ``GET /v1/workspaces``."""

    workspace_id: str
    artifact_count: int
    span_count: int
    newest_artifact_at: Optional[str]
    data_version: int
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class WorkspaceList(_Response):
    """``GET /v1/workspaces``: the caller's workspaces that hold artifacts, by id."""

    workspaces: List[WorkspaceSummary]
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class ArtifactSummary(_Response):
    """One entry of an artifact listing (no payload: ``get_artifact`` has it)."""

    artifact_id: str
    workspace_id: str
    actor_id: str
    artifact_type: ArtifactType
    content_hash: str
    timestamp: str
    created: str
    idempotency_key: Optional[str]
    session_id: Optional[str]
    thread_id: Optional[str]
    metadata: Dict[str, str]
    preview: str = ""
    """The first 160 code points of its first span (a chat turn's begins with its speaker)."""
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class ArtifactPage(_Response):
    """``GET /v1/workspaces/{id}/artifacts``: one page, newest first; ``next_cursor`` None on the last page."""

    workspace_id: str
    artifacts: List[ArtifactSummary]
    limit: int
    next_cursor: Optional[str]
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class WorkspaceSettings(_Response):
    """``GET``/``PUT /v1/workspaces/{id}/settings``: ``retention_days`` None when none is set."""

    workspace_id: str
    retention_days: Optional[int]
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class Plan(_Response):
    """A plan of the catalogue; ``workspaces`` None means unlimited."""

    name: PlanName
    rpm: int
    v2: bool
    workspaces: Optional[int]
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class PlanList(_Response):
    """``GET /v1/billing/plans``."""

    plans: List[Plan]
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class TenantInfo(_Response):
    """A tenant as ``GET /v1/tenants`` lists it (admin key only)."""

    tenant_id: str
    email: Optional[str]
    plan: str
    workspaces: List[WorkspaceSummary]
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class TenantList(_Response):
    """``GET /v1/tenants`` (admin key only): every tenant with its plan and workspaces."""

    tenants: List[TenantInfo]
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class TenantPlan(_Response):
    """``GET``/``PUT /v1/billing/plan``: a tenant's plan, its limits and the workspaces in use."""

    tenant_id: str
    plan: PlanName
    rpm: int
    v2: bool
    workspaces: Optional[int]
    workspaces_used: int
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class Usage(_Response):
    """``GET /v1/billing/usage``: exact counts of one tenant in one month; ``requests`` by endpoint."""

    tenant_id: str
    period: str
    requests: Dict[str, int]
    artifacts_ingested: int
    raw_bytes_stored: int
    context_packs: int
    tokens_packed: int
    rate_limited: int
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class BatchIngested(_Response):
    """One stored item of a v2 batch, in request order."""

    artifact_id: str
    span_ids: List[str]
    created: str
    content_hash: str
    idempotent_replay: bool
    embedding: EmbeddingState
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class BatchIngestResult(_Response):
    """``POST /v2/ingest`` (synchronous): one entry per item, in request order."""

    workspace_id: str
    ingested: List[BatchIngested]
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class QueuedJob(_Response):
    """One queued indexing job of an asynchronous v2 batch."""

    job_id: str
    status: JobStatus
    idempotency_key: Optional[str] = None
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class BatchQueued(_Response):
    """``POST /v2/ingest`` with ``async_index`` (202): one job per item, in request order."""

    workspace_id: str
    queued_jobs: List[QueuedJob]
    raw: Dict[str, Any] = _raw()


@dataclass(frozen=True)
class Job(_Response):
    """``GET /v2/jobs/{id}``: ``artifact_id`` is set once the job is done, ``error_message`` when it failed."""

    job_id: str
    workspace_id: str
    status: JobStatus
    created_at: str
    updated_at: str
    error_message: Optional[str]
    artifact_id: Optional[str] = None
    raw: Dict[str, Any] = _raw()

    @property
    def finished(self) -> bool:
        """Whether the job reached ``done`` or ``failed``."""
        return self.status in ("done", "failed")
