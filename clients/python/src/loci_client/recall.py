"""A context pack as a list of cited spans: what the LangChain and LlamaIndex adapters turn into their documents.

A v2 pack carries each snippet's full text. A v1 pack (every plan, free included) carries 160-character previews
in its citations, so the text of each cited span is taken from its ``[cite:N]`` line of ``context_text``: the
server writes every evidence line as exactly one line (line breaks inside spans are flattened), so the split is
exact. The line starts with its head, the artifact's date, time and speaker (``2026-10-13 14:30 Maya: ``), which is
taken off (``span_text``): a document's text is the span's, and its date and speaker are in its metadata
(``timestamp``, ``actor_id``, ``session_id``), as for a v2 snippet.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Literal, Mapping, Optional, Union

from . import models as m

if TYPE_CHECKING:  # pragma: no cover
    from .async_client import AsyncClient
    from .client import Client

ApiVersion = Literal["v1", "v2"]


@dataclass(frozen=True)
class Evidence:
    """One cited span of a pack."""

    text: str
    artifact_id: str
    span_id: str
    score: float
    citation: int
    artifact_type: str
    start_offset: int
    end_offset: int
    pinned: Optional[bool] = None
    timestamp: Optional[str] = None
    actor_id: Optional[str] = None
    session_id: Optional[str] = None


@dataclass(frozen=True)
class Recall:
    """A pack's cited spans, in the server's order (v1: citation order; v2: most relevant first), with what the pack says about them as a whole."""

    workspace_id: str
    evidence: List[Evidence]
    receipt_id: str
    pack_hash: str
    confidence: float
    abstain: bool
    abstain_reason: Optional[str] = None
    serving_profile: Optional[str] = None
    context_text: Optional[str] = None

    def metadata(self, ev: Evidence) -> Dict[str, Any]:
        """The metadata a framework document of ``ev`` carries: ids, score, citation, and the pack's verdict."""
        meta: Dict[str, Any] = {
            "workspace_id": self.workspace_id,
            "artifact_id": ev.artifact_id,
            "span_id": ev.span_id,
            "artifact_type": ev.artifact_type,
            "score": ev.score,
            "citation": ev.citation,
            "start_offset": ev.start_offset,
            "end_offset": ev.end_offset,
            "timestamp": ev.timestamp,
            "actor_id": ev.actor_id,
            "session_id": ev.session_id,
            "receipt_id": self.receipt_id,
            "pack_hash": self.pack_hash,
            "confidence": self.confidence,
            "abstain": self.abstain,
        }
        if ev.pinned is not None:
            meta["pinned"] = ev.pinned
        if self.abstain_reason is not None:
            meta["abstain_reason"] = self.abstain_reason
        if self.serving_profile is not None:
            meta["serving_profile"] = self.serving_profile
        return meta


# The date and optional time that start an evidence line's head.
_HEAD_TIME = re.compile(r"\d{4,}-\d{2}-\d{2}(?: \d{2}:\d{2})? ")


def span_text(line: str, c: m.Citation) -> str:
    """The span text of evidence line ``line`` (after its ``[cite:N] ``) of citation ``c``: the line without its head.

    The head is the date (and time) and, except on the first span of a chat turn, whose text starts with its
    speaker, the artifact's actor (or its type when it has none) and ``": "``.
    """
    t = _HEAD_TIME.match(line)
    if t is None:
        return line
    rest = line[t.end() :]
    if c.source_type == "chat_turn" and c.start_offset == 0:
        return rest
    who = (c.actor_id or c.source_type) + ": "
    return rest[len(who) :] if rest.startswith(who) else rest


def from_v1(workspace_id: str, pack: m.ContextPack) -> Recall:
    lines = pack.evidence_lines()
    evidence = [
        Evidence(
            text=span_text(lines[c.index], c) if c.index in lines else c.content_preview,
            artifact_id=c.artifact_id,
            span_id=c.span_id,
            score=c.relevance_score,
            citation=c.index,
            artifact_type=c.source_type,
            start_offset=c.start_offset,
            end_offset=c.end_offset,
            pinned=c.pinned,
            timestamp=c.timestamp,
            actor_id=c.actor_id,
            session_id=c.session_id,
        )
        for c in pack.citations
    ]
    return Recall(
        workspace_id=workspace_id,
        evidence=evidence,
        receipt_id=pack.receipt_id,
        pack_hash=pack.pack_hash,
        confidence=pack.confidence,
        abstain=pack.abstain_flag,
        abstain_reason=pack.abstain_reason,
        context_text=pack.context_text,
    )


def from_v2(workspace_id: str, pack: m.ContextPackV2) -> Recall:
    evidence = [
        Evidence(
            text=s.content,
            artifact_id=s.artifact_id,
            span_id=s.span_id,
            score=s.score,
            citation=s.citation,
            artifact_type=s.artifact_type,
            start_offset=s.start_offset,
            end_offset=s.end_offset,
            timestamp=s.timestamp,
            actor_id=s.actor_id,
            session_id=s.session_id,
        )
        for s in pack.snippets
    ]
    return Recall(
        workspace_id=workspace_id,
        evidence=evidence,
        receipt_id=pack.receipt_id,
        pack_hash=pack.pack_hash,
        confidence=pack.confidence,
        abstain=pack.abstain_flag,
        serving_profile=pack.serving_profile,
        context_text=pack.context_text or None,
    )


@dataclass
class RecallSettings:
    """How an adapter asks for its pack. ``api_version`` v2 (plans pro and up) gives full snippets and
    ``profile``; v1 works on every plan."""

    workspace_id: str
    api_version: ApiVersion = "v2"
    max_tokens: int = 2048
    profile: Optional[m.Profile] = None
    actor_id: Optional[str] = None
    session_id: Optional[str] = None
    metadata_filter: Optional[Dict[str, str]] = None
    policy: Union[m.Policy, Mapping[str, Any], None] = None
    since: Optional[m.Timestamp] = None
    until: Optional[m.Timestamp] = None

    def _kwargs(self) -> Dict[str, Any]:
        kw: Dict[str, Any] = dict(
            actor_id=self.actor_id,
            session_id=self.session_id,
            metadata=self.metadata_filter,
            policy=self.policy,
            since=self.since,
            until=self.until,
        )
        if self.api_version == "v2":
            kw["profile"] = self.profile
        elif self.profile is not None:
            raise ValueError("profile needs api_version v2")
        return kw


def recall(client: "Client", settings: RecallSettings, query: str) -> Recall:
    """Asks ``client`` for the pack of ``query`` and returns its cited spans."""
    if settings.api_version == "v2":
        pack2 = client.context_pack_v2(settings.workspace_id, query, settings.max_tokens, **settings._kwargs())
        return from_v2(settings.workspace_id, pack2)
    pack = client.context_pack(settings.workspace_id, query, settings.max_tokens, **settings._kwargs())
    return from_v1(settings.workspace_id, pack)


async def arecall(client: "AsyncClient", settings: RecallSettings, query: str) -> Recall:
    """``recall`` with the async client."""
    if settings.api_version == "v2":
        pack2 = await client.context_pack_v2(settings.workspace_id, query, settings.max_tokens, **settings._kwargs())
        return from_v2(settings.workspace_id, pack2)
    pack = await client.context_pack(settings.workspace_id, query, settings.max_tokens, **settings._kwargs())
    return from_v1(settings.workspace_id, pack)
