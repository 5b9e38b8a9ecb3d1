// What the generated operation tables hold, and the type helpers the generated method
// signatures use: an operation's body, query and answer (the envelope's `data`).

export interface OperationSpec {
  readonly id: string;
  readonly method: string;
  readonly path: string;
  readonly pathParams: readonly string[];
  readonly hasQuery: boolean;
  readonly hasBody: boolean;
  /** Every POST and PATCH carries an Idempotency-Key. */
  readonly idempotent: boolean;
  /** Header parameters besides Idempotency-Key: [header name, option name]. */
  /** Header, option name, and whether the option is required. */
  readonly headers: readonly (readonly [string, string, boolean])[];
}

/** Per-call options, always the last argument. */
export interface CallOptions {
  /** Kept across the call's retries; generated once per call when absent. */
  idempotencyKey?: string;
  signal?: AbortSignal;
  /** Milliseconds per attempt (default: the client's `timeoutMs`). */
  timeoutMs?: number;
  headers?: Record<string, string>;
}

type Json<T> = T extends { content: { "application/json": infer B } } ? B : never;
type Success<R> = R extends Record<infer K, unknown> ? (K extends 200 | 201 | 202 ? Json<R[K]> : never) : never;

/** The envelope's `data` of an operation's successful answer. */
export type Data<O> = O extends { responses: infer R } ? (Success<R> extends { data: infer D } ? D : unknown) : unknown;
/** An operation's JSON body, with the wire field names. */
export type Body<O> = O extends { requestBody: { content: { "application/json": infer B } } } ? B : never;
/** An operation's query, with the wire parameter names. */
export type Query<O> = O extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;
