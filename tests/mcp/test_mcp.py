"""swapd's `/mcp` with the official MCP Python SDK as the client and x402's MCP client wrapper
paying automatically (docs/mcp.md): what an agent with nothing but a wallet does end to end."""

from __future__ import annotations

import json
import re
import uuid
from contextlib import asynccontextmanager
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from eth_account import Account
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from x402 import max_amount, x402Client
from x402.extensions.sign_in_with_x.client import create_siwx_payload
from x402.extensions.sign_in_with_x.encode import encode_siwx_header
from x402.mcp import x402MCPClient
from x402.mechanisms.evm.exact.register import register_exact_evm_client

TRON_PAYOUT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"

X402_TOOLS = {
    "readiness",
    "currencies",
    "provider_scorecards",
    "tokens_popular",
    "tokens_search",
    "tokens_by_address",
    "tokens_logo",
    "discover_routes",
    "resolve_route",
    "quotes",
    "resolve_onchain_route",
    "report_onchain_execution",
    "get_onchain_execution",
    "create_order",
    "get_order",
    "emergency",
    "refund",
    "attach_email",
    "deposit_qr",
    "create_job",
    "get_job",
}


@asynccontextmanager
async def connected(url: str):
    async with streamable_http_client(f"{url}/mcp") as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


class Session:
    """What x402's MCP client wrapper calls (`call_tool(params)`), over the MCP SDK's session.

    The wrapper reads a result's `_meta` and its content as dicts; the SDK's results keep them
    as `meta` and as models, so they are handed over in that shape. The SDK's own result of the
    last call (its `structuredContent`) stays in `last`.
    """

    def __init__(self, session: ClientSession) -> None:
        self.session = session
        self.last: Any = None

    async def call_tool(self, params: dict[str, Any], **options: Any) -> SimpleNamespace:
        timeout = options.get("read_timeout_seconds")
        if isinstance(timeout, (int, float)):
            timeout = timedelta(seconds=timeout)
        result = await self.session.call_tool(
            params["name"],
            params.get("arguments"),
            read_timeout_seconds=timeout,
            meta=params.get("_meta"),
        )
        self.last = result
        return SimpleNamespace(
            content=[item.model_dump(by_alias=True, exclude_none=True) for item in result.content],
            isError=result.isError,
            structuredContent=result.structuredContent,
            **{"_meta": result.meta or {}},
        )


def wallet_client(account: Any, cap: int = 1_000_000) -> x402Client:
    payments = x402Client()
    payments.set_spend_controls(False)  # the cap is ours: the sandbox's asset is not public USDC
    register_exact_evm_client(payments, account, policies=[max_amount(cap)])
    return payments


@asynccontextmanager
async def agent(url: str, account: Any):
    async with connected(url) as session:
        adapter = Session(session)
        yield x402MCPClient(adapter, wallet_client(account), auto_payment=True), adapter


async def sign_in(account: Any, error: dict[str, Any]) -> str:
    """The SIGN-IN-WITH-X proof for the challenge a tool error carries, as the HTTP header's
    base64 payload."""
    challenge = error["extensions"]["sign-in-with-x"]
    chain = next(c for c in challenge["supportedChains"] if c["type"] == "eip191")
    info = {**challenge["info"], "chainId": chain["chainId"], "type": chain["type"]}
    payload = await create_siwx_payload(info, account, error["resource"]["url"])
    return encode_siwx_header(payload)


def order_input(key: str) -> dict[str, Any]:
    return {
        "fromCcy": "BTC",
        "toCcy": "USDTTRC",
        "amount": "0.05",
        "toAddress": TRON_PAYOUT,
        "idempotencyKey": key,
    }


