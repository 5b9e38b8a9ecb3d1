"""The official Python SDK of swapd: the Business API (`BusinessApiClient`,
`AsyncBusinessApiClient`), the x402 API for agents (`X402ApiClient`, `AsyncX402ApiClient`, with
the `x402` extra) and webhook verification (`swapd.webhooks.verify`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._client import __version__
from .business import AsyncBusinessApiClient, BusinessApiClient, OrderWaitTimeout
from .errors import ApiError, SwapdError, TransportError, UnexpectedResponse
from .retry import RetryPolicy

if TYPE_CHECKING:
    from .x402 import AsyncX402ApiClient, PaymentRefused, X402ApiClient

__all__ = [
    "ApiError",
    "AsyncBusinessApiClient",
    "AsyncX402ApiClient",
    "BusinessApiClient",
    "OrderWaitTimeout",
    "PaymentRefused",
    "RetryPolicy",
    "SwapdError",
    "TransportError",
    "UnexpectedResponse",
    "X402ApiClient",
    "__version__",
]


def __getattr__(name: str) -> Any:
    # The x402 clients need the `x402` extra (pip install "swapd[x402]"): imported on first use.
    if name in ("X402ApiClient", "AsyncX402ApiClient", "PaymentRefused"):
        from . import x402

        return getattr(x402, name)
    raise AttributeError(name)
