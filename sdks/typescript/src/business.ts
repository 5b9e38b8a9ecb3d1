// The Business API client (`/api/v3`): every request signed with an API key and its secret.
import { Core, type ClientOptions, type Prepared } from "./core.js";
import { OPERATIONS, type Operations } from "./generated/v3-operations.js";
import type { Data } from "./operation.js";
import type { operations } from "./generated/v3.js";
import { newNonce, signedHeaders } from "./signing.js";

export type Order = Data<operations["get_order"]>;

/** Order statuses after which nothing more happens to an order. */
export const TERMINAL_STATUSES = new Set(["completed", "refunded", "failed"]);

export interface BusinessClientOptions extends ClientOptions {
  apiKey: string;
  apiSecret: string;
  /** Milliseconds added to the local clock when signing, for hosts whose clock drifts. */
  clockOffsetMs?: number;
}

export interface WaitOptions {
  /** `completed`, any terminal status (the default), or one status by name (such as
   * `emergency`); it also stops at a terminal status it was not waiting for. */
  until?: "completed" | "terminal" | (string & {});
  timeoutMs?: number;
  pollMs?: number;
  signal?: AbortSignal;
}

/** `waitForOrder` ran out of time; `order` is the last state it read. */
export class OrderWaitTimeout extends Error {
  constructor(readonly order: Order) {
    super(`order ${order.orderId} is still ${order.status}`);
    this.name = "OrderWaitTimeout";
  }
}

export interface BusinessApiClient extends Operations {}

/** The Business API: one method per operation of openapi/v3.json, named by its operationId. */
export class BusinessApiClient extends Core {
  readonly apiKey: string;
  readonly #apiSecret: string;
  clockOffsetMs: number;

  constructor(options: BusinessClientOptions) {
    super(options);
    if (!options.apiKey || !options.apiSecret) throw new TypeError("apiKey and apiSecret are required (swapd keys create prints both)");
    this.apiKey = options.apiKey;
    this.#apiSecret = options.apiSecret;
    this.clockOffsetMs = options.clockOffsetMs ?? 0;
    Object.assign(this, this.methods<Operations>(OPERATIONS));
  }

  protected override attemptHeaders(p: Prepared): Record<string, string> {
    // Every attempt is signed afresh: the server refuses a nonce it has seen.
    const timestamp = Math.floor((Date.now() + this.clockOffsetMs) / 1000);
    const auth = signedHeaders(this.apiKey, this.#apiSecret, p.op.method, p.path, p.query, p.body, timestamp, newNonce());
    return { ...super.attemptHeaders(p), ...auth };
  }

  /** Sets `clockOffsetMs` from the server's time (the readiness document) and returns it. */
  async syncClock(): Promise<number> {
    const sentAt = Date.now();
    const readiness = await this.readiness();
    this.clockOffsetMs = readiness.serverTime * 1000 - (sentAt + Date.now()) / 2;
    return this.clockOffsetMs;
  }

  /** Reads the order until it is where `until` says, backing off from `pollMs` to 5 s; throws
   * OrderWaitTimeout with the last state after `timeoutMs` (default 120 s). */
  async waitForOrder(orderId: string, options: WaitOptions = {}): Promise<Order> {
    const until = options.until ?? "terminal";
    const deadline = Date.now() + (options.timeoutMs ?? 120_000);
    let poll = options.pollMs ?? 500;
    for (;;) {
      const order = await this.getOrder(orderId, { signal: options.signal });
      if (order.status === until || TERMINAL_STATUSES.has(order.status)) return order;
      if (Date.now() + poll > deadline) throw new OrderWaitTimeout(order);
      await new Promise((resolve) => setTimeout(resolve, poll));
      poll = Math.min(poll * 1.5, 5000);
    }
  }
}

/** A Business API client: `createBusinessApiClient({ baseUrl, apiKey, apiSecret })`. */
export function createBusinessApiClient(options: BusinessClientOptions): BusinessApiClient {
  return new BusinessApiClient(options);
}
