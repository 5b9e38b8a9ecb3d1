// Business API request signing, exactly as docs/authentication.md says: six lines (METHOD,
// PATH, CANONICAL_QUERY, TIMESTAMP, NONCE, BODY), HMAC-SHA256 keyed with the secret. The SDK
// sends the canonical query and the compact sorted-key JSON body it signed: the bytes signed
// are the bytes sent.
import { createHmac, randomUUID } from "node:crypto";

/** Percent-encodes every UTF-8 byte outside `A-Z a-z 0-9 - _ . ~` as uppercase `%XX`. */
export function encode(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

export type QueryValue = string | number | boolean | null | undefined | readonly (string | number | boolean)[];

/** A query object's present values as wire strings (lists repeated, booleans lowercase). */
export function queryPairs(query: Record<string, QueryValue> | undefined): [string, string][] {
  const pairs: [string, string][] = [];
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value === undefined || value === null) continue;
    for (const item of Array.isArray(value) ? value : [value]) pairs.push([name, String(item)]);
  }
  return pairs;
}

/** Names and values encoded, sorted by name then value (by code point), joined with `&`. */
export function canonicalQuery(pairs: readonly (readonly [string, string])[]): string {
  const encoded = pairs.map(([n, v]) => [encode(n), encode(v)] as const);
  encoded.sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0));
  return encoded.map(([n, v]) => `${n}=${v}`).join("&");
}

function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted);
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    // Keys in ascending order of their UTF-8 bytes (code points), as the Rust and Python SDKs.
    entries.sort(([a], [b]) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    return Object.fromEntries(entries.map(([k, v]) => [k, sorted(v)]));
  }
  return value;
}

/** Compact JSON with keys in ascending order, as UTF-8 bytes (what the other SDKs send). */
export function canonicalJson(body: unknown): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(sorted(body)));
}

export function stringToSign(method: string, path: string, query: string, timestamp: number, nonce: string, body: Uint8Array): Uint8Array {
  const head = new TextEncoder().encode(`${method.toUpperCase()}\n${path}\n${query}\n${timestamp}\n${nonce}\n`);
  const out = new Uint8Array(head.length + body.length);
  out.set(head);
  out.set(body, head.length);
  return out;
}

/** Lowercase hex HMAC-SHA256 of `message`, keyed with the API secret. */
export function sign(secret: string, message: Uint8Array): string {
  return createHmac("sha256", secret).update(message).digest("hex");
}

export const newNonce = (): string => randomUUID();
export const newIdempotencyKey = (): string => `idem_${randomUUID().replace(/-/g, "")}`;

/** The four authentication headers of one request. */
export function signedHeaders(apiKey: string, apiSecret: string, method: string, path: string, query: string, body: Uint8Array, timestamp: number, nonce: string): Record<string, string> {
  return {
    "X-API-KEY": apiKey,
    "X-API-TIMESTAMP": String(timestamp),
    "X-API-NONCE": nonce,
    "X-API-SIGN": sign(apiSecret, stringToSign(method, path, query, timestamp, nonce, body)),
  };
}
