import { PAYMENT_REQUIRED_HEADER, PaymentRequiredSchema, decodeX402Header, type PaymentRequired } from '@agent-economy/contracts';

/** Every error the SDK throws extends this. */
export class AgentEconomyError extends Error {
  override name = 'AgentEconomyError';
}

/** A service answered with an error status; `code`, `message` and `details` come from its error envelope. */
export class ApiError extends AgentEconomyError {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: unknown,
    readonly requestId: string | undefined,
    readonly headers: Record<string, string>,
    readonly body: unknown,
  ) {
    super(`${status} ${code}: ${message}`);
  }

  static from(status: number, body: unknown, headers: Record<string, string>): ApiError {
    const envelope = (body as { error?: { code?: unknown; message?: unknown; details?: unknown }; requestId?: unknown } | undefined)?.error;
    const code = typeof envelope?.code === 'string' ? envelope.code : `http_${status}`;
    const message = typeof envelope?.message === 'string' ? envelope.message : `HTTP ${status}`;
    const requestId = headers['x-request-id'] ?? (typeof (body as { requestId?: unknown })?.requestId === 'string' ? (body as { requestId: string }).requestId : undefined);
    const args = [status, code, message, envelope?.details, requestId, headers, body] as const;
    switch (true) {
      case status === 400:
        return new BadRequestError(...args);
      case status === 401:
        return new AuthenticationError(...args);
      case status === 402:
        return new PaymentRequiredError(...args);
      case status === 403:
        return new PermissionDeniedError(...args);
      case status === 404:
        return new NotFoundError(...args);
      case status === 409:
        return new ConflictError(...args);
      case status === 413:
        return new PayloadTooLargeError(...args);
      case status === 422:
        return new UnprocessableEntityError(...args);
      case status === 429:
        return new RateLimitError(...args);
      case status >= 500:
        return new InternalServerError(...args);
      default:
        return new ApiError(...args);
    }
  }
}

export class BadRequestError extends ApiError {
  override name = 'BadRequestError';
  /** Each invalid field and what is wrong with it. */
  get fields(): { field: string; message: string }[] {
    return ((this.details as { fields?: { field: string; message: string }[] } | undefined)?.fields) ?? [];
  }
}
export class AuthenticationError extends ApiError {
  override name = 'AuthenticationError';
}
/** 402: the operation must be paid (or the payment was refused); `quote` is the decoded x402 PAYMENT-REQUIRED. */
export class PaymentRequiredError extends ApiError {
  override name = 'PaymentRequiredError';
  get quote(): PaymentRequired | undefined {
    const header = this.headers[PAYMENT_REQUIRED_HEADER];
    const parsed = PaymentRequiredSchema.safeParse(header ? decodeX402Header(header) : this.details);
    return parsed.success ? parsed.data : undefined;
  }
}
export class PermissionDeniedError extends ApiError {
  override name = 'PermissionDeniedError';
}
export class NotFoundError extends ApiError {
  override name = 'NotFoundError';
}
export class ConflictError extends ApiError {
  override name = 'ConflictError';
}
export class PayloadTooLargeError extends ApiError {
  override name = 'PayloadTooLargeError';
}
export class UnprocessableEntityError extends ApiError {
  override name = 'UnprocessableEntityError';
}
export class RateLimitError extends ApiError {
  override name = 'RateLimitError';
}
export class InternalServerError extends ApiError {
  override name = 'InternalServerError';
}

/** No HTTP answer: the service could not be reached or the connection broke. */
export class ConnectionError extends AgentEconomyError {
  override name = 'ConnectionError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
export class ConnectionTimeoutError extends ConnectionError {
  override name = 'ConnectionTimeoutError';
}
/** The caller's AbortSignal fired. */
export class UserAbortError extends AgentEconomyError {
  override name = 'UserAbortError';
}
