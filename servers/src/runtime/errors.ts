import type { ErrorEnvelope } from '@agent-economy/contracts';

/** An error a handler throws on purpose: it becomes the error envelope with this status and code. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export const notFound = (code: string, message: string, details?: unknown) =>
  new HttpError(404, code, message, details);
export const conflict = (code: string, message: string, details?: unknown) =>
  new HttpError(409, code, message, details);
export const unprocessable = (code: string, message: string, details?: unknown) =>
  new HttpError(422, code, message, details);
export const unavailable = (code: string, message: string, retryAfterSeconds: number) =>
  new HttpError(503, code, message, undefined, { 'retry-after': String(retryAfterSeconds) });
export const badGateway = (code: string, message: string, retryAfterSeconds = 5) =>
  new HttpError(502, code, message, undefined, { 'retry-after': String(retryAfterSeconds) });

export function envelope(requestId: string, code: string, message: string, details?: unknown): ErrorEnvelope {
  return { error: { code, message, ...(details === undefined ? {} : { details }) }, requestId };
}
