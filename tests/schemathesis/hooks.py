"""Schemathesis hooks for swapd's two API surfaces.

Signing. For the Business API (/api/v3), a request that carries our key in
X-API-KEY (schemathesis sets it from the `hmac` security scheme, see schemathesis.toml) is signed
as docs/authentication.md says (HMAC-SHA256 over method, path, canonical query, timestamp, nonce
and the exact body bytes). A request without the key, or with a key schemathesis made up to test
authentication, goes out unsigned, as a client without the secret would send it. The key and
secret come from SWAPD_API_KEY and SWAPD_API_SECRET.

Refusals of well-formed requests. A request the schema allows may still be refused with 400 for
a rule no JSON Schema can state, or with 410 when what it names has expired meanwhile (a route
quote discovered by an earlier step, resolved after its `expiresAt`);
`refused_only_for_rules_beyond_the_schema` accepts such a refusal only with one of the codes
below (schemathesis.toml lets positive_data_acceptance pass 400 and 410 for this check to
judge)."""

import hashlib
import hmac
import os
import re
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


IDEMPOTENCY_KEY = re.compile(r'^([A-Za-z0-9._:-]{8,255}|"[A-Za-z0-9._:-]{8,255}")$')


class SignedRequest(requests.auth.AuthBase):
    def __call__(self, request):
        # Schemathesis draws well-formed Idempotency-Keys from a small space, so two different
        # requests would often share one (and get 422 idempotency_key_reused, as they should).
        # A client sends a fresh key per request: a well-formed key is replaced by a fresh one;
        # a malformed or missing key is left as generated, to test its refusal.
        key = request.headers.get("Idempotency-Key")
        if key is not None and IDEMPOTENCY_KEY.match(key):
            request.headers["Idempotency-Key"] = secrets.token_hex(16)
        url = urllib.parse.urlsplit(request.url)
        if not url.path.startswith("/api/v3") or request.headers.get("X-API-KEY") != KEY:
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
        request.headers["X-API-TIMESTAMP"] = timestamp
        request.headers["X-API-NONCE"] = nonce
        request.headers["X-API-SIGN"] = hmac.new(SECRET.encode(), message, hashlib.sha256).hexdigest()
        return request


@schemathesis.hook
def before_call(context, case, kwargs):
    kwargs["auth"] = SignedRequest()


# Rules between fields or on the world outside the request, each with the 400 it is refused with:
RULES_BEYOND_THE_SCHEMA = {
    # an address must be valid on the network of the currency or chain the request names
    "address_invalid": None,
    # whether a deposit or payout needs a memo depends on the currency
    "tag_required": None,
    # an amount has at most its currency's precision in fraction digits
    "amount_invalid": None,
    # a webhook URL's host must resolve (to a public address in live mode)
    "webhook_url_unresolvable": None,
    "webhook_url_host_not_allowed": None,
    # a replay window's `until` after its `since`; a refund tag only with a refund address; a
    # refund or REFUND choice gives refundAddress when the order was created without one; a
    # provider filter names a provider this deployment runs
    "validation_failed": {"until", "refundTag", "refundAddress", "provider", "routeConstraints"},
    # x402 credentials are base64 JSON, which no security scheme describes: schemathesis fills
    # PAYMENT-SIGNATURE and SIGN-IN-WITH-X with arbitrary text
    "invalid_payment_payload": None,
    "invalid_siwx_payload": None,
}


# What expires between the step that made it and the step that uses it, each with the 410 it is
# refused with once gone (docs/errors.md):
EXPIRED_MEANWHILE = {
    # a route quote lives for its `expiresAt` (seconds); a slow run resolves it later
    "quote_expired",
}


@schemathesis.check
def refused_only_for_rules_beyond_the_schema(ctx, response, case):
    """A well-formed request refused with 400 names a rule the schema cannot state; one refused
    with 410 names something that expired meanwhile."""
    status = response.status_code
    if case.meta is None or not case.meta.generation.mode.is_positive or status not in (400, 410):
        return None
    try:
        error = response.json()["error"]
    except (ValueError, KeyError, TypeError):
        raise AssertionError(f"a {status} answer without the error envelope")
    code = error.get("code")
    refused = AssertionError(f"a schema-valid request was refused with {status} `{code}`: {error.get('message')}")
    if status == 410:
        if code not in EXPIRED_MEANWHILE:
            raise refused
        return None
    if code not in RULES_BEYOND_THE_SCHEMA:
        raise refused
    fields = RULES_BEYOND_THE_SCHEMA[code]
    named = {detail.get("field") for detail in error.get("details") or []}
    if fields is not None and not named & fields:
        raise refused
    return None
