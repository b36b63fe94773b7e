import { randomBytes } from 'node:crypto';
import {
  X402PaymentPayloadSchema,
  base58Encode,
  decodeX402Header,
  knowledgeMarket,
  usdToAtomic,
  type NegotiatedTerms,
} from '@agent-economy/contracts';
import type { RouterImplementation } from '../../runtime/app';
import { callerOf } from '../../runtime/app';
import { HttpError, conflict, notFound, unprocessable } from '../../runtime/errors';
import { paymentKey, type VerifiedPayment } from '../../runtime/paywall';
import {
  assertStorable,
  buildStats,
  checkContent,
  contentHashOf,
  cursorOffset,
  encodeCursor,
  ratingOf,
  searchCatalogue,
  sizeOf,
  toModule,
  toPurchase,
  type Listing,
  type StoredModule,
} from './domain';
import type { MarketStore } from './store';

export interface MarketDeps {
  store: MarketStore;
  /** The agreed terms of an accepted negotiation, from the negotiation service (errors already translated). */
  agreement(negotiationId: string): Promise<NegotiatedTerms>;
  /** Throws 422 no_token_account when the wallet has no stablecoin token account to be paid into. */
  assertPayable(wallet: string): Promise<void>;
  now: () => Date;
}

/** The fields of a publish body (the contract's, after validation and defaults). */
export interface PublishBody {
  title: string;
  description: string;
  tags: string[];
  capabilities: string[];
  priceUsd: string;
  format: StoredModule['format'];
  language?: string;
  content: string;
  version: string;
  preview?: string;
  sellerName?: string;
  negotiation: { mode: StoredModule['negotiationMode']; maxDiscountPercent: number };
}

export interface PurchaseBody {
  negotiationId?: string;
  beneficiary?: string;
}

/** What a purchase request will cost and who is paid, decided before the quote. */
export interface PurchasePlan {
  module: Listing;
  price: bigint;
  terms: NegotiatedTerms | null;
  /**
   * The key of the payment the request carries, if any (a resumed settlement must not see its own purchase as a reuse).
   */
  paymentKey: string | null;
}

const newId = (prefix: string) => `${prefix}_${base58Encode(randomBytes(16))}`;
const badField = (field: string, message: string) =>
  new HttpError(400, 'invalid_request', `Invalid request: ${field} ${message}`, { fields: [{ field, message }] });

/** The key of the x402 payment a request carries (as the paywall claims it), or null. */
export function paymentKeyOf(headers: unknown): string | null {
  const header = (headers as Record<string, unknown> | undefined)?.['payment-signature'];
  if (typeof header !== 'string') return null;
  const parsed = X402PaymentPayloadSchema.safeParse(decodeX402Header(header));
  return (parsed.success && paymentKey(parsed.data)) || null;
}

export const moduleNotFound = (moduleId: string) => notFound('module_not_found', `No module ${moduleId}`, { moduleId });
/** 422 own_module for a purchase paid from the module's seller's wallet, whoever it names as buyer. */
const ownPayment = (moduleId: string) =>
  unprocessable(
    'own_module',
    'The payment comes from the module’s seller’s own wallet: a seller cannot buy their own module, for anyone',
    { moduleId },
  );

/** Everything about a publish that can fail before the listing fee is charged. */
export async function checkPublish(deps: MarketDeps, body: PublishBody, seller: string): Promise<void> {
  assertStorable({
    'body.title': body.title,
    'body.description': body.description,
    'body.content': body.content,
    'body.preview': body.preview,
    'body.sellerName': body.sellerName,
  });
  checkContent(body.format, body.language, body.content);
  const existing = await deps.store.moduleBySellerHash(seller, contentHashOf(body.content));
  if (existing)
    throw conflict('duplicate_module', 'You already list a module with this content', { moduleId: existing });
  await deps.assertPayable(seller);
}

/**
 * Everything about a purchase that can be decided before the quote: the module, the price (the agreement's or the
 * list price), and every rule of the agreement that does not depend on who pays. The payer is known only once the
 * payment is verified; the handler checks what depends on it, before settlement, so a refusal still charges nothing.
 */
