import axios, { AxiosError, type AxiosInstance } from 'axios';
import { PAYMENT_SIGNATURE_HEADER } from '@agent-economy/contracts';
import { ApiError, ConnectionError, ConnectionTimeoutError, UserAbortError } from './errors';
import type { PaymentReceipt } from './payments/types';

export interface RequestOptions {
  /** Cancels the call, including any wait between retries. */
  signal?: AbortSignal;
  /** Per attempt; default from the client (60 s). */
  timeoutMs?: number;
  /** Retries after the first attempt; default from the client (2). */
  maxRetries?: number;
  /**
   * Makes a POST safe to retry: the same key is sent on every attempt. A paid call also derives its x402
   * payment identifier from it, so the same key never pays twice, even across restarts.
   */
  idempotencyKey?: string;
  /**
   * The x402 payment identifier of this call (16–128 of A–Z a–z 0–9 - _), sent to services that advertise
   * the payment-identifier extension: a call repeated with the same id is answered from the first payment's
   * outcome and not charged again. Default: from `idempotencyKey`, else a new one per call (`receipt.paymentId`).
   */
  paymentId?: string;
  headers?: Record<string, string>;
}

export interface HttpRequest {
  method: string;
  url: string;
  body?: unknown;
  headers: Record<string, string>;
}

export interface HttpResponse<T = unknown> {
  status: number;
  data: T;
  headers: Record<string, string>;
  requestId: string | undefined;
  /** The receipt when this call paid (x402), else absent. */
  payment?: PaymentReceipt;
}

export interface TransportSettings {
  timeoutMs: number;
  maxRetries: number;
  axios?: AxiosInstance;
}

export const MAX_RETRY_AFTER_MS = 60_000;
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

/** Wait before retry n (0-based): 0.5 s doubling to 8 s, minus up to 25 % jitter so clients spread out. */
export function backoffMs(retry: number): number {
  return Math.min(8000, 500 * 2 ** retry) * (1 - Math.random() * 0.25);
}

/** Retry-After as milliseconds (retry-after-ms, seconds or an HTTP date); undefined when absent or unreadable. */
export function retryAfterMs(headers: Record<string, string>): number | undefined {
  const ms = Number(headers['retry-after-ms']);
  if (headers['retry-after-ms'] && Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers['retry-after'];
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** Waits `ms`, or rejects with UserAbortError as soon as `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new UserAbortError('aborted'));
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new UserAbortError('aborted'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function flatHeaders(headers: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries((headers ?? {}) as Record<string, unknown>)) {
    if (value !== undefined && value !== null)
      out[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return out;
}

/**
 * Sends one logical call, retrying what is safe to retry: connection failures and 408/429/5xx for
 * idempotent requests, 429 and 503 (the service did nothing) for any request. A request carrying a
 * payment is never retried (paying twice for one call is worse than failing once), nor carried to another origin.
 */
export async function send(
  request: HttpRequest,
  options: RequestOptions,
  settings: TransportSettings,
  /** Headers made anew for each attempt, e.g. a SIGN-IN-WITH-X proof whose nonce is good once. */
  perAttempt?: () => Promise<Record<string, string>>,
): Promise<HttpResponse> {
  const client = settings.axios ?? axios;
  const headers: Record<string, string> = { accept: 'application/json', ...request.headers, ...options.headers };
  if (options.idempotencyKey) headers['idempotency-key'] = options.idempotencyKey;
  const paid = Object.keys(headers).some((h) => h.toLowerCase() === PAYMENT_SIGNATURE_HEADER);
  // Only a key actually sent makes a POST safe to retry; an empty one is not sent.
  const idempotent = IDEMPOTENT.has(request.method) || Boolean(options.idempotencyKey);
  const maxRetries = paid ? 0 : (options.maxRetries ?? settings.maxRetries);
  const timeoutMs = options.timeoutMs ?? settings.timeoutMs;

  for (let attempt = 0; ; attempt++) {
    if (options.signal?.aborted) throw new UserAbortError('aborted');
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    const onAbort = () => controller.abort();
    options.signal?.addEventListener('abort', onAbort, { once: true });

    let response;
    try {
      const attemptHeaders = { ...headers, ...(await perAttempt?.()) };
      response = await client.request({
        method: request.method,
        url: request.url,
        data: request.body === undefined ? undefined : JSON.stringify(request.body),
        headers:
          request.body === undefined ? attemptHeaders : { 'content-type': 'application/json', ...attemptHeaders },
        signal: controller.signal,
        // A payment is a credential, as Authorization is: a redirect to another origin goes without it (a voucher or
        // a signed transfer in other hands buys the call for them). Same-origin redirects keep it. (Node; a browser
        // follows redirects itself.)
        ...(paid ? { sensitiveHeaders: [PAYMENT_SIGNATURE_HEADER] } : {}),
        validateStatus: () => true,
        responseType: 'text',
        transformResponse: (data: unknown) => data,
      });
    } catch (error) {
      if (options.signal?.aborted) throw new UserAbortError('aborted', { cause: error });
      const code = (error as AxiosError).code;
      const failure = timedOut
        ? new ConnectionTimeoutError(`${request.method} ${request.url} timed out after ${timeoutMs} ms`, {
            cause: error,
          })
        : new ConnectionError(`${request.method} ${request.url} failed: ${(error as Error).message}`, { cause: error });
      // A refused connection never reached the service, so even a POST is safe to send again.
      const safe = idempotent || code === 'ECONNREFUSED';
      if (safe && attempt < maxRetries) {
        await sleep(backoffMs(attempt), options.signal);
        continue;
      }
      throw failure;
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
    }

    const responseHeaders = flatHeaders(response.headers);
    const text = typeof response.data === 'string' ? response.data : '';
    let data: unknown = text;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch {
        // not JSON: keep the text
      }
    } else data = undefined;
    const result = {
      status: response.status,
      data,
      headers: responseHeaders,
      requestId: responseHeaders['x-request-id'],
    };
    // (A browser's fetch reports a redirect it did not follow as status 0: an error, not an empty success.)
    if (response.status >= 200 && response.status < 300) return result;

    const retryable =
      response.status === 429 ||
      response.status === 503 ||
      (idempotent && [408, 500, 502, 504].includes(response.status));
    const wait = retryAfterMs(responseHeaders);
    if (retryable && attempt < maxRetries && (wait === undefined || wait <= MAX_RETRY_AFTER_MS)) {
      await sleep(wait ?? backoffMs(attempt), options.signal);
      continue;
    }
    throw ApiError.from(response.status, data, responseHeaders);
  }
}
