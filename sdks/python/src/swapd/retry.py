"""When a failed call is sent again (docs/sdk.md, "Idempotency and retries").

A request is replay-safe when sending it twice cannot have two effects: reads, and mutations
that carry an Idempotency-Key. Only replay-safe requests are retried after the server may have
seen them; a request that never reached the server (connection refused) can always be resent.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .errors import ApiError, SwapdError, TransportError, UnexpectedResponse


@dataclass(frozen=True)
class RetryPolicy:
    #: Attempts after the first (0: never retry).
    max_retries: int = 3
    #: The first backoff (seconds) after a 5xx or a transport failure; doubled each time.
    base_delay: float = 0.2
    max_delay: float = 5.0
    #: A 429 asking to wait longer than this is raised instead of waited out.
    max_retry_after: float = 30.0

    @classmethod
    def none(cls) -> RetryPolicy:
        return cls(max_retries=0, base_delay=0.0, max_delay=0.0, max_retry_after=0.0)

    def backoff(self, retry: int) -> float:
        exponential = min(self.base_delay * 2**retry, self.max_delay)
        # Full jitter on the upper half: spreads clients that failed together.
        return exponential / 2 + random.random() * exponential / 2

    def delay(self, error: SwapdError, replay_safe: bool, retry: int) -> float | None:
        """Seconds to wait before retry number `retry` (0-based), or None when `error` is final."""
        if retry >= self.max_retries:
            return None
        if isinstance(error, ApiError):
            if error.status == 429:
                wait = error.retry_after if error.retry_after is not None else self.backoff(retry)
                return wait if wait <= self.max_retry_after else None
            if error.code == "idempotency_key_in_use" and replay_safe:
                return error.retry_after if error.retry_after is not None else self.backoff(retry)
        if isinstance(error, (ApiError, UnexpectedResponse)):
            return self.backoff(retry) if replay_safe and error.status in (500, 502, 503, 504) else None
        if isinstance(error, TransportError) and (not error.sent or replay_safe):
            return self.backoff(retry)
        return None