export function purchasePlanner(deps: MarketDeps) {
  // The preflight, the price resolver and the handler see the same parsed request: one plan (one read of the
  // negotiation service) serves all three.
  const plans = new WeakMap<object, Promise<PurchasePlan>>();
  async function plan(params: { moduleId: string }, body: PurchaseBody, headers: unknown): Promise<PurchasePlan> {
    const module = await deps.store.listing(params.moduleId);
    if (!module) throw moduleNotFound(params.moduleId);
    if (body.beneficiary && body.beneficiary === module.seller)
      throw unprocessable('own_module', 'The buyer is the module’s seller', { moduleId: module.id });
    const key = paymentKeyOf(headers);
    if (!body.negotiationId) return { module, price: module.price, terms: null, paymentKey: key };
    const terms = await deps.agreement(body.negotiationId);
    if (terms.moduleId !== module.id) {
      throw unprocessable('negotiation_mismatch', `Negotiation ${terms.negotiationId} is about another module`, {
        negotiationId: terms.negotiationId,
        moduleId: terms.moduleId,
      });
    }
    if (body.beneficiary && terms.buyer !== body.beneficiary) {
      throw unprocessable('negotiation_mismatch', `Negotiation ${terms.negotiationId} was agreed for another buyer`, {
        negotiationId: terms.negotiationId,
        buyer: terms.buyer,
      });
    }
    if (deps.now().getTime() >= Date.parse(terms.validUntil)) {
      throw conflict('agreement_expired', `The agreement expired at ${terms.validUntil}`, {
        negotiationId: terms.negotiationId,
        validUntil: terms.validUntil,
      });
    }
    if (await deps.store.agreementUsed(terms.negotiationId, key)) {
      throw conflict('negotiation_already_used', 'This agreement has already bought the module once', {
        negotiationId: terms.negotiationId,
      });
    }
    return { module, price: usdToAtomic(terms.priceUsd), terms, paymentKey: key };
  }
  return (request: { params: { moduleId: string }; body: PurchaseBody; headers?: unknown }): Promise<PurchasePlan> => {
    let planned = plans.get(request);
    if (!planned) {
      planned = plan(request.params, request.body, request.headers);
      plans.set(request, planned);
    }
    return planned;
  };
}

