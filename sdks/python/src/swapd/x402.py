"""The x402 API client (`/api/x402`): pay-per-call with x402 payments, wallet sign-in proofs.

Built on the reference PyPI package `x402` (its client, its exact EVM scheme and its
Sign-In-With-X hook): this module only decides when to pay, and never pays twice for one call.

A call goes out unpaid. A 402 answer names what the route costs:
- nothing to pay (a wallet-bound read: an order, an execution, its QR code): the SIWX hook signs
  the challenge with the account, and the read is free;
- otherwise the reference client makes one payment of exactly what the route asks, refused when
  it is more than `max_amount_per_call`, and the call is sent again with it. Retries of that call
  (a 503, a lost connection) repeat the same payment, which the server settles at most once.

The settlement of the last paid call (`PAYMENT-RESPONSE`) is `last_settlement`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import httpx
from x402 import max_amount, x402Client, x402ClientSync
from x402.extensions.sign_in_with_x.hooks import create_siwx_client_hook
from x402.http.x402_http_client import x402HTTPClient, x402HTTPClientSync
from x402.mechanisms.evm.exact.register import register_exact_evm_client
from x402.schemas import PaymentRequiredContext, SettleResponse

from ._client import AsyncCore, Prepared, SyncCore
from ._generated.x402_operations import AsyncOperations, Operations
from .errors import SwapdError
from .retry import RetryPolicy

__all__ = ["AsyncX402ApiClient", "PaymentRefused", "X402ApiClient"]

#: What one call may cost at most unless told otherwise: 1 USDC (6 decimals), in base units.
DEFAULT_MAX_AMOUNT_PER_CALL = 1_000_000


class PaymentRefused(SwapdError):
    """The route asks more than `max_amount_per_call`, or no payment option suits the account."""


def _payment_clients(account: Any, max_amount_per_call: int, asynchronous: bool) -> Any:
    client = x402Client() if asynchronous else x402ClientSync()
    # The cap is ours (in the asset's base units): the package's default controls know only
    # the public USDC deployments, not a sandbox's asset.
    client.set_spend_controls(False)
    register_exact_evm_client(client, account, policies=[max_amount(max_amount_per_call)])
    return x402HTTPClient(client) if asynchronous else x402HTTPClientSync(client)


class _Paying:
    def _setup(self, account: Any, max_amount_per_call: int, asynchronous: bool) -> None:
        self.account = account
        self.max_amount_per_call = max_amount_per_call
        self._payments = _payment_clients(account, max_amount_per_call, asynchronous)
        self._sign_in = create_siwx_client_hook(account)
        #: The settlement of the last paid call, as the server reported it.
        self.last_settlement: SettleResponse | None = None

    def may_retry(self, error: SwapdError) -> bool:
        return not isinstance(error, PaymentRefused)

    def _required(self, response: httpx.Response) -> Any:
        return self._payments.get_payment_required_response(response.headers.get, None)

    def _settled(self, response: httpx.Response) -> httpx.Response:
        try:
            self.last_settlement = self._payments.get_payment_settle_response(response.headers.get)
        except ValueError:
            pass  # not a paid answer
        return response

    def _pay_with(self, prepared: Prepared, payload: Any) -> None:
        prepared.headers.update(self._payments.encode_payment_signature_header(payload))
        prepared.paid = True


class X402ApiClient(_Paying, SyncCore, Operations):
    """The x402 API, blocking: one method per operation of openapi/x402.json.

    `account` is an `eth_account` LocalAccount: it pays and it signs in. Signing in runs the
    package's asynchronous SIWX hook to its end, so this client cannot be used inside a running
    event loop: use AsyncX402ApiClient there.
    """

    def __init__(
        self,
        base_url: str,
        account: Any,
        *,
        max_amount_per_call: int = DEFAULT_MAX_AMOUNT_PER_CALL,
        retry: RetryPolicy | None = None,
        timeout: float = 30.0,
        headers: Mapping[str, str] | None = None,
        http: httpx.Client | None = None,
    ) -> None:
        super().__init__(base_url, retry=retry, timeout=timeout, headers=headers, http=http)
        self._setup(account, max_amount_per_call, asynchronous=False)

    def attempt(self, prepared: Prepared) -> httpx.Response:
        response = self.send(prepared)
        if response.status_code != 402 or prepared.paid:
            return self._settled(response)
        required = self._required(response)
        if not required.accepts:
            # The SIWX hook of the package is a coroutine; a blocking client runs it to its end.
            proof = asyncio.run(self._sign_in(_context(required, prepared.url(self.base_url))))
            if proof is None:
                return response
            prepared.headers.update(proof.headers)
            return self.send(prepared)
        try:
            payload = self._payments.create_payment_payload(required)
        except Exception as error:  # the package refuses with its own exception types
            raise PaymentRefused(f"cannot pay {prepared.operation.id}: {error}") from error
        self._pay_with(prepared, payload)
        return self._settled(self.send(prepared))


class AsyncX402ApiClient(_Paying, AsyncCore, AsyncOperations):
    """The x402 API, awaited: the same methods as X402ApiClient."""

    def __init__(
        self,
        base_url: str,
        account: Any,
        *,
        max_amount_per_call: int = DEFAULT_MAX_AMOUNT_PER_CALL,
        retry: RetryPolicy | None = None,
        timeout: float = 30.0,
        headers: Mapping[str, str] | None = None,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(base_url, retry=retry, timeout=timeout, headers=headers, http=http)
        self._setup(account, max_amount_per_call, asynchronous=True)

    async def attempt(self, prepared: Prepared) -> httpx.Response:
        response = await self.send(prepared)
        if response.status_code != 402 or prepared.paid:
            return self._settled(response)
        required = self._required(response)
        if not required.accepts:
            proof = await self._sign_in(_context(required, prepared.url(self.base_url)))
            if proof is None:
                return response
            prepared.headers.update(proof.headers)
            return await self.send(prepared)
        try:
            payload = await self._payments.create_payment_payload(required)
        except Exception as error:
            raise PaymentRefused(f"cannot pay {prepared.operation.id}: {error}") from error
        self._pay_with(prepared, payload)
        return self._settled(await self.send(prepared))


def _context(required: Any, url: str) -> PaymentRequiredContext:
    return PaymentRequiredContext(payment_required=required, request_url=url)
