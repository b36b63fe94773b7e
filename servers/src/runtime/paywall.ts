import { createHash } from 'node:crypto';
import type { AppRoute } from '@ts-rest/core';
import {
  PAYMENT_REQUIRED_HEADER,
  PAYMENT_RESPONSE_HEADER,
  X402PaymentPayloadSchema,
  atomicToUsd,
  decodeX402Header,
  encodeX402Header,
  routeMeta,
  usdToAtomic,
  type PaymentRequired,
  type PaymentRequirements,
  type X402FacilitatorRequest,
  type X402PaymentPayload,
  type X402SettleResponse,
} from '@agent-economy/contracts';
import type { Request, Response } from 'express';
import type { Kysely, Migration } from 'kysely';
import type { Logger } from 'pino';
import { decodeBase64, parseTransaction } from '../ledger/wire';
import { envelope } from './errors';
import { FacilitatorUnavailable, type FacilitatorClient } from './facilitator-client';
import type { ParsedRequest } from './validation';

/** Where and how a service is paid: its own wallet, the chain and the stablecoin, and who settles. */
export interface PaywallConfig {
  payTo: string;
  network: string;
  asset: string;
  maxTimeoutSeconds: number;
  /** The facilitator's fee payer, advertised in `extra.feePayer`. */
  feePayer?: string;
  /** The facilitator that verifies and settles payments; without one, paid routes quote but take no payment. */
  facilitatorUrl?: string;
}

/**
 * A route's price for one request: a USD amount, or the id of one of the route's declared tiers; and,
 * where the money goes to someone other than the service (a seller on a marketplace), their wallet.
 */
export type PriceDecision = ({ usd: string } | { tier: string }) & { payTo?: string };
export type PriceResolver = (request: ParsedRequest) => PriceDecision | Promise<PriceDecision>;

export interface Price {
  usd: string;
  payTo?: string;
}

/** The price of one request to a route, from its payment metadata and, where it varies, the service's resolver. */
export async function priceOf(route: AppRoute, request: ParsedRequest, resolver?: PriceResolver): Promise<Price> {
  const payment = routeMeta(route).payment;
  if (payment.kind === 'free') return { usd: '0' };
  if (payment.kind === 'fixed' && !resolver) return { usd: payment.usd };
  if (!resolver) throw new Error(`route ${route.method} ${route.path} has a variable price but no price resolver`);
  const decision = await resolver(request);
  const payTo = decision.payTo ? { payTo: decision.payTo } : {};
  if (payment.kind === 'fixed') return { usd: payment.usd, ...payTo };
  if (payment.kind === 'tiered') {
    if (!('tier' in decision)) throw new Error(`route ${route.path} must be priced by tier`);
    const tier = payment.tiers.find((t) => t.id === decision.tier);
    if (!tier) throw new Error(`route ${route.path} has no tier ${decision.tier}`);
    return { usd: tier.usd, ...payTo };
  }
  if (!('usd' in decision)) throw new Error(`route ${route.path} must be priced in USD`);
  const [min, max, usd] = [usdToAtomic(payment.minUsd), usdToAtomic(payment.maxUsd), usdToAtomic(decision.usd)];
  // Adaptive prices stay inside the route's declared range whatever the demand model says.
  return { usd: atomicToUsd(usd < min ? min : usd > max ? max : usd), ...payTo };
}

export function buildRequirements(config: PaywallConfig, price: Price): PaymentRequirements {
  return {
    scheme: 'exact',
    network: config.network,
    amount: usdToAtomic(price.usd).toString(),
    asset: config.asset,
    payTo: price.payTo ?? config.payTo,
    maxTimeoutSeconds: config.maxTimeoutSeconds,
    extra: config.feePayer ? { feePayer: config.feePayer } : {},
  };
}

export function buildQuote(requirements: PaymentRequirements, resourceUrl: string, route: AppRoute, error: string): PaymentRequired {
  return {
    x402Version: 2,
    error,
    resource: { url: resourceUrl, description: route.summary ?? route.path, mimeType: 'application/json' },
    accepts: [requirements],
  };
}

