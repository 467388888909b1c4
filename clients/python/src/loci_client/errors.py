"""Exceptions of the Loci client: one class per HTTP error status the API documents, all under ``LociError``.

Every error answer of the server is ``{"detail": "..."}`` (the detail names the offending field of a bad
request); the exception carries it with the status, the request id (``X-Request-ID``, to find the server's log
line) and the response headers. Transport failures (connection refused, timeouts) are ``LociConnectionError``
with status 0.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Type


class LociError(Exception):
    """Base of every error the client raises. ``status`` is the HTTP status (0 for transport failures)."""

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        request_id: Optional[str] = None,
        headers: Optional[Mapping[str, str]] = None,
        body: Any = None,
        attempts: int = 1,
    ) -> None:
        super().__init__(f"{status}: {detail}" if status else detail)
        self.status = status
        self.detail = detail
        self.request_id = request_id
        self.headers: Dict[str, str] = {k.lower(): v for k, v in (headers or {}).items()}
        self.body = body
        #: How many times the request was sent before this error was raised (retries included).
        self.attempts = attempts

    @property
    def retry_after(self) -> Optional[float]:
        """The server's ``Retry-After`` in seconds, when it sent one."""
        value = self.headers.get("retry-after")
        if value is None:
            return None
        try:
            return float(value)
        except ValueError:
            return None


class BadRequest(LociError):
    """400: invalid input; ``detail`` names the field by its path (``artifacts[3].metdata: unknown field; ...``)."""


class Unauthorized(LociError):
    """401: missing or invalid API key."""


class Forbidden(LociError):
    """403: the key may not do this (admin-only route, v2 on plan free, a workspace beyond the plan's count)."""


class NotFound(LociError):
    """404: no such resource for the caller's tenant (another tenant's ids are reported as not found)."""


class MethodNotAllowed(LociError):
    """405: the path exists with another method."""


class Conflict(LociError):
    """409: an idempotency_key already names another artifact, a tenant's last key, an unfinished job's artifact."""


class PayloadTooLarge(LociError):
    """413: the body exceeds the server's MAX_REQUEST_SIZE_BYTES."""


class RateLimited(LociError):
    """429: the tenant's plan rate (or its backlog of indexing jobs) is exceeded; see ``retry_after``."""


class InternalServerError(LociError):
    """500: the server failed; ``request_id`` finds its log line."""


class ServiceUnavailable(LociError):
    """503: the server is starting (recovering its data), degraded, or shedding a context pack under load."""

    @property
    def reason(self) -> Optional[str]:
        """``starting`` or ``degraded`` when the body says so (the health route's ``status``)."""
        if isinstance(self.body, Mapping):
            status = self.body.get("status")
            if isinstance(status, str):
                return status
        return None


class InsufficientStorage(LociError):
    """507: the server's disk is full; nothing was stored and the same request may be retried later."""


class LociConnectionError(LociError):
    """The request did not complete: the server could not be reached or the connection failed (status 0)."""


class LociTimeout(LociConnectionError):
    """The request timed out (status 0)."""


class DecodeError(LociError):
    """The server's answer is not the JSON the API documents."""


_BY_STATUS: Dict[int, Type[LociError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    413: PayloadTooLarge,
    429: RateLimited,
    500: InternalServerError,
    503: ServiceUnavailable,
    507: InsufficientStorage,
}


def error_for_status(
    status: int, body: Any, headers: Mapping[str, str], *, attempts: int = 1
) -> LociError:
    """Builds the exception of an error response from its status, decoded body (or text) and headers."""
    if isinstance(body, Mapping) and isinstance(body.get("detail"), str):
        detail = body["detail"]
    elif isinstance(body, Mapping) and isinstance(body.get("reason"), str):
        detail = body["reason"]  # GET /health's 503 body: {"status": "starting", "reason": ...}
    elif isinstance(body, str) and body:
        detail = body
    else:
        detail = f"HTTP {status}"
    request_id = None
    for k, v in headers.items():
        if k.lower() == "x-request-id":
            request_id = v
    if request_id is None and isinstance(body, Mapping) and isinstance(body.get("request_id"), str):
        request_id = body["request_id"]
    cls = _BY_STATUS.get(status, LociError)
    return cls(status, detail, request_id=request_id, headers=headers, body=body, attempts=attempts)
