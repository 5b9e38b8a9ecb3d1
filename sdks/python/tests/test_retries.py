"""The retry rules of docs/sdk.md, against a local server answering from a script."""

from __future__ import annotations

import socket

import pytest
from scripted import DROP, Scripted, error, ok

from swapd import ApiError, AsyncBusinessApiClient, BusinessApiClient, RetryPolicy, TransportError
from swapd.errors import UnexpectedResponse

FAST = RetryPolicy(max_retries=3, base_delay=0.01, max_delay=0.02, max_retry_after=2)


def client(server: Scripted, retry: RetryPolicy = FAST) -> BusinessApiClient:
    return BusinessApiClient(server.url, "key_test", "sec_test", retry=retry, timeout=5)


@pytest.fixture
def script():
    servers: list[Scripted] = []

    def start(*answers):
        server = Scripted(*answers)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


def test_a_429_waits_for_its_retry_after_then_succeeds(script) -> None:
    server = script(error(429, "rate_limit_exceeded", retry_after=0), ok({"count": 1}))
    assert client(server).currencies() == {"count": 1}
    assert len(server.requests) == 2


def test_a_429_asking_too_long_a_wait_is_raised_with_its_retry_after(script) -> None:
    server = script(error(429, "rate_limit_exceeded", retry_after=3600))
    with pytest.raises(ApiError) as raised:
        client(server).currencies()
    assert (raised.value.status, raised.value.code, raised.value.retry_after) == (
        429,
        "rate_limit_exceeded",
        3600,
    )
    assert raised.value.request_id == "req_rate_limit_exceeded"


def test_a_mutation_is_retried_after_a_503_and_a_drop_with_one_key_and_fresh_nonces(script) -> None:
    server = script(
        error(503, "service_unavailable"),
        DROP,
        error(409, "idempotency_key_in_use", 0),
        ok({"orderId": "ord_1"}, 201),
    )
    created = client(server).create_order(
        {"fromCcy": "BTC", "toCcy": "ETH", "amount": "0.1", "toAddress": "x"}
    )
    assert created == {"orderId": "ord_1"}
    sent = server.requests
    assert len(sent) == 4
    assert len({r["headers"]["Idempotency-Key"] for r in sent}) == 1, "one key across retries"
    assert len({r["headers"]["X-API-NONCE"] for r in sent}) == 4, "each attempt signed afresh"
    assert len({r["body"] for r in sent}) == 1


def test_client_errors_are_final(script) -> None:
    server = script(error(400, "validation_failed"), ok({}))
    with pytest.raises(ApiError) as raised:
        client(server).currencies()
    assert raised.value.code == "validation_failed"
    assert len(server.requests) == 1


def test_retries_run_out_and_turn_off_with_one_option(script) -> None:
    server = script(*[error(503, "service_unavailable")] * 4)
    with pytest.raises(ApiError):
        client(server).currencies()
    assert len(server.requests) == 4, "the first attempt and three retries"
    server = script(error(503, "service_unavailable"), ok({}))
    with pytest.raises(ApiError):
        client(server, RetryPolicy.none()).currencies()
    assert len(server.requests) == 1


def test_an_answer_that_is_not_the_envelope_is_unexpected(script) -> None:
    server = script((502, {"Content-Type": "text/html"}, b"<html>bad gateway</html>"), (418, {}, b"{}"))
    with pytest.raises(UnexpectedResponse) as raised:
        client(server, RetryPolicy.none()).currencies()
    assert raised.value.status == 502


def test_a_refused_connection_is_a_transport_error_that_never_reached_the_server() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(TransportError) as raised:
        BusinessApiClient(f"http://127.0.0.1:{port}", "key_t", "sec_t", retry=FAST).currencies()
    assert raised.value.sent is False


async def test_the_async_client_follows_the_same_rules(script) -> None:
    server = script(DROP, error(429, "rate_limit_exceeded", 0), ok({"count": 2}))
    async with AsyncBusinessApiClient(server.url, "key_t", "sec_t", retry=FAST) as api:
        assert await api.currencies() == {"count": 2}
    assert len(server.requests) == 3
