import { createHash, randomBytes } from 'node:crypto';
import {
  PAYMENT_RESPONSE_HEADER,
  TRADE_GATEWAY_FEE_USD,
  TRADE_PLAN_VALID_MINUTES,
  X402PaymentPayloadSchema,
  atomicToUsd,
  base58Decode,
  base58Encode,
  decodeX402Header,
  encodeX402Header,
  usdToAtomic,
  type GatewayTradeExecuteBodyOut,
  type GatewayTradeStartBodyOut,
  type MarketModule,
  type ModulePurchase,
  type Negotiation,
  type TradeCandidate,
  type TradeExecution,
  type TradeNegotiationSnapshot,
  type TradePlan,
  type VerificationCertificate,
  type X402FacilitatorRequest,
  type X402PaymentPayload,
  type X402VerifyResponse,
} from '@agent-economy/contracts';
import { ApiError, PaymentRequiredError, type SentPayment, type SpendStore } from '@agent-economy/sdk';
import type { Logger } from 'pino';
import { HttpError, conflict, notFound, unprocessable } from '../../runtime/errors';
import { paymentKey } from '../../runtime/paywall';
import { verifyEd25519 } from '../../solana/keys';
import {
  candidateOf,
  defaultOffer,
  estimateOf,
  lowestPriceOf,
  planSteps,
  rankCandidates,
  relevance,
  type PricingOf,
} from './domain';
import type { GatewayStore, TradeRecord } from './store';
import { isUnavailable, upstreamCall, upstreamUnavailable, type ConnectedId, type Upstream } from './upstream';

// The trade lifecycle: discover (rank sellers), negotiate (open a negotiation as the buyer's broker), then in one
// paid call verify (certificate), purchase (the gateway buys for the buyer), check the content's hash, and rate
// (a trade report to the reputation service).

const HOUR_MS = 3_600_000;
/** Sellers whose reputation one discovery reads (paid lookups, cached an hour). */
const MAX_SCORE_LOOKUPS = 10;
/** Modules that go through the certificate and reputation checks, best text matches first. */
const MAX_CHECKED = 30;

export const newId = (prefix: string) => `${prefix}_${base58Encode(randomBytes(16))}`;
export const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
export const badField = (field: string, message: string) =>
  new HttpError(400, 'invalid_request', `Invalid request: ${field} ${message}`, { fields: [{ field, message }] });

/** The key of the x402 payment a request carries (as the paywall claims it), or null. */
export function paymentKeyOf(headers: unknown): string | null {
  const header = (headers as Record<string, unknown> | undefined)?.['payment-signature'];
  if (typeof header !== 'string') return null;
  const parsed = X402PaymentPayloadSchema.safeParse(decodeX402Header(header));
  return (parsed.success && paymentKey(parsed.data)) || null;
}

/**
 * An upstream refusal passed on with its status and code (a 4xx the route's contract names). A 401 or 402 is about
 * the gateway's own proof or payment, not the caller's request: the service is unusable to it (502).
 */
const passOn = (id: ConnectedId, error: ApiError) =>
  error.status === 401 || error.status === 402
    ? upstreamUnavailable(id, error)
    : new HttpError(
        error.status,
        error.code,
        (error.body as { error?: { message?: string } })?.error?.message ?? error.message,
        error.details,
      );

const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
/** Text the database could not store (NUL, a lone surrogate) is a 400 naming the field, never a 500. */
export function assertStorable(fields: Record<string, string | undefined>): void {
  for (const [field, value] of Object.entries(fields)) {
    if (value !== undefined && UNSTORABLE.test(value))
      throw badField(field, 'must be Unicode text without NUL characters or lone surrogates');
  }
}

/** A certificate is trusted when valid, bound to the content hash, and its Ed25519 proof verifies. */
export function certificateHolds(cert: VerificationCertificate, contentHash: string): boolean {
  if (cert.status !== 'valid' || cert.contentHash !== contentHash || cert.proof.verificationKey !== cert.issuer)
    return false;
  let payload: { id?: unknown; contentHash?: unknown };
  try {
    payload = JSON.parse(cert.proof.signedPayload);
  } catch {
    return false;
  }
  if (payload.id !== cert.id || payload.contentHash !== contentHash) return false;
  const key = base58Decode(cert.proof.verificationKey);
  const signature = base58Decode(cert.proof.signature);
  return !!key && !!signature && verifyEd25519(key, new TextEncoder().encode(cert.proof.signedPayload), signature);
}

export function snapshotOf(n: Negotiation): TradeNegotiationSnapshot {
  const lastBuyer = [...n.offers].reverse().find((o) => o.by === 'buyer');
  const lastAutomatic = [...n.offers].reverse().find((o) => o.automatic);
  return {
    id: n.id,
    moduleId: n.moduleId,
    mode: n.mode,
    state: n.state,
    turn: n.turn,
    listPriceUsd: n.listPriceUsd,
    floorUsd: n.floorUsd,
    lastBuyerOfferUsd: lastBuyer?.priceUsd ?? n.listPriceUsd,
    standingOffer: n.standingOffer ? { by: n.standingOffer.by, priceUsd: n.standingOffer.priceUsd } : null,
    agreedPriceUsd: n.agreement?.priceUsd ?? null,
    rounds: n.rounds,
    maxRounds: n.maxRounds,
    rationale: n.rejection?.reason && n.rejection.automatic ? n.rejection.reason : (lastAutomatic?.rationale ?? null),
    expiresAt: n.agreement?.validUntil ?? n.expiresAt,
  };
}

