"""The partner's and the agent's journeys, against a real sandbox swapd (see conftest.py)."""

from __future__ import annotations

import secrets
from decimal import Decimal

import pytest
from eth_account import Account
from receiver import Receiver

from swapd import ApiError, AsyncBusinessApiClient, BusinessApiClient, X402ApiClient, webhooks

TRON_PAYOUT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
ETH_PAYOUT = "0x52908400098527886E0F7030069857D2E4169EE7"
BTC_REFUND = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"


@pytest.fixture
def api(swapd) -> BusinessApiClient:
    with BusinessApiClient(swapd.url, swapd.api_key, swapd.api_secret) as client:
        yield client


def test_a_fixed_order_runs_from_route_to_payout_and_a_retry_returns_the_same_order(api) -> None:
    catalog = api.currencies()
    assert catalog["count"] >= 20
    routes = api.discover_routes({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "type": "fixed"})
    card = next(
        c
        for c in routes["routes"]
        if c["executionType"] == "offchain" and c["isAvailable"] and c.get("routeQuoteId")
    )
    resolved = api.resolve_route({"routeQuoteId": card["routeQuoteId"]})
    key = f"sdk-order-{secrets.token_hex(8)}"
    body = {"createToken": resolved["createToken"], "toAddress": TRON_PAYOUT, "refundAddress": BTC_REFUND}
    order = api.create_order(body, idempotency_key=key)
    assert order["status"] == "awaiting_deposit"
    assert order["rate"] == resolved["rate"]
    again = api.create_order(body, idempotency_key=key)
    assert again["orderId"] == order["orderId"], "the same Idempotency-Key answers the same order"
    deposit = api.simulate_deposit(order["orderId"], {"amount": order["from"]["amount"]})
    assert deposit["amount"] == order["from"]["amount"]
    done = api.wait_for_order(order["orderId"], until="completed", timeout=120)
    assert done["status"] == "completed"
    assert done["to"].get("txId")


def test_an_emergency_is_answered_with_a_refund(api) -> None:
    order = api.create_order(
        {"fromCcy": "BTC", "toCcy": "ETH", "amount": "0.05", "type": "fixed", "toAddress": ETH_PAYOUT}
    )
    short = str((Decimal(order["from"]["amount"]) * Decimal("0.9")).quantize(Decimal("0.00000001")))
    api.simulate_deposit(order["orderId"], {"amount": short})
    held = api.wait_for_order(order["orderId"], until="emergency", timeout=120)
    assert held["status"] == "emergency"
    assert "LESS" in held["emergency"]["reasons"]
    api.emergency(order["orderId"], {"choice": "REFUND", "refundAddress": BTC_REFUND})
    refunded = api.wait_for_order(order["orderId"], timeout=120)
    assert refunded["status"] == "refunded"


def test_an_onchain_plan_is_resolved_reported_and_followed(api) -> None:
    wallet = Account.create().address
    routes = api.discover_routes(
        {
            "fromCcy": "ETHBASE",
            "toCcy": "USDCBASE",
            "amount": "1",
            "walletAddress": wallet,
            "walletChainNamespace": "eip155",
        }
    )
    card = next(
        c
        for c in routes["routes"]
        if c["executionType"] == "onchain" and c["isAvailable"] and c.get("routeQuoteId")
    )
    plan = api.resolve_onchain_route(
        {"routeQuoteId": card["routeQuoteId"], "walletAddress": wallet, "walletChainNamespace": "eip155"}
    )
    token = plan["executionAccessToken"]
    tx_hash = "0x" + secrets.token_hex(31) + "01"
    reported = api.report_onchain_execution(
        {
            "executionPlanId": plan["executionPlanId"],
            "chainNamespace": "eip155",
            "walletAddress": wallet,
            "txHash": tx_hash,
        },
        onchain_execution_access_token=token,
    )
    assert reported["executionPlanId"] == plan["executionPlanId"]
    status = api.get_onchain_execution(plan["executionPlanId"], onchain_execution_access_token=token)
    assert status["status"] in ("submitted", "pending", "done")
    with pytest.raises(ApiError) as raised:
        api.get_onchain_execution(plan["executionPlanId"], onchain_execution_access_token="x" * 40)
    assert raised.value.status in (401, 404)