export const paymentMigrations: Record<string, Migration> = {
  '002_payments': {
    async up(db) {
      // A payment serves one request: the key (SHA-256 of the transaction message) is claimed before the
      // handler runs, so replicas sharing the database cannot serve the same payment twice.
      await db.schema
        .createTable('runtime_payments')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('resource', 'text', (c) => c.notNull())
        .addColumn('payer', 'text')
        .addColumn('pay_to', 'text', (c) => c.notNull())
        .addColumn('amount', 'int8', (c) => c.notNull())
        .addColumn('transaction', 'text')
        .addColumn('created_at', 'timestamptz', (c) => c.notNull())
        .addColumn('settled_at', 'timestamptz')
        .execute();
    },
  },
};

/** What a paid request's handler may know about its payment (`res.locals.payment`). */
export interface VerifiedPayment {
  payer: string;
  payTo: string;
  amount: string;
  asset: string;
  network: string;
}

interface Refusal {
  status: 402 | 503;
  code: string;
  message: string;
  reason?: string;
  retryAfterSeconds?: number;
  extraHeaders?: Record<string, string>;
}

/** Sends a 402 (with a fresh quote) or a 503 (with Retry-After) in the error envelope. */
function refuse(res: Response, requestId: string, quote: PaymentRequired, refusal: Refusal, send: (body: string) => void = (b) => void res.end(b)): void {
  const fresh = { ...quote, error: refusal.message };
  res.statusCode = refusal.status;
  res.setHeader('cache-control', 'no-store');
  res.setHeader('content-type', 'application/json; charset=utf-8');
  if (refusal.status === 402) res.setHeader(PAYMENT_REQUIRED_HEADER, encodeX402Header(fresh));
  if (refusal.retryAfterSeconds) res.setHeader('retry-after', String(refusal.retryAfterSeconds));
  for (const [name, value] of Object.entries(refusal.extraHeaders ?? {})) res.setHeader(name, value);
  const details = refusal.status === 402 ? { ...fresh, ...(refusal.reason ? { reason: refusal.reason } : {}) } : refusal.reason ? { reason: refusal.reason } : undefined;
  const body = JSON.stringify(envelope(requestId, refusal.code, refusal.message, details));
  res.setHeader('content-length', Buffer.byteLength(body));
  send(body);
}

/** The quote for a request that carried no payment. */
export function quotePaidRequest(res: Response, requestId: string, quote: PaymentRequired, usd: string): void {
  refuse(res, requestId, quote, {
    status: 402,
    code: 'payment_required',
    message: `This operation costs ${usd} USD, paid with x402 (see the PAYMENT-REQUIRED header)`,
  });
}

/**
 * The payment's identity: SHA-256 of its transaction message (the wire bytes after the signatures), the
 * key the facilitator settles under too. The fee payer's empty signature slot is not part of it, so
 * filling that slot differently cannot make one payment look like two.
 */
export function paymentKey(payload: X402PaymentPayload): string | undefined {
  const encoded = payload.payload.transaction;
  if (typeof encoded !== 'string') return undefined;
  try {
    return messageKey(parseTransaction(decodeBase64(encoded)).message.bytes);
  } catch {
    return undefined;
  }
}

/** SHA-256 of a transaction's message bytes, hex: the key a payment is claimed and settled under. */
export function messageKey(messageBytes: Uint8Array): string {
  return createHash('sha256').update(messageBytes).digest('hex');
}

const SAME = ['scheme', 'network', 'amount', 'asset', 'payTo'] as const;

export interface CollectOptions {
  db: Kysely<any>;
  facilitator: FacilitatorClient | undefined;
  logger: Logger;
  requestId: string;
  requirements: PaymentRequirements;
  quote: PaymentRequired;
  header: string;
}

/**
 * Takes a payment for one request: verify it through the facilitator, run the handler with its response
 * held back, settle only if the handler succeeded, then release the response with PAYMENT-RESPONSE. A
 * failed handler or a failed settlement charges nothing.
 */
/**
 * Finishes a settlement an earlier request left unconfirmed: settled (now, or already) means the buyer
 * has paid, so the request is served with its receipt; still pending waits; failed frees the payment.
 */