/**
 * A failure of execute that must not be refunded (the handler calls keepPayment): the gateway's payment to the market
 * may have settled and its outcome is not known yet (503 trade_pending: the same payment presented again finishes the
 * trade), or it settled and the market never delivered (502 market_kept_payment).
 */
export class KeptPayment extends HttpError {}
/** The market payment never settled and no longer can: the plan is given back and the buyer refunded. */
class NeverSettled extends HttpError {}

/** Seconds a buyer waits before presenting a pending trade's payment again: the market's answer, or its blockhash. */
const PENDING_RETRY_SECONDS = 5;
const OPEN_RETRY_SECONDS = 30;
/** How long a trade whose market payment settled waits for the market's answer before it fails against the market. */
const DELIVERY_WAIT_MS = HOUR_MS;

/** What the facilitator says of a market payment: settled (or submitted), never (it cannot land any more), open. */
type Fate = 'settled' | 'never' | 'open' | 'unknown';

/** A market purchase as the gateway made it: the purchase and the transfer that paid the seller. */
interface Bought {
  purchase: ModulePurchase;
  transaction: string;
  network: string;
}

export interface TradeDeps {
  store: GatewayStore;
  /** The deployment's facilitator (/verify, signed as the gateway): whether a market payment settled, or never will. */
  facilitator?: { verify(request: X402FacilitatorRequest): Promise<X402VerifyResponse> };
  upstream: Upstream;
  pricing: () => Promise<PricingOf>;
  logger: Logger;
  now: () => Date;
  feeUsd?: string;
}

export interface Discovery {
  candidates: TradeCandidate[];
  modules: Map<string, MarketModule>;
  /** The buyer's gateway-brokered negotiation named by `negotiationId`. */
  negotiation: Negotiation | null;
}

