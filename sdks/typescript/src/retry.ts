// When a failed call is sent again (docs/sdk.md, "Idempotency and retries"). A request is
// replay-safe when sending it twice cannot have two effects: reads, and mutations carrying an
// Idempotency-Key. Only those are retried after the server may have seen them; a request that
// never reached the server (connection refused) can always be sent again.
import { SwapdApiError, SwapdTransportError, SwapdUnexpectedResponse } from "./errors.js";

export interface RetryPolicy {
  /** Attempts after the first (0: never retry). */
  maxRetries: number;
  /** The first backoff (ms) after a 5xx or a transport failure; doubled each time. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** A 429 asking to wait longer than this (ms) is thrown instead of waited out. */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxRetries: 3, baseDelayMs: 200, maxDelayMs: 5000, maxRetryAfterMs: 30_000 };
export const NO_RETRY: RetryPolicy = { maxRetries: 0, baseDelayMs: 0, maxDelayMs: 0, maxRetryAfterMs: 0 };

function backoff(policy: RetryPolicy, retry: number): number {
  const exponential = Math.min(policy.baseDelayMs * 2 ** retry, policy.maxDelayMs);
  // Full jitter on the upper half: spreads clients that failed together.
  return exponential / 2 + (Math.random() * exponential) / 2;
}

const SERVER_ERRORS = new Set([500, 502, 503, 504]);

/** Milliseconds to wait before retry number `retry` (0-based), or undefined when final. */
export function retryDelay(policy: RetryPolicy, error: unknown, replaySafe: boolean, retry: number): number | undefined {
  if (retry >= policy.maxRetries) return undefined;
  if (error instanceof SwapdApiError) {
    if (error.status === 429) {
      const wait = error.retryAfter !== undefined ? error.retryAfter * 1000 : backoff(policy, retry);
      return wait <= policy.maxRetryAfterMs ? wait : undefined;
    }
    if (error.code === "idempotency_key_in_use" && replaySafe) {
      return error.retryAfter !== undefined ? error.retryAfter * 1000 : backoff(policy, retry);
    }
  }
  if (error instanceof SwapdApiError || error instanceof SwapdUnexpectedResponse) {
    return SERVER_ERRORS.has(error.status) && replaySafe ? backoff(policy, retry) : undefined;
  }
  if (error instanceof SwapdTransportError && (!error.sent || replaySafe)) return backoff(policy, retry);
  return undefined;
}
