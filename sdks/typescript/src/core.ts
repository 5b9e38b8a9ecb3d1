// What every client shares: a request made from an operation and its arguments, sent with
// retries, and the envelope read. Clients differ in what each attempt adds (a signature, a
// payment) through `attemptHeaders` and `send`.
import type { CallOptions, OperationSpec } from "./operation.js";
import { SwapdApiError, SwapdError, SwapdTransportError, SwapdUnexpectedResponse } from "./errors.js";
import { DEFAULT_RETRY, retryDelay, type RetryPolicy } from "./retry.js";
import { canonicalJson, canonicalQuery, encode, newIdempotencyKey, queryPairs, type QueryValue } from "./signing.js";

export const VERSION = "0.1.0";

export interface ClientOptions {
  baseUrl: string;
  /** Retries (docs/sdk.md); `false` turns them off. */
  retry?: Partial<RetryPolicy> | false;
  /** Milliseconds per attempt (default 30 000). */
  timeoutMs?: number;
  headers?: Record<string, string>;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
}

/** One call's request: the same bytes on every attempt but for what an attempt adds. */
export interface Prepared {
  op: OperationSpec;
  path: string;
  query: string;
  body: Uint8Array;
  headers: Record<string, string>;
  options: CallOptions;
}

export const replaySafe = (p: Prepared): boolean => p.op.method === "GET" || "Idempotency-Key" in p.headers;

/** Splits a method's arguments as the generated signatures order them: path parameters, body,
 * query, options. */
export function prepare(op: OperationSpec, args: unknown[]): Prepared {
  const rest = [...args];
  let path = op.path;
  for (const name of op.pathParams) path = path.replace(`{${name}}`, encode(String(rest.shift())));
  const body = op.hasBody ? rest.shift() : undefined;
  const query = op.hasQuery ? (rest.shift() as Record<string, QueryValue> | undefined) : undefined;
  const options = ((rest.shift() ?? {}) as CallOptions & Record<string, unknown>);
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  for (const [header, option, required] of op.headers) {
    const value = options[option];
    if (value === undefined && !required) continue;
    if (typeof value !== "string") throw new TypeError(`${op.id} needs the option ${option}`);
    headers[header] = value;
  }
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (op.idempotent) headers["Idempotency-Key"] = options.idempotencyKey ?? newIdempotencyKey();
  return { op, path, query: canonicalQuery(queryPairs(query)), body: body === undefined ? new Uint8Array() : canonicalJson(body), headers, options };
}

/** The envelope's `data`, or the error it carries. */
export async function answer(response: Response): Promise<unknown> {
  const text = await response.text();
  let envelope: any;
  try {
    envelope = JSON.parse(text);
  } catch {
    throw new SwapdUnexpectedResponse(response.status, text.slice(0, 200));
  }
  if (response.ok && envelope?.success === true) return envelope.data;
  const error = envelope?.error;
  if (!error || typeof error.code !== "string") throw new SwapdUnexpectedResponse(response.status, text.slice(0, 200));
  const after = response.headers.get("Retry-After");
  throw new SwapdApiError(
    response.status,
    error.code,
    String(error.message ?? ""),
    after !== null && !Number.isNaN(Number(after)) ? Number(after) : undefined,
    response.headers.get("X-Request-Id") ?? undefined,
    Array.isArray(error.details) ? error.details : [],
  );
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    }, { once: true });
  });

export class Core {
  readonly baseUrl: string;
  protected readonly retry: RetryPolicy;
  protected readonly timeoutMs: number;
  protected readonly defaultHeaders: Record<string, string>;
  protected readonly fetch: typeof fetch;

  constructor(options: ClientOptions) {
    if (!/^https?:\/\//.test(options.baseUrl)) throw new TypeError(`baseUrl must be an http(s) URL, not ${options.baseUrl}`);
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.retry = options.retry === false ? { ...DEFAULT_RETRY, maxRetries: 0 } : { ...DEFAULT_RETRY, ...options.retry };
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.defaultHeaders = { "User-Agent": `swapd-typescript/${VERSION}`, Accept: "application/json", ...options.headers };
    this.fetch = options.fetch ?? globalThis.fetch;
  }

  /** The headers of one attempt (a Business client signs each attempt afresh). */
  protected attemptHeaders(p: Prepared): Record<string, string> {
    return { ...this.defaultHeaders, ...p.headers };
  }

  url(p: Prepared): string {
    return `${this.baseUrl}${p.path}${p.query ? `?${p.query}` : ""}`;
  }

  /** One attempt, with transport failures as SwapdTransportError. */
  protected async send(p: Prepared): Promise<Response> {
    const timeout = AbortSignal.timeout(p.options.timeoutMs ?? this.timeoutMs);
    const signal = p.options.signal ? AbortSignal.any([p.options.signal, timeout]) : timeout;
    try {
      return await this.fetch(this.url(p), {
        method: p.op.method,
        headers: this.attemptHeaders(p),
        body: p.body.length ? (p.body as Uint8Array<ArrayBuffer>) : undefined,
        signal,
      });
    } catch (error) {
      if (p.options.signal?.aborted) throw error;
      const cause = (error as { cause?: { code?: string } }).cause;
      const refused = cause?.code === "ECONNREFUSED";
      const timedOut = timeout.aborted;
      throw new SwapdTransportError(`${(error as Error).message}${cause?.code ? ` (${cause.code})` : ""}`, !refused, timedOut, { cause: error });
    }
  }

  /** Runs one call: attempts until success or a final error. */
  protected async call(op: OperationSpec, args: unknown[]): Promise<unknown> {
    const p = prepare(op, args);
    for (let retry = 0; ; retry++) {
      try {
        return await answer(await this.attempt(p));
      } catch (error) {
        if (!(error instanceof SwapdError)) throw error;
        const wait = retryDelay(this.retry, error, replaySafe(p), retry);
        if (wait === undefined || !this.mayRetry(error)) throw error;
        await sleep(wait, p.options.signal);
      }
    }
  }

  protected attempt(p: Prepared): Promise<Response> {
    return this.send(p);
  }

  protected mayRetry(_error: SwapdError): boolean {
    return true;
  }

  /** An object with one method per entry of `table`, each a call of that operation. */
  protected methods<T>(table: Record<string, OperationSpec>): T {
    const out: Record<string, (...args: unknown[]) => Promise<unknown>> = {};
    for (const [name, op] of Object.entries(table)) out[name] = (...args) => this.call(op, args);
    return out as T;
  }
}