async def test_the_tools_are_the_x402_routes_with_schemas_and_annotations(swapd_url: str) -> None:
    async with connected(swapd_url) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert set(tools) == X402_TOOLS
        assert not any("webhook" in name for name in tools), "webhook secrets are not reachable"
        for tool in tools.values():
            assert tool.outputSchema and tool.outputSchema["type"] == "object", tool.name
            assert tool.inputSchema["type"] == "object", tool.name
            assert tool.annotations.destructiveHint is False, tool.name
        for read in ("discover_routes", "quotes", "currencies", "tokens_search", "tokens_by_address", "get_order"):
            assert tools[read].annotations.readOnlyHint is True, read
        for write in ("create_order", "resolve_route", "emergency", "refund", "create_job"):
            assert tools[write].annotations.readOnlyHint is False, write
        routes = tools["discover_routes"].inputSchema
        assert {"fromCcy", "toCcy", "amount"} <= set(routes["required"])
        create = tools["create_order"]
        assert create.annotations.idempotentHint is True
        assert "idempotencyKey" in create.inputSchema["required"]
        assert "toAddress" in create.inputSchema["properties"]
        assert "pageToken" in tools["get_order"].inputSchema["properties"]
        assert create.description.startswith("Paid per call")

        prompts = (await session.list_prompts()).prompts
        assert [p.name for p in prompts] == ["swap"]
        steps = await session.get_prompt("swap", {"fromCcy": "BTC", "toCcy": "ETH", "amount": "0.1", "toAddress": "0xabc"})
        text = steps.messages[0].content.text
        for tool in ("discover_routes", "resolve_route", "create_order", "get_order"):
            assert tool in text

        resources = {str(r.uri) for r in (await session.list_resources()).resources}
        assert resources == {"swapd://readiness", "swapd://currencies"}
        readiness = await session.read_resource("swapd://readiness")
        assert json.loads(readiness.contents[0].text)["x402Version"] == 2


async def test_a_free_tool_answers_without_payment(swapd_url: str) -> None:
    async with agent(swapd_url, Account.create()) as (client, session):
        result = await client.call_tool("readiness", {})
        assert not result.is_error and not result.payment_made
        ready = session.last.structuredContent
        assert ready["x402Version"] == 2
        assert json.loads(result.content[0]["text"]) == ready


async def test_an_unpaid_call_answers_the_payment_required_tool_error(swapd_url: str) -> None:
    async with connected(swapd_url) as session:
        result = await session.call_tool("discover_routes", {"fromCcy": "BTC", "toCcy": "ETH", "amount": "0.1"})
        assert result.isError
        required = result.structuredContent
        assert required["code"] == "payment_required"
        assert required["x402Version"] == 2
        assert required["accepts"][0]["scheme"] == "exact"
        assert required["resource"]["url"].startswith(f"{swapd_url}/api/x402/routes?")
        assert json.loads(result.content[0].text) == required


async def test_a_paid_call_settles_once_and_carries_its_settlement(swapd_url: str) -> None:
    payer = Account.create()
    async with agent(swapd_url, payer) as (client, session):
        result = await client.call_tool("discover_routes", {"fromCcy": "BTC", "toCcy": "ETH", "amount": "0.1"})
        assert not result.is_error, result.content
        assert result.payment_made
        settled = result.payment_response
        assert settled is not None and settled.success
        assert settled.payer.lower() == payer.address.lower()
        assert session.last.structuredContent["count"] >= 1
        assert session.last.meta["x402/payment-response"]["transaction"] == settled.transaction


async def test_a_replayed_payment_and_an_underpayment_are_refused(swapd_url: str) -> None:
    payer = Account.create()
    payments = wallet_client(payer)
    arguments = {"q": "USD"}
    async with agent(swapd_url, payer) as (client, session):
        required = await client.get_tool_payment_requirements("tokens_search", arguments)
        payment = await payments.create_payment_payload(required)
        first = await client.call_tool_with_payment("tokens_search", arguments, payment)
        assert not first.is_error and first.payment_response.success

        again = await client.call_tool_with_payment("tokens_search", arguments, payment)
        assert again.is_error and again.payment_response is None
        assert session.last.structuredContent["code"] == "payment_already_used"

        cheaper = required.model_copy(deep=True)
        cheaper.accepts[0].amount = str(int(cheaper.accepts[0].amount) - 1)
        underpaid = await payments.create_payment_payload(cheaper)
        refused = await client.call_tool_with_payment("tokens_search", arguments, underpaid)
        assert refused.is_error and refused.payment_response is None
        assert session.last.structuredContent["code"] == "payment_invalid"
        assert session.last.structuredContent["accepts"], "the refusal says again what to pay"


