"""What the generated operation tables hold about each API operation."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Operation:
    id: str
    method: str
    path: str
    path_params: tuple[str, ...] = ()
    has_query: bool = False
    has_body: bool = False
    #: Whether the request carries an Idempotency-Key (every POST and PATCH).
    idempotent: bool = False
