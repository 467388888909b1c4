"""LlamaIndex adapter (extra ``[llama-index]``): a retriever over Loci context packs.

``LociRetriever.retrieve(query)`` returns one ``NodeWithScore`` per cited span of the pack: a ``TextNode`` whose
id is the span id, whose source relationship is the artifact, and whose metadata holds the span's ids, score,
citation number and the pack's receipt id, confidence and abstain flag. Those keys are excluded from the text
LlamaIndex shows the model and embeds, so the node reads as the span alone.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

try:
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.schema import NodeRelationship, NodeWithScore, QueryBundle, RelatedNodeInfo, TextNode
except ImportError as exc:  # pragma: no cover
    raise ImportError("loci_client.llama_index needs llama-index-core: pip install 'loci-client[llama-index]'") from exc

from . import models as m
from .async_client import AsyncClient
from .client import Client
from .recall import ApiVersion, Recall, RecallSettings, arecall, recall

__all__ = ["LociRetriever"]


class LociRetriever(BaseRetriever):
    """Nodes for the cited spans of a Loci context pack.

    Give ``client`` (sync), ``async_client``, or both; ``aretrieve`` uses ``async_client`` when set. With
    ``api_version="v2"`` (plans pro and up) nodes hold each snippet's full text and ``profile`` applies;
    ``"v1"`` works on every plan. ``since`` and ``until`` (ISO 8601, inclusive) keep artifacts of that time; a
    node's metadata carries its span's ``timestamp``, ``actor_id`` and ``session_id`` (None when the artifact has
    none). When the pack abstains its spans are still returned (metadata ``abstain``
    True) unless ``include_abstained`` is False. ``last_recall`` keeps the latest pack's verdict.
    """

    def __init__(
        self,
        workspace_id: str,
        *,
        client: Optional[Client] = None,
        async_client: Optional[AsyncClient] = None,
        api_version: ApiVersion = "v2",
        max_tokens: int = 2048,
        profile: Optional[m.Profile] = None,
        actor_id: Optional[str] = None,
        session_id: Optional[str] = None,
        metadata_filter: Optional[Dict[str, str]] = None,
        policy: Optional[Dict[str, Any]] = None,
        since: Optional[m.Timestamp] = None,
        until: Optional[m.Timestamp] = None,
        include_abstained: bool = True,
        callback_manager: Optional[CallbackManager] = None,
        verbose: bool = False,
    ) -> None:
        if client is None and async_client is None:
            raise ValueError("LociRetriever needs client= or async_client=")
        self.client = client
        self.async_client = async_client
        self.settings = RecallSettings(
            workspace_id=workspace_id,
            api_version=api_version,
            max_tokens=max_tokens,
            profile=profile,
            actor_id=actor_id,
            session_id=session_id,
            metadata_filter=metadata_filter,
            policy=policy,
            since=since,
            until=until,
        )
        self.include_abstained = include_abstained
        self.last_recall: Optional[Recall] = None
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def _nodes(self, r: Recall) -> List[NodeWithScore]:
        self.last_recall = r
        if r.abstain and not self.include_abstained:
            return []
        out: List[NodeWithScore] = []
        for ev in r.evidence:
            meta = r.metadata(ev)
            node = TextNode(
                id_=ev.span_id,
                text=ev.text,
                metadata=meta,
                excluded_llm_metadata_keys=list(meta),
                excluded_embed_metadata_keys=list(meta),
                relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=ev.artifact_id)},
            )
            out.append(NodeWithScore(node=node, score=ev.score))
        return out

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        if self.client is None:
            raise ValueError("LociRetriever has no sync client: pass client=, or call aretrieve")
        return self._nodes(recall(self.client, self.settings, query_bundle.query_str))

    async def _aretrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        if self.async_client is None:
            return self._retrieve(query_bundle)
        return self._nodes(await arecall(self.async_client, self.settings, query_bundle.query_str))
