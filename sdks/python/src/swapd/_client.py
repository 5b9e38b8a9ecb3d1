"""What every client shares: building a request from an operation, sending it with retries,
and reading the envelope. Sync and async clients differ only in how they send and sleep."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
from typing_extensions import Self

from ._operation import Operation
from .errors import ApiError, SwapdError, TransportError, UnexpectedResponse
from .retry import RetryPolicy
from .signing import canonical_json, canonical_query, encode, new_idempotency_key, query_pairs

__version__ = "0.1.0"
USER_AGENT = f"swapd-python/{__version__}"


@dataclass
class Prepared:
    """One call's request, the same bytes on every attempt but for what an attempt adds."""

    operation: Operation
    path: str
    query: str
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float | None = None
    #: x402: whether this call has paid (its retries then repeat the same payment).
    paid: bool = False

    @property
    def replay_safe(self) -> bool:
        return self.operation.method == "GET" or "Idempotency-Key" in self.headers

    def url(self, base_url: str) -> str:
        return f"{base_url}{self.path}" + (f"?{self.query}" if self.query else "")


def prepare(
    operation: Operation,
    path_values: Sequence[str],
    *,
    query: Mapping[str, Any] | None = None,
    body: Any = None,
    idempotency_key: str | None = None,
    timeout: float | None = None,
    headers: Mapping[str, str] | None = None,
) -> Prepared:
    """The request of one call: path parameters encoded into the path, the query in canonical
    form, the body as compact sorted-key JSON, and one Idempotency-Key kept across retries."""
    path = operation.path
    for name, value in zip(operation.path_params, path_values, strict=True):
        path = path.replace("{" + name + "}", encode(str(value)))
    prepared = Prepared(
        operation=operation,
        path=path,
        query=canonical_query(query_pairs(query)),
        body=canonical_json(body) if body is not None else b"",
        headers=dict(headers or {}),
        timeout=timeout,
    )
    if body is not None:
        prepared.headers["Content-Type"] = "application/json"
    if operation.idempotent:
        prepared.headers["Idempotency-Key"] = idempotency_key or new_idempotency_key()
    return prepared


def answer(response: httpx.Response) -> Any:
    """The envelope's `data`, or the error it carries as an ApiError."""
    try:
        envelope = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise UnexpectedResponse(response.status_code, response.text[:200]) from None
    if response.is_success and isinstance(envelope, dict) and envelope.get("success") is True:
        return envelope.get("data")
    error = envelope.get("error") if isinstance(envelope, dict) else None
    if not isinstance(error, dict) or "code" not in error:
        raise UnexpectedResponse(response.status_code, response.text[:200])
    raise ApiError(
        response.status_code,
        str(error["code"]),
        str(error.get("message", "")),
        retry_after=retry_after(response),
        request_id=response.headers.get("X-Request-Id"),
        details=error.get("details"),
    )


def retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def transport_error(error: httpx.TransportError) -> TransportError:
    refused = isinstance(error, (httpx.ConnectError, httpx.ConnectTimeout))
    timeout = isinstance(error, httpx.TimeoutException)
    return TransportError(f"{type(error).__name__}: {error}", sent=not refused, timeout=timeout)


class Core:
    """Settings and the per-attempt steps; subclasses send."""

    def __init__(
        self,
        base_url: str,
        *,
        retry: RetryPolicy | None = None,
        timeout: float = 30.0,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be an http(s) URL, not {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.retry = retry if retry is not None else RetryPolicy()
        self.timeout = timeout
        self.default_headers = {"User-Agent": USER_AGENT, "Accept": "application/json", **(headers or {})}

    def attempt_headers(self, prepared: Prepared) -> dict[str, str]:
        """The headers of one attempt (a Business client signs each attempt afresh)."""
        return {**self.default_headers, **prepared.headers}

    def may_retry(self, error: SwapdError) -> bool:
        """Whether the retry policy may judge `error` at all (an x402 refusal to pay is final)."""
        return True


class SyncCore(Core):
    def __init__(self, base_url: str, *, http: httpx.Client | None = None, **options: Any) -> None:
        super().__init__(base_url, **options)
        self._http = http or httpx.Client()

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, prepared: Prepared) -> httpx.Response:
        """One attempt, with nothing more than transport errors translated."""
        try:
            return self._http.request(
                prepared.operation.method,
                prepared.url(self.base_url),
                content=prepared.body or None,
                headers=self.attempt_headers(prepared),
                timeout=prepared.timeout or self.timeout,
            )
        except httpx.TransportError as error:
            raise transport_error(error) from error

    def attempt(self, prepared: Prepared) -> httpx.Response:
        """One attempt of a call (an x402 client may pay or sign in within it)."""
        return self.send(prepared)

    def _call(self, operation: Operation, path_values: Sequence[str], **call: Any) -> Any:
        prepared = prepare(operation, path_values, **call)
        retry = 0
        while True:
            try:
                return answer(self.attempt(prepared))
            except SwapdError as error:
                wait = self.retry.delay(error, prepared.replay_safe, retry)
                if wait is None or not self.may_retry(error):
                    raise
            time.sleep(wait)
            retry += 1


class AsyncCore(Core):
    def __init__(self, base_url: str, *, http: httpx.AsyncClient | None = None, **options: Any) -> None:
        super().__init__(base_url, **options)
        self._http = http or httpx.AsyncClient()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def send(self, prepared: Prepared) -> httpx.Response:
        try:
            return await self._http.request(
                prepared.operation.method,
                prepared.url(self.base_url),
                content=prepared.body or None,
                headers=self.attempt_headers(prepared),
                timeout=prepared.timeout or self.timeout,
            )
        except httpx.TransportError as error:
            raise transport_error(error) from error

    async def attempt(self, prepared: Prepared) -> httpx.Response:
        return await self.send(prepared)

    async def _call(self, operation: Operation, path_values: Sequence[str], **call: Any) -> Any:
        prepared = prepare(operation, path_values, **call)
        retry = 0
        while True:
            try:
                return answer(await self.attempt(prepared))
            except SwapdError as error:
                wait = self.retry.delay(error, prepared.replay_safe, retry)
                if wait is None or not self.may_retry(error):
                    raise
            await asyncio.sleep(wait)
            retry += 1
