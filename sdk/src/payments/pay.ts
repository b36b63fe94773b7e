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
  AgentEconomyError,
  ApiError,
  BudgetExceededError,
  ConnectionError,
  PaymentNotAcceptableError,
  PaymentNotApprovedError,
  PaymentOutcomeUnknownError,
  PaymentRefusedError,
  PaymentRequiredError,
  RateLimitError,
  UserAbortError,
} from '../errors';
import {
  MAX_RETRY_AFTER_MS,
  retryAfterMs,
  send,
  sleep,
  type HttpRequest,
  type HttpResponse,
  type RequestOptions,
  type TransportSettings,
} from '../http';
import type { Signer } from '../wallet';
import { buildExactSvmTransaction, lifetimeHint, type BuiltPayment, type Lifetime } from './exact-svm';
import { checkChain, checkFunds, requireRpcUrl } from './preflight';
import type { SpendLog, Reservation } from './spend-log';
import { noteQuote } from './session';
import { PAYMENT_IDENTIFIER, advertised, paymentIdOf, presentAgain, withPaymentId } from './payment-id';
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
  /** scheme://host:port of the service, for per-origin budgets. */
  origin: string;
  /** This logical call's x402 payment identifier, sent where the service advertises the extension. */
  paymentId: string;
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
async function build(
  spendLog: SpendLog,
  wallet: Signer,
  requirements: PaymentRequirements,
): Promise<BuiltPayment | string> {
  const mint = await spendLog.mint(requirements.asset);
  if (typeof mint === 'string') return mint;
  // Before signing: the RPC is on the quote's chain and the wallet can cover the amount.
  const rpcUrl = requireRpcUrl(spendLog.rpcUrl);
  // Asked together; of several failures the chain's is reported first (on another chain, balances mean nothing).
  const [chain, lifetime, funds] = await Promise.allSettled([
    checkChain(rpcUrl, requirements.network),
    spendLog.lifetime(requirements.extra),
    spendLog.funds(wallet.address, requirements, () => checkFunds(rpcUrl, wallet.address, requirements, mint)),
  ]);
  for (const outcome of [chain, lifetime, funds]) if (outcome.status === 'rejected') throw outcome.reason;
  return buildExactSvmTransaction({
    requirements,
    wallet,
    mint,
    lifetime: (lifetime as PromiseFulfilledResult<Lifetime>).value,
  });
}

/**
 * After a payment was sent, an error answer that does not rule out its settlement: a settlement the
 * service started but has not seen confirmed, or a gateway that gave up on the service. Other error
 * answers come before settlement (services settle only for a 2xx, and answer 503 when the facilitator
 * is down having charged nothing).
 */
function mayHaveSettled(error: ApiError): boolean {
  return (
    ['settlement_pending', 'settlement_unknown', 'payment_state_unavailable', 'refund_pending'].includes(error.code) ||
    error.status === 502 ||
    error.status === 504
  );
}

/** A settlement an error answer's PAYMENT-RESPONSE reports as done and not refunded. */
function settledOf(
  error: ApiError,
): { transaction: string; network?: string; payer?: string; refund?: undefined } | undefined {
  const reported = decodeX402Header(error.headers[PAYMENT_RESPONSE_HEADER] ?? '') as
    { success?: unknown; transaction?: unknown; network?: unknown; payer?: unknown; refund?: unknown } | undefined;
  if (reported?.success !== true || typeof reported.transaction !== 'string' || !reported.transaction) return undefined;
  if (reported.refund !== undefined) return undefined;
  return {
    transaction: reported.transaction,
    ...(typeof reported.network === 'string' ? { network: reported.network } : {}),
    ...(typeof reported.payer === 'string' ? { payer: reported.payer } : {}),
  };
}