async function resumeSettlement(res: Response, runHandler: () => void, options: CollectOptions & { facilitator: FacilitatorClient }, key: string, request: X402FacilitatorRequest): Promise<void> {
  const { db, facilitator, logger, requestId, requirements, quote } = options;
  let settlement: X402SettleResponse;
  try {
    settlement = await facilitator.settle(request);
  } catch (error) {
    await db.updateTable('runtime_payments').set({ status: 'unknown' }).where('key', '=', key).execute();
    if (!(error instanceof FacilitatorUnavailable)) throw error;
    return refuse(res, requestId, quote, { status: 503, code: 'facilitator_unavailable', message: 'The payment facilitator is unavailable; try this payment again shortly', retryAfterSeconds: error.retryAfterSeconds });
  }
  const settled = settlement.success || (settlement.errorReason === 'duplicate_settlement' && !!settlement.transaction);
  if (settled) {
    await db.updateTable('runtime_payments').set({ status: 'settled', payer: settlement.payer ?? null, transaction: settlement.transaction, settled_at: new Date() }).where('key', '=', key).execute();
    const receipt: X402SettleResponse = { success: true, transaction: settlement.transaction, network: requirements.network, ...(settlement.payer ? { payer: settlement.payer } : {}), amount: requirements.amount };
    res.locals.payment = { payer: settlement.payer ?? '', payTo: requirements.payTo, amount: requirements.amount, asset: requirements.asset, network: requirements.network } satisfies VerifiedPayment;
    res.setHeader(PAYMENT_RESPONSE_HEADER, encodeX402Header(receipt));
    logger.info({ requestId, transaction: settlement.transaction }, 'unconfirmed payment found settled; serving it');
    return runHandler();
  }
  if (settlement.transaction && settlement.errorReason !== 'invalid_exact_svm_transaction_failed') {
    await db.updateTable('runtime_payments').set({ status: 'pending' }).where('key', '=', key).execute();
    return refuse(res, requestId, quote, {
      status: 503,
      code: 'settlement_pending',
      reason: settlement.errorReason ?? 'settlement_pending',
      message: `The payment's transaction ${settlement.transaction} is not confirmed yet; try this payment again shortly`,
      retryAfterSeconds: 5,
    });
  }
  await db.deleteFrom('runtime_payments').where('key', '=', key).execute();
  return refuse(res, requestId, quote, {
    status: 402,
    code: 'payment_failed',
    reason: settlement.errorReason ?? 'unexpected_settle_error',
    message: `The earlier settlement of this payment failed: ${settlement.errorMessage ?? settlement.errorReason}; nothing was charged`,
  });
}

/**
 * PAYMENT-RESPONSE for an error answer to a request that carried a payment: nothing was settled. Said
 * explicitly because a client cannot otherwise tell our 502 (nothing charged) from a proxy's after a settlement.
 */
export function unsettledHeader(status: number, network: string, payer?: string): Record<string, string> {
  const unsettled: X402SettleResponse = {
    success: false,
    errorReason: 'response_not_successful',
    errorMessage: `the service answered ${status}; the payment was not settled and may be used again`,
    transaction: '',
    network,
    ...(payer ? { payer } : {}),
  };
  return { [PAYMENT_RESPONSE_HEADER]: encodeX402Header(unsettled) };
}

