"""Schemathesis hooks for swapd's Business API (/api/v3): every request is signed as
docs/authentication.md says (HMAC-SHA256 over method, path, canonical query, timestamp, nonce and
the exact body bytes), and mutations carry a fresh Idempotency-Key. The key and secret come from
SWAPD_API_KEY and SWAPD_API_SECRET."""

import hashlib
import hmac
import os
import secrets
import time
import urllib.parse

import requests
import schemathesis

KEY = os.environ.get("SWAPD_API_KEY", "")
SECRET = os.environ.get("SWAPD_API_SECRET", "")


def canonical_query(raw: str) -> str:
    pairs = []
    for piece in raw.split("&"):
        if not piece:
            continue
        name, _, value = piece.partition("=")
        encode = lambda text: urllib.parse.quote(urllib.parse.unquote_to_bytes(text), safe="-_.~")
        pairs.append((encode(name), encode(value)))
    return "&".join(f"{name}={value}" for name, value in sorted(pairs))


class SignedRequest(requests.auth.AuthBase):
    def __call__(self, request):
        url = urllib.parse.urlsplit(request.url)
        if not url.path.startswith("/api/v3"):
            return request
        body = request.body or b""
        if isinstance(body, str):
            body = body.encode()
        timestamp = str(int(time.time()))
        nonce = secrets.token_hex(16)
        message = (
            f"{request.method}\n{url.path}\n{canonical_query(url.query)}\n{timestamp}\n{nonce}\n".encode()
            + body
        )
        request.headers["X-API-KEY"] = KEY
        request.headers["X-API-TIMESTAMP"] = timestamp
        request.headers["X-API-NONCE"] = nonce
        request.headers["X-API-SIGN"] = hmac.new(SECRET.encode(), message, hashlib.sha256).hexdigest()
        if request.method in ("POST", "PATCH") and "Idempotency-Key" not in request.headers:
            request.headers["Idempotency-Key"] = secrets.token_hex(16)
        return request


@schemathesis.hook
def before_call(context, case, kwargs):
    kwargs["auth"] = SignedRequest()