// Handlers only translate between the contract and the domain.
export function marketHandlers(
  deps: MarketDeps,
  planPurchase: ReturnType<typeof purchasePlanner>,
): RouterImplementation<typeof knowledgeMarket.router> {
  const { store, now } = deps;
  return {
    list: async ({ query }) => {
      const offset = cursorOffset(query.cursor);
      const maxPrice = query.maxPriceUsd === undefined ? undefined : usdToAtomic(query.maxPriceUsd);
      const hits = searchCatalogue(await store.listings(), query, maxPrice);
      const items = hits.slice(offset, offset + query.limit).map(toModule);
      return {
        status: 200,
        body: { items, nextCursor: offset + query.limit < hits.length ? encodeCursor(offset + query.limit) : null },
      };
    },

    get: async ({ params }) => {
      const module = await store.listing(params.moduleId);
      if (!module) throw moduleNotFound(params.moduleId);
      return { status: 200, body: toModule(module) };
    },

    publish: async ({ body, res }) => {
      const seller = callerOf(res);
      await checkPublish(deps, body, seller);
      const module: StoredModule = {
        id: newId('mod'),
        seller,
        sellerName: body.sellerName ?? null,
        title: body.title,
        description: body.description,
        tags: [...new Set(body.tags)],
        capabilities: [...new Set(body.capabilities)],
        price: usdToAtomic(body.priceUsd),
        negotiationMode: body.negotiation.mode,
        maxDiscountPercent: body.negotiation.maxDiscountPercent,
        version: body.version,
        format: body.format,
        language: body.language ?? null,
        contentHash: contentHashOf(body.content),
        sizeBytes: sizeOf(body.content),
        preview: body.preview ?? null,
        publishedAt: now(),
      };
      await store.insertModule(module, body.content);
      return { status: 201, body: toModule({ ...module, sales: 0, ratingSum: 0, ratingCount: 0 }) };
    },

    purchase: async ({ body, res }) => {
      const plan = await planPurchase(res.locals.parsed as Parameters<typeof planPurchase>[0]);
      const { module, terms } = plan;
      const payer = (res.locals.payment as VerifiedPayment | undefined)?.payer || undefined;
      // A seller paying for their own module, for any beneficiary, pays themself: a free sale and a rating. The route
      // settles after its handler, so this refusal (after verification, before settlement) charges nothing.
      if (payer && payer === module.seller) throw ownPayment(module.id);
      // Knowing an agreement's id is not owning it: only its buyer, or the registered broker that opened it for them,
      // may
      // pay with it. Refused here, after verification and before settlement, so nothing is charged and the agreement
      // stays.
      if (terms && payer && payer !== terms.buyer && payer !== terms.broker) {
        throw new HttpError(
          403,
          'not_agreement_buyer',
          `Negotiation ${terms.negotiationId} was agreed for another buyer: only that buyer or its broker may pay with it`,
          {
            negotiationId: terms.negotiationId,
          },
        );
      }
      // A purchase with an agreement is the agreement's buyer's; otherwise the beneficiary's, else the payer's.
      const buyer = body.beneficiary ?? terms?.buyer ?? payer;
      if (!buyer)
        throw badField(
          'body.beneficiary',
          'is required when the purchase is not paid: without a payer it names the buyer',
        );
      if (buyer === module.seller)
        throw unprocessable('own_module', 'The buyer is the module’s seller', { moduleId: module.id });
      if (terms && terms.buyer !== buyer) {
        throw unprocessable('negotiation_mismatch', `Negotiation ${terms.negotiationId} was agreed for another buyer`, {
          negotiationId: terms.negotiationId,
          buyer: terms.buyer,
        });
      }
      const outcome = await store.insertPurchase({
        id: newId('pur'),
        moduleId: module.id,
        title: module.title,
        version: module.version,
        seller: module.seller,
        buyer,
        paidBy: payer ?? buyer,
        price: plan.price,
        listPrice: module.price,
        negotiationId: terms?.negotiationId ?? null,
        paymentKey: plan.paymentKey,
        purchasedAt: now(),
      });
      if ('used' in outcome)
        throw conflict('negotiation_already_used', 'This agreement has already bought the module once', {
          negotiationId: terms?.negotiationId,
        });
      return { status: 200, body: toPurchase(outcome.purchase) };
    },

    download: async ({ params, res }) => {
      const caller = callerOf(res);
      const purchase = await store.purchase(params.purchaseId);
      if (!purchase)
        throw notFound('purchase_not_found', `No purchase ${params.purchaseId}`, { purchaseId: params.purchaseId });
      if (caller !== purchase.buyer && caller !== purchase.paidBy)
        throw new HttpError(403, 'not_purchase_party', 'Only the buyer or the payer of a purchase may read it');
      return { status: 200, body: toPurchase(purchase) };
    },

    rate: async ({ params, body, res }) => {
      const caller = callerOf(res);
      assertStorable({ 'body.comment': body.comment });
      const module = await store.listing(params.moduleId);
      if (!module) throw moduleNotFound(params.moduleId);
      const purchase = await store.purchase(body.purchaseId);
      if (!purchase)
        throw notFound('purchase_not_found', `No purchase ${body.purchaseId}`, { purchaseId: body.purchaseId });
      // Strangers learn nothing about a purchase, not even which module it bought.
      if (caller !== purchase.buyer) throw new HttpError(403, 'not_buyer', 'Only the buyer of a purchase may rate it');
      // A purchase the seller paid for (recorded before the purchase route refused them) rates nothing.
      if (purchase.paidBy === purchase.seller) throw ownPayment(purchase.moduleId);
      if (purchase.moduleId !== module.id) {
        throw unprocessable(
          'purchase_module_mismatch',
          `Purchase ${purchase.id} is of module ${purchase.moduleId}, not ${module.id}`,
          { moduleId: purchase.moduleId },
        );
      }
      const ratedAt = now();
      const row = {
        purchaseId: purchase.id,
        moduleId: module.id,
        buyer: caller,
        rating: body.rating,
        comment: body.comment ?? null,
        ratedAt,
      };
      if (!(await store.insertRating(row)))
        throw conflict('already_rated', 'This purchase has already been rated', { purchaseId: purchase.id });
      const updated = (await store.listing(module.id))!;
      return {
        status: 200,
        body: {
          moduleId: module.id,
          purchaseId: purchase.id,
          rating: body.rating,
          comment: body.comment ?? null,
          ratedAt: ratedAt.toISOString(),
          moduleRating: ratingOf(updated.ratingSum, updated.ratingCount),
        },
      };
    },

    stats: async () => {
      const [modules, purchases, ratings] = await Promise.all([
        store.listings(),
        store.paidPurchases(),
        store.allRatings(),
      ]);
      return { status: 200, body: buildStats(modules, purchases, ratings, now()) };
    },
  };
}
