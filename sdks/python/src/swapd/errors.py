"""The SDK's errors: what the API refused (`ApiError`), and what never got an answer."""

from __future__ import annotations

from typing import Any


class SwapdError(Exception):
    """Every error the SDK raises."""


class ApiError(SwapdError):
    """The API answered with an error envelope: branch on `code`, the stable error code."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        retry_after: float | None = None,
        request_id: str | None = None,
        details: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        #: Seconds the server asked to wait (`Retry-After`), when it did.
        self.retry_after = retry_after
        #: `X-Request-Id` of the answer: quote it when asking for support.
        self.request_id = request_id
        self.details = details or []


class TransportError(SwapdError):
    """No answer: the connection was refused or lost, or the call timed out.

    `sent` says whether the request may have reached the server (a refused connection did not).
    """

    def __init__(self, message: str, *, sent: bool, timeout: bool = False) -> None:
        super().__init__(message)
        self.sent = sent
        self.timeout = timeout


class UnexpectedResponse(SwapdError):
    """An answer that is not the API's envelope (a proxy's error page, say)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"unexpected answer {status}: {detail}")
        self.status = status
