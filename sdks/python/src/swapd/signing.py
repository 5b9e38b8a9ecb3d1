"""Business API request signing, exactly as docs/authentication.md says.

The string to sign is six lines: METHOD, PATH, CANONICAL_QUERY, TIMESTAMP, NONCE, BODY. The SDK
sends the canonical query and the compact, sorted-key JSON body it signed, so the bytes signed
are the bytes sent.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote

#: RFC 3986 unreserved characters: everything else is percent-encoded (uppercase hex).
_UNRESERVED = "-_.~"


def encode(text: str) -> str:
    """Percent-encodes every byte outside `A-Z a-z 0-9 - _ . ~` as uppercase `%XX`."""
    return quote(text, safe=_UNRESERVED)


def query_pairs(query: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """A query object's present values as wire strings (booleans lowercase, lists repeated)."""
    pairs: list[tuple[str, str]] = []
    for name, value in (query or {}).items():
        if value is None:
            continue
        values = value if isinstance(value, (list, tuple)) else [value]
        for item in values:
            text = ("true" if item else "false") if isinstance(item, bool) else str(item)
            pairs.append((name, text))
    return pairs


def canonical_query(pairs: Iterable[tuple[str, str]]) -> str:
    """Names and values encoded, sorted by name then value, joined with `&`."""
    encoded = sorted((encode(name), encode(value)) for name, value in pairs)
    return "&".join(f"{name}={value}" for name, value in encoded)


def canonical_json(body: Any) -> bytes:
    """Compact JSON with keys in ascending order, UTF-8 (what the Rust SDK sends)."""
    return json.dumps(body, separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode()


def string_to_sign(method: str, path: str, query: str, timestamp: int, nonce: str, body: bytes) -> bytes:
    head = f"{method.upper()}\n{path}\n{query}\n{timestamp}\n{nonce}\n".encode()
    return head + body


def sign(secret: str, message: bytes) -> str:
    """Lowercase hex HMAC-SHA256 of `message`, keyed with the API secret."""
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def new_nonce() -> str:
    return str(uuid.uuid4())


def new_idempotency_key() -> str:
    return f"idem_{uuid.uuid4().hex}"


def signed_headers(
    api_key: str, api_secret: str, method: str, path: str, query: str, body: bytes, timestamp: int, nonce: str
) -> dict[str, str]:
    """The four authentication headers of one request."""
    signature = sign(api_secret, string_to_sign(method, path, query, timestamp, nonce, body))
    return {
        "X-API-KEY": api_key,
        "X-API-TIMESTAMP": str(timestamp),
        "X-API-NONCE": nonce,
        "X-API-SIGN": signature,
    }
