import type { AppRoute } from '@ts-rest/core';
import {
  PAYMENT_REQUIRED_HEADER,
  PAYMENT_RESPONSE_HEADER,
  PAYMENT_SIGNATURE_HEADER,
  PaymentRequiredSchema,
  atomicToUsd,
  decodeX402Header,
  encodeX402Header,
  usdToAtomic,
  type MppSponsoredAccess,
  type PaymentRequired,
  type PaymentRequirements,
  type RouteMeta,
} from '@agent-economy/contracts';
import {
  ApiError,
  BudgetExceededError,
  ConnectionError,
  PaymentNotAcceptableError,
  PaymentOutcomeUnknownError,
  PaymentRefusedError,
  PaymentRequiredError,
  UserAbortError,
} from '../errors';
import { send, type HttpRequest, type HttpResponse, type RequestOptions, type TransportSettings } from '../http';
import type { Signer } from '../wallet';
import { buildExactSvmTransaction, type BuiltPayment } from './exact-svm';
import type { PaymentLedger, Reservation } from './ledger';
import type { PaymentRefund, SentPayment } from './types';

/** One logical call to a route, as the client hands it to the payer. */
export interface PaidCall {
  service: string;
  route: AppRoute;
  request: HttpRequest;
  options: RequestOptions;
  settings: TransportSettings;
  perAttempt: (() => Promise<Record<string, string>>) | undefined;
  wallet: Signer;
}

interface Keys {
  /** Service and origin: terms are a deployment's. */
  service: string;
  /** Service, origin and contract route. */
  route: string;
  /** 'METHOD /path'. */
  label: string;
}

type Delivery = { response: HttpResponse } | { refused: PaymentRequiredError; payment: SentPayment };

/**
 * The quote of a 402 as the service sent it. `accepted` must echo the chosen element verbatim, so this
 * keeps the raw JSON (with any fields our schema does not know) once the schema has checked it.
 */
function rawQuote(error: PaymentRequiredError): PaymentRequired | undefined {
  const header = error.headers[PAYMENT_REQUIRED_HEADER];
  const raw = header ? decodeX402Header(header) : error.details;
  return PaymentRequiredSchema.safeParse(raw).success ? (raw as PaymentRequired) : undefined;
}

/** A requirement without its per-quote fields, for comparing a service's standing terms. */
function standing(requirements: PaymentRequirements): string {
  const { scheme, network, amount, asset, payTo, maxTimeoutSeconds, extra = {} } = requirements;
  const kept = Object.keys(extra)
    .filter((name) => !['recentBlockhash', 'lastValidBlockHeight', 'memo'].includes(name))
    .sort()
    .map((name) => [name, extra[name]]);
  return JSON.stringify([scheme, network, amount, asset, payTo, maxTimeoutSeconds, kept]);
}

/** Mint, blockhash and the signed transfer; a string says why this requirement cannot be paid. */
async function build(ledger: PaymentLedger, wallet: Signer, requirements: PaymentRequirements): Promise<BuiltPayment | string> {
  const mint = await ledger.mint(requirements.asset);
  if (typeof mint === 'string') return mint;
  const lifetime = await ledger.lifetime(requirements.extra);
  return buildExactSvmTransaction({ requirements, wallet, mint, lifetime });
}

/**
 * After a payment was sent, an error answer that does not rule out its settlement: a settlement the
 * service started but has not seen confirmed, or a gateway that gave up on the service. Other error
 * answers come before settlement (services settle only for a 2xx, and answer 503 when the facilitator
 * is down having charged nothing).
 */
function mayHaveSettled(error: ApiError): boolean {
  return (
    ['settlement_pending', 'settlement_unknown', 'payment_state_unavailable', 'refund_pending'].includes(error.code) || error.status === 502 || error.status === 504
  );
}

/** The settlement and its refund, when an error answer's PAYMENT-RESPONSE reports both. */
function refundedSettlement(error: ApiError): { transaction: string; network?: string; payer?: string; refund: PaymentRefund } | undefined {
  const reported = decodeX402Header(error.headers[PAYMENT_RESPONSE_HEADER] ?? '') as
    | { success?: unknown; transaction?: unknown; network?: unknown; payer?: unknown; refund?: { transaction?: unknown; amountAtomic?: unknown } }
    | undefined;
  const refund = reported?.refund;
  if (reported?.success !== true || typeof reported.transaction !== 'string' || typeof refund?.transaction !== 'string' || typeof refund.amountAtomic !== 'string') return undefined;
  if (!/^\d{1,30}$/.test(refund.amountAtomic)) return undefined;
  return {
    transaction: reported.transaction,
    ...(typeof reported.network === 'string' ? { network: reported.network } : {}),
    ...(typeof reported.payer === 'string' ? { payer: reported.payer } : {}),
    refund: { transaction: refund.transaction, amountAtomic: refund.amountAtomic },
  };
}

