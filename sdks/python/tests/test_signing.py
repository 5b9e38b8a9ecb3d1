"""The signing rules, checked against the worked examples of docs/authentication.md."""

from __future__ import annotations

import json
from pathlib import Path

from swapd import signing
from swapd._client import prepare
from swapd._generated.v3_operations import OPERATIONS

DOC = (Path(__file__).resolve().parents[3] / "docs" / "authentication.md").read_text()
SECRET = "sec_9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
TIMESTAMP = 1767225600


def test_the_documented_get_with_a_query_signs_as_the_document_says() -> None:
    query = signing.canonical_query([("toCcy", "ETH"), ("fromCcy", "BTC"), ("amount", "0.1")])
    assert query == "amount=0.1&fromCcy=BTC&toCcy=ETH"
    message = signing.string_to_sign(
        "GET", "/api/v3/routes", query, TIMESTAMP, "7f3c9a2e-4b1d-4e8a-9c2f-1a2b3c4d5e6f", b""
    )
    assert message.endswith(b"\n"), "an empty body leaves the separator before it"
    signature = signing.sign(SECRET, message)
    assert signature == "a3b20c3962deca6026c5d6a5b209c1cb42301e6d893806a112b77d023fdc50b7"
    assert signature in DOC


def test_the_documented_post_signs_the_compact_sorted_body_it_sends() -> None:
    body = {
        "type": "fixed",
        "toCcy": "ETH",
        "toAddress": "0x52908400098527886E0F7030069857D2E4169EE7",
        "fromCcy": "BTC",
        "amount": "0.1",
    }
    sent = signing.canonical_json(body)
    assert sent.decode() in DOC, "the document's body, byte for byte"
    message = signing.string_to_sign(
        "POST", "/api/v3/orders", "", TIMESTAMP, "c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f", sent
    )
    signature = signing.sign(SECRET, message)
    assert signature == "41de6a2e1cc9fdd9a5c9f95b96e4df01eafe51a6576a91f56c704bebb72ce43a"
    assert signature in DOC


def test_canonical_json_sorts_nested_keys_and_keeps_unicode_as_utf8() -> None:
    body = {"b": {"z": 1, "a": ["é", {"y": "€", "x": "\u0007"}]}, "a": "日本"}
    text = signing.canonical_json(body)
    assert text == '{"a":"日本","b":{"a":["é",{"x":"\\u0007","y":"€"}],"z":1}}'.encode()
    assert json.loads(text) == body


def test_queries_are_encoded_byte_by_byte_and_sorted_by_name_then_value() -> None:
    pairs = signing.query_pairs({"q": "a b+ü", "chain": ["eth", "base"], "skip": None, "on": True})
    assert signing.canonical_query(pairs) == "chain=base&chain=eth&on=true&q=a%20b%2B%C3%BC"


def test_a_call_sends_the_bytes_it_signs_and_keeps_one_idempotency_key() -> None:
    call = prepare(
        OPERATIONS["emergency"],
        ("ord_ä/1",),
        query=None,
        body={"choice": "REFUND", "address": "x"},
        idempotency_key=None,
        timeout=None,
        headers=None,
    )
    assert call.path == "/api/v3/orders/ord_%C3%A4%2F1/emergency"
    assert call.body == b'{"address":"x","choice":"REFUND"}'
    assert call.headers["Idempotency-Key"].startswith("idem_")
    assert call.replay_safe
    headers = signing.signed_headers(
        "key_x", SECRET, "POST", call.path, call.query, call.body, TIMESTAMP, "n" * 8
    )
    expected = signing.sign(
        SECRET, signing.string_to_sign("POST", call.path, "", TIMESTAMP, "n" * 8, call.body)
    )
    assert headers["X-API-SIGN"] == expected
