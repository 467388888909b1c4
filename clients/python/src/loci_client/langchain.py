"""LangChain adapters (extra ``[langchain]``): a retriever over context packs and a chat history in a workspace.

``LociRetriever`` returns one ``Document`` per cited span of the pack for the query, with the span's ids, score,
citation number, and the pack's receipt id, confidence and abstain flag in ``metadata``.

``LociChatMessageHistory`` stores each message as a ``chat_turn`` artifact of one session of a workspace
(``raw_payload`` ``{"role", "content", "langchain"}``: role and content are what Loci indexes, ``langchain`` the
serialised message, so it reads back exactly) and reads them back oldest first from the artifact listing. Each
message is sent with its own idempotency key, so a retried ingest never stores it twice.
"""

from __future__ import annotations

import uuid
from typing import Any, Dict, List, Optional, Sequence

try:
    from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
    from langchain_core.chat_history import BaseChatMessageHistory
    from langchain_core.documents import Document
    from langchain_core.messages import BaseMessage, HumanMessage, message_to_dict, messages_from_dict
    from langchain_core.retrievers import BaseRetriever
except ImportError as exc:  # pragma: no cover
    raise ImportError("loci_client.langchain needs langchain-core: pip install 'loci-client[langchain]'") from exc

from pydantic import ConfigDict

from . import models as m
from .async_client import AsyncClient
from .client import Client
from .recall import ApiVersion, Recall, RecallSettings, arecall, recall

__all__ = ["LociChatMessageHistory", "LociRetriever"]