async def test_a_payment_whose_optional_fields_are_null_is_accepted(swapd_url: str) -> None:
    """As x402's Python MCP session sends it: `"extensions": null` and the like."""
    payer = Account.create()
    arguments = {"q": "BTC"}
    async with agent(swapd_url, payer) as (client, session):
        required = await client.get_tool_payment_requirements("tokens_search", arguments)
        payment = await wallet_client(payer).create_payment_payload(required)
        with_nulls = payment.model_dump(by_alias=True)
        with_nulls["extensions"] = None
        result = await session.session.call_tool("tokens_search", arguments, meta={"x402/payment": with_nulls})
        assert not result.isError, result.structuredContent
        assert result.meta["x402/payment-response"]["success"] is True


async def test_the_payer_owns_its_order_and_follows_it_free(swapd_url: str) -> None:
    payer = Account.create()
    key = f"mcp-{uuid.uuid4()}"
    async with agent(swapd_url, payer) as (client, session):
        created = await client.call_tool("create_order", order_input(key))
        assert not created.is_error, created.content
        assert created.payment_response.success
        order = session.last.structuredContent
        order_id = order["orderId"]

        # The same key again: the first answer, not a second order nor a second settlement.
        replay = await client.call_tool("create_order", order_input(key))
        assert not replay.is_error
        assert replay.payment_response is None, "an idempotent replay is not settled"
        assert session.last.structuredContent["orderId"] == order_id

        # Not proven: a tool error with a fresh SIWX challenge each time, on the HTTP origin.
        unproven = await session.session.call_tool("get_order", {"orderId": order_id})
        again = await session.session.call_tool("get_order", {"orderId": order_id})
        challenge = unproven.structuredContent["extensions"]["sign-in-with-x"]["info"]
        assert unproven.isError and unproven.structuredContent["code"] == "payment_required"
        assert unproven.structuredContent["accepts"] == [], "reading one's own order is free"
        assert challenge["domain"] == swapd_url.removeprefix("http://")
        assert challenge["uri"].startswith(swapd_url)
        assert challenge["nonce"] != again.structuredContent["extensions"]["sign-in-with-x"]["info"]["nonce"]

        proof = await sign_in(payer, unproven.structuredContent)
        read = await session.session.call_tool("get_order", {"orderId": order_id}, meta={"sign-in-with-x": proof})
        assert not read.isError, read.content
        assert read.structuredContent["orderId"] == order_id
        assert not (read.meta or {}).get("x402/payment-response"), "the owner's read is free"

        token = order["orderPageUrl"].rsplit("/", 1)[1]
        by_page = await session.session.call_tool("get_order", {"orderId": order_id, "pageToken": token})
        assert not by_page.isError and by_page.structuredContent["orderId"] == order_id
        qr = await session.session.call_tool("deposit_qr", {"orderId": order_id, "pageToken": token})
        assert not qr.isError and qr.structuredContent["qr"]
        wrong = await session.session.call_tool("get_order", {"orderId": order_id, "pageToken": "x" + token[1:]})
        assert wrong.isError and wrong.structuredContent["code"] == "order_not_found"

    stranger = Account.create()
    async with connected(swapd_url) as session:
        unproven = await session.call_tool("get_order", {"orderId": order_id})
        proof = await sign_in(stranger, unproven.structuredContent)
        theirs = await session.call_tool("get_order", {"orderId": order_id}, meta={"sign-in-with-x": proof})
        assert theirs.isError and theirs.structuredContent["code"] == "order_not_found"


