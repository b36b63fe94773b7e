import { createHash } from 'node:crypto';
import type { AppRoute } from '@ts-rest/core';
import {
  PAYMENT_REQUIRED_HEADER,
  PAYMENT_RESPONSE_HEADER,
  SIGN_IN_WITH_X_HEADER,
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
import { sql, type Kysely, type Migration } from 'kysely';
import type { Logger } from 'pino';
import { bazaarDeclaration } from './bazaar';
import {
  PAYMENT_IDENTIFIER,
  bindPaymentId,
  boundTo,
  claimWithId,
  identityOf,
  paymentIdMigrations,
  paymentIdentifierDeclaration,
  recordWithAnswer,
  replayAnswer,
  signedPayer,
  storeAnswer,
  storedAnswer,
  type KeptAnswer,
  type PaymentIdentity,
} from './payment-id';
import { verifySiwx } from './siwx';
import { decodeBase64, parseTransaction } from '../solana/wire';
import { HttpError, envelope } from './errors';
import { FacilitatorUnavailable, SETTLE_TIMEOUT_MS, type FacilitatorClient } from './facilitator-client';
import type { Vault } from './vault';
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
  /** Test-only fault injection on the paid path (PAYWALL_FAULT): see PAYWALL_FAULTS. */
  fault?: PaywallFault;
  /** Accept payment sessions (vouchers) beside `exact`: paywall-session.ts. */
  sessions?: import('./paywall-session').SessionPaywallOptions;
}

/**
 * A route's price for one request: a USD amount, or the id of one of the route's declared tiers; and,
 * where the money goes to someone other than the service (a seller on a marketplace), their wallet.
 */
export type PriceDecision = ({ usd: string } | { tier: string }) & { payTo?: string };
export type PriceResolver<Request = ParsedRequest> = (request: Request) => PriceDecision | Promise<PriceDecision>;

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

