"""Rate limits against the real server: 429 with Retry-After, retries exhausted, and a retry that succeeds.

The smallest plan is free, 30 requests per 60 s sliding window (the window is not a server setting), so the
session fills this tenant's window as it starts (conftest.free_tenant) and these tests run last: the retry
that waits for a free slot waits only the rest of that minute.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, List, Tuple

import pytest

from loci_client import Client, RateLimited, RetryPolicy

from .conftest import FreeTenant, Server, fill_window

pytestmark = pytest.mark.last


def test_registration_limit_retry_succeeds(server: Server) -> None:
    """Open registration is limited to 2 per 3 s here: a POST refused with 429 is resent once a slot frees.

    Register is not idempotent, yet resending after a 429 is safe: the server refused it before doing anything.
    """
    waits: List[Tuple[int, float, Any]] = []
    with Client(server.url, "", retry=RetryPolicy(max_retries=0)) as once:
        for _ in range(2):
            try:
                once.register(f"{uuid.uuid4().hex[:8]}@example.test")
            except RateLimited:
                pass  # an earlier test left the window full: fine, it is full now
        with pytest.raises(RateLimited) as exc:
            once.register(f"{uuid.uuid4().hex[:8]}@example.test")
        assert exc.value.status == 429 and exc.value.retry_after is not None and 1 <= exc.value.retry_after <= 3
    with Client(server.url, "", on_retry=lambda n, d, e: waits.append((n, d, e))) as patient:
        start = time.monotonic()
        reg = patient.register(f"{uuid.uuid4().hex[:8]}@example.test")
        assert reg.plan == "free" and reg.api_key.startswith("lk_")
        assert waits and isinstance(waits[0][2], RateLimited) and waits[0][1] >= waits[0][2].retry_after
        assert time.monotonic() - start >= waits[0][2].retry_after


def test_plan_limit_retries_exhausted(free_tenant: FreeTenant, admin: Client) -> None:
    c = free_tenant.client
    fill_window(c)
    slept: List[float] = []
    # The waits are recorded, not slept: the server answers 429 to every attempt within the minute.
    quick = Client(c.base_url, c.api_key, retry=RetryPolicy(max_retries=2), sleep=slept.append)
    with pytest.raises(RateLimited) as exc:
        quick.get_plan()
    quick.close()
    err = exc.value
    assert err.status == 429 and err.attempts == 3 and "rate" in err.detail.lower()
    assert err.retry_after is not None and 1 <= err.retry_after <= 60
    assert len(slept) == 2 and all(s >= err.retry_after for s in slept)
    assert err.headers["x-ratelimit-limit"] == "30" and err.headers["x-ratelimit-remaining"] == "0"
    # A Retry-After above max_retry_after is not waited for.
    impatient = Client(c.base_url, c.api_key, retry=RetryPolicy(max_retries=5, max_retry_after=0.5), sleep=slept.append)
    with pytest.raises(RateLimited) as exc2:
        impatient.list_keys()
    impatient.close()
    assert exc2.value.attempts == 1 and len(slept) == 2
    usage = admin.usage(tenant_id=free_tenant.registration.tenant_id)
    assert usage.rate_limited >= 4


def test_plan_limit_retry_succeeds_when_the_window_allows(free_tenant: FreeTenant) -> None:
    c = free_tenant.client
    fill_window(c)
    waits: List[Tuple[int, float, Any]] = []
    patient = Client(c.base_url, c.api_key, retry=RetryPolicy(max_retries=3, max_retry_after=61),
                     on_retry=lambda n, d, e: waits.append((n, d, e)))
    start = time.monotonic()
    plan = patient.get_plan()
    patient.close()
    assert plan.plan == "free" and plan.tenant_id == free_tenant.registration.tenant_id
    assert waits and isinstance(waits[0][2], RateLimited)
    assert time.monotonic() - start >= waits[0][2].retry_after  # type: ignore[operator]