async def test_a_market_intel_job_is_created_paid_and_read_by_its_wallet(swapd_url: str) -> None:
    payer = Account.create()
    async with agent(swapd_url, payer) as (client, session):
        created = await client.call_tool(
            "create_job",
            {"kind": "pair_depth", "fromCcy": "BTC", "toCcy": "ETH", "idempotencyKey": f"job-{uuid.uuid4()}"},
        )
        assert not created.is_error, created.content
        assert created.payment_response.success
        job_id = session.last.structuredContent["jobId"]

        unproven = await session.session.call_tool("get_job", {"jobId": job_id})
        proof = await sign_in(payer, unproven.structuredContent)
        read = await session.session.call_tool("get_job", {"jobId": job_id}, meta={"sign-in-with-x": proof})
        assert not read.isError, read.content
        assert read.structuredContent["jobId"] == job_id


async def test_invalid_arguments_are_clear_tool_errors_and_cost_nothing(swapd_url: str) -> None:
    async with agent(swapd_url, Account.create()) as (client, session):
        bad_amount = await client.call_tool("discover_routes", {"fromCcy": "BTC", "toCcy": "ETH", "amount": "abc"})
        assert bad_amount.is_error and not bad_amount.payment_made
        assert session.last.structuredContent["code"] == "amount_invalid"

        unknown = await client.call_tool("discover_routes", {"fromCcy": "BTC", "toCcy": "ETH", "amount": "1", "colour": "red"})
        assert unknown.is_error and not unknown.payment_made
        assert session.last.structuredContent["code"] == "validation_failed"
        assert "colour" in session.last.structuredContent["message"]

        no_key = await client.call_tool("create_order", {k: v for k, v in order_input("x").items() if k != "idempotencyKey"})
        assert no_key.is_error
        assert session.last.structuredContent["code"] == "idempotency_key_missing"

        missing = await session.session.call_tool("no_such_tool", {})
        assert missing.isError and missing.structuredContent["code"] == "not_found"


async def test_paid_attempts_are_limited_per_client_and_route(swapd_url: str) -> None:
    garbage = {"x402/payment": {"x402Version": 2, "payload": {}}}
    async with connected(swapd_url) as session:
        codes = []
        for _ in range(61):
            result = await session.call_tool("tokens_popular", {}, meta=garbage)
            codes.append(result.structuredContent["code"])
        assert set(codes[:60]) <= {"payment_invalid", "invalid_payment_payload"}
        assert codes[60] == "paid_attempts_exceeded"
        assert result.structuredContent["retryAfterSeconds"] > 0


async def test_tool_calls_are_counted_by_tool_and_outcome(swapd_url: str) -> None:
    async with connected(swapd_url) as session:
        await session.call_tool("readiness", {})
    metrics = httpx.get(f"{swapd_url}/metrics").text
    assert re.search(r'mcp_tool_calls_total\{[^}]*outcome="ok"[^}]*tool="readiness"[^}]*\} \d+', metrics) or re.search(
        r'mcp_tool_calls_total\{[^}]*tool="readiness"[^}]*outcome="ok"[^}]*\} \d+', metrics
    )


def test_foreign_origins_and_hosts_are_refused(swapd_url: str) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    evil_origin = httpx.post(f"{swapd_url}/mcp", json=initialize, headers={**headers, "Origin": "http://evil.example"})
    assert evil_origin.status_code == 403
    rebound = httpx.post(f"{swapd_url}/mcp", json=initialize, headers={**headers, "Host": "evil.example"})
    assert rebound.status_code == 403
    own = httpx.post(f"{swapd_url}/mcp", json=initialize, headers={**headers, "Origin": swapd_url})
    assert own.status_code == 200
    assert own.headers.get("mcp-session-id")