export async function collectPayment(res: Response, runHandler: () => void, options: CollectOptions): Promise<void> {
  const { db, facilitator, logger, requestId, requirements, quote } = options;
  if (!facilitator) {
    return refuse(res, requestId, quote, {
      status: 402,
      code: 'payment_unverifiable',
      message: 'This deployment has no facilitator to verify payments; nothing was charged',
    });
  }
  const parsed = X402PaymentPayloadSchema.safeParse(decodeX402Header(options.header));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return refuse(res, requestId, quote, {
      status: 402,
      code: 'payment_invalid',
      reason: 'invalid_payload',
      message: `PAYMENT-SIGNATURE is not a base64 JSON x402 v2 payment (${issue?.path.join('.') || 'header'}: ${issue?.message})`,
    });
  }
  const payload = parsed.data;
  const differs = SAME.find((field) => payload.accepted[field] !== requirements[field]);
  if (differs) {
    return refuse(res, requestId, quote, {
      status: 402,
      code: 'payment_invalid',
      reason: 'invalid_payment_requirements',
      message: `The payment was made for ${differs} ${payload.accepted[differs]}; this request requires ${requirements[differs]}`,
    });
  }
  const key = paymentKey(payload);
  if (!key) {
    return refuse(res, requestId, quote, {
      status: 402,
      code: 'payment_invalid',
      reason: 'invalid_exact_svm_payload_transaction_could_not_be_decoded',
      message: 'payload.transaction is not a base64 Solana transaction',
    });
  }

  const claimed = await db
    .insertInto('runtime_payments')
    .values({ key, status: 'verifying', resource: quote.resource.url, payer: null, pay_to: requirements.payTo, amount: BigInt(requirements.amount), transaction: null, created_at: new Date(), settled_at: null })
    .onConflict((oc) => oc.doNothing())
    .executeTakeFirst();
  const request: X402FacilitatorRequest = { x402Version: 2, paymentPayload: payload, paymentRequirements: requirements };
  if (!claimed.numInsertedOrUpdatedRows) {
    // The same payment again. If an earlier request with it ended before its settlement was confirmed,
    // this one takes the claim over (once, atomically) and finishes that settlement; otherwise it is spent.
    const resumed = await db.updateTable('runtime_payments').set({ status: 'resuming' }).where('key', '=', key).where('status', 'in', ['pending', 'unknown']).executeTakeFirst();
    if (!resumed.numUpdatedRows) {
      return refuse(res, requestId, quote, {
        status: 402,
        code: 'payment_already_used',
        reason: 'duplicate_settlement',
        message: 'This payment has already been presented for another request; pay again for this one',
      });
    }
    return resumeSettlement(res, runHandler, { ...options, facilitator }, key, request);
  }
  const release = () => db.deleteFrom('runtime_payments').where('key', '=', key).execute();

  let payer: string | undefined;
  try {
    const verdict = await facilitator.verify(request);
    if (!verdict.isValid) {
      await release();
      return refuse(res, requestId, quote, {
        status: 402,
        code: 'payment_invalid',
        reason: verdict.invalidReason ?? 'invalid_payload',
        message: `The payment was refused: ${verdict.invalidMessage ?? verdict.invalidReason ?? 'no reason given'}; nothing was charged`,
      });
    }
    payer = verdict.payer;
  } catch (error) {
    await release();
    if (!(error instanceof FacilitatorUnavailable)) throw error;
    logger.warn({ requestId, err: error.message }, 'facilitator unavailable at verify');
    return refuse(res, requestId, quote, {
      status: 503,
      code: 'facilitator_unavailable',
      message: 'The payment facilitator is unavailable; nothing was charged, try again shortly',
      retryAfterSeconds: error.retryAfterSeconds,
    });
  }
  res.locals.payment = { payer: payer ?? '', payTo: requirements.payTo, amount: requirements.amount, asset: requirements.asset, network: requirements.network } satisfies VerifiedPayment;

  // Hold the handler's response back until the payment settles: status, headers and body stay in the
  // response object (nothing is written to the socket) until flush() puts the originals back.
  const chunks: Buffer[] = [];
  const original = { write: res.write, end: res.end, writeHead: res.writeHead };
  let ended = false;
  let status = 0;
  let headers: Record<string, number | string | string[] | undefined> = {};
  const hold = (chunk: unknown, encoding: unknown, callback: unknown) => {
    if (!ended && chunk !== undefined && chunk !== null && typeof chunk !== 'function') {
      chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8'));
    }
    const done = [chunk, encoding, callback].find((a) => typeof a === 'function') as (() => void) | undefined;
    if (done) process.nextTick(done);
  };
  res.writeHead = ((status: number, ...rest: unknown[]) => {
    res.statusCode = status;
    const headers = rest.find((a) => a && typeof a === 'object' && !Array.isArray(a)) as Record<string, string> | undefined;
    for (const [name, value] of Object.entries(headers ?? {})) res.setHeader(name, value);
    return res;
  }) as Response['writeHead'];
  res.write = ((chunk: unknown, encoding?: unknown, callback?: unknown) => {
    hold(chunk, encoding, callback);
    return true;
  }) as Response['write'];
  res.end = ((chunk?: unknown, encoding?: unknown, callback?: unknown) => {
    // Only the first end counts: a handler that answers and then fails must not settle or answer twice.
    if (ended) return res;
    hold(chunk, encoding, callback);
    ended = true;
    // The answer as it stood at its end; anything set later (an error handler running after it) is ignored.
    status = res.statusCode;
    headers = { ...res.getHeaders() };
    settleThenSend().catch((error: unknown) => logger.error({ requestId, err: error }, 'paid response could not be sent'));
    return res;
  }) as Response['end'];
  /** Sends the handler's answer as it ended (extra: headers to add), or with `answer` a refusal refuse() has set up. */
  const flush = (body: Buffer | string, answer?: number, extra: Record<string, string> = {}) => {
    Object.assign(res, original);
    if (answer === undefined) {
      for (const name of res.getHeaderNames()) res.removeHeader(name);
      for (const [name, value] of Object.entries({ ...headers, ...extra })) if (value !== undefined) res.setHeader(name, value);
      res.statusCode = status;
    }
    res.end(body);
  };

  async function settleThenSend() {
    const body = Buffer.concat(chunks);
    // Only a success is paid for: an error, a redirect or a 304 (nothing delivered) settles nothing.
    if (status < 200 || status >= 300) {
      await release().catch((error: unknown) => logger.error({ requestId, err: error }, 'payment claim not released'));
      return flush(body, undefined, unsettledHeader(status, requirements.network, payer));
    }
    try {
      let settlement: X402SettleResponse = await facilitator!.settle(request);
      // A confirmation not seen in time: ask once more, which makes the facilitator look for it again.
      if (!settlement.success && settlement.errorReason === 'settlement_pending') settlement = await facilitator!.settle(request);
      if (settlement.success) {
        await db.updateTable('runtime_payments').set({ status: 'settled', payer: settlement.payer ?? payer ?? null, transaction: settlement.transaction, settled_at: new Date() }).where('key', '=', key).execute();
        return flush(body, undefined, { [PAYMENT_RESPONSE_HEADER]: encodeX402Header(settlement) });
      }
      const receipt = { [PAYMENT_RESPONSE_HEADER]: encodeX402Header(settlement) };
      res.removeHeader('etag');
      // A failure that names a transaction (other than one that failed on chain) may still land: keep the
      // claim, so this payment serves nothing else, and say so.
      const mayLand = !!settlement.transaction && settlement.errorReason !== 'invalid_exact_svm_transaction_failed';
      if (mayLand) {
        await db.updateTable('runtime_payments').set({ status: 'pending', transaction: settlement.transaction }).where('key', '=', key).execute();
        return refuse(res, requestId, quote, {
          status: 503,
          code: 'settlement_pending',
          reason: settlement.errorReason ?? 'settlement_pending',
          message: `The payment was sent (transaction ${settlement.transaction}) but its settlement is not confirmed; the response was withheld. Check the transaction on chain before paying again`,
          retryAfterSeconds: 5,
          extraHeaders: receipt,
        }, (b) => flush(b, res.statusCode));
      }
      await release();
      return refuse(res, requestId, quote, {
        status: 402,
        code: 'payment_failed',
        reason: settlement.errorReason ?? 'unexpected_settle_error',
        message: `Settlement failed: ${settlement.errorMessage ?? settlement.errorReason}; nothing was charged and the response was withheld`,
        extraHeaders: receipt,
      }, (b) => flush(b, res.statusCode));
    } catch (error) {
      // The settle request may have reached the facilitator: keep the claim so this payment serves nothing else.
      await db.updateTable('runtime_payments').set({ status: 'unknown' }).where('key', '=', key).execute().catch(() => undefined);
      logger.error({ requestId, err: error }, 'settlement outcome unknown');
      res.removeHeader('etag');
      res.removeHeader(PAYMENT_RESPONSE_HEADER);
      return refuse(res, requestId, quote, {
        status: 503,
        code: 'settlement_unknown',
        message: 'The payment facilitator did not answer the settlement; the response was withheld. The payment may have settled: look for it on chain before paying again',
        retryAfterSeconds: error instanceof FacilitatorUnavailable ? error.retryAfterSeconds : 5,
      }, (b) => flush(b, res.statusCode));
    }
  }

  runHandler();
}
