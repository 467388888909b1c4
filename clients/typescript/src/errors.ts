/**
 * Errors thrown by LociClient.
 *
 * Every error the client throws for a failed call is a LociError: an HTTP
 * error answer of the server is a LociAPIError (a subclass per status, so
 * `instanceof NotFoundError` or `err.status === 404` both work) carrying the
 * server's `detail`; a request that got no answer is a LociConnectionError
 * (LociTimeoutError when the client's per-attempt timeout fired). A call
 * aborted by the caller's own AbortSignal rejects with the signal's reason,
 * as fetch does.
 */

/** The base class of every error the client throws for a failed call. */
export class LociError extends Error {
  /** The HTTP status of the answer; 0 when there was none (network error, timeout). */
  readonly status: number;
  /** The server's human-readable `detail`, when it answered with one. */
  readonly detail: string | undefined;
  /** The X-Request-ID of the answer (or of the request), for the server's log. */
  readonly requestId: string | undefined;

  constructor(
    message: string,
    init: { status?: number; detail?: string; requestId?: string; cause?: unknown } = {},
  ) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.status = init.status ?? 0;
    this.detail = init.detail;
    this.requestId = init.requestId;
  }
}

/** What a LociAPIError is built from. */
export interface APIErrorInit {
  status: number;
  detail: string;
  requestId: string | undefined;
  /** The parsed JSON body of the answer (or its text when it was not JSON). */
  body: unknown;
  headers: Headers;
  method: string;
  path: string;
}

/** An HTTP error answer (status >= 400) of the server. */
export class LociAPIError extends LociError {
  /** The server's `detail`: what was wrong, naming the field for a 400. */
  declare readonly detail: string;
  /** The parsed body of the answer: `{detail, request_id?}` for every Loci error. */
  readonly body: unknown;
  /** The answer's headers (Retry-After, X-RateLimit-*). */
  readonly headers: Headers;
  /** The request's method and path, such as `GET /v1/artifacts/...`. */
  readonly method: string;
  readonly path: string;

  constructor(init: APIErrorInit) {
    super(`${init.method} ${init.path}: ${init.status} ${init.detail}`, {
      status: init.status,
      detail: init.detail,
      requestId: init.requestId,
    });
    this.body = init.body;
    this.headers = init.headers;
    this.method = init.method;
    this.path = init.path;
  }

  /** The answer's Retry-After in seconds, when it carried one. */
  get retryAfterSeconds(): number | undefined {
    const ms = parseRetryAfter(this.headers.get("retry-after"), Date.now());
    return ms === undefined ? undefined : Math.ceil(ms / 1000);
  }
}

/** 400: invalid input; `detail` names the field by its path (such as `artifacts[3].metdata`). */
export class BadRequestError extends LociAPIError {}
/** 401: missing or invalid X-API-Key. */
export class AuthenticationError extends LociAPIError {}
/** 403: the key or the plan does not allow this (v2 on plan free, workspace quota, admin-only route). */
export class PermissionDeniedError extends LociAPIError {}
/** 404: no such resource for the caller's tenant (another tenant's ids are not found too). */
export class NotFoundError extends LociAPIError {}
/** 409: an idempotency key naming another artifact, the last key of a tenant, an artifact still being indexed. */
export class ConflictError extends LociAPIError {}
/** 413: the body is over the server's MAX_REQUEST_SIZE_BYTES. */
export class PayloadTooLargeError extends LociAPIError {}
/** 429: over the plan's requests per minute, the registration limit or the job backlog; see `retryAfterSeconds`. */
export class RateLimitError extends LociAPIError {
  /** The plan's requests per minute (X-RateLimit-Limit), when the answer carried it. */
  get limit(): number | undefined {
    return intHeader(this.headers, "x-ratelimit-limit");
  }
  /** Requests left in the window (X-RateLimit-Remaining), when the answer carried it. */
  get remaining(): number | undefined {
    return intHeader(this.headers, "x-ratelimit-remaining");
  }
}
/** 500: an internal error; `requestId` finds it in the server's log. */
export class InternalServerError extends LociAPIError {}
/** 503: the server is starting (recovering its data), overloaded or shutting down. */
export class ServiceUnavailableError extends LociAPIError {}
/** 507: the server's disk is full; nothing was stored, and the same request may be sent again later. */
export class InsufficientStorageError extends LociAPIError {}

/** The request got no HTTP answer: the connection failed or was reset. */
export class LociConnectionError extends LociError {
  constructor(message: string, cause: unknown, requestId: string | undefined) {
    super(message, { cause, requestId });
  }
}

/** The request got no answer within the client's per-attempt timeout. */
export class LociTimeoutError extends LociConnectionError {}

const byStatus: Record<number, new (init: APIErrorInit) => LociAPIError> = {
  400: BadRequestError,
  401: AuthenticationError,
  403: PermissionDeniedError,
  404: NotFoundError,
  409: ConflictError,
  413: PayloadTooLargeError,
  429: RateLimitError,
  500: InternalServerError,
  503: ServiceUnavailableError,
  507: InsufficientStorageError,
};

/** Builds the LociAPIError subclass of an error answer's status. */
export function apiErrorFor(init: APIErrorInit): LociAPIError {
  const Class = byStatus[init.status] ?? LociAPIError;
  return new Class(init);
}

/**
 * The delay a Retry-After header value asks for, in milliseconds: either
 * delta-seconds or an HTTP date (RFC 9110, section 10.2.3). Undefined when
 * absent or unreadable.
 */
export function parseRetryAfter(value: string | null, now: number): number | undefined {
  if (value === null) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

function intHeader(headers: Headers, name: string): number | undefined {
  const v = headers.get(name);
  if (v === null || !/^\d+$/.test(v.trim())) return undefined;
  return Number(v);
}