def test_webhook_deliveries_verify_across_a_rotation_and_a_replay(api) -> None:
    receiver = Receiver()
    try:
        created = api.create_webhook({"url": receiver.url, "events": ["order.created"]})
        first_secret = created["secret"]
        order = api.create_order(
            {"fromCcy": "BTC", "toCcy": "ETH", "amount": "0.05", "toAddress": ETH_PAYOUT}
        )
        headers, body = receiver.next()
        event = webhooks.verify(first_secret, headers, body)
        assert event["type"] == "order.created"
        assert event["data"]["order"]["orderId"] == order["orderId"]
        with pytest.raises(webhooks.WebhookVerificationError):
            webhooks.verify("whsec_" + "A" * 43 + "=", headers, body)
        with pytest.raises(webhooks.WebhookVerificationError):
            webhooks.verify(first_secret, headers, body.replace(b"order.created", b"order.updated"))

        rotated = api.rotate_webhook_secret(created["webhookId"], {"previousSecretExpiresIn": 3600})
        api.replay_webhook_events(created["webhookId"], {"eventId": event["id"]})
        headers, body = receiver.next()
        replayed = webhooks.verify([rotated["secret"]], headers, body)
        assert replayed["id"] == event["id"], "a replay is the same event"
        assert webhooks.verify([first_secret], headers, body)["id"] == event["id"], (
            "both secrets sign during the grace"
        )
        deliveries = api.list_webhook_deliveries(created["webhookId"], {"limit": 10})
        assert deliveries["count"] >= 2
    finally:
        receiver.close()


async def test_the_async_client_reads_and_creates(swapd) -> None:
    async with AsyncBusinessApiClient(swapd.url, swapd.api_key, swapd.api_secret) as api:
        offset = await api.sync_clock()
        assert abs(offset) < 5
        readiness = await api.readiness()
        assert readiness["mode"] == "sandbox"
        order = await api.create_order(
            {"fromCcy": "BTC", "toCcy": "ETH", "amount": "0.05", "toAddress": ETH_PAYOUT}
        )
        assert (await api.get_order(order["orderId"]))["orderId"] == order["orderId"]


def test_an_agent_pays_owns_reads_free_and_is_refused_anothers_order(swapd) -> None:
    payer = Account.create()
    with X402ApiClient(swapd.url, payer, max_amount_per_call=1_000_000) as agent:
        catalog = agent.currencies()
        assert catalog["count"] >= 20
        settled = agent.last_settlement
        assert settled is not None and settled.success
        assert settled.payer.lower() == payer.address.lower()

        order = agent.create_order(
            {"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_PAYOUT}
        )
        paid_for_order = agent.last_settlement
        read = agent.get_order(order["orderId"])
        assert read["orderId"] == order["orderId"]
        assert agent.last_settlement is paid_for_order, "the owner's read is free (signed in, not paid)"

        job = agent.create_job({"kind": "pair_depth", "fromCcy": "BTC", "toCcy": "ETH"})
        assert agent.get_job(job["jobId"])["jobId"] == job["jobId"]

    with X402ApiClient(swapd.url, Account.create()) as stranger:
        with pytest.raises(ApiError) as raised:
            stranger.get_order(order["orderId"])
        assert (raised.value.status, raised.value.code) == (404, "order_not_found")


def test_an_agent_never_pays_more_than_its_cap(swapd) -> None:
    from swapd import PaymentRefused

    with X402ApiClient(swapd.url, Account.create(), max_amount_per_call=1) as agent:
        with pytest.raises(PaymentRefused):
            agent.currencies()


async def test_the_async_agent_pays_once_and_reads_its_order_free(swapd) -> None:
    from swapd import AsyncX402ApiClient

    payer = Account.create()
    async with AsyncX402ApiClient(swapd.url, payer) as agent:
        order = await agent.create_order(
            {"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_PAYOUT}
        )
        paid = agent.last_settlement
        assert paid is not None and paid.payer.lower() == payer.address.lower()
        assert (await agent.get_order(order["orderId"]))["orderId"] == order["orderId"]
        assert agent.last_settlement is paid, "the owner's read is free"