/** The settlement and its refund, when an error answer's PAYMENT-RESPONSE reports both. */
function refundedSettlement(
  error: ApiError,
): { transaction: string; network?: string; payer?: string; refund: PaymentRefund } | undefined {
  const reported = decodeX402Header(error.headers[PAYMENT_RESPONSE_HEADER] ?? '') as
    | {
        success?: unknown;
        transaction?: unknown;
        network?: unknown;
        payer?: unknown;
        refund?: { transaction?: unknown; amountAtomic?: unknown };
      }
    | undefined;
  const refund = reported?.refund;
  if (
    reported?.success !== true ||
    typeof reported.transaction !== 'string' ||
    typeof refund?.transaction !== 'string' ||
    typeof refund.amountAtomic !== 'string'
  )
    return undefined;
  if (!/^\d{1,30}$/.test(refund.amountAtomic)) return undefined;
  return {
    transaction: reported.transaction,
    ...(typeof reported.network === 'string' ? { network: reported.network } : {}),
    ...(typeof reported.payer === 'string' ? { payer: reported.payer } : {}),
    refund: { transaction: refund.transaction, amountAtomic: refund.amountAtomic },
  };
}

/** The facilitator's per-minute settlement caps: a payment refused 429 for one of them was not charged. */
const SETTLE_CAPS = new Set(['global_settle_cap_exceeded', 'seller_settle_cap_exceeded', 'payer_settle_cap_exceeded']);

/**
 * Presents a payment refused 429 at a facilitator's settle cap (nothing charged) again after its Retry-After, up to
 * maxRetries: the same signed transaction, which can land only once, so waiting never pays twice, whatever the
 * service says. Its blockhash may expire meanwhile; that refusal is handled as any other (sendPaying).
 */
