import { AgentEconomyError, ApiError, ConnectionError, PaymentRequiredError, UserAbortError } from '../errors';
import { backoffMs, retryAfterMs, sleep, type RequestOptions } from '../http';
import { randomHex } from '../random';

// x402's payment-identifier extension: the service advertises `extensions['payment-identifier']` in its
// 402 and the client echoes it with `info.id`, one id per logical call. A service that sees a second
// payment with the same id from the same payer answers from the first one's outcome and charges nothing.

export const PAYMENT_IDENTIFIER = 'payment-identifier';
const ID_PATTERN = /^[A-Za-z0-9_-]{16,128}$/;

/** 16–128 characters of letters, digits, '-' and '_', as the extension requires. */
export function isValidPaymentId(id: unknown): id is string {
  return typeof id === 'string' && ID_PATTERN.test(id);
}

export function generatePaymentId(): string {
  return `pay_${randomHex(16)}`;
}

/**
 * The identifier of one logical call: `paymentId` as given (the caller keeps it secret: whoever presents an id with a
 * good payment of the same request gets its answer); else one derived from the `idempotencyKey` and the wallet, so the
 * same key reuses one payment across process restarts; else a new random one. The derived id is a hash of the wallet's
 * Ed25519 signature of the key (deterministic, and only the key's holder can make it): a guessable key such as
 * "order-42" does not make a guessable id.
 */
export async function paymentIdOf(
  options: RequestOptions,
  wallet?: { signMessage(message: Uint8Array): Promise<Uint8Array> },
): Promise<string> {
  if (options.paymentId !== undefined) {
    if (!isValidPaymentId(options.paymentId))
      throw new AgentEconomyError('paymentId: 16 to 128 characters of letters, digits, "-" and "_"; nothing was sent');
    return options.paymentId;
  }
  const key = options.idempotencyKey;
  if (!key) return generatePaymentId();
  const message = new TextEncoder().encode(`agent-economy payment-identifier v1:${key}`);
  const material = wallet ? await wallet.signMessage(message) : message;
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', material));
  return `idem_${Array.from(digest.subarray(0, 24), (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/** Whether a quote's extensions advertise the payment identifier. */
export function advertised(extensions: Record<string, unknown> | undefined): boolean {
  const declared = extensions?.[PAYMENT_IDENTIFIER] as { info?: { required?: unknown } } | undefined;
  return !!declared && typeof declared === 'object' && typeof declared.info?.required === 'boolean';
}

/** The extensions to send: the service's, its payment-identifier declaration carrying our id. */
export function withPaymentId(
  extensions: Record<string, unknown> | undefined,
  id: string,
): Record<string, unknown> | undefined {
  if (!advertised(extensions)) return extensions;
  const declared = extensions![PAYMENT_IDENTIFIER] as { info: Record<string, unknown> };
  return { ...extensions, [PAYMENT_IDENTIFIER]: { ...declared, info: { ...declared.info, id } } };
}

/**
 * An error after which the payment may have settled and the service, knowing its identifier, can say
 * how it ended: no answer (other than a refused connection), a gateway that gave up, a settlement the
 * service has not finished, or the first presentation still in flight.
 */
export function worthAsking(error: unknown): boolean {
  if (error instanceof UserAbortError) return false;
  if (error instanceof ConnectionError) return true;
  if (error instanceof PaymentRequiredError) return error.code === 'payment_already_used';
  if (!(error instanceof ApiError)) return false;
  return (
    ['settlement_pending', 'settlement_unknown', 'payment_state_unavailable'].includes(error.code) ||
    error.status === 502 ||
    error.status === 504
  );
}

/**
 * Sends a request carrying an identified payment, presenting the same payment again (same transaction,
 * same identifier) while the outcome is unknown, up to `retries` times: the service answers from its
 * first outcome and never charges twice. The error of a failed last attempt is returned in place of an
 * earlier one that left the outcome unknown only when it too leaves it unknown.
 */
export async function presentAgain<T>(
  attempt: () => Promise<T>,
  retries: number,
  signal: AbortSignal | undefined,
): Promise<T> {
  let unknown: unknown;
  for (let n = 0; ; n++) {
    try {
      return await attempt();
    } catch (error) {
      const ask = worthAsking(error);
      if (ask && !(error instanceof PaymentRequiredError)) unknown = error;
      if (!ask || n >= retries) {
        // After an attempt that may have settled, a later "not delivered" or "in use" says nothing of it.
        const notDelivered =
          error instanceof ConnectionError && (error.cause as { code?: unknown } | undefined)?.code === 'ECONNREFUSED';
        if (unknown !== undefined && (notDelivered || error instanceof PaymentRequiredError) && error !== unknown)
          throw unknown;
        throw error;
      }
      // A payment in use by another request (the first presentation, still settling) is asked for again
      // on our own backoff: its Retry-After is the worst case (a dead request's lease), not the usual one.
      const wait =
        error instanceof ApiError && !(error instanceof PaymentRequiredError) ? retryAfterMs(error.headers) : undefined;
      await sleep(Math.min(wait ?? backoffMs(n), 10_000), signal);
    }
  }
}
