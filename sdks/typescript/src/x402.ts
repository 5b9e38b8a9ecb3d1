// The x402 API client (`/api/x402`): pay-per-call with x402 payments and wallet sign-in
// proofs, built on the reference packages (@x402/fetch's client, @x402/evm's exact scheme,
// @x402/extensions' Sign-In-With-X hook). This module only decides when to pay, and never
// pays twice for one call:
// - a 402 with nothing to pay (a wallet-bound read: an order, an execution, its QR code) is
//   answered with the signer's SIWX proof, and the read is free;
// - otherwise the reference client makes one payment of exactly what the route asks, refused
//   above `maxAmountPerCall`, and the call is sent again with it; retries of that call (a 503,
//   a lost connection) repeat the same payment, which the server settles at most once.
import { x402Client, x402HTTPClient } from "@x402/fetch";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { createSIWxClientHook } from "@x402/extensions/sign-in-with-x";
import { Core, type ClientOptions, type Prepared } from "./core.js";
import { SwapdError } from "./errors.js";
export { SwapdApiError, SwapdError, SwapdTransportError, SwapdUnexpectedResponse } from "./errors.js";
export { DEFAULT_RETRY, NO_RETRY, type RetryPolicy } from "./retry.js";
import { OPERATIONS, type Operations } from "./generated/x402-operations.js";

/** The route asks more than `maxAmountPerCall`, or no payment option suits the signer. */
export class SwapdPaymentRefused extends SwapdError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "SwapdPaymentRefused";
  }
}

export interface X402ClientOptions extends ClientOptions {
  /** A viem LocalAccount: it pays, and it signs in. */
  signer: ConstructorParameters<typeof ExactEvmScheme>[0] & Parameters<typeof createSIWxClientHook>[0];
  /** A Solana signer (@solana/kit) to sign in with instead, for Solana-bound resources. */
  siwxSigner?: Parameters<typeof createSIWxClientHook>[0];
  /** The most one call may pay, in the asset's base units (default 1 000 000: 1 USDC). */
  maxAmountPerCall?: bigint | number | string;
}

type SignInContext = Parameters<ReturnType<typeof createSIWxClientHook>>[0];

/** What the server reported of a payment (`PAYMENT-RESPONSE`). */
export type Settlement = ReturnType<x402HTTPClient["getPaymentSettleResponse"]>;

export interface X402ApiClient extends Operations {}

/** The x402 API: one method per operation of openapi/x402.json, named by its operationId. */
export class X402ApiClient extends Core {
  readonly maxAmountPerCall: bigint;
  /** The settlement of the last paid call. */
  lastSettlement?: Settlement;
  readonly #payments: x402HTTPClient;
  readonly #signIn: ReturnType<typeof createSIWxClientHook>;
  readonly #paid = new WeakSet<Prepared>();

  constructor(options: X402ClientOptions) {
    super(options);
    this.maxAmountPerCall = BigInt(options.maxAmountPerCall ?? 1_000_000);
    const cap = this.maxAmountPerCall;
    const client = new x402Client()
      .register("eip155:*", new ExactEvmScheme(options.signer))
      // The cap is ours, in base units: the package's default controls know only the public
      // USDC deployments, not a sandbox's asset.
      .setSpendControls(false)
      .registerPolicy((_version, requirements) => requirements.filter((r) => BigInt(r.amount ?? (r as { maxAmountRequired?: string }).maxAmountRequired ?? 0) <= cap));
    this.#payments = new x402HTTPClient(client);
    this.#signIn = createSIWxClientHook(options.siwxSigner ?? options.signer);
    Object.assign(this, this.methods<Operations>(OPERATIONS));
  }

  protected override async attempt(p: Prepared): Promise<Response> {
    const response = await this.send(p);
    if (response.status !== 402 || this.#paid.has(p)) return this.#settled(response);
    const required = this.#payments.getPaymentRequiredResponse((name) => response.headers.get(name));
    if (!required.accepts?.length) {
      const proof = await this.#signIn({ paymentRequired: required, requestUrl: this.url(p) } as SignInContext);
      if (!proof) return response;
      Object.assign(p.headers, proof.headers);
      return this.send(p);
    }
    let payload;
    try {
      payload = await this.#payments.createPaymentPayload(required);
    } catch (error) {
      throw new SwapdPaymentRefused(`cannot pay ${p.op.id}: ${(error as Error).message}`, { cause: error });
    }
    Object.assign(p.headers, this.#payments.encodePaymentSignatureHeader(payload));
    this.#paid.add(p);
    return this.#settled(await this.send(p));
  }

  protected override mayRetry(error: SwapdError): boolean {
    return !(error instanceof SwapdPaymentRefused);
  }

  #settled(response: Response): Response {
    try {
      this.lastSettlement = this.#payments.getPaymentSettleResponse((name) => response.headers.get(name));
    } catch {
      // Not a paid answer.
    }
    return response;
  }
}

/** An x402 API client: `createX402ApiClient({ baseUrl, signer, maxAmountPerCall })`. */
export function createX402ApiClient(options: X402ClientOptions): X402ApiClient {
  return new X402ApiClient(options);
}