/**
 * Sends the request once with the payment and sorts the outcome: a settled answer (with its receipt),
 * a refusal (402, nothing settled), an error that charged nothing (released), or an unknown outcome
 * (no answer, or one that may follow a settlement): then the money stays held, as possibly spent.
 */
async function deliver(
  call: PaidCall,
  keys: Keys,
  requirements: PaymentRequirements,
  built: BuiltPayment,
  reservation: Reservation,
  quote: Pick<PaymentRequired, 'resource' | 'extensions'>,
  prepaid: boolean,
): Promise<Delivery> {
  const payment: SentPayment = {
    service: call.service,
    route: keys.label,
    requirements,
    payer: call.wallet.address,
    payerSignature: built.payerSignature,
    memo: built.memo,
    signedTransaction: built.transaction,
    prepaid,
  };
  const header = encodeX402Header({
    x402Version: 2,
    resource: quote.resource,
    accepted: requirements,
    payload: { transaction: built.transaction },
    // x402 v2: a client echoes the extensions the server sent
    ...(quote.extensions ? { extensions: quote.extensions } : {}),
  });
  if (call.options.signal?.aborted) {
    reservation.release();
    throw new UserAbortError('aborted');
  }
  let response: HttpResponse;
  try {
    response = await send(
      { ...call.request, headers: { ...call.request.headers, [PAYMENT_SIGNATURE_HEADER]: header } },
      call.options,
      call.settings,
      call.perAttempt,
    );
  } catch (error) {
    // Settled, then refunded on chain (a settle-first route whose request failed): a receipt that spent nothing.
    const refunded = error instanceof ApiError ? refundedSettlement(error) : undefined;
    if (refunded) {
      (error as ApiError).receipt = reservation.commit({
        route: keys.label,
        amount: requirements.amount,
        asset: requirements.asset,
        network: refunded.network ?? requirements.network,
        payTo: requirements.payTo,
        payer: refunded.payer ?? call.wallet.address,
        transaction: refunded.transaction,
        refund: refunded.refund,
      });
      throw error;
    }
    // A 402 whose PAYMENT-RESPONSE names a transaction (other than one that failed on chain) may follow
    // a settlement: that money is not released, it is reported as of unknown outcome below.
    const settled = error instanceof PaymentRequiredError ? (decodeX402Header(error.headers[PAYMENT_RESPONSE_HEADER] ?? '') as { transaction?: unknown; errorReason?: unknown } | undefined) : undefined;
    const mayHaveMoved = typeof settled?.transaction === 'string' && settled.transaction !== '' && settled.errorReason !== 'invalid_exact_svm_transaction_failed';
    if (error instanceof PaymentRequiredError && !mayHaveMoved) {
      reservation.release();
      return { refused: error, payment };
    }
    const notDelivered = error instanceof ConnectionError && (error.cause as { code?: unknown } | undefined)?.code === 'ECONNREFUSED';
    // The service itself says it settled nothing (it failed before answering): nothing was spent.
    const declared = error instanceof ApiError ? (decodeX402Header(error.headers[PAYMENT_RESPONSE_HEADER] ?? '') as { success?: unknown; transaction?: unknown } | undefined) : undefined;
    const declaredUnsettled = declared?.success === false && !declared.transaction;
    if ((error instanceof ApiError && ((!mayHaveSettled(error) && !mayHaveMoved) || declaredUnsettled)) || notDelivered) {
      reservation.release();
      throw error;
    }
    if (error instanceof ApiError) {
      const reported = decodeX402Header(error.headers[PAYMENT_RESPONSE_HEADER] ?? '') as { transaction?: unknown } | undefined;
      if (typeof reported?.transaction === 'string' && reported.transaction) payment.transaction = reported.transaction;
    }
    reservation.hold(payment);
    const what = error instanceof ApiError ? `the service answered ${error.status} ${error.code}` : `no answer came back (${(error as Error).message})`;
    const where = payment.transaction ? `transaction ${payment.transaction}` : `payer signature ${built.payerSignature}`;
    throw new PaymentOutcomeUnknownError(
      `${keys.label}: the payment of ${atomicToUsd(BigInt(requirements.amount))} USD was sent but ${what}; ` +
        `it may have settled, so it is not sent again: check the chain for ${where}`,
      payment,
      { cause: error },
    );
  }
  const settlement = response.headers[PAYMENT_RESPONSE_HEADER];
  const settled = settlement ? (decodeX402Header(settlement) as Record<string, unknown> | undefined) : undefined;
  // No PAYMENT-RESPONSE, or one saying it failed: the service served without charging.
  if (!settlement || settled?.success === false) {
    reservation.release();
    return { response };
  }
  const text = (value: unknown, fallback: string) => (typeof value === 'string' && value ? value : fallback);
  const receipt = reservation.commit({
    route: keys.label,
    // the exact scheme moves exactly the quoted amount
    amount: requirements.amount,
    asset: requirements.asset,
    network: text(settled?.network, requirements.network),
    payTo: requirements.payTo,
    payer: text(settled?.payer, call.wallet.address),
    transaction: text(settled?.transaction, ''),
    ...sponsoredOf(settled),
  });
  return { response: { ...response, payment: receipt } };
}