export function tradeLogic(deps: TradeDeps) {
  const { store, upstream, now } = deps;
  const fee = usdToAtomic(deps.feeUsd ?? TRADE_GATEWAY_FEE_USD);
  const feeUsd = atomicToUsd(fee);

  /**
   * Reputation scores of sellers: cached an hour, else read (and paid for) from the reputation service; null when
   * unknown.
   */
  async function sellerScores(wallets: string[]): Promise<Map<string, number | null>> {
    const distinct = [...new Set(wallets)];
    const cached = await store.reputations(distinct, new Date(now().getTime() - HOUR_MS));
    const scores = new Map<string, number | null>(distinct.map((w) => [w, cached.get(w)?.score ?? null]));
    const missing = distinct.filter((w) => !cached.has(w)).slice(0, MAX_SCORE_LOOKUPS);
    await Promise.all(
      missing.map(async (wallet) => {
        try {
          const profile = await upstream.agent('reputation').get({ params: { agentId: wallet }, query: { limit: 1 } });
          scores.set(wallet, profile.score);
          await store.cacheReputation(wallet, profile.score, profile.tradeCount, now());
        } catch (error) {
          deps.logger.warn({ err: error, wallet }, 'reputation lookup failed');
        }
      }),
    );
    return scores;
  }

  /**
   * The valid certificate bound to the module's content hash whose proof verifies (its own module's first), or null.
   */
  async function certificateFor(module: MarketModule): Promise<VerificationCertificate | null> {
    const page = await upstreamCall('verification', () =>
      upstream
        .reader('verification')
        .listCertificates({ query: { contentHash: module.contentHash, status: 'valid', limit: 20 } }),
    );
    const held = page.items.filter((c) => certificateHolds(c, module.contentHash));
    return held.find((c) => c.moduleId === module.id) ?? held.sort((a, b) => b.score - a.score)[0] ?? null;
  }

  async function moduleById(moduleId: string): Promise<MarketModule> {
    try {
      return await upstream.reader('knowledge-market').get({ params: { moduleId } });
    } catch (error) {
      if (error instanceof ApiError && error.status === 404)
        throw notFound('module_not_found', `No module ${moduleId} in the knowledge market`, { moduleId });
      throw upstreamUnavailable('knowledge-market', error);
    }
  }

  /** A negotiation as the gateway (its broker) reads it. */
  async function negotiationById(negotiationId: string, buyer: string): Promise<Negotiation> {
    let n: Negotiation;
    try {
      n = await upstream.agent('negotiation').get({ params: { negotiationId } });
    } catch (error) {
      if (error instanceof ApiError && error.status === 404)
        throw notFound('negotiation_not_found', `No negotiation ${negotiationId}`, { negotiationId });
      // Not a party: the buyer opened it without the gateway, so the gateway may not pay with its agreement.
      if (error instanceof ApiError && error.status === 403) {
        throw unprocessable(
          'negotiation_not_brokered',
          `Negotiation ${negotiationId} was not opened through the gateway: buy it directly in the knowledge market with its agreement`,
          { negotiationId },
        );
      }
      throw upstreamUnavailable('negotiation', error);
    }
    if (n.buyer !== buyer)
      throw unprocessable('negotiation_mismatch', `Negotiation ${negotiationId} is another buyer’s`, { negotiationId });
    return n;
  }

  /**
   * Everything trade/start decides before it is charged: the ranked candidates (422 with the filters’ counts when
   * none).
   */
  async function discover(body: GatewayTradeStartBodyOut, buyer: string): Promise<Discovery> {
    assertStorable({ 'body.need': body.need });
    if (body.offerUsd !== undefined && usdToAtomic(body.offerUsd) > usdToAtomic(body.maxPriceUsd))
      throw badField('body.offerUsd', 'must not exceed maxPriceUsd');
    let negotiation: Negotiation | null = null;
    if (body.negotiationId) {
      negotiation = await negotiationById(body.negotiationId, buyer);
      if (negotiation.state !== 'accepted') {
        throw conflict('negotiation_not_accepted', `Negotiation ${negotiation.id} is ${negotiation.state}`, {
          negotiationId: negotiation.id,
          state: negotiation.state,
        });
      }
      if (body.moduleId && body.moduleId !== negotiation.moduleId) {
        throw unprocessable('negotiation_mismatch', `Negotiation ${negotiation.id} is about another module`, {
          negotiationId: negotiation.id,
          moduleId: negotiation.moduleId,
        });
      }
    }
    const named = negotiation?.moduleId ?? body.moduleId;
    let modules: MarketModule[];
    if (named) modules = [await moduleById(named)];
    else {
      const market = upstream.reader('knowledge-market');
      const pages = await upstreamCall('knowledge-market', () =>
        Promise.all([
          market.list({ query: { q: body.need, sort: 'relevance', limit: 100 } }),
          ...(body.capabilities ?? []).map((capability) => market.list({ query: { capability, limit: 100 } })),
        ]),
      );
      modules = [...new Map(pages.flatMap((p) => p.items).map((m) => [m.id, m])).values()];
    }
    const removed = { capability: 0, price: 0, ownModule: 0, certificate: 0, sellerScore: 0 };
    const max = usdToAtomic(body.maxPriceUsd);
    const kept = modules.filter((m) => {
      if (body.capabilities?.length && !m.capabilities.some((c) => body.capabilities!.includes(c)))
        return (++removed.capability, false);
      const lowest = negotiation?.agreement ? negotiation.agreement.priceUsd : lowestPriceOf(m);
      if (usdToAtomic(lowest) > max) return (++removed.price, false);
      if (m.seller.wallet === buyer) return (++removed.ownModule, false);
      return true;
    });
    const text = relevance(body.need, kept);
    // The paid and slower checks run on the best text matches only.
    const checked = kept
      .sort((a, b) => (text.get(b.id) ?? 0) - (text.get(a.id) ?? 0) || a.id.localeCompare(b.id))
      .slice(0, MAX_CHECKED);
    const certificates = new Map(await Promise.all(checked.map(async (m) => [m.id, await certificateFor(m)] as const)));
    const certified = checked.filter(
      (m) => !body.requireCertificate || certificates.get(m.id) || (++removed.certificate, false),
    );
    const scores = await sellerScores(certified.map((m) => m.seller.wallet));
    const eligible = certified.filter((m) => {
      if (body.minSellerScore === undefined) return true;
      const score = scores.get(m.seller.wallet) ?? null;
      return (score !== null && score >= body.minSellerScore) || (++removed.sellerScore, false);
    });
    if (!eligible.length) {
      throw unprocessable('no_matching_sellers', `No module matches: ${modules.length} considered`, {
        considered: modules.length,
        removed,
      });
    }
    const candidates = rankCandidates(
      eligible.map((m) => {
        const cert = certificates.get(m.id);
        return candidateOf(
          {
            module: m,
            text: text.get(m.id) ?? 0,
            sellerScore: scores.get(m.seller.wallet) ?? null,
            certificate: cert
              ? { id: cert.id, score: cert.score, status: cert.status, expiresAt: cert.expiresAt }
              : null,
          },
          body.capabilities,
        );
      }),
    ).slice(0, body.maxCandidates);
    return { candidates, modules: new Map(eligible.map((m) => [m.id, m])), negotiation };
  }

  /**
   * Opens the negotiation for the buyer with the gateway as broker, or takes up the one the gateway already brokers.
   */
  async function negotiate(module: MarketModule, buyer: string, offerUsd: string): Promise<Negotiation> {
    try {
      return await upstream.agent('negotiation').open({ body: { moduleId: module.id, offerUsd, buyer } });
    } catch (error) {
      if (error instanceof ApiError && error.code === 'negotiation_exists') {
        const negotiationId = (error.details as { negotiationId?: string } | undefined)?.negotiationId;
        if (negotiationId) {
          try {
            const existing = await upstream.agent('negotiation').get({ params: { negotiationId } });
            if (existing.broker === upstream.signer.address && existing.buyer === buyer) return existing;
          } catch {
            // Not ours to read: the buyer opened it.
          }
        }
        throw conflict(
          'negotiation_exists',
          'You already negotiate over this module without the gateway: finish or reject that negotiation first',
          { negotiationId },
        );
      }
      if (isUnavailable(error)) throw upstreamUnavailable('negotiation', error);
      throw passOn('negotiation', error as ApiError);
    }
  }

  function nextActionOf(plan: Pick<TradePlan, 'negotiation' | 'estimate'>): string {
    const n = plan.negotiation;
    const total = `${plan.estimate.totalUsd} USD (module ${plan.estimate.modulePriceUsd} + fee ${plan.estimate.gatewayFeeUsd})`;
    if (!plan.estimate.withinBudget) {
      return n && n.turn === 'buyer'
        ? `The seller asks ${plan.estimate.modulePriceUsd} USD, above your maximum: counter with POST /api/negotiations/${n.id}/counter on the negotiation service, then start again with negotiationId`
        : `The price ${plan.estimate.modulePriceUsd} USD is above your maximum; raise maxPriceUsd or pick another candidate`;
    }
    if (!n || n.state === 'accepted') return `Execute: POST /api/trade/execute with this planId; it charges ${total}`;
    if (n.state === 'rejected' || n.state === 'expired') return `The negotiation is ${n.state}: start a new plan`;
    if (n.turn === 'seller')
      return `Wait for the seller to answer negotiation ${n.id} (GET /api/negotiations/${n.id} on the negotiation service), then execute`;
    return `Execute now to accept the seller’s counter of ${n.standingOffer?.priceUsd} USD (it charges ${total}), or counter with POST /api/negotiations/${n.id}/counter`;
  }

  /** trade/start after payment: negotiate for the best candidate and store the plan. */
  async function start(body: GatewayTradeStartBodyOut, buyer: string, discovery: Discovery): Promise<TradePlan> {
    const best = discovery.candidates[0]!;
    const module = discovery.modules.get(best.moduleId)!;
    let negotiation = discovery.negotiation;
    if (!negotiation && module.negotiation.mode !== 'off') {
      negotiation = await negotiate(module, buyer, body.offerUsd ?? defaultOffer(module.priceUsd, body.maxPriceUsd));
    }
    const snapshot = negotiation ? snapshotOf(negotiation) : null;
    const createdAt = now();
    const estimate = estimateOf(module.priceUsd, snapshot, body.maxPriceUsd, feeUsd);
    const pricing = await deps.pricing();
    const plan: TradePlan = {
      id: newId('plan'),
      buyer,
      need: body.need,
      maxPriceUsd: atomicToUsd(usdToAtomic(body.maxPriceUsd)),
      requireCertificate: body.requireCertificate,
      candidates: discovery.candidates,
      selectedModuleId: module.id,
      negotiation: snapshot,
      steps: planSteps(
        {
          moduleId: module.id,
          seller: module.seller.wallet,
          buyer,
          negotiation: snapshot,
          mode: module.negotiation.mode,
          certificateId: best.certificate?.id ?? null,
          contentHash: module.contentHash,
          requireCertificate: body.requireCertificate,
        },
        pricing,
      ),
      estimate,
      nextAction: '',
      createdAt: createdAt.toISOString(),
      expiresAt: new Date(createdAt.getTime() + TRADE_PLAN_VALID_MINUTES * 60_000).toISOString(),
    };
    plan.nextAction = nextActionOf(plan);
    await store.insertPlan(plan);
    return plan;
  }

  /** What execute will do and charge, decided before the quote (every refusal here charges nothing). */
  interface Prepared {
    plan: TradePlan;
    /** An execution this same payment already completed (a replay after a crash): answered as it was. */
    replay?: TradeExecution;
    module: MarketModule;
    /** The market did not answer when a resumed trade was prepared: `module` holds only its id; read it once bought. */
    moduleUnread?: boolean;
    price: bigint;
    basis: 'agreed' | 'standing-offer' | 'list';
    negotiationId: string | null;
    certificate: VerificationCertificate | null;
  }

  async function prepare(body: GatewayTradeExecuteBodyOut, caller: string, headers: unknown): Promise<Prepared> {
    const plan = await store.plan(body.planId);
    if (!plan) throw notFound('plan_not_found', `No trade plan ${body.planId}`, { planId: body.planId });
    if (plan.buyer !== caller) throw new HttpError(403, 'not_plan_owner', 'Only the plan’s buyer may execute it');
    const trade = await store.tradeOfPlan(plan.id);
    const key = paymentKeyOf(headers);
    if (trade && key && trade.paymentKey === key && trade.execution) {
      const e = trade.execution;
      return {
        plan,
        replay: e,
        module: await moduleById(e.moduleId),
        price: usdToAtomic(e.charges.modulePriceUsd),
        basis: e.purchase.priceBasis,
        negotiationId: e.purchase.negotiationId,
        certificate: null,
      };
    }
    if (trade && key && trade.paymentKey === key) return resumption(plan, trade);
    if (trade)
      throw conflict('plan_already_executed', `Plan ${plan.id} was executed`, {
        planId: plan.id,
        tradeId: trade.id,
        purchaseId: trade.purchaseId,
      });
    if (now().getTime() >= Date.parse(plan.expiresAt))
      throw conflict('plan_expired', `Plan ${plan.id} expired at ${plan.expiresAt}`, {
        planId: plan.id,
        expiresAt: plan.expiresAt,
      });
    const moduleId = body.moduleId ?? plan.selectedModuleId;
    if (!plan.candidates.some((c) => c.moduleId === moduleId))
      throw unprocessable('module_not_in_plan', `Module ${moduleId} is not a candidate of plan ${plan.id}`, {
        moduleId,
      });
    const module = await moduleById(moduleId);

    let price = usdToAtomic(module.priceUsd);
    let basis: Prepared['basis'] = 'list';
    let negotiationId: string | null = null;
    if (moduleId === plan.selectedModuleId && plan.negotiation) {
      const n = await negotiationById(plan.negotiation.id, plan.buyer);
      negotiationId = n.id;
      if (n.state === 'accepted' && n.agreement) {
        if (now().getTime() >= Date.parse(n.agreement.validUntil)) {
          throw conflict('negotiation_closed', `The agreement expired at ${n.agreement.validUntil}: start a new plan`, {
            negotiationId: n.id,
            state: 'expired',
          });
        }
        price = usdToAtomic(n.agreement.priceUsd);
        basis = 'agreed';
      } else if (n.state === 'rejected' || n.state === 'expired') {
        throw conflict('negotiation_closed', `Negotiation ${n.id} is ${n.state}: start a new plan`, {
          negotiationId: n.id,
          state: n.state,
        });
      } else if (n.turn === 'buyer' && n.standingOffer?.by === 'seller') {
        price = usdToAtomic(n.standingOffer.priceUsd);
        basis = 'standing-offer';
      } else {
        throw conflict('negotiation_pending', `Negotiation ${n.id} awaits the seller`, {
          negotiationId: n.id,
          state: n.state,
          turn: n.turn,
        });
      }
    }
    const max = [plan.maxPriceUsd, body.maxPriceUsd]
      .filter((v): v is string => v !== undefined)
      .map((v) => usdToAtomic(v))
      .reduce((a, b) => (a < b ? a : b));
    if (price > max) {
      throw unprocessable(
        'price_above_max',
        `The module costs ${atomicToUsd(price)} USD, above the maximum of ${atomicToUsd(max)} USD`,
        { priceUsd: atomicToUsd(price), maxPriceUsd: atomicToUsd(max) },
      );
    }
    const certificate = await certificateFor(module);
    if (!certificate && plan.requireCertificate) {
      throw unprocessable(
        'verification_failed',
        `No valid certificate is bound to contentHash ${module.contentHash} of module ${module.id}`,
        { moduleId: module.id, contentHash: module.contentHash },
      );
    }
    return { plan, module, price, basis, negotiationId, certificate };
  }

  /**
   * The same payment again for a trade its request left running (its process died after the payment settled): the
   * paywall
   * hands the settled payment to the handler, which finishes the trade at the price charged (reading the purchase made,
   * never buying twice) or fails and is refunded. Refusing it here would leave the buyer charged and unserved.
   */
  async function resumption(plan: TradePlan, trade: TradeRecord): Promise<Prepared> {
    const negotiationId = trade.moduleId === plan.selectedModuleId && plan.negotiation ? plan.negotiation.id : null;
    let basis: Prepared['basis'] = negotiationId ? 'agreed' : 'list';
    const paid = !!trade.purchasePayment && !trade.purchaseId;
    let module: MarketModule;
    try {
      module = await moduleById(trade.moduleId);
    } catch (error) {
      // A market payment that left is decided without the market (the facilitator says whether it settled): a market
      // gone for good must not keep the buyer from its refund.
      if (!paid || !(error instanceof HttpError) || error.code !== 'upstream_unavailable') throw error;
      return {
        plan,
        module: { id: trade.moduleId } as MarketModule,
        moduleUnread: true,
        price: trade.price,
        basis,
        negotiationId,
        certificate: null,
      };
    }
    if (negotiationId && !trade.purchaseId && !paid) {
      // Interrupted before the purchase: the seller's counter may still await the gateway's acceptance.
      const n = await negotiationById(negotiationId, plan.buyer);
      if (n.state !== 'accepted' && n.turn === 'buyer' && n.standingOffer?.by === 'seller') basis = 'standing-offer';
    }
    const certificate = await certificateFor(module).catch(() => null);
    return { plan, module, price: trade.price, basis, negotiationId, certificate };
  }

  /** The price of execute for a prepared request: the module price plus the fee. */
  const chargeOf = (prepared: Prepared) => prepared.price + fee;

  /**
   * A market payment recorded before it was sent, presented again: the market answers from that payment (its stored
   * answer, or its settlement finished now) and never charges it twice. Its failure (a refusal, no answer) is thrown
   * as it came: the caller asks the facilitator how the payment ended (decide), since a market that kept the money
   * may say that nothing settled.
   */
  async function presentAgain(
    payment: SentPayment,
    moduleId: string,
    body: { negotiationId?: string; beneficiary: string },
  ): Promise<Bought> {
    const header = encodeX402Header(payloadOf(payment, moduleId));
    const answer = await upstream
      .reader('knowledge-market')
      .purchase.withResponse({ params: { moduleId }, body }, { headers: { 'payment-signature': header } });
    const settled = decodeX402Header(answer.headers[PAYMENT_RESPONSE_HEADER] ?? '') as
      { transaction?: unknown; network?: unknown } | undefined;
    return {
      purchase: answer.data,
      transaction: typeof settled?.transaction === 'string' ? settled.transaction : (payment.transaction ?? ''),
      network: typeof settled?.network === 'string' ? settled.network : payment.requirements.network,
    };
  }

  /** The x402 payload of a recorded market payment, as it was sent. */
  function payloadOf(payment: SentPayment, moduleId: string): X402PaymentPayload {
    return {
      x402Version: 2,
      resource: { url: `${upstream.url('knowledge-market')}/api/modules/${moduleId}/purchase` },
      accepted: payment.requirements,
      payload: { transaction: payment.signedTransaction },
      ...(payment.paymentId
        ? { extensions: { 'payment-identifier': { info: { required: false, id: payment.paymentId } } } }
        : {}),
    };
  }

  /**
   * The facilitator's word on a market payment, not the market's (a market keeping the money may say anything): settled
   * (it was submitted for settlement), never (unsettled, and its blockhash has expired: it cannot land any more), open
   * (unsettled so far: the market holds it and may still settle it), unknown (no answer).
   */
  async function fateOf(payment: SentPayment, moduleId: string): Promise<{ fate: Fate; transaction?: string }> {
    if (!deps.facilitator) return { fate: 'unknown' };
    try {
      const verdict = await deps.facilitator.verify({
        x402Version: 2,
        paymentPayload: payloadOf(payment, moduleId),
        paymentRequirements: payment.requirements,
      });
      if (verdict.isValid) return { fate: 'open' };
      if (verdict.invalidReason === 'duplicate_settlement') {
        // The facilitator names the settlement's transaction: the report about the payee cites it.
        const named = /transaction ([1-9A-HJ-NP-Za-km-z]{64,88})/.exec(verdict.invalidMessage ?? '')?.[1];
        return { fate: 'settled', ...(named ? { transaction: named } : {}) };
      }
      if (verdict.invalidReason === 'invalid_exact_svm_blockhash_expired') return { fate: 'never' };
      return { fate: 'open' };
    } catch (error) {
      deps.logger.warn({ err: error }, 'facilitator did not say how a market payment ended');
      return { fate: 'unknown' };
    }
  }

  const pending = (tradeId: string, why: string, retryAfterSeconds = PENDING_RETRY_SECONDS) =>
    new KeptPayment(
      503,
      'trade_pending',
      `The gateway paid the knowledge market for this trade and its outcome is not known yet (${why}). Present the same payment again to finish: you get the purchase, or your refund once the market's payment is known never to settle; nothing is charged twice`,
      { tradeId },
      { 'retry-after': String(retryAfterSeconds) },
    );

  const keptByMarket = (tradeId: string, payTo: string, moduleId: string) =>
    new KeptPayment(
      502,
      'market_kept_payment',
      `The knowledge market took the gateway's payment for module ${moduleId} (it settled to ${payTo}) and did not deliver the purchase. The gateway does not pay twice or refund what the market kept: the trade is reported to reputation as failed against ${payTo}`,
      { tradeId, moduleId, payTo },
    );

  /**
   * Decides a market payment whose purchase failed (`failure`: the market's answer, or its absence). Never settled and
   * unable to: the plan is given back and the failure thrown (the buyer is refunded). Settled, and the market refuses
   * (a considered 4xx) or has not answered for DELIVERY_WAIT_MS since the trade began (`since`): it kept the money; the
   * trade fails against it, unrefunded. Anything else: pending.
   */
  async function decide(
    tradeId: string,
    payment: SentPayment,
    module: MarketModule,
    buyer: string,
    failure: unknown,
    since: Date,
  ): Promise<never> {
    const { fate, transaction } = await fateOf(payment, module.id);
    if (fate === 'never') {
      await store.releaseTrade(tradeId);
      throw new NeverSettled(
        502,
        'upstream_unavailable',
        `The knowledge market did not deliver the purchase and its payment never settled (its blockhash has expired, so it never will); nothing was bought`,
        { service: 'knowledge-market' },
        { 'retry-after': '5' },
      );
    }
    const answered =
      failure instanceof ApiError &&
      failure.status < 500 &&
      !(failure instanceof PaymentRequiredError && failure.code === 'payment_already_used');
    if (fate === 'settled' && (answered || now().getTime() - since.getTime() >= DELIVERY_WAIT_MS)) {
      const payTo = payment.requirements.payTo;
      const body = {
        subject: payTo,
        subjectRole: 'seller' as const,
        outcome: 'expired' as const,
        amount: payment.requirements.amount,
        moduleId: module.id,
        ratedBy: buyer,
        comment: `Trade ${tradeId} through the gateway: the market payment settled and the purchase was never delivered (${answered ? (failure as ApiError).code : 'no answer'})`,
        ...(transaction || payment.transaction ? { signature: transaction ?? payment.transaction } : {}),
      };
      if (await store.failTrade(tradeId, body, now())) {
        const report = await fileReport(body);
        if (report.status === 'reported') await store.reportFiled(tradeId, report.reportId, now());
      }
      throw keptByMarket(tradeId, payTo, module.id);
    }
    const why =
      fate === 'open'
        ? 'the market has not settled the payment, and may until its blockhash expires'
        : failure instanceof Error
          ? failure.message
          : 'no answer';
    throw pending(tradeId, why, fate === 'open' ? OPEN_RETRY_SECONDS : PENDING_RETRY_SECONDS);
  }

  /**
   * Runs a settled execute: claims the plan for this payment, accepts a standing counter, buys for the buyer, checks
   * the content hash and reports the trade. A failure throws: refunded on chain by the runtime, unless the market may
   * have been paid (KeptPayment: pending until the same payment comes again, or failed against the market).
   */
  async function execute(
    prepared: Prepared,
    settlement: { key: string; payer: string; transaction: string },
    buyer: string,
  ): Promise<TradeExecution> {
    const done = await store.tradeOfPayment(settlement.key);
    if (done?.execution) return done.execution;
    if (prepared.replay) return prepared.replay;
    const { plan, price } = prepared;
    let { module, certificate } = prepared;
    if (done?.status === 'failed')
      throw keptByMarket(done.id, done.purchasePayment?.requirements.payTo ?? '', module.id);
    const priceUsd = atomicToUsd(price);
    const tradeId = done?.id ?? newId('trd');
    if (!done) {
      const claimed = await store.claimTrade({
        id: tradeId,
        planId: plan.id,
        paymentKey: settlement.key,
        buyer,
        moduleId: module.id,
        price,
        fee,
        at: now(),
      });
      if (!claimed) {
        const other = await store.tradeOfPlan(plan.id);
        throw conflict('plan_already_executed', `Plan ${plan.id} was executed`, {
          planId: plan.id,
          tradeId: other?.id,
          purchaseId: other?.purchaseId ?? null,
        });
      }
    }
    /** Whether a payment to the market may have left for this trade (then it is never given back to buy again). */
    let spent = false;
    /** The market payment recorded for this trade (it may have settled, whatever the market says). */
    let recorded: SentPayment | undefined;
    try {
      if (prepared.basis === 'standing-offer' && prepared.negotiationId) {
        try {
          await upstream.agent('negotiation').accept({
            params: { negotiationId: prepared.negotiationId },
            body: { expectedPriceUsd: priceUsd, message: 'Accepted by the gateway for the buyer' },
          });
        } catch (error) {
          if (isUnavailable(error)) throw upstreamUnavailable('negotiation', error);
          const e = error as ApiError;
          throw e.code === 'offer_changed' || e.code === 'not_your_turn'
            ? conflict('negotiation_pending', 'The seller’s offer changed since the quote', {
                negotiationId: prepared.negotiationId,
              })
            : passOn('negotiation', e);
        }
      }
      let purchase: ModulePurchase;
      let transaction: string;
      let network: string;
      const body = { ...(prepared.negotiationId ? { negotiationId: prepared.negotiationId } : {}), beneficiary: buyer };
      try {
        let bought: Bought;
        if (done?.purchaseId) {
          // Resumed after a crash: the module was bought already; read the purchase again instead of paying twice.
          spent = true;
          bought = {
            purchase: await upstream.agent('knowledge-market').download({ params: { purchaseId: done.purchaseId } }),
            transaction: done.purchaseTransaction ?? '',
            network: done.purchaseNetwork ?? '',
          };
        } else if (done?.purchasePayment) {
          // Resumed (after a crash, or a pending trade presented again): the market answers from the recorded payment;
          // failing that, the facilitator says how it ended. Nothing is paid again.
          spent = true;
          try {
            bought = await presentAgain(done.purchasePayment, module.id, body);
          } catch (error) {
            return await decide(tradeId, done.purchasePayment, module, buyer, error, done.createdAt);
          }
        } else {
          // Each payment is recorded before it leaves: from then on it may settle, so the trade is not given back
          // unless the facilitator says it never settled and never will.
          const sent = new Set<string>();
          const recorder: SpendStore = {
            load: () => Promise.resolve([]),
            async append(record) {
              if (record.type === 'release') sent.delete(record.id);
              if (record.type !== 'sent') return;
              await store.notePurchasePayment(tradeId, record.payment);
              sent.add(record.id);
              recorded = record.payment;
              spent = true;
            },
          };
          try {
            const purchased = await upstream
              .buyer('knowledge-market', priceUsd, recorder)
              .purchase.withResponse({ params: { moduleId: module.id }, body });
            bought = {
              purchase: purchased.data,
              transaction: purchased.payment?.transaction ?? '',
              network: purchased.payment?.network ?? '',
            };
          } catch (error) {
            // A payment left: whatever the market answered (it may keep the money and say nothing settled), the
            // facilitator decides between refund, pending and a market that kept it.
            if (recorded) {
              spent = true;
              return await decide(tradeId, recorded, module, buyer, error, done?.createdAt ?? now());
            }
            throw error;
          } finally {
            spent = sent.size > 0 || spent;
          }
        }
        ({ purchase, transaction, network } = bought);
        if (!done?.purchaseId) await store.notePurchase(tradeId, { purchaseId: purchase.id, transaction, network });
        if (prepared.moduleUnread) {
          module = await moduleById(module.id);
          certificate = await certificateFor(module).catch(() => null);
        }
      } catch (error) {
        if (error instanceof HttpError) throw error;
        if (isUnavailable(error)) throw upstreamUnavailable('knowledge-market', error);
        throw passOn('knowledge-market', error as ApiError);
      }
      // The purchase is the buyer's whatever it holds, so the trade is served, never refunded while the buyer keeps it:
      // a mismatch is reported in the execution (contentMatches false) and to reputation.
      const deliveredHash = sha256(purchase.content);
      const contentMatches =
        deliveredHash === module.contentHash && (!certificate || certificate.contentHash === deliveredHash);
      const reportBody = {
        subject: module.seller.wallet,
        subjectRole: 'seller' as const,
        outcome: 'completed' as const,
        amount: price.toString(),
        moduleId: module.id,
        ratedBy: buyer,
        comment: contentMatches
          ? `Trade ${tradeId} through the gateway: content delivered and its SHA-256 matched the certificate`
          : `Trade ${tradeId} through the gateway: the delivered content hashes to ${deliveredHash}, not the certified ${module.contentHash}`,
        ...(transaction ? { signature: transaction } : {}),
      };
      const report = await fileReport(reportBody);
      const completedAt = now();
      const pricing = await deps.pricing();
      const execution: TradeExecution = {
        id: tradeId,
        planId: plan.id,
        buyer,
        seller: module.seller.wallet,
        moduleId: module.id,
        title: module.title,
        verification: {
          status: certificate ? 'certified' : 'skipped',
          certificateId: certificate?.id ?? null,
          certificateScore: certificate?.score ?? null,
          contentHash: deliveredHash,
          contentMatches,
          checkedAt: completedAt.toISOString(),
        },
        purchase: {
          purchaseId: purchase.id,
          priceUsd: purchase.priceUsd,
          listPriceUsd: purchase.listPriceUsd,
          priceBasis: prepared.negotiationId ? 'agreed' : 'list',
          negotiationId: purchase.negotiationId,
          format: purchase.format,
          language: purchase.language,
          content: purchase.content,
          contentHash: purchase.contentHash,
          paidBy: purchase.paidBy,
          transaction,
          network,
        },
        reputation: { status: report.status, reportId: report.reportId, detail: report.detail },
        charges: { modulePriceUsd: priceUsd, gatewayFeeUsd: feeUsd, totalUsd: atomicToUsd(price + fee) },
        steps: planSteps(
          {
            moduleId: module.id,
            seller: module.seller.wallet,
            buyer,
            negotiation:
              plan.selectedModuleId === module.id
                ? plan.negotiation && { ...plan.negotiation, state: 'accepted', turn: null, agreedPriceUsd: priceUsd }
                : null,
            mode: module.negotiation.mode,
            certificateId: certificate?.id ?? null,
            contentHash: module.contentHash,
            requireCertificate: plan.requireCertificate,
            executed: { purchaseId: purchase.id, reported: report.status === 'reported' },
          },
          pricing,
        ),
        completedAt: completedAt.toISOString(),
      };
      await store.completeTrade(
        execution,
        { body: reportBody, status: report.status, reportId: report.reportId, error: report.error },
        completedAt,
      );
      return execution;
    } catch (error) {
      // A trade whose market payment may have settled keeps its claim and that payment (given back, the plan would buy
      // again), and the buyer's payment is kept for the next presentation, which finishes it: never refunded while the
      // market may have been paid.
      if (error instanceof KeptPayment || error instanceof NeverSettled) throw error;
      if (spent) {
        deps.logger.error({ err: error, tradeId }, 'trade failed after its market payment was sent; pending');
        throw pending(tradeId, error instanceof Error ? error.message : String(error));
      } else
        await store
          .releaseTrade(tradeId)
          .catch((e: unknown) => deps.logger.error({ err: e, tradeId }, 'trade claim not released'));
      throw error;
    }
  }

  type ReportBody = Record<string, unknown>;

  /**
   * Files the trade report as a trusted reporter for the buyer (ratedBy). A reputation service that does not trust
   * the gateway gets the report in the gateway's own name (its transfer to the seller verifies it on chain); one that
   * does not answer gets it later (queued, retried on every probe round).
   */
  async function fileReport(
    body: ReportBody,
  ): Promise<{ status: 'reported' | 'queued'; reportId: string | null; detail: string; error: string | null }> {
    const reputation = upstream.agent('reputation') as unknown as {
      report(args: { body: never }): Promise<{ id: string; verified: boolean; scoreAfter: number }>;
    };
    try {
      const report = await reputation.report({ body: body as never });
      return {
        status: 'reported',
        reportId: report.id,
        detail: `Reported for the buyer (verified: ${report.verified}); the seller’s score is now ${report.scoreAfter}`,
        error: null,
      };
    } catch (error) {
      if (error instanceof ApiError && error.code === 'not_trusted_reporter') {
        const { ratedBy: _, ...own } = body;
        try {
          const report = await reputation.report({ body: own as never });
          return {
            status: 'reported',
            reportId: report.id,
            detail: `Reported in the gateway’s own name (it is not a trusted reporter there; verified: ${report.verified})`,
            error: null,
          };
        } catch (second) {
          error = second;
        }
      }
      if (error instanceof ApiError && error.code === 'duplicate_report')
        return { status: 'reported', reportId: null, detail: 'Already reported', error: null };
      const reason = error instanceof Error ? error.message : String(error);
      deps.logger.warn({ err: error }, 'trade report queued');
      return {
        status: 'queued',
        reportId: null,
        detail: `The reputation service did not take the report (${reason}); the gateway retries`,
        error: reason,
      };
    }
  }

  /** Retries queued trade reports (every probe round). */
  async function retryReports(): Promise<void> {
    for (const queued of await store.queuedReports(20)) {
      const result = await fileReport(queued.body as ReportBody);
      if (result.status === 'reported') await store.reportFiled(queued.tradeId, result.reportId, now());
      else await store.reportFailed(queued.tradeId, result.error ?? 'unknown', now());
    }
  }

  return { discover, start, prepare, execute, chargeOf, retryReports, sellerScores, certificateFor, moduleById };
}

export type TradeLogic = ReturnType<typeof tradeLogic>;
export type PreparedExecution = Awaited<ReturnType<TradeLogic['prepare']>>;