export function buildQuote(
  requirements: PaymentRequirements,
  resourceUrl: string,
  route: AppRoute,
  error: string,
): PaymentRequired {
  return {
    x402Version: 2,
    error,
    resource: { url: resourceUrl, description: route.summary ?? route.path, mimeType: 'application/json' },
    accepts: [requirements],
    // x402 discovery: how to call this route, from the contract (bazaar.ts); the facilitator catalogs it once paid.
    // x402 payment-identifier: a payment repeated with the same id is answered once (payment-id.ts).
    extensions: { bazaar: bazaarDeclaration(route), [PAYMENT_IDENTIFIER]: paymentIdentifierDeclaration() },
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
  '003_payment_recovery': {
    async up(db) {
      // lease_until: until when the request holding the claim owns it (a claim past it belongs to a request
      // that died, and the next presentation of the payment finishes it); served_at: when the answer of a
      // settled payment left (for a payment with an id: when its answer was kept, see updateKeeping);
      // refund_transaction: the refund of a settle-first request that failed.
      await db.schema.alterTable('runtime_payments').addColumn('lease_until', 'timestamptz').execute();
      await db.schema.alterTable('runtime_payments').addColumn('served_at', 'timestamptz').execute();
      await db.schema.alterTable('runtime_payments').addColumn('refund_transaction', 'text').execute();
      await db
        .updateTable('runtime_payments')
        .set((eb) => ({ served_at: eb.ref('settled_at') }))
        .where('status', '=', 'settled')
        .execute();
    },
  },
  ...paymentIdMigrations,
};

/** What a paid request's handler may know about its payment (`res.locals.payment`). */
export interface VerifiedPayment {
  payer: string;
  payTo: string;
  amount: string;
  asset: string;
  network: string;
}

export interface Refusal {
  status: 402 | 429 | 503;
  code: string;
  message: string;
  reason?: string;
  retryAfterSeconds?: number;
  extraHeaders?: Record<string, string>;
}

/** Sends a 402 (with a fresh quote) or a 503 (with Retry-After) in the error envelope. */
export function refuse(
  res: Response,
  requestId: string,
  quote: PaymentRequired,
  refusal: Refusal,
  send: (body: string) => void = (b) => void res.end(b),
): void {
  const fresh = { ...quote, error: refusal.message };
  // For metrics and the warn log line of a refused payment (app.ts): its code and x402 reason.
  res.locals.paymentRefusal = { code: refusal.code, ...(refusal.reason ? { reason: refusal.reason } : {}) };
  res.statusCode = refusal.status;
  res.setHeader('cache-control', 'no-store');
  res.setHeader('content-type', 'application/json; charset=utf-8');
  if (refusal.status === 402) res.setHeader(PAYMENT_REQUIRED_HEADER, encodeX402Header(fresh));
  if (refusal.retryAfterSeconds) res.setHeader('retry-after', String(refusal.retryAfterSeconds));
  for (const [name, value] of Object.entries(refusal.extraHeaders ?? {})) res.setHeader(name, value);
  const refund = res.locals.refund as { transaction: string; amountAtomic: string } | undefined;
  const details =
    refusal.status === 402
      ? { ...fresh, ...(refusal.reason ? { reason: refusal.reason } : {}), ...(refund ? { refund } : {}) }
      : refusal.reason
        ? { reason: refusal.reason }
        : undefined;
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

/**
 * Test-only fault points on the paid path (PAYWALL_FAULT; never set in production): at the named step the
 * process kills itself (as kill -9 would), or, for `fail-record`, the database write of a settlement fails.
 * The chaos tests (tests/paid-path-chaos.test.ts) use them to stop a real service at each step.
 */
export const PAYWALL_FAULTS = [
  'after-claim',
  'after-verify',
  'after-handler',
  'after-settle',
  'after-record',
  'before-refund',
  'after-refund',
  'fail-record',
] as const;
export type PaywallFault = (typeof PAYWALL_FAULTS)[number];

export interface CollectOptions {
  db: Kysely<PaywallTables>;
  facilitator: FacilitatorClient | undefined;
  logger: Logger;
  requestId: string;
  requirements: PaymentRequirements;
  quote: PaymentRequired;
  header: string;
  /** The route settles before its handler runs (RouteMeta.settle 'first'); a failed handler is refunded. */
  settleFirst?: boolean;
  /** The service's vault, for refunds of settle-first routes. */
  vault?: () => Promise<Vault>;
  now?: () => Date;
  fault?: PaywallFault;
}

/** A settled payment, as a settle-first handler sees it: `settlementOf(res)`. */
export interface Settlement {
  transaction: string;
  payer: string;
  payTo: string;
  /** Atomic units, decimal string. */
  amount: string;
  asset: string;
  network: string;
  /** The payment key (SHA-256 of its transaction message): key the handler's records by it. */
  key: string;
}

/** The settled payment of a request to a settle-first route, for its handler. */
export function settlementOf(res: Response): Settlement {
  const settlement = res.locals.settlement as Settlement | undefined;
  if (!settlement) throw new Error('settlementOf() used on a route that does not settle first');
  return settlement;
}

/**
 * For a settle-first handler whose outcome is not known yet (it paid a third party whose answer was lost): its failure
 * (status >= 400) is not refunded. The claim stays settled and unserved with its lease ended, and the error goes out
 * with the receipt, so presenting the same payment again runs the handler again to finish (serve, or fail and be
 * refunded). Without it, a third party that keeps the payment and never answers would be paid while the buyer is
 * refunded from the service's own float, round after round.
 */
export function keepPayment(res: Response): void {
  if (!res.locals.settlement) throw new Error('keepPayment() used on a route that does not settle first');
  res.locals.keepPayment = true;
}

/** A payment's claim: one row of `runtime_payments` per payment presented (its key). */
interface PaymentRow {
  key: string;
  status: string;
  resource: string;
  payer: string | null;
  pay_to: string;
  amount: bigint;
  transaction: string | null;
  created_at: Date;
  settled_at: Date | null;
  lease_until: Date | null;
  served_at: Date | null;
  refund_transaction: string | null;
}

/** The paywall's tables, as its queries see them. */
export interface PaywallTables {
  runtime_payments: PaymentRow;
}

type Claim = Omit<PaymentRow, 'resource' | 'pay_to' | 'amount' | 'settled_at'>;

/**
 * Claim states a live request holds (taken over only once its lease has expired: its process died or
 * stalled), and states a request left behind having given up (taken over at once by the next presentation).
 */
const IN_FLIGHT = ['verifying', 'settling', 'resuming', 'settled', 'refunding'];
const GIVEN_UP = ['pending', 'unknown', 'refund_pending'];
/** Claim states in which the payment may have been charged already: taking one over serves its request. */
const MAYBE_CHARGED = ['settling', 'resuming', 'settled', 'pending', 'unknown'];

/** One paid request on its way through the paywall. */
interface Paid {
  res: Response;
  runHandler: () => void;
  options: CollectOptions;
  facilitator: FacilitatorClient;
  key: string;
  request: X402FacilitatorRequest;
  now: () => Date;
  /** Until when this request's claim is its own; renewed at each step. */
  leaseUntil: Date;
  payer?: string;
}

export const refusalOf = (
  status: Refusal['status'],
  code: string,
  message: string,
  extra: Omit<Refusal, 'status' | 'code' | 'message'> = {},
): Refusal => ({ status, code, message, ...extra });

/**
 * Until when a claim written at `from` stays its request's without another write: the payment's own validity
 * (maxTimeoutSeconds) plus the longest settle call. A claim older than that belongs to a request that died.
 */
function leaseEnd(from: Date, requirements: PaymentRequirements): Date {
  return new Date(from.getTime() + requirements.maxTimeoutSeconds * 1000 + SETTLE_TIMEOUT_MS);
}

function injectFault(options: CollectOptions, step: PaywallFault): void {
  if (options.fault !== step) return;
  if (step === 'fail-record')
    throw new Error('injected fault (PAYWALL_FAULT=fail-record): the settlement could not be recorded');
  process.kill(process.pid, 'SIGKILL');
}

/** Updates this request's claim, renewing its lease. */
async function update(p: Paid, values: Partial<PaymentRow>): Promise<void> {
  const leaseUntil = leaseEnd(p.now(), p.options.requirements);
  await p.options.db
    .updateTable('runtime_payments')
    .set({ ...values, lease_until: leaseUntil })
    .where('key', '=', p.key)
    .execute();
  p.leaseUntil = leaseUntil;
}

/**
 * update() for a settled, identified payment that also keeps its answer, in the same statement. A kept answer counts
 * as served: its buyer gets it again by presenting the payment with its id (the answer is replayed, the handler not
 * run again), so the claim is marked served with it. True when the answer was kept.
 */
async function updateKeeping(
  p: Paid,
  values: Partial<PaymentRow>,
  identity: PaymentIdentity,
  answer: KeptAnswer,
): Promise<boolean> {
  const now = p.now();
  const leaseUntil = leaseEnd(now, p.options.requirements);
  const rows = await recordWithAnswer<{ served_at: Date | null }>(p.options.db, identity, p.key, answer, now, (kept) =>
    p.options.db
      .updateTable('runtime_payments')
      .set({
        ...values,
        lease_until: leaseUntil,
        served_at: sql<Date | null>`case when ${kept} then ${now}::timestamptz end`,
      })
      .where('key', '=', p.key)
      .returning('served_at'),
  );
  p.leaseUntil = leaseUntil;
  return rows[0]?.served_at != null;
}

const release = (p: Paid) => p.options.db.deleteFrom('runtime_payments').where('key', '=', p.key).execute();

/**
 * Takes a payment for one request. parsePayment reads it; claimPayment makes it this request's (or takes
 * over a claim a dead request left behind); verifyPayment asks the facilitator; then either the handler
 * runs with its answer held back and settleThenSend settles only a success (the default), or settleFirst
 * settles before the handler and refunds a failure (settle-first routes). Every outcome is recorded in
 * `runtime_payments` before it is answered, so a crash at any step leaves a claim the next presentation of
 * the same payment finishes: charged means served once, not charged means not served.
 */
export async function collectPayment(res: Response, runHandler: () => void, options: CollectOptions): Promise<void> {
  const { requestId, quote } = options;
  const facilitator = options.facilitator;
  if (!facilitator) {
    return refuse(
      res,
      requestId,
      quote,
      refusalOf(
        402,
        'payment_unverifiable',
        'This deployment has no facilitator to verify payments; nothing was charged',
      ),
    );
  }
  const parsed = parsePayment(options);
  if ('refusal' in parsed) return refuse(res, requestId, quote, parsed.refusal);
  const now = options.now ?? (() => new Date());
  const p: Paid = {
    res,
    runHandler,
    options,
    facilitator,
    key: parsed.key,
    request: parsed.request,
    now,
    leaseUntil: now(),
  };

  // A payment identified (x402 payment-identifier) as one already answered gets that answer, uncharged. A payment
  // presented for the first time (its claim is new) is not one: binding its id below finds any earlier answer. Only a
  // payment presented again looks the answer up before its claim is examined (a served claim would refuse it).
  const identity = await identityOf(res, options.header, quote, parsed.request);
  let claim: Awaited<ReturnType<typeof claimPayment>> | undefined;
  let bound = false;
  if (identity) {
    const inserted = await insertClaimWithId(p, identity);
    if (inserted.claimed) [claim, bound] = [{}, inserted.bound];
    else {
      const stored = await storedAnswer(options.db, identity);
      if (stored) {
        const refusal = await ownPayment(p, stored.key);
        return refusal ? refuse(res, requestId, quote, refusal) : replayAnswer(res, requestId, stored);
      }
    }
    res.locals.paymentIdentity = identity;
  }
  claim ??= await claimPayment(p);
  if (identity && !bound && !('refusal' in claim) && !('refunded' in claim) && !claim.takenOver) {
    const binding = await bindPaymentId(options.db, identity, p.key, p.request, now()).catch(async (error: unknown) => {
      await release(p);
      throw error;
    });
    if (!('bound' in binding)) await release(p);
    const bound = 'replay' in binding ? binding.replay.key : 'first' in binding ? binding.first.key : p.key;
    const refusal = await ownPayment(p, bound);
    if (refusal) return refuse(res, requestId, quote, refusal);
    if ('replay' in binding) return replayAnswer(res, requestId, binding.replay);
    // The id is an earlier payment's: this one is set aside, and that one goes on as if presented again.
    if ('first' in binding) {
      options.logger.info(
        { requestId, key: p.key, first: binding.first.key },
        'payment identifier of an earlier payment: finishing that one instead',
      );
      p.key = binding.first.key;
      p.request = binding.first.request;
      claim = await claimPayment(p);
    }
  }
  if ('refusal' in claim) return refuse(res, requestId, quote, claim.refusal);
  if ('refunded' in claim) return answerRefunded(p, claim.refunded);
  injectFault(options, 'after-claim');
  const from = claim.takenOver?.status;
  if (from)
    options.logger.warn(
      { requestId, key: p.key, from },
      'taking over the unfinished claim of an earlier request with this payment',
    );
  if (from === 'pending' || from === 'unknown') return settleFirst(p);
  if (from === 'settled')
    return serveSettled(p, {
      success: true,
      transaction: claim.takenOver!.transaction ?? '',
      network: options.requirements.network,
      payer: claim.takenOver!.payer ?? '',
      amount: options.requirements.amount,
    });
  if (from === 'refunding' || from === 'refund_pending') return refundAgain(p, claim.takenOver!);

  const verified = await verifyPayment(p);
  if ('refusal' in verified) return refuse(res, requestId, quote, verified.refusal);
  injectFault(options, 'after-verify');
  // Settled already (by a request that died before recording it): finish that settlement and serve it.
  if (verified.settledBefore || options.settleFirst) return settleFirst(p);
  return runHeld(p);
}

/**
 * Reads PAYMENT-SIGNATURE: a well-formed x402 v2 payment for exactly this request's requirements, and its
 * key. Nothing is recorded for a refusal here.
 */
function parsePayment(
  options: CollectOptions,
): { key: string; request: X402FacilitatorRequest } | { refusal: Refusal } {
  const { requirements, quote } = options;
  const parsed = X402PaymentPayloadSchema.safeParse(decodeX402Header(options.header));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return {
      refusal: refusalOf(
        402,
        'payment_invalid',
        `PAYMENT-SIGNATURE is not a base64 JSON x402 v2 payment (${issue?.path.join('.') || 'header'}: ${issue?.message})`,
        { reason: 'invalid_payload' },
      ),
    };
  }
  const payload = parsed.data;
  const differs = SAME.find((field) => payload.accepted[field] !== requirements[field]);
  if (differs) {
    return {
      refusal: refusalOf(
        402,
        'payment_invalid',
        `The payment was made for ${differs} ${payload.accepted[differs]}; this request requires ${requirements[differs]}`,
        { reason: 'invalid_payment_requirements' },
      ),
    };
  }
  const key = paymentKey(payload);
  if (!key) {
    return {
      refusal: refusalOf(402, 'payment_invalid', 'payload.transaction is not a base64 Solana transaction', {
        reason: 'invalid_exact_svm_payload_transaction_could_not_be_decoded',
      }),
    };
  }
  // The resource and its declaration are the server's to state, not the client's echo (the facilitator catalogs them).
  const stated = { ...payload, resource: quote.resource, extensions: { ...payload.extensions, ...quote.extensions } };
  return { key, request: { x402Version: 2, paymentPayload: stated, paymentRequirements: requirements } };
}

/** A new claim of the payment (true), unless it has one already. */
async function insertClaim(p: Paid): Promise<boolean> {
  const now = p.now();
  const leaseUntil = leaseEnd(now, p.options.requirements);
  const claimed = await claimInsert(p, now, leaseUntil).executeTakeFirst();
  if (!claimed.numInsertedOrUpdatedRows) return false;
  p.leaseUntil = leaseUntil;
  return true;
}

/**
 * insertClaim for a payment with an id: the claim, and the id bound to it when the claim is new, in one statement.
 * `bound` false with a new claim: the id is in use, for bindPaymentId to examine.
 */
async function insertClaimWithId(p: Paid, identity: PaymentIdentity): Promise<{ claimed: boolean; bound: boolean }> {
  const now = p.now();
  const leaseUntil = leaseEnd(now, p.options.requirements);
  const claim = claimInsert(p, now, leaseUntil).returning('key');
  const done = await claimWithId(p.options.db, claim, identity, p.key, p.request, now);
  if (done.claimed) p.leaseUntil = leaseUntil;
  return done;
}

function claimInsert(p: Paid, now: Date, leaseUntil: Date) {
  const { db, requirements, quote } = p.options;
  return db
    .insertInto('runtime_payments')
    .values({
      key: p.key,
      status: 'verifying',
      resource: quote.resource.url,
      payer: null,
      pay_to: requirements.payTo,
      amount: BigInt(requirements.amount),
      transaction: null,
      created_at: now,
      settled_at: null,
      lease_until: leaseUntil,
    })
    .onConflict((oc) => oc.doNothing());
}

/**
 * Makes the payment this request's: a new claim, or the claim of an earlier request with it that will not
 * finish (it gave up with the outcome unknown, or its lease expired: its process died or its database write
 * failed), taken over atomically so only one request resumes it. A claim still in flight, or a payment that
 * has served its request, is refused.
 */
async function claimPayment(p: Paid): Promise<{ takenOver?: Claim } | { refusal: Refusal } | { refunded: Claim }> {
  const { db, requirements } = p.options;
  for (let attempt = 0; attempt < 3; attempt++) {
    if (await insertClaim(p)) return {};
    const now = p.now();
    const leaseUntil = leaseEnd(now, requirements);
    const row = (await db.selectFrom('runtime_payments').selectAll().where('key', '=', p.key).executeTakeFirst()) as
      Claim | undefined;
    if (!row) continue; // released meanwhile: claim it afresh
    if (row.status === 'refunded') return { refunded: row };
    const heldUntil = row.lease_until ?? leaseEnd(new Date(row.created_at), requirements);
    const served = row.status === 'settled' && row.served_at !== null;
    const stale =
      GIVEN_UP.includes(row.status) ||
      (IN_FLIGHT.includes(row.status) && !served && heldUntil.getTime() <= now.getTime());
    if (!stale) {
      const waitSeconds = Math.ceil((heldUntil.getTime() - now.getTime()) / 1000);
      return {
        refusal:
          served || !IN_FLIGHT.includes(row.status)
            ? refusalOf(
                402,
                'payment_already_used',
                'This payment has already been presented for another request; pay again for this one',
                { reason: 'duplicate_settlement' },
              )
            : refusalOf(
                402,
                'payment_already_used',
                `This payment is being used by another request right now; if that request does not finish, present it again after ${waitSeconds} s to finish it`,
                {
                  reason: 'duplicate_settlement',
                  retryAfterSeconds: Math.max(1, waitSeconds),
                },
              ),
      };
    }
    if (MAYBE_CHARGED.includes(row.status)) {
      const refusal = await notItsBuyer(p, row);
      if (refusal) return { refusal };
    }
    // Compare-and-set on the state read (still that status, still unserved, lease still over): of several
    // presentations racing for a dead claim, one wins; the others find it leased again.
    let takeover = db
      .updateTable('runtime_payments')
      .set({ status: 'resuming', lease_until: leaseUntil })
      .where('key', '=', p.key)
      .where('status', '=', row.status)
      .where('served_at', 'is', null);
    if (!GIVEN_UP.includes(row.status))
      takeover = takeover.where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<=', now)]));
    const took = await takeover.executeTakeFirst();
    if (took.numUpdatedRows) {
      p.leaseUntil = leaseUntil;
      if (row.payer) p.payer = row.payer;
      return { takenOver: row };
    }
  }
  return {
    refusal: refusalOf(402, 'payment_already_used', 'This payment is being used by another request right now', {
      reason: 'duplicate_settlement',
      retryAfterSeconds: 5,
    }),
  };
}

/**
 * A payment charged for a request that was never answered (its process died, or its caller hung up) is served when it
 * comes back, but only to its buyer: once settled, its transaction is public, and a copy of it must not buy a stranger
 * the answer, nor run their own request on it. The buyer shows itself with the payment identifier the payment was
 * first sent with (secret between buyer and seller; the SDK sends one with every payment), or with SIGN-IN-WITH-X
 * signed by the payer. Checked before the claim is taken over, so a refused copy holds nothing up.
 */
async function notItsBuyer(p: Paid, row: Claim): Promise<Refusal | undefined> {
  const { db, requirements, quote } = p.options;
  const identity = p.res.locals.paymentIdentity as PaymentIdentity | undefined;
  if (identity && (await boundTo(db as never, identity, p.key))) return undefined;
  const payer = row.payer ?? (await signedPayer(p.request));
  const proof = p.res.req.header(SIGN_IN_WITH_X_HEADER);
  // A route that signs its caller in has checked the proof already (and spent its nonce).
  const caller =
    (p.res.locals.caller as string | undefined) ??
    (proof
      ? await verifySiwx(proof, {
          origin: new URL(quote.resource.url).origin,
          network: requirements.network,
          db: db as never,
        })
      : undefined);
  if (payer && caller === payer) return undefined;
  return refusalOf(
    402,
    'payment_already_used',
    `This payment was charged for a request that was not answered; only its buyer can finish it: present it again with the payment identifier it was first sent with, or with SIGN-IN-WITH-X signed by its payer ${payer ?? ''}`.trim(),
    { reason: 'duplicate_settlement' },
  );
}

/**
 * Asks the facilitator whether the payment is good. A payment it reports settled already was settled for
 * this claim by a request that died before recording it (a settled payment of ours always leaves its claim):
 * it is finished, not refused. Any other refusal frees the claim: nothing was charged.
 */
/**
 * A payment naming an id bound to another payment gets that payment's answer only if it is good itself (the
 * facilitator verifies it; it is never settled): the first payment's transaction is public once settled, and a copy
 * of it, or a guessed id, must not buy a stranger the answer. The same payment presented again needs no proof.
 */
async function ownPayment(p: Paid, boundKey: string): Promise<Refusal | undefined> {
  if (boundKey === p.key) return undefined;
  const verified = await verifyPayment(p);
  if ('refusal' in verified) return verified.refusal;
  if (verified.settledBefore) {
    return refusalOf(
      402,
      'payment_already_used',
      'This payment was settled for another request; a payment identifier is answered again only for the payment it was first used with, or a new payment of its payer',
      {
        reason: 'payment_already_used',
      },
    );
  }
  return undefined;
}

async function verifyPayment(p: Paid): Promise<{ settledBefore: boolean } | { refusal: Refusal }> {
  const { logger, requestId } = p.options;
  try {
    const verdict = await p.facilitator.verify(p.request);
    if (verdict.isValid) {
      p.payer = verdict.payer ?? p.payer;
      return { settledBefore: false };
    }
    if (verdict.invalidReason === 'duplicate_settlement') return { settledBefore: true };
    await release(p);
    return {
      refusal: refusalOf(
        402,
        'payment_invalid',
        `The payment was refused: ${verdict.invalidMessage ?? verdict.invalidReason ?? 'no reason given'}; nothing was charged`,
        {
          reason: verdict.invalidReason ?? 'invalid_payload',
        },
      ),
    };
  } catch (error) {
    await release(p);
    if (!(error instanceof FacilitatorUnavailable)) throw error;
    logger.warn({ requestId, err: error.message }, 'facilitator unavailable at verify');
    return {
      refusal: refusalOf(
        503,
        'facilitator_unavailable',
        'The payment facilitator is unavailable; nothing was charged, try again shortly',
        { retryAfterSeconds: error.retryAfterSeconds },
      ),
    };
  }
}

/** The handler's answer as it ended, held back from the socket until the payment's fate is known. */
export interface HeldAnswer {
  status: number;
  headers: Record<string, number | string | string[] | undefined>;
  body: Buffer;
  /**
   * Sends the held answer (extra: headers to add; body: in place of the held one), or with `answer` a refusal refuse()
   * has set up.
   */
  flush(body: Buffer | string, answer?: number, extra?: Record<string, string>): void;
}

/**
 * Holds the handler's response back: status, headers and body stay in the response object (nothing is
 * written to the socket) until flush() puts the originals back. `onEnd` runs once, at the handler's end.
 */
export function holdResponse(
  res: Response,
  onEnd: (held: HeldAnswer) => Promise<void>,
  logger: Logger,
  requestId: string,
): void {
  const chunks: Buffer[] = [];
  const original = { write: res.write, end: res.end, writeHead: res.writeHead };
  let ended = false;
  const hold = (chunk: unknown, encoding: unknown, callback: unknown) => {
    if (!ended && chunk !== undefined && chunk !== null && typeof chunk !== 'function') {
      chunks.push(
        Buffer.isBuffer(chunk)
          ? chunk
          : Buffer.from(chunk as string, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8'),
      );
    }
    const done = [chunk, encoding, callback].find((a) => typeof a === 'function') as (() => void) | undefined;
    if (done) process.nextTick(done);
  };
  res.writeHead = ((status: number, ...rest: unknown[]) => {
    res.statusCode = status;
    const headers = rest.find((a) => a && typeof a === 'object' && !Array.isArray(a)) as
      Record<string, string> | undefined;
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
    const status = res.statusCode;
    const headers = { ...res.getHeaders() };
    const flush = (body: Buffer | string, answer?: number, extra: Record<string, string> = {}) => {
      Object.assign(res, original);
      if (answer === undefined) {
        for (const name of res.getHeaderNames()) res.removeHeader(name);
        for (const [name, value] of Object.entries({ ...headers, ...extra }))
          if (value !== undefined) res.setHeader(name, value);
        res.setHeader('content-length', Buffer.byteLength(body));
        res.statusCode = status;
      }
      res.end(body);
    };
    onEnd({ status, headers, body: Buffer.concat(chunks), flush }).catch((error: unknown) => {
      logger.error({ requestId, err: error }, 'paid response could not be sent');
      if (!res.headersSent)
        flush(
          JSON.stringify(
            envelope(
              requestId,
              'internal_error',
              'An unexpected error occurred; it has been logged with this request id',
            ),
          ),
          undefined,
          {},
        );
    });
    return res;
  }) as Response['end'];
}

/** Records a served answer once it has left: a settled payment whose answer never left serves it again. */
function markServed(p: Paid): void {
  p.res.once('finish', () => {
    p.options.db
      .updateTable('runtime_payments')
      .set({ served_at: p.now() })
      .where('key', '=', p.key)
      .execute()
      .catch((error: unknown) =>
        p.options.logger.error({ requestId: p.options.requestId, err: error }, 'served payment not recorded'),
      );
  });
}

/** The default order: run the handler with its answer held, then settle-then-send. */
function runHeld(p: Paid): void {
  const { requirements, logger, requestId } = p.options;
  p.res.locals.payment = {
    payer: p.payer ?? '',
    payTo: requirements.payTo,
    amount: requirements.amount,
    asset: requirements.asset,
    network: requirements.network,
  } satisfies VerifiedPayment;
  holdResponse(p.res, (held) => settleThenSend(p, held), logger, requestId);
  p.runHandler();
}

/**
 * Settles the payment of a handler's answer, then sends it. Only a success is paid for: an error, a
 * redirect or a 304 (nothing delivered) settles nothing and frees the payment. A settlement that failed
 * withholds the answer and says so; one that may still land keeps the claim.
 */
async function settleThenSend(p: Paid, held: HeldAnswer): Promise<void> {
  const { requirements, requestId, logger, quote } = p.options;
  if (held.status < 200 || held.status >= 300) {
    await release(p).catch((error: unknown) => logger.error({ requestId, err: error }, 'payment claim not released'));
    return held.flush(held.body, undefined, unsettledHeader(held.status, requirements.network, p.payer));
  }
  injectFault(p.options, 'after-handler');
  let outcome: Awaited<ReturnType<typeof settleNow>>;
  try {
    await update(p, { status: 'settling' });
  } catch (error) {
    // The claim could not be written before settling: nothing was sent to the facilitator.
    logger.error({ requestId, err: error }, 'payment claim not updated; not settling');
    outcome = {
      refusal: refusalOf(
        503,
        'payment_state_unavailable',
        'The service could not record this payment; nothing was charged and the response was withheld, try again shortly',
        { retryAfterSeconds: 5 },
      ),
    };
  }
  outcome ??= await settleNow(p, held);
  if ('refusal' in outcome) {
    p.res.removeHeader('etag');
    return refuse(p.res, requestId, quote, outcome.refusal, (b) => held.flush(b, p.res.statusCode));
  }
  // An identified payment's answer was kept with the settlement's record (settleNow); any other is served once it left.
  if (!outcome.kept) markServed(p);
  return held.flush(held.body, undefined, { [PAYMENT_RESPONSE_HEADER]: outcome.header });
}

/** The answer of an identified payment, as payment-id.ts keeps it. */
function answerOf(held: HeldAnswer, receipt: string): KeptAnswer {
  const type = held.headers['content-type'];
  return {
    status: held.status,
    type: typeof type === 'string' ? type : undefined,
    body: held.body,
    settlement: receipt,
  };
}

/** An identified payment's answer, kept before it leaves so that a retry with the same id gets it (payment-id.ts). */
async function keepAnswer(p: Paid, held: HeldAnswer, receipt: string): Promise<void> {
  const identity = p.res.locals.paymentIdentity as PaymentIdentity | undefined;
  if (!identity) return;
  await storeAnswer(p.options.db, identity, p.key, answerOf(held, receipt), p.now()).catch((error: unknown) =>
    p.options.logger.error({ requestId: p.options.requestId, err: error }, 'answer of an identified payment not kept'),
  );
}

/**
 * Settles the payment through the facilitator and records the outcome: settled (now, or already: the
 * facilitator answers duplicate_settlement with its transaction), pending (kept: it may still land), failed
 * (freed: nothing was charged), or unknown (the facilitator did not answer: kept). A settlement the
 * database could not record is answered 503 payment_state_unavailable with its receipt: the claim stays
 * unfinished, so presenting the payment again once its lease expires finishes the request.
 */
async function settleNow(
  p: Paid,
  held?: HeldAnswer,
): Promise<{ settlement: X402SettleResponse; header: string; kept: boolean } | { refusal: Refusal }> {
  const { requirements, logger, requestId } = p.options;
  let settlement: Awaited<ReturnType<FacilitatorClient['settle']>>;
  try {
    settlement = await p.facilitator.settle(p.request);
    // A confirmation not seen in time: ask once more, which makes the facilitator look for it again.
    if (!settlement.success && settlement.errorReason === 'settlement_pending')
      settlement = await p.facilitator.settle(p.request);
  } catch (error) {
    // The settle request may have reached the facilitator: keep the claim so this payment serves nothing else.
    await update(p, { status: 'unknown' }).catch(() => undefined);
    logger.error({ requestId, err: error }, 'settlement outcome unknown');
    return {
      refusal: refusalOf(
        503,
        'settlement_unknown',
        'The payment facilitator did not answer the settlement; the request was not served. Present the same payment again shortly to finish it: it is never charged twice',
        {
          retryAfterSeconds: error instanceof FacilitatorUnavailable ? error.retryAfterSeconds : 5,
        },
      ),
    };
  }
  const settled = settlement.success || (settlement.errorReason === 'duplicate_settlement' && !!settlement.transaction);
  if (settled) {
    const payer = settlement.payer ?? p.payer ?? '';
    p.payer = payer;
    // The facilitator's extensions (an ad network's "sponsored-access" recommendation) reach the buyer with the
    // receipt.
    const receipt: X402SettleResponse = {
      success: true,
      transaction: settlement.transaction,
      network: requirements.network,
      ...(payer ? { payer } : {}),
      amount: requirements.amount,
      ...(settlement.success && settlement.extensions ? { extensions: settlement.extensions } : {}),
    };
    // PAYMENT-RESPONSE, encoded once: kept with the answer, sent with it, or with the refusal below.
    const header = encodeX402Header(receipt);
    injectFault(p.options, 'after-settle');
    const identity = p.res.locals.paymentIdentity as PaymentIdentity | undefined;
    let kept = false;
    try {
      injectFault(p.options, 'fail-record');
      const values = {
        status: 'settled',
        payer: payer || null,
        transaction: settlement.transaction,
        settled_at: p.now(),
      };
      if (held && identity) kept = await updateKeeping(p, values, identity, answerOf(held, header));
      else await update(p, values);
    } catch (error) {
      logger.error({ requestId, err: error, transaction: settlement.transaction }, 'settled payment not recorded');
      const waitSeconds = Math.max(1, Math.ceil((p.leaseUntil.getTime() - p.now().getTime()) / 1000));
      return {
        refusal: refusalOf(
          503,
          'payment_state_unavailable',
          `The payment settled (transaction ${settlement.transaction}) but this service could not record it, so the request was not served. Present the same payment again after ${waitSeconds} s to receive it: it will not be charged again`,
          {
            retryAfterSeconds: waitSeconds,
            extraHeaders: { [PAYMENT_RESPONSE_HEADER]: header },
          },
        ),
      };
    }
    injectFault(p.options, 'after-record');
    return { settlement: receipt, header, kept };
  }
  const extraHeaders = { [PAYMENT_RESPONSE_HEADER]: encodeX402Header(settlement) };
  // A failure that names a transaction (other than one that failed on chain) may still land: keep the
  // claim, so this payment serves nothing else, and say so.
  if (settlement.transaction && settlement.errorReason !== 'invalid_exact_svm_transaction_failed') {
    // Unrecorded, the claim stays unfinished and leased: the next presentation after it reconciles it all the same.
    await update(p, { status: 'pending', transaction: settlement.transaction }).catch((error: unknown) =>
      logger.error({ requestId, err: error }, 'pending settlement not recorded'),
    );
    return {
      refusal: refusalOf(
        503,
        'settlement_pending',
        `The payment was sent (transaction ${settlement.transaction}) but its settlement is not confirmed; the request was not served. Present the same payment again shortly to finish it`,
        {
          reason: settlement.errorReason ?? 'settlement_pending',
          retryAfterSeconds: 5,
          extraHeaders,
        },
      ),
    };
  }
  await release(p).catch((error: unknown) =>
    logger.error({ requestId, err: error }, 'failed payment claim not released'),
  );
  // The facilitator is at one of its settlement caps (per minute: in all, to this seller, from this payer): rate
  // limited, not refused, so the buyer waits the Retry-After and presents the same payment again, nothing lost.
  if (settlement.retryAfterSeconds !== undefined) {
    return {
      refusal: refusalOf(
        429,
        settlement.errorReason ?? 'rate_limited',
        `The payment facilitator is at a settlement limit (${settlement.errorMessage ?? settlement.errorReason}); nothing was charged and the request was not served. Present the same payment again after ${settlement.retryAfterSeconds} s`,
        { retryAfterSeconds: settlement.retryAfterSeconds, extraHeaders },
      ),
    };
  }
  return {
    refusal: refusalOf(
      402,
      'payment_failed',
      `Settlement failed: ${settlement.errorMessage ?? settlement.errorReason}; nothing was charged and the request was not served`,
      {
        reason: settlement.errorReason ?? 'unexpected_settle_error',
        extraHeaders,
      },
    ),
  };
}

/**
 * Settles before the handler runs: settle-first routes, and a payment an earlier request settled or left
 * unconfirmed (pending, unknown), which is finished now. Settled, the request is served.
 */
async function settleFirst(p: Paid): Promise<void> {
  const outcome = await settleNow(p);
  if ('refusal' in outcome) return refuse(p.res, p.options.requestId, p.options.quote, outcome.refusal);
  return serveSettled(p, outcome.settlement, outcome.header);
}

/**
 * Runs the handler for a settled payment (`settlementOf(res)`), its answer held. A success goes out with
 * the receipt. On a settle-first route a failure (status >= 400) is refunded in full through the vault
 * (key `refund:<payment key>`: never twice) and the error says so, unless its handler called keepPayment (outcome
 * pending: the claim waits for the next presentation); elsewhere it goes out with the receipt.
 */
function serveSettled(p: Paid, receipt: X402SettleResponse, encoded = encodeX402Header(receipt)): void {
  const { requirements, logger, requestId } = p.options;
  const payer = receipt.payer ?? p.payer ?? '';
  p.res.locals.payment = {
    payer,
    payTo: requirements.payTo,
    amount: requirements.amount,
    asset: requirements.asset,
    network: requirements.network,
  } satisfies VerifiedPayment;
  p.res.locals.settlement = {
    transaction: receipt.transaction,
    payer,
    payTo: requirements.payTo,
    amount: requirements.amount,
    asset: requirements.asset,
    network: requirements.network,
    key: p.key,
  } satisfies Settlement;
  const header = { [PAYMENT_RESPONSE_HEADER]: encoded };
  holdResponse(
    p.res,
    async (held) => {
      if (held.status < 400 || !p.options.settleFirst) {
        markServed(p);
        await keepAnswer(p, held, header[PAYMENT_RESPONSE_HEADER]);
        return held.flush(held.body, undefined, header);
      }
      if (p.res.locals.keepPayment) {
        // Outcome not known yet (keepPayment): settled, unserved, and free for the next presentation at once.
        await p.options.db
          .updateTable('runtime_payments')
          .set({ status: 'settled', served_at: null, lease_until: p.now() })
          .where('key', '=', p.key)
          .execute();
        logger.warn(
          { requestId, key: p.key, status: held.status },
          'settle-first failure kept unrefunded: outcome pending',
        );
        held.headers.etag = undefined;
        return held.flush(held.body, undefined, header);
      }
      const refund = await sendRefund(p, receipt);
      if ('refusal' in refund) {
        p.res.removeHeader('etag');
        return refuse(p.res, requestId, p.options.quote, refund.refusal, (b) => held.flush(b, p.res.statusCode));
      }
      const refunded = { ...receipt, refund: { transaction: refund.transaction, amountAtomic: requirements.amount } };
      held.headers.etag = undefined;
      return held.flush(withRefund(held.body, refunded.refund), undefined, {
        [PAYMENT_RESPONSE_HEADER]: encodeX402Header(refunded as X402SettleResponse),
      });
    },
    logger,
    requestId,
  );
  logger.info(
    { requestId, transaction: receipt.transaction, settleFirst: !!p.options.settleFirst },
    'serving a settled payment',
  );
  p.runHandler();
}

/**
 * Refunds a settled payment whose request failed: the whole amount, from the service's wallet to the payer,
 * recorded as refunding first so that a crash leaves a claim the next presentation finishes (the vault's
 * key makes the transfer happen once whoever finishes it).
 */
async function sendRefund(
  p: Paid,
  receipt: X402SettleResponse,
): Promise<{ transaction: string } | { refusal: Refusal }> {
  const { requirements, logger, requestId } = p.options;
  const payer = receipt.payer ?? p.payer;
  try {
    if (!p.options.vault || !payer)
      throw new Error(payer ? 'this service has no vault to refund from' : 'the payer is unknown');
    await update(p, { status: 'refunding' });
    injectFault(p.options, 'before-refund');
    const vault = await p.options.vault();
    const { transaction } = await vault.transfer({
      to: payer,
      amount: BigInt(requirements.amount),
      key: `refund:${p.key}`,
      // Names the settlement it refunds: the facilitator's feed takes a refund only for the sale its memo names.
      memo: `x402 refund ${receipt.transaction}`,
    });
    injectFault(p.options, 'after-refund');
    await update(p, { status: 'refunded', refund_transaction: transaction }).catch((error: unknown) =>
      logger.error({ requestId, err: error, transaction }, 'refund not recorded'),
    );
    logger.info(
      { requestId, transaction, payer, amount: requirements.amount },
      'refunded a failed settle-first request',
    );
    reportRefund(p, receipt.transaction, transaction);
    return { transaction };
  } catch (error) {
    logger.error({ requestId, err: error, key: p.key }, 'refund not sent');
    await update(p, { status: 'refund_pending' }).catch(() => undefined);
    const why = error instanceof HttpError ? error.code : 'refund_failed';
    return {
      refusal: refusalOf(
        503,
        'refund_pending',
        `The request failed after its payment settled (transaction ${receipt.transaction}); its refund could not be sent yet (${why}). Present the same payment again shortly to finish the refund`,
        {
          retryAfterSeconds: 5,
          extraHeaders: { [PAYMENT_RESPONSE_HEADER]: encodeX402Header(receipt) },
        },
      ),
    };
  }
}

/**
 * Tells the facilitator a settlement was refunded, so its feed (and the marketplace's figures built on it) stops
 * counting the sale. In the background: the buyer's answer does not wait for it, and a failure only leaves the sale
 * counted until the payment is presented again.
 */
function reportRefund(p: Paid, settlement: string, refund: string): void {
  p.facilitator
    .reportRefund(settlement, refund)
    .catch((error: unknown) =>
      p.options.logger.warn(
        { requestId: p.options.requestId, err: error, settlement, refund },
        'refund not reported to the facilitator; its feed still counts the sale',
      ),
    );
}

/** The error envelope with `details.refund` added (details that are not an object are kept under `details.details`). */
function withRefund(body: Buffer, refund: { transaction: string; amountAtomic: string }): Buffer {
  try {
    const parsed = JSON.parse(body.toString('utf8')) as { error?: { details?: unknown } };
    if (!parsed?.error || typeof parsed.error !== 'object') return body;
    const details = parsed.error.details;
    parsed.error.details =
      details && typeof details === 'object' && !Array.isArray(details)
        ? { ...details, refund }
        : { ...(details === undefined ? {} : { details }), refund };
    return Buffer.from(JSON.stringify(parsed));
  } catch {
    return body;
  }
}

/** Finishes the refund an earlier request of this payment could not (it died, or the vault could not pay then). */
async function refundAgain(p: Paid, claim: Claim): Promise<void> {
  const receipt: X402SettleResponse = {
    success: true,
    transaction: claim.transaction ?? '',
    network: p.options.requirements.network,
    ...(claim.payer ? { payer: claim.payer } : {}),
    amount: p.options.requirements.amount,
  };
  const refund = await sendRefund(p, receipt);
  if ('refusal' in refund) return refuse(p.res, p.options.requestId, p.options.quote, refund.refusal);
  return answerRefunded(p, { ...claim, refund_transaction: refund.transaction });
}

/** A refunded payment presented again: it bought nothing and was given back; a new request needs a new payment. */
function answerRefunded(p: Paid, claim: Claim): void {
  const { requirements, requestId, quote } = p.options;
  const refund = { transaction: claim.refund_transaction ?? '', amountAtomic: requirements.amount };
  // Told again in case the first report was lost (the facilitator answers a known refund without reading the chain).
  if (claim.transaction && claim.refund_transaction) reportRefund(p, claim.transaction, claim.refund_transaction);
  const receipt = {
    success: true,
    transaction: claim.transaction ?? '',
    network: requirements.network,
    ...(claim.payer ? { payer: claim.payer } : {}),
    amount: requirements.amount,
    refund,
  };
  p.res.locals.refund = refund;
  return refuse(
    p.res,
    requestId,
    quote,
    refusalOf(
      402,
      'payment_refunded',
      `This payment's request failed and the payment was refunded (transaction ${refund.transaction}); pay again for a new request`,
      {
        reason: 'payment_refunded',
        extraHeaders: { [PAYMENT_RESPONSE_HEADER]: encodeX402Header(receipt) },
      },
    ),
  );
}
