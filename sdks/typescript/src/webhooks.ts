// Verifying webhook deliveries: Standard Webhooks signatures (docs/webhooks.md), with the
// `standardwebhooks` package.
import { Webhook, WebhookVerificationError } from "standardwebhooks";
import type { components } from "./generated/v3.js";
import type { Order } from "./business.js";

export { WebhookVerificationError };

/** One delivery's payload. */
export interface WebhookEvent {
  /** `evt_…`: the same on every attempt and replay; deduplicate on it. */
  id: string;
  type: components["schemas"]["EventType"];
  /** Unix seconds. */
  createdAt: number;
  /** Counts the order's events from 1 (0 for test deliveries): drop one older than applied. */
  sequence: number;
  data: { order: Order | null; previousStatus: string | null };
  test?: true;
}

/** Checks a delivery's `webhook-signature` against the subscription's secret (or several,
 * during a rotation: any one may have signed it), within five minutes of `webhook-timestamp`,
 * and returns its event. Pass the raw body as received, before any JSON parsing. Throws
 * WebhookVerificationError when no secret signed it or it is too old or too new. */
export function verifyWebhook(secrets: string | readonly string[], headers: Record<string, string | string[] | undefined> | Headers, rawBody: string | Uint8Array): WebhookEvent {
  const candidates = typeof secrets === "string" ? [secrets] : [...secrets];
  if (!candidates.length) throw new TypeError("verifyWebhook needs at least one webhook secret (whsec_…)");
  const flat: Record<string, string> = {};
  const entries: [string, string | string[] | undefined][] = [];
  if (headers instanceof Headers) headers.forEach((value, name) => entries.push([name, value]));
  else entries.push(...Object.entries(headers));
  for (const [name, value] of entries) if (value !== undefined) flat[name.toLowerCase()] = Array.isArray(value) ? value[0] : String(value);
  const body = typeof rawBody === "string" ? rawBody : new TextDecoder().decode(rawBody);
  let last: unknown;
  for (const secret of candidates) {
    try {
      return new Webhook(secret).verify(body, flat) as WebhookEvent;
    } catch (error) {
      last = error;
    }
  }
  throw last;
}