class LociRetriever(BaseRetriever):
    """Documents for the cited spans of a Loci context pack.

    Give ``client`` (sync), ``async_client``, or both; ``ainvoke`` uses ``async_client`` when set. With
    ``api_version="v2"`` (plans pro and up) documents hold each snippet's full text and ``profile`` applies;
    ``"v1"`` works on every plan. ``metadata_filter`` keeps artifacts holding every given metadata pair;
    ``since`` and ``until`` (ISO 8601, inclusive) keep artifacts of that time. A document's metadata carries its
    span's ``timestamp``, ``actor_id`` and ``session_id`` (None when the artifact has none). When
    the pack abstains its spans are still returned, marked ``abstain`` True, unless ``include_abstained`` is
    False (then no documents).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: Optional[Client] = None
    async_client: Optional[AsyncClient] = None
    workspace_id: str
    api_version: ApiVersion = "v2"
    max_tokens: int = 2048
    profile: Optional[m.Profile] = None
    actor_id: Optional[str] = None
    session_id: Optional[str] = None
    metadata_filter: Optional[Dict[str, str]] = None
    policy: Optional[Dict[str, Any]] = None
    since: Optional[str] = None
    until: Optional[str] = None
    include_abstained: bool = True

    def _settings(self) -> RecallSettings:
        return RecallSettings(
            workspace_id=self.workspace_id,
            api_version=self.api_version,
            max_tokens=self.max_tokens,
            profile=self.profile,
            actor_id=self.actor_id,
            session_id=self.session_id,
            metadata_filter=self.metadata_filter,
            policy=self.policy,
            since=self.since,
            until=self.until,
        )

    def _documents(self, r: Recall) -> List[Document]:
        if r.abstain and not self.include_abstained:
            return []
        return [Document(page_content=ev.text, metadata=r.metadata(ev), id=ev.span_id) for ev in r.evidence]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> List[Document]:
        if self.client is None:
            raise ValueError("LociRetriever has no sync client: pass client=, or call it with ainvoke")
        return self._documents(recall(self.client, self._settings(), query))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> List[Document]:
        if self.async_client is None:
            return await super()._aget_relevant_documents(query, run_manager=run_manager)
        return self._documents(await arecall(self.async_client, self._settings(), query))


_ROLE_OF_TYPE = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "tool"}


def _text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    parts: List[str] = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append(part["text"])
    return " ".join(parts)


def _payload(message: BaseMessage) -> Dict[str, Any]:
    return {
        "role": _ROLE_OF_TYPE.get(message.type, message.type),
        "content": _text(message),
        "langchain": message_to_dict(message),
    }


def _message(payload: Any) -> Optional[BaseMessage]:
    """The message of a stored chat_turn: the serialised one when present, else one from role and content."""
    if isinstance(payload, dict) and isinstance(payload.get("langchain"), dict):
        return messages_from_dict([payload["langchain"]])[0]
    if isinstance(payload, dict) and isinstance(payload.get("content"), str):
        from langchain_core.messages import AIMessage, SystemMessage

        role = payload.get("role")
        if role == "assistant":
            return AIMessage(content=payload["content"])
        if role == "system":
            return SystemMessage(content=payload["content"])
        return HumanMessage(content=payload["content"])
    if isinstance(payload, str):
        return HumanMessage(content=payload)
    return None


class LociChatMessageHistory(BaseChatMessageHistory):
    """The messages of one session (``session_id``) of a Loci workspace, as chat_turn artifacts.

    Reading lists the session's chat turns and fetches each one's payload (one request per message: keep
    sessions to what a prompt holds, or page with the client for archives). ``clear`` erases the session's chat
    turns. Give ``client``, ``async_client`` or both; the ``a*`` methods use ``async_client`` when set.
    """

    def __init__(
        self,
        workspace_id: str,
        session_id: str,
        *,
        client: Optional[Client] = None,
        async_client: Optional[AsyncClient] = None,
        actor_id: str = "langchain",
        thread_id: Optional[str] = None,
    ) -> None:
        if client is None and async_client is None:
            raise ValueError("LociChatMessageHistory needs client= or async_client=")
        self.workspace_id = workspace_id
        self.session_id = session_id
        self.client = client
        self.async_client = async_client
        self.actor_id = actor_id
        self.thread_id = thread_id

    def _sync(self) -> Client:
        if self.client is None:
            raise ValueError("LociChatMessageHistory has no sync client: use the a* methods, or pass client=")
        return self.client

    def _key(self) -> str:
        return f"lc:{self.session_id}:{uuid.uuid4().hex}"

    @property
    def messages(self) -> List[BaseMessage]:  # type: ignore[override]
        c = self._sync()
        ids = [
            a.artifact_id
            for a in c.iter_artifacts(self.workspace_id, session_id=self.session_id, artifact_type="chat_turn")
        ]
        out: List[BaseMessage] = []
        for artifact_id in reversed(ids):  # the listing is newest first
            msg = _message(c.get_artifact(artifact_id).raw_payload)
            if msg is not None:
                out.append(msg)
        return out

    async def aget_messages(self) -> List[BaseMessage]:
        if self.async_client is None:
            return await super().aget_messages()
        ac = self.async_client
        ids = [
            a.artifact_id
            async for a in ac.iter_artifacts(self.workspace_id, session_id=self.session_id, artifact_type="chat_turn")
        ]
        out: List[BaseMessage] = []
        for artifact_id in reversed(ids):
            msg = _message((await ac.get_artifact(artifact_id)).raw_payload)
            if msg is not None:
                out.append(msg)
        return out

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        c = self._sync()
        for message in messages:
            c.ingest(
                self.workspace_id,
                self.actor_id,
                "chat_turn",
                _payload(message),
                session_id=self.session_id,
                thread_id=self.thread_id,
                idempotency_key=self._key(),
            )

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        if self.async_client is None:
            return await super().aadd_messages(messages)
        for message in messages:
            await self.async_client.ingest(
                self.workspace_id,
                self.actor_id,
                "chat_turn",
                _payload(message),
                session_id=self.session_id,
                thread_id=self.thread_id,
                idempotency_key=self._key(),
            )

    def clear(self) -> None:
        c = self._sync()
        ids = [
            a.artifact_id
            for a in c.iter_artifacts(self.workspace_id, session_id=self.session_id, artifact_type="chat_turn")
        ]
        for artifact_id in ids:
            c.erase_artifact(artifact_id)

    async def aclear(self) -> None:
        if self.async_client is None:
            return await super().aclear()
        ac = self.async_client
        ids = [
            a.artifact_id
            async for a in ac.iter_artifacts(self.workspace_id, session_id=self.session_id, artifact_type="chat_turn")
        ]
        for artifact_id in ids:
            await ac.erase_artifact(artifact_id)
