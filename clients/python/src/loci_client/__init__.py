"""Official Python client of Loci, the memory service for AI agents.

``Client`` and ``AsyncClient`` cover every route of the HTTP API (docs/openapi.yaml) with typed models
(``loci_client.models``) and exceptions (``loci_client.errors``). Adapters: ``loci_client.langchain`` (extra
``[langchain]``) and ``loci_client.llama_index`` (extra ``[llama-index]``).
"""

from ._core import RetryPolicy
from ._version import __version__
from .async_client import AsyncClient
from .client import Client
from .errors import (
    BadRequest,
    Conflict,
    DecodeError,
    Forbidden,
    InsufficientStorage,
    InternalServerError,
    LociConnectionError,
    LociError,
    LociTimeout,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    ServiceUnavailable,
    Unauthorized,
)
from .models import ArtifactInput, Permissions, Policy

__all__ = [
    "AsyncClient",
    "ArtifactInput",
    "BadRequest",
    "Client",
    "Conflict",
    "DecodeError",
    "Forbidden",
    "InsufficientStorage",
    "InternalServerError",
    "LociConnectionError",
    "LociError",
    "LociTimeout",
    "MethodNotAllowed",
    "NotFound",
    "PayloadTooLarge",
    "Permissions",
    "Policy",
    "RateLimited",
    "RetryPolicy",
    "ServiceUnavailable",
    "Unauthorized",
    "__version__",
]
