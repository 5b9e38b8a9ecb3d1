"""Verifying webhook deliveries (Standard Webhooks signatures, docs/webhooks.md)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from standardwebhooks.webhooks import Webhook, WebhookVerificationError
from typing_extensions import NotRequired, TypedDict

from ._generated.v3_types import EventType, GetOrderData

__all__ = ["WebhookEvent", "WebhookVerificationError", "verify"]


class EventData(TypedDict):
    #: The order after the change (None in test deliveries).
    order: GetOrderData | None
    #: The order's status before the change, when it changed.
    previousStatus: str | None


class WebhookEvent(TypedDict):
    """One delivery's payload."""

    #: `evt_…`: the same on every attempt and replay; deduplicate on it.
    id: str
    type: EventType
    #: Unix seconds.
    createdAt: int
    #: Counts the order's events from 1 (0 for test deliveries): drop one older than applied.
    sequence: int
    data: EventData
    test: NotRequired[Literal[True]]


def verify(secrets: str | Iterable[str], headers: Mapping[str, str], body: bytes | str) -> WebhookEvent:
    """Checks a delivery's `webhook-signature` against the subscription's secret (or several,
    during a rotation: any one may have signed it), within five minutes of `webhook-timestamp`,
    and returns its event. Pass the raw body bytes as received, before any JSON parsing.

    Raises `WebhookVerificationError` when no secret signed it or it is too old or too new.
    """
    candidates = [secrets] if isinstance(secrets, str) else list(secrets)
    if not candidates:
        raise ValueError("verify needs at least one webhook secret (whsec_…)")
    lowered = {name.lower(): value for name, value in headers.items()}
    last: WebhookVerificationError | None = None
    for secret in candidates:
        try:
            event: Any = Webhook(secret).verify(body, lowered)
            return event  # type: ignore[no-any-return]
        except WebhookVerificationError as error:
            last = error
    assert last is not None
    raise last