async function pastSettleCaps(call: PaidCall, present: () => Promise<HttpResponse>): Promise<HttpResponse> {
  const retries = call.options.maxRetries ?? call.settings.maxRetries;
  for (let attempt = 0; ; attempt++) {
    try {
      return await present();
    } catch (error) {
      const wait =
        error instanceof RateLimitError && SETTLE_CAPS.has(error.code) ? retryAfterMs(error.headers) : undefined;
      if (wait === undefined || wait > MAX_RETRY_AFTER_MS || attempt >= retries) throw error;
      await sleep(wait, call.options.signal);
    }
  }
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
  // x402 v2: a client echoes the extensions the server sent, with this call's payment identifier
  const extensions = withPaymentId(quote.extensions, keys.paymentId);
  if (advertised(extensions)) payment.paymentId = keys.paymentId;
  const header = encodeX402Header({
    x402Version: 2,
    resource: quote.resource,
    accepted: requirements,
    payload: { transaction: built.transaction },
    ...(extensions ? { extensions } : {}),
  });
  if (call.options.signal?.aborted) {
    reservation.release();
    throw new UserAbortError('aborted');
  }
  try {
    await reservation.sending(payment);
  } catch (error) {
    reservation.release();
    throw new AgentEconomyError(
      `the spend log could not record the payment, so it was not sent: ${(error as Error).message}`,
      { cause: error },
    );
  }
  // With a payment identifier the service dedups: an answer lost on the way is asked for again with the same payment.
  const retries = advertised(extensions) ? (call.options.maxRetries ?? call.settings.maxRetries) : 0;
  let response: HttpResponse;
  try {
    response = await pastSettleCaps(call, () =>
      presentAgain(
        () =>
          send(
            { ...call.request, headers: { ...call.request.headers, [PAYMENT_SIGNATURE_HEADER]: header } },
            call.options,
            call.settings,
            call.perAttempt,
          ),
        retries,
        call.options.signal,
      ),
    );
  } catch (error) {
    // An error answer whose PAYMENT-RESPONSE reports the settlement: refunded on chain (a settle-first route whose
    // request failed: a receipt that spent nothing), or settled and kept (its outcome still pending: spent, whatever
    // the error says). The answers that leave the outcome open (mayHaveSettled) stay payments of unknown outcome below.
    const reported =
      error instanceof ApiError
        ? (refundedSettlement(error) ??
          (!(error instanceof PaymentRequiredError) && !mayHaveSettled(error) ? settledOf(error) : undefined))
        : undefined;
    if (reported) {
      (error as ApiError).receipt = reservation.commit({
        route: keys.label,
        amount: requirements.amount,
        asset: requirements.asset,
        network: reported.network ?? requirements.network,
        payTo: requirements.payTo,
        payer: reported.payer ?? call.wallet.address,
        transaction: reported.transaction,
        ...(reported.refund ? { refund: reported.refund } : {}),
      });
      throw error;
    }
    // A 402 whose PAYMENT-RESPONSE names a transaction (other than one that failed on chain) may follow
    // a settlement: that money is not released, it is reported as of unknown outcome below.
    const settled =
      error instanceof PaymentRequiredError
        ? (decodeX402Header(error.headers[PAYMENT_RESPONSE_HEADER] ?? '') as
            { transaction?: unknown; errorReason?: unknown } | undefined)
        : undefined;
    const mayHaveMoved =
      typeof settled?.transaction === 'string' &&
      settled.transaction !== '' &&
      settled.errorReason !== 'invalid_exact_svm_transaction_failed';
    if (error instanceof PaymentRequiredError && !mayHaveMoved) {
      reservation.release();
      return { refused: error, payment };
    }
    const notDelivered =
      error instanceof ConnectionError && (error.cause as { code?: unknown } | undefined)?.code === 'ECONNREFUSED';
    // The service itself says it settled nothing (it failed before answering): nothing was spent.
    const declared =
      error instanceof ApiError
        ? (decodeX402Header(error.headers[PAYMENT_RESPONSE_HEADER] ?? '') as
            { success?: unknown; transaction?: unknown } | undefined)
        : undefined;
    const declaredUnsettled = declared?.success === false && !declared.transaction;
    if (
      (error instanceof ApiError && ((!mayHaveSettled(error) && !mayHaveMoved) || declaredUnsettled)) ||
      notDelivered
    ) {
      reservation.release();
      throw error;
    }
    if (error instanceof ApiError) {
      const reported = decodeX402Header(error.headers[PAYMENT_RESPONSE_HEADER] ?? '') as
        { transaction?: unknown } | undefined;
      if (typeof reported?.transaction === 'string' && reported.transaction) payment.transaction = reported.transaction;
    }
    reservation.hold(payment);
    const what =
      error instanceof ApiError
        ? `the service answered ${error.status} ${error.code}`
        : `no answer came back (${(error as Error).message})`;
    const where = payment.transaction
      ? `transaction ${payment.transaction}`
      : `payer signature ${built.payerSignature}`;
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
  const value = (settled?.extensions as Record<string, unknown> | undefined)?.['sponsored-access'] as
    MppSponsoredAccess | undefined;
  const ok =
    !!value &&
    typeof value.campaignId === 'string' &&
    Array.isArray(value.recommendations) &&
    typeof value.tracking?.impressionBeacon === 'string';
  return ok ? { sponsoredAccess: value } : {};
}

/**
 * Pays the route's fixed price with the first request, on the terms this client last accepted from the
 * service. Anything that stands in the way (no terms, budget, RPC) just skips it: the 402 will say.
 */
async function prepay(
  spendLog: SpendLog,
  call: PaidCall,
  keys: Keys,
): Promise<(Delivery & { requirements: PaymentRequirements }) | { declined: PaymentRequirements } | undefined> {
  if (!spendLog.prepay || spendLog.noPrepay.has(keys.route)) return undefined;
  const price = (call.route.metadata as RouteMeta | undefined)?.payment;
  // The route's own terms when it was quoted before, else the service's (a route not paid yet).
  const terms = spendLog.routeTerms.get(keys.route) ?? spendLog.terms.get(keys.service);
  if (price?.kind !== 'fixed' || !terms) return undefined;
  // The deployment's price for this route when it has quoted one, else the contract's.
  const amount = spendLog.routePrices.get(keys.route) ?? usdToAtomic(price.usd).toString();
  const requirements: PaymentRequirements = { ...terms, amount };
  if (spendLog.refusal(requirements)) return undefined;
  const declaration = declared.get(spendLog)?.get(keys.service);
  const reservation = spendLog.reserve(call.service, BigInt(amount), {
    origin: keys.origin,
    payTo: requirements.payTo,
    ...(declaration ? { paymentId: keys.paymentId } : {}),
  });
  if ('limit' in reservation) return undefined;
  let built: BuiltPayment | string;
  try {
    await reservation.persisted;
    if ((await approve(spendLog, call, keys, requirements, undefined, !!declaration)) !== true) {
      reservation.release();
      return { declined: requirements };
    }
    built = await build(spendLog, call.wallet, requirements);
  } catch {
    built = 'could not build';
  }
  if (typeof built === 'string') {
    reservation.release();
    return undefined;
  }
  const quote = {
    resource: { url: call.request.url },
    ...(declaration ? { extensions: { [PAYMENT_IDENTIFIER]: declaration } } : {}),
  };
  const delivery = await deliver(call, keys, requirements, built, reservation, quote, true);
  return { ...delivery, requirements };
}

/**
 * The payment-identifier declaration each service last quoted, by spend log and service key: sent with up-front
 * payments too.
 */
const declared = new WeakMap<SpendLog, Map<string, unknown>>();

function rememberDeclaration(spendLog: SpendLog, keys: Keys, extensions: Record<string, unknown> | undefined): void {
  let byService = declared.get(spendLog);
  if (!byService) declared.set(spendLog, (byService = new Map()));
  if (advertised(extensions)) byService.set(keys.service, extensions![PAYMENT_IDENTIFIER]);
  else byService.delete(keys.service);
}

/** The caller's onApprove verdict on this payment (SpendLog.approve). */
function approve(
  spendLog: SpendLog,
  call: PaidCall,
  keys: Keys,
  requirements: PaymentRequirements,
  quote: PaymentRequired | undefined,
  identified: boolean,
): Promise<true | { cause?: unknown }> {
  return spendLog.approve({
    service: call.service,
    route: keys.label,
    url: call.request.url,
    origin: keys.origin,
    requirements,
    amountUsd: atomicToUsd(BigInt(requirements.amount)),
    paymentId: identified ? keys.paymentId : undefined,
    quote,
    prepaid: quote === undefined,
  });
}

/**
 * One logical call that pays when asked: up front when it can, else on the 402's quote, at most one
 * payment settling. A refused up-front payment falls back once to the quote; a refused quoted payment
 * is final (PaymentRefusedError).
 */
export async function sendPaying(
  spendLog: SpendLog,
  call: PaidCall,
  /** Pays the quoted call by a payment session's voucher when it can (session.ts); undefined: pay it here. */
  byVoucher?: (quote: PaymentRequired) => Promise<HttpResponse | undefined>,
): Promise<HttpResponse> {
  const label = `${call.route.method} ${call.route.path}`;
  const origin = new URL(call.request.url).origin;
  const service = `${call.service} ${origin}`;
  // One identifier per logical call, the same on every payment it sends (an up-front one, the quoted one, each retry).
  const paymentId = await paymentIdOf(call.options, call.wallet);
  const keys: Keys = { service, origin, paymentId, route: `${service} ${label}`, label };
  // Budgets count what earlier runs spent: the store is read before the first payment.
  await spendLog.ready();

  let demand: PaymentRequiredError;
  const prepaid = await prepay(spendLog, call, keys);
  const declined = prepaid && 'declined' in prepaid ? prepaid.declined : undefined;
  const early = prepaid && 'declined' in prepaid ? undefined : prepaid;
  if (early && 'response' in early) return early.response;
  if (early) {
    demand = early.refused;
    if (expiredBlockhash(early.refused)) spendLog.forgetBlockhash();
  } else {
    try {
      return await send(call.request, call.options, call.settings, call.perAttempt);
    } catch (error) {
      if (!(error instanceof PaymentRequiredError)) throw error;
      demand = error;
    }
  }
  const quote = rawQuote(demand);
  // A seller offering payment sessions is remembered: after a few calls the client pays it by vouchers (session.ts).
  if (quote) noteQuote(spendLog, call.service, call.request.url, quote);
  if (!quote) {
    if (early) throw new PaymentRefusedError(demand, early.payment);
    throw demand;
  }
  if (!early && byVoucher) {
    const paid = await byVoucher(quote);
    if (paid) return paid;
  }

  const reasons: string[] = [];
  let over: { requirements: PaymentRequirements; limit: NonNullable<ReturnType<SpendLog['breach']>> } | undefined;
  let chosen: { requirements: PaymentRequirements; reservation: Reservation } | undefined;
  for (const requirements of quote.accepts) {
    const reason = spendLog.refusal(requirements);
    if (reason) {
      reasons.push(reason);
      continue;
    }
    const held = spendLog.reserve(call.service, BigInt(requirements.amount), {
      origin,
      payTo: requirements.payTo,
      ...(advertised(quote.extensions) ? { paymentId } : {}),
    });
    if ('limit' in held) over ??= { requirements, limit: held };
    else {
      chosen = { requirements, reservation: held };
      break;
    }
  }
  if (!chosen) {
    if (over) {
      const { limit, limitUsd, remainingUsd, cap } = over.limit;
      throw new BudgetExceededError(
        demand,
        limit,
        limitUsd,
        atomicToUsd(BigInt(over.requirements.amount)),
        remainingUsd,
        call.service,
        label,
        cap,
      );
    }
    throw new PaymentNotAcceptableError(demand, reasons);
  }
  const { requirements, reservation } = chosen;
  // Refused on the very terms the service still quotes: prepaying this route does not work here.
  if (early && !expiredBlockhash(early.refused) && standing(early.requirements) === standing(requirements))
    spendLog.noPrepay.add(keys.route);
  spendLog.remember(keys, requirements, (call.route.metadata as RouteMeta | undefined)?.payment?.kind === 'fixed');
  rememberDeclaration(spendLog, keys, quote.extensions);

  let built: BuiltPayment | string;
  try {
    await reservation.persisted;
  } catch (error) {
    reservation.release();
    throw new AgentEconomyError(
      `the spend log could not record the reservation, so nothing was signed: ${(error as Error).message}`,
      { cause: error },
    );
  }
  try {
    // Declined up front on these very terms: not asked twice for one call.
    const verdict =
      declined && standing(declined) === standing(requirements)
        ? {}
        : await approve(spendLog, call, keys, requirements, quote, advertised(quote.extensions));
    if (verdict !== true)
      throw new PaymentNotApprovedError(
        demand,
        call.service,
        label,
        atomicToUsd(BigInt(requirements.amount)),
        requirements.payTo,
        verdict,
      );
    built = await build(spendLog, call.wallet, requirements);
  } catch (error) {
    reservation.release();
    throw error;
  }
  if (typeof built === 'string') {
    reservation.release();
    throw new PaymentNotAcceptableError(demand, [built]);
  }
  let delivery = await deliver(call, keys, requirements, built, reservation, quote, false);
  // Refused because the shared blockhash read expired meanwhile: built once more on a fresh one, as the refusal asks,
  // once the chain confirms the first payment can never land. A blockhash the quote itself carried is the service's;
  // building again would not help.
  if ('refused' in delivery && expiredBlockhash(delivery.refused) && !lifetimeHint(requirements.extra)) {
    spendLog.forgetBlockhash();
    if (await spendLog.neverLands(built.blockhash, built.payerSignature))
      delivery = (await payAgain(spendLog, call, keys, requirements, quote)) ?? delivery;
  }
  if ('response' in delivery) return delivery.response;
  throw new PaymentRefusedError(delivery.refused, delivery.payment);
}

/** The refusal says the payment's blockhash had expired: the facilitator charged nothing. */
function expiredBlockhash(refused: ApiError): boolean {
  return (refused.details as { reason?: unknown } | undefined)?.reason === 'invalid_exact_svm_blockhash_expired';
}

/**
 * The quoted payment built and sent once more, on terms the caller already approved; undefined when the budget
 * no longer holds it or it cannot be built (the first refusal then stands).
 */
async function payAgain(
  spendLog: SpendLog,
  call: PaidCall,
  keys: Keys,
  requirements: PaymentRequirements,
  quote: PaymentRequired,
): Promise<Delivery | undefined> {
  const reservation = spendLog.reserve(call.service, BigInt(requirements.amount), {
    origin: keys.origin,
    payTo: requirements.payTo,
    ...(advertised(quote.extensions) ? { paymentId: keys.paymentId } : {}),
  });
  if ('limit' in reservation) return undefined;
  let built: BuiltPayment | string;
  try {
    await reservation.persisted;
    built = await build(spendLog, call.wallet, requirements);
  } catch {
    built = 'could not build';
  }
  if (typeof built === 'string') {
    reservation.release();
    return undefined;
  }
  return deliver(call, keys, requirements, built, reservation, quote, false);
}
