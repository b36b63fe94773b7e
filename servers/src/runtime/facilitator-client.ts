import { RESOURCE_SERVER_HEADER, signResourceRequest } from './resource-auth';
import { answerWithin, inProcessRoutes, type InProcessAnswer } from '../http/in-process';
import { SpanKind, inSpan, tracedFetch } from '../http/tracing';
import type { Wallet } from '../solana/keys';
import type {
  X402FacilitatorRequest,
  X402SettleResponse,
  X402SupportedResponse,
  X402VerifyResponse,
} from '@agent-economy/contracts';

/** The facilitator did not give a usable answer (down, timed out, 5xx, or not x402): nothing was charged. */
export class FacilitatorUnavailable extends Error {
  override name = 'FacilitatorUnavailable';
  constructor(
    message: string,
    /** Seconds the facilitator asked us to wait, when it said. */
    readonly retryAfterSeconds = 5,
  ) {
    super(message);
  }
}

/** A verdict the facilitator answered 429 (a settlement cap: nothing was charged): when to present a payment again. */
interface Busy {
  retryAfterSeconds?: number;
}

const VERIFY_TIMEOUT_MS = 15_000;
// Settlement waits for confirmation (up to 30 s on a cluster), so it gets more room than verification.
export const SETTLE_TIMEOUT_MS = 45_000;

/**
 * A resource server's HTTP client for an x402 facilitator (/supported, /verify, /settle). With `sign`, each
 * POST carries the x-resource-server signature by that wallet (resource-auth.ts): the facilitator then
 * settles payments to any payTo this server quotes, not only to registered sellers.
 */
export function facilitatorClient(baseUrl: string, options: { sign?: Wallet } = {}) {
  const root = baseUrl.replace(/\/+$/, '');
  const { sign } = options;
  const postHeaders = (path: string, text: string): Record<string, string> => ({
    'content-type': 'application/json',
    ...(sign ? { [RESOURCE_SERVER_HEADER]: signResourceRequest(sign, 'POST', path, text) } : {}),
  });

  // Each call is a client span of the request that makes it, and carries its traceparent (http/tracing.ts).
  async function call<T>(
    path: string,
    timeoutMs: number,
    body?: unknown,
    accept?: (value: unknown) => value is T,
  ): Promise<T & Busy> {
    // A facilitator served by this very process (npm start) is called directly: the same validation, rules, records
    // and answers, without loopback HTTP, the fetch client, or the signature and its check (http/in-process.ts). It
    // has the same time limit: a claim's lease counts on a settle call ending within SETTLE_TIMEOUT_MS (paywall.ts).
    const local = path === '/verify' || path === '/settle' ? inProcessRoutes.lookup(root)?.[path.slice(1)] : undefined;
    if (local) {
      let answer: InProcessAnswer;
      try {
        answer = await inSpan(`x402 facilitator ${path}`, SpanKind.CLIENT, { 'network.transport': 'inproc' }, () =>
          answerWithin(local(body, sign?.address), timeoutMs, `the facilitator's ${path}`),
        );
      } catch (error) {
        throw new FacilitatorUnavailable(`the facilitator at ${root} failed (${(error as Error).message})`);
      }
      return accepted(path, answer.status, answer.body, answer.retryAfter, accept);
    }
    let response: Response;
    let text: string;
    try {
      const sent = body === undefined ? undefined : JSON.stringify(body);
      response = await tracedFetch(`x402 facilitator ${path}`, `${root}${path}`, {
        method: sent === undefined ? 'GET' : 'POST',
        headers: sent === undefined ? {} : postHeaders(path, sent),
        body: sent,
        signal: AbortSignal.timeout(timeoutMs),
      });
      text = await response.text();
    } catch (error) {
      throw new FacilitatorUnavailable(`the facilitator at ${root} does not answer (${(error as Error).message})`);
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      value = undefined;
    }
    return accepted(path, response.status, value, response.headers.get('retry-after') ?? undefined, accept);
  }

  function accepted<T>(
    path: string,
    status: number,
    value: unknown,
    retryAfterHeader: string | undefined,
    accept?: (value: unknown) => value is T,
  ): T & Busy {
    const asked = Number(retryAfterHeader);
    const retryAfterSeconds = Number.isFinite(asked) && asked > 0 ? Math.min(asked, 60) : 5;
    // A 400 from the facilitator still carries an x402 verdict (the payload was malformed): use it. A 429 verdict
    // (a settlement cap) keeps its Retry-After beside it, for the paywall to pass on.
    if (status < 500 && accept?.(value)) return status === 429 ? { ...value, retryAfterSeconds } : (value as T & Busy);
    if (status >= 200 && status < 300 && !accept) return value as T & Busy;
    throw new FacilitatorUnavailable(`the facilitator answered ${path} with HTTP ${status}`, retryAfterSeconds);
  }

  const isVerify = (v: unknown): v is X402VerifyResponse => typeof (v as X402VerifyResponse)?.isValid === 'boolean';
  const isSettle = (v: unknown): v is X402SettleResponse => typeof (v as X402SettleResponse)?.success === 'boolean';
  const isSupported = (v: unknown): v is X402SupportedResponse => Array.isArray((v as X402SupportedResponse)?.kinds);

  return {
    url: root,
    supported: () => call('/supported', VERIFY_TIMEOUT_MS, undefined, isSupported),
    verify: (request: X402FacilitatorRequest) => call('/verify', VERIFY_TIMEOUT_MS, request, isVerify),
    settle: (request: X402FacilitatorRequest) => call('/settle', SETTLE_TIMEOUT_MS, request, isSettle),
    /**
     * Reports the refund of a settlement this server was paid (POST /discovery/refunds; signed, as the facilitator
     * requires).
     */
    reportRefund: (settlement: string, refund: string) =>
      call<unknown>('/discovery/refunds', VERIFY_TIMEOUT_MS, { settlement, refund }),
  };
}

export type FacilitatorClient = ReturnType<typeof facilitatorClient>;