/** The ad network's recommendation in a settlement's extensions (x402 "sponsored-access"), when it is well formed. */
function sponsoredOf(settled: Record<string, unknown> | undefined): { sponsoredAccess?: MppSponsoredAccess } {
  const value = (settled?.extensions as Record<string, unknown> | undefined)?.['sponsored-access'] as MppSponsoredAccess | undefined;
  const ok = !!value && typeof value.campaignId === 'string' && Array.isArray(value.recommendations) && typeof value.tracking?.impressionBeacon === 'string';
  return ok ? { sponsoredAccess: value } : {};
}

/**
 * Pays the route's fixed price with the first request, on the terms this client last accepted from the
 * service. Anything that stands in the way (no terms, budget, RPC) just skips it: the 402 will say.
 */
async function prepay(ledger: PaymentLedger, call: PaidCall, keys: Keys): Promise<(Delivery & { requirements: PaymentRequirements }) | undefined> {
  if (!ledger.prepay || ledger.noPrepay.has(keys.route)) return undefined;
  const price = (call.route.metadata as RouteMeta | undefined)?.payment;
  const terms = ledger.terms.get(keys.service);
  if (price?.kind !== 'fixed' || !terms) return undefined;
  // The deployment's price for this route when it has quoted one, else the contract's.
  const amount = ledger.routePrices.get(keys.route) ?? usdToAtomic(price.usd).toString();
  const requirements: PaymentRequirements = { ...terms, amount };
  if (ledger.refusal(requirements)) return undefined;
  const reservation = ledger.reserve(call.service, BigInt(amount));
  if ('limit' in reservation) return undefined;
  let built: BuiltPayment | string;
  try {
    built = await build(ledger, call.wallet, requirements);
  } catch {
    built = 'could not build';
  }
  if (typeof built === 'string') {
    reservation.release();
    return undefined;
  }
  const delivery = await deliver(call, keys, requirements, built, reservation, { resource: { url: call.request.url } }, true);
  return { ...delivery, requirements };
}

/**
 * One logical call that pays when asked: up front when it can, else on the 402's quote, at most one
 * payment settling. A refused up-front payment falls back once to the quote; a refused quoted payment
 * is final (PaymentRefusedError).
 */
export async function sendPaying(ledger: PaymentLedger, call: PaidCall): Promise<HttpResponse> {
  const label = `${call.route.method} ${call.route.path}`;
  const service = `${call.service} ${new URL(call.request.url).origin}`;
  const keys: Keys = { service, route: `${service} ${label}`, label };

  let demand: PaymentRequiredError;
  const early = await prepay(ledger, call, keys);
  if (early && 'response' in early) return early.response;
  if (early) demand = early.refused;
  else {
    try {
      return await send(call.request, call.options, call.settings, call.perAttempt);
    } catch (error) {
      if (!(error instanceof PaymentRequiredError)) throw error;
      demand = error;
    }
  }
  const quote = rawQuote(demand);
  if (!quote) {
    if (early) throw new PaymentRefusedError(demand, early.payment);
    throw demand;
  }

  const reasons: string[] = [];
  let over: { requirements: PaymentRequirements; limit: NonNullable<ReturnType<PaymentLedger['breach']>> } | undefined;
  let chosen: { requirements: PaymentRequirements; reservation: Reservation } | undefined;
  for (const requirements of quote.accepts) {
    const reason = ledger.refusal(requirements);
    if (reason) {
      reasons.push(reason);
      continue;
    }
    const held = ledger.reserve(call.service, BigInt(requirements.amount));
    if ('limit' in held) over ??= { requirements, limit: held };
    else {
      chosen = { requirements, reservation: held };
      break;
    }
  }
  if (!chosen) {
    if (over) {
      const { limit, limitUsd, remainingUsd } = over.limit;
      throw new BudgetExceededError(demand, limit, limitUsd, atomicToUsd(BigInt(over.requirements.amount)), remainingUsd, call.service, label);
    }
    throw new PaymentNotAcceptableError(demand, reasons);
  }
  const { requirements, reservation } = chosen;
  // Refused on the very terms the service still quotes: prepaying this route does not work here.
  if (early && standing(early.requirements) === standing(requirements)) ledger.noPrepay.add(keys.route);
  ledger.remember(keys, requirements);

  let built: BuiltPayment | string;
  try {
    built = await build(ledger, call.wallet, requirements);
  } catch (error) {
    reservation.release();
    throw error;
  }
  if (typeof built === 'string') {
    reservation.release();
    throw new PaymentNotAcceptableError(demand, [built]);
  }
  const delivery = await deliver(call, keys, requirements, built, reservation, quote, false);
  if ('response' in delivery) return delivery.response;
  throw new PaymentRefusedError(delivery.refused, delivery.payment);
}
