// The SDK's errors: what the API refused (SwapdApiError), and what never got an answer.

export class SwapdError extends Error {}

/** The API answered with an error envelope: branch on `code`, the stable error code. */
export class SwapdApiError extends SwapdError {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** Seconds the server asked to wait (`Retry-After`), when it did. */
    readonly retryAfter?: number,
    /** `X-Request-Id` of the answer: quote it when asking for support. */
    readonly requestId?: string,
    readonly details: { field?: string; problem?: string }[] = [],
  ) {
    super(`${status} ${code}: ${message}`);
    this.name = "SwapdApiError";
  }
}

/** No answer: the connection was refused or lost, or the call timed out. `sent` says whether
 * the request may have reached the server (a refused connection did not). */
export class SwapdTransportError extends SwapdError {
  constructor(message: string, readonly sent: boolean, readonly timeout = false, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "SwapdTransportError";
  }
}

/** An answer that is not the API's envelope (a proxy's error page, say). */
export class SwapdUnexpectedResponse extends SwapdError {
  constructor(readonly status: number, detail: string) {
    super(`unexpected answer ${status}: ${detail}`);
    this.name = "SwapdUnexpectedResponse";
  }
}
