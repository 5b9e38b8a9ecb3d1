// The official TypeScript SDK of swapd: the Business API (`createBusinessApiClient`) and webhook
// verification (`verifyWebhook`). The x402 API for agents is `@swapd/sdk/x402`
// (`createX402ApiClient`), which needs the optional @x402/* and viem peers.
export { createBusinessApiClient, BusinessApiClient, OrderWaitTimeout, TERMINAL_STATUSES, type BusinessClientOptions, type Order, type WaitOptions } from "./business.js";
export { type ClientOptions, VERSION } from "./core.js";
export { SwapdApiError, SwapdError, SwapdTransportError, SwapdUnexpectedResponse } from "./errors.js";
export { DEFAULT_RETRY, NO_RETRY, type RetryPolicy } from "./retry.js";
export type { Body, CallOptions, Data, Query } from "./operation.js";
export * as signing from "./signing.js";
export { verifyWebhook, WebhookVerificationError, type WebhookEvent } from "./webhooks.js";
export type * as v3 from "./generated/v3.js";
export type * as x402 from "./generated/x402.js";
