"""The Business API client (`/api/v3`): every request signed with an API key and secret."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any, Literal

import httpx

from ._client import AsyncCore, Core, Prepared, SyncCore
from ._generated import v3_types as types
from ._generated.v3_operations import AsyncOperations, Operations
from .retry import RetryPolicy
from .signing import new_nonce, signed_headers

#: Order statuses after which nothing more happens to an order.
TERMINAL_STATUSES = frozenset({"completed", "refunded", "failed"})

#: What `wait_for_order` waits for: `completed`, any terminal status, or one status by name
#: (such as `emergency`); it also stops at a terminal status it was not waiting for.
Until = Literal["completed", "terminal"] | str


class OrderWaitTimeout(TimeoutError):
    """`wait_for_order` ran out of time; `order` is the last state it read."""

    def __init__(self, order: types.GetOrderData) -> None:
        super().__init__(f"order {order['orderId']} is still {order['status']}")
        self.order = order


class _Signing(Core):
    def __init__(
        self,
        base_url: str,
        *,
        api_key: str,
        api_secret: str,
        clock_offset: float = 0.0,
        **options: Any,
    ) -> None:
        super().__init__(base_url, **options)
        if not api_key or not api_secret:
            raise ValueError("api_key and api_secret are required (swapd keys create prints both)")
        self.api_key = api_key
        self._api_secret = api_secret
        #: Seconds added to the local clock when signing, for hosts whose clock drifts.
        self.clock_offset = clock_offset

    def attempt_headers(self, prepared: Prepared) -> dict[str, str]:
        # Every attempt is signed afresh: the server refuses a nonce it has seen.
        timestamp = int(time.time() + self.clock_offset)
        auth = signed_headers(
            self.api_key,
            self._api_secret,
            prepared.operation.method,
            prepared.path,
            prepared.query,
            prepared.body,
            timestamp,
            new_nonce(),
        )
        return {**super().attempt_headers(prepared), **auth}

    def _offset_from(self, readiness: types.ReadinessData, sent_at: float, received_at: float) -> float:
        return readiness["serverTime"] - (sent_at + received_at) / 2


def _done(order: types.GetOrderData, until: Until) -> bool:
    return order["status"] == until or order["status"] in TERMINAL_STATUSES


class BusinessApiClient(_Signing, SyncCore, Operations):
    """The Business API, blocking. One method per operation of openapi/v3.json.

    >>> client = BusinessApiClient(base_url="http://127.0.0.1:8080", api_key="key_…", api_secret="sec_…")
    >>> routes = client.discover_routes({"fromCcy": "BTC", "toCcy": "ETH", "amount": "0.1"})
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        api_secret: str,
        *,
        clock_offset: float = 0.0,
        retry: RetryPolicy | None = None,
        timeout: float = 30.0,
        headers: Mapping[str, str] | None = None,
        http: httpx.Client | None = None,
    ) -> None:
        super().__init__(
            base_url,
            api_key=api_key,
            api_secret=api_secret,
            clock_offset=clock_offset,
            retry=retry,
            timeout=timeout,
            headers=headers,
            http=http,
        )

    def sync_clock(self) -> float:
        """Sets `clock_offset` from the server's time (the readiness document) and returns it."""
        sent_at = time.time()
        readiness = self.readiness()
        self.clock_offset = self._offset_from(readiness, sent_at, time.time())
        return self.clock_offset

    def wait_for_order(
        self, order_id: str, *, until: Until = "terminal", timeout: float = 120.0, poll: float = 0.5
    ) -> types.GetOrderData:
        """Reads the order until it is completed (or in any terminal status), backing off from
        `poll` seconds to 5; raises OrderWaitTimeout with the last state after `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            order = self.get_order(order_id)
            if _done(order, until):
                return order
            if time.monotonic() + poll > deadline:
                raise OrderWaitTimeout(order)
            time.sleep(poll)
            poll = min(poll * 1.5, 5.0)


class AsyncBusinessApiClient(_Signing, AsyncCore, AsyncOperations):
    """The Business API, awaited: the same methods as BusinessApiClient."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        api_secret: str,
        *,
        clock_offset: float = 0.0,
        retry: RetryPolicy | None = None,
        timeout: float = 30.0,
        headers: Mapping[str, str] | None = None,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(
            base_url,
            api_key=api_key,
            api_secret=api_secret,
            clock_offset=clock_offset,
            retry=retry,
            timeout=timeout,
            headers=headers,
            http=http,
        )

    async def sync_clock(self) -> float:
        sent_at = time.time()
        readiness = await self.readiness()
        self.clock_offset = self._offset_from(readiness, sent_at, time.time())
        return self.clock_offset

    async def wait_for_order(
        self, order_id: str, *, until: Until = "terminal", timeout: float = 120.0, poll: float = 0.5
    ) -> types.GetOrderData:
        deadline = time.monotonic() + timeout
        while True:
            order = await self.get_order(order_id)
            if _done(order, until):
                return order
            if time.monotonic() + poll > deadline:
                raise OrderWaitTimeout(order)
            await asyncio.sleep(poll)
            poll = min(poll * 1.5, 5.0)
