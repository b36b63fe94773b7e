import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { defineService } from '../core/service';
import { named } from '../core/names';
import { ErrorEnvelope, paymentErrors, standardErrors } from '../core/errors';
import { adaptive, fixed, free, type RouteMeta } from '../core/payment';
import { UsdAmount, usdToAtomic } from '../core/money';
import { SolanaAddress, Timestamp } from '../core/chain';
import { PageQuery, authErrors, page } from './shared';

const c = initContract();

// Knowledge market: sellers publish knowledge modules (markdown, text, JSON or code an agent can use), buyers find
// and buy them per call with x402. Negotiated prices come from the negotiation service; certificates of the content
// from the verification service (bound to the same SHA-256 contentHash). The gateway fronts all of them.

/** Lowest and highest price a module may have, in USD (the purchase route's price range). */
export const MODULE_PRICE_MIN_USD = '0.001';
export const MODULE_PRICE_MAX_USD = '100';

export type MarketContentFormat = 'markdown' | 'text' | 'json' | 'code';
/**
 * auto: the negotiation service answers buyers with the published rule; manual: the seller answers; off: list price
 * only.
 */
export type MarketNegotiationMode = 'auto' | 'manual' | 'off';

export interface MarketNegotiationTerms {
  mode: MarketNegotiationMode;
  /** The most the automatic responder concedes below the list price, in percent (0 to 50). */
  maxDiscountPercent: number;
  /**
   * Lowest price the automatic responder can agree to: priceUsd × (100 − maxDiscountPercent) / 100, rounded up; null
   * unless mode is auto.
   */
  floorUsd: string | null;
}
export interface MarketModuleSeller {
  wallet: string;
  name: string | null;
}
export interface MarketModuleRating {
  /** Mean of the buyers' 1-to-5 ratings, two decimals; null before the first rating. */
  average: number | null;
  count: number;
}
export interface MarketModule {
  id: string;
  title: string;
  description: string;
  tags: string[];
  capabilities: string[];
  seller: MarketModuleSeller;
  priceUsd: string;
  negotiation: MarketNegotiationTerms;
  version: string;
  format: MarketContentFormat;
  language: string | null;
  /** SHA-256 of the UTF-8 content, lowercase hex: what a verification certificate is bound to. */
  contentHash: string;
  sizeBytes: number;
  preview: string | null;
  rating: MarketModuleRating;
  sales: number;
  publishedAt: string;
}
export interface ModulePurchase {
  id: string;
  moduleId: string;
  title: string;
  version: string;
  seller: string;
  /** The wallet the module was bought for (the beneficiary, or the payer when none was named). */
  buyer: string;
  /** The wallet that paid the x402 charge (the gateway's, when it buys on a buyer's behalf). */
  paidBy: string;
  priceUsd: string;
  listPriceUsd: string;
  negotiationId: string | null;
  format: MarketContentFormat;
  language: string | null;
  content: string;
  contentHash: string;
  purchasedAt: string;
}
export interface ModuleRatingReceipt {
  moduleId: string;
  purchaseId: string;
  rating: number;
  comment: string | null;
  ratedAt: string;
  moduleRating: MarketModuleRating;
}
export interface MarketStats {
  modules: number;
  sellers: number;
  purchases: number;
  /** Sum of the prices paid for purchases, USD. */
  volumeUsd: string;
  ratings: number;
  averageRating: number | null;
  byFormat: Record<MarketContentFormat, number>;
  topCapabilities: { capability: string; modules: number }[];
  purchasesLast24h: number;
  asOf: string;
}

const MODULE_ID = /^mod_[A-Za-z0-9]{16,40}$/;
const ModuleIdParam = z.string().regex(MODULE_ID, 'must be a module id such as "mod_7Qk2Xb9LmP4tRw8Z"');
const PurchaseIdParam = z
  .string()
  .regex(/^pur_[A-Za-z0-9]{16,40}$/, 'must be a purchase id such as "pur_3Hd8Kq2WmX7pLz4N"');
const NegotiationIdParam = z
  .string()
  .regex(/^neg_[A-Za-z0-9]{16,40}$/, 'must be a negotiation id such as "neg_9Vt4Lm2Qx8Kd3Rp7"');
const Slug = z.string().regex(/^[a-z0-9][a-z0-9-]{0,47}$/, 'must be a lowercase slug such as "defi-research"');
const SlugList = z
  .string()
  .regex(
    /^[a-z0-9][a-z0-9-]{0,47}(,[a-z0-9][a-z0-9-]{0,47}){0,9}$/,
    'must be 1 to 10 comma-separated lowercase slugs, e.g. "solana,defi"',
  );
const ContentHash = z.string().regex(/^[0-9a-f]{64}$/, 'must be a SHA-256 hex digest (64 lowercase hex characters)');
const FormatSchema = named('KnowledgeMarketFormat', z.enum(['markdown', 'text', 'json', 'code']));
/**
 * True when a USD amount is within the module price range. Zod runs refinements even after the format check failed,
 * so a string that is not a USD amount at all passes here and keeps UsdAmount's own message (instead of throwing).
 */
export function isModulePriceUsd(usd: string): boolean {
  let atomic: bigint;
  try {
    atomic = usdToAtomic(usd);
  } catch {
    return true;
  }
  return atomic >= usdToAtomic(MODULE_PRICE_MIN_USD) && atomic <= usdToAtomic(MODULE_PRICE_MAX_USD);
}
const ModulePrice = UsdAmount.refine(
  isModulePriceUsd,
  `must be between ${MODULE_PRICE_MIN_USD} and ${MODULE_PRICE_MAX_USD} USD`,
);

const RatingSchema: z.ZodType<MarketModuleRating> = named(
  'MarketModuleRating',
  z.object({
    average: z
      .number()
      .min(1)
      .max(5)
      .nullable()
      .describe('mean of the buyers’ 1-to-5 ratings, two decimals; null before the first'),
    count: z.number().int().min(0),
  }),
);
const ModuleSchema: z.ZodType<MarketModule> = named(
  'MarketModule',
  z.object({
    id: z.string().describe('module id, mod_…'),
    title: z.string(),
    description: z.string(),
    tags: z.array(z.string()).describe('topics, e.g. "solana", "defi"'),
    capabilities: z
      .array(z.string())
      .describe('what the module lets an agent do, e.g. "fee-estimation"; matched against agents’ capabilities'),
    seller: z.object({ wallet: SolanaAddress, name: z.string().nullable() }),
    priceUsd: UsdAmount.describe('list price in USD'),
    negotiation: z.object({
      mode: z
        .enum(['auto', 'manual', 'off'])
        .describe(
          'auto: the negotiation service answers with its published rule; manual: the seller answers; off: list price only',
        ),
      maxDiscountPercent: z.number().int().min(0).max(50),
      floorUsd: UsdAmount.nullable().describe(
        'priceUsd × (100 − maxDiscountPercent) / 100 rounded up to 0.000001; null unless mode is auto',
      ),
    }),
    version: z.string().describe('semantic version of the content'),
    format: FormatSchema,
    language: z.string().nullable().describe('programming language when format is "code"'),
    contentHash: ContentHash.describe(
      'SHA-256 of the UTF-8 content, lowercase hex; certificates of the verification service bind to it',
    ),
    sizeBytes: z.number().int().min(1),
    preview: z.string().nullable().describe('the seller’s teaser; the content itself is only delivered by a purchase'),
    rating: RatingSchema,
    sales: z.number().int().min(0),
    publishedAt: Timestamp,
  }),
);
const PurchaseSchema: z.ZodType<ModulePurchase> = named(
  'ModulePurchase',
  z.object({
    id: z.string().describe('purchase id, pur_…'),
    moduleId: z.string(),
    title: z.string(),
    version: z.string(),
    seller: SolanaAddress,
    buyer: SolanaAddress.describe('the wallet the module was bought for: the beneficiary, else the payer'),
    paidBy: SolanaAddress.describe('the wallet that paid the x402 charge'),
    priceUsd: UsdAmount.describe('what was charged: the negotiated price, else the list price'),
    listPriceUsd: UsdAmount,
    negotiationId: z.string().nullable(),
    format: FormatSchema,
    language: z.string().nullable(),
    content: z.string().describe('the module content'),
    contentHash: ContentHash.describe('SHA-256 of `content` (UTF-8), lowercase hex; equals the listed contentHash'),
    purchasedAt: Timestamp,
  }),
);
const RatingReceiptSchema: z.ZodType<ModuleRatingReceipt> = named(
  'ModuleRatingReceipt',
  z.object({
    moduleId: z.string(),
    purchaseId: z.string(),
    rating: z.number().int().min(1).max(5),
    comment: z.string().nullable(),
    ratedAt: Timestamp,
    moduleRating: RatingSchema.describe('the module’s rating including this one'),
  }),
);
const count = z.number().int().min(0);
const StatsSchema: z.ZodType<MarketStats> = named(
  'MarketStats',
  z.object({
    modules: count,
    sellers: count.describe('wallets with at least one module'),
    purchases: count,
    volumeUsd: UsdAmount.describe('sum of the prices paid, USD'),
    ratings: count,
    averageRating: z.number().min(1).max(5).nullable().describe('mean of all ratings; null before the first'),
    byFormat: z.object({ markdown: count, text: count, json: count, code: count }),
    topCapabilities: z
      .array(z.object({ capability: z.string(), modules: count }))
      .describe('the 10 capabilities most modules declare'),
    purchasesLast24h: count,
    asOf: Timestamp,
  }),
);

export interface MarketPublishBodyOut {
  title: string;
  description: string;
  tags: string[];
  capabilities: string[];
  priceUsd: string;
  format: MarketContentFormat;
  language?: string;
  content: string;
  version: string;
  preview?: string;
  sellerName?: string;
  negotiation: { mode: MarketNegotiationMode; maxDiscountPercent: number };
}
export interface MarketPublishBodyIn extends Omit<MarketPublishBodyOut, 'tags' | 'version' | 'negotiation'> {
  tags?: string[];
  version?: string;
  negotiation?: { mode?: MarketNegotiationMode; maxDiscountPercent?: number };
}
const PublishBody: z.ZodType<MarketPublishBodyOut, z.ZodTypeDef, MarketPublishBodyIn> = named(
  'MarketPublishBodyOut',
  z
    .object({
      title: z.string().trim().min(3).max(120),
      description: z.string().trim().min(10).max(2000),
      tags: z.array(Slug).max(10).default([]).describe('up to 10 topic slugs'),
      capabilities: z.array(Slug).min(1).max(10).describe('1 to 10 capability slugs: what the module lets an agent do'),
      priceUsd: ModulePrice.describe(`list price in USD, ${MODULE_PRICE_MIN_USD} to ${MODULE_PRICE_MAX_USD}`),
      format: FormatSchema.describe('as the verification service’s scan takes it'),
      language: z
        .string()
        .regex(/^[a-z][a-z0-9+#-]{0,31}$/, 'must be a lowercase language name such as "typescript"')
        .optional()
        .describe('programming language when format is "code"'),
      content: z
        .string()
        .min(1)
        .max(100_000)
        .describe('the module content, at most 100,000 characters; delivered only to buyers'),
      version: z
        .string()
        .regex(/^\d{1,4}\.\d{1,4}\.\d{1,4}$/, 'must be a semantic version such as "1.0.0"')
        .default('1.0.0'),
      preview: z.string().trim().min(1).max(500).optional().describe('public teaser shown in listings'),
      sellerName: z.string().trim().min(2).max(64).optional().describe('display name of the selling agent'),
      negotiation: z
        .object({
          mode: z.enum(['auto', 'manual', 'off']).default('auto'),
          maxDiscountPercent: z
            .number()
            .int()
            .min(0)
            .max(50)
            .default(20)
            .describe('used by mode auto; 0 to 50, default 20'),
        })
        .strict()
        .default({})
        .describe('how buyers may negotiate: default auto with at most 20 percent off'),
    })
    .strict(),
);

const EXAMPLE_BUYER = 'AwzqSRCDZAUN3utZvfiggpY5GvajfeG5h2LunF77n24L';

const router = c.router({
  list: {
    method: 'GET',
    path: '/api/modules',
    query: z
      .object({
        q: z
          .string()
          .trim()
          .min(1)
          .max(200)
          .optional()
          .describe('words to find in title, description, tags and capabilities'),
        tags: SlugList.optional().describe('comma-separated tags; a module matches when it has any of them'),
        capability: Slug.optional().describe('only modules declaring this capability'),
        seller: SolanaAddress.optional().describe('only this seller’s modules'),
        maxPriceUsd: UsdAmount.optional().describe('only modules listed at or below this price'),
        minRating: z.coerce
          .number()
          .min(1)
          .max(5)
          .optional()
          .describe('only modules rated at least this (unrated modules excluded)'),
        sort: z
          .enum(['relevance', 'rating', 'price', 'newest'])
          .optional()
          .describe(
            'relevance (BM25 over the text fields; the default with q), rating, price (cheapest first), newest (the default without q)',
          ),
        ...PageQuery,
      })
      .strict(),
    summary: 'Browse and search the knowledge modules for sale',
    description:
      'Design: modules with their seller, list price, negotiation terms, content hash, rating and sales; the content itself ' +
      'is never listed. Free: the shop window is descriptive, and discovery (the gateway’s free search reads it) must cost ' +
      'nothing.',
    responses: { 200: page(ModuleSchema), ...standardErrors },
    metadata: {
      payment: free(),
      example: { query: { q: 'priority fees', tags: 'solana,fees', maxPriceUsd: '2', sort: 'relevance', limit: 20 } },
    } satisfies RouteMeta,
  },
  get: {
    method: 'GET',
    path: '/api/modules/:moduleId',
    pathParams: z.object({ moduleId: ModuleIdParam }),
    summary: 'One module’s listing',
    description:
      'Design: the listing of one module (everything but its content). Free: descriptive. Errors: 404 module_not_found.',
    responses: { 200: ModuleSchema, 404: ErrorEnvelope, ...standardErrors },
    metadata: { payment: free(), example: { params: { moduleId: 'mod_7Qk2Xb9LmP4tRw8Z' } } } satisfies RouteMeta,
  },
  publish: {
    method: 'POST',
    path: '/api/modules',
    body: PublishBody,
    summary: 'Publish a knowledge module for sale',
    description:
      'Design: lists a module sold by the signed-in wallet (the seller). The market computes `contentHash` (SHA-256 of the ' +
      'UTF-8 content, lowercase hex, as the verification service computes it) and `sizeBytes`; get the content certified by ' +
      'the verification service (POST /api/scan with the module id) so that buyers and the gateway trust it. Negotiation ' +
      'terms default to mode auto with at most 20 percent off. The price is a listing fee against spam. Errors: 409 ' +
      'duplicate_module (the same seller already lists this contentHash; details.moduleId names it), 422 ' +
      'no_token_account (the seller’s wallet has no stablecoin token account, so it could not be paid), 422 language_required ' +
      '(format "code" without `language`), 422 invalid_json_content (format "json" that does not parse) and 502 ' +
      'upstream_unavailable (the chain, read for the token account, does not answer); none is charged.',
    responses: {
      201: ModuleSchema,
      409: ErrorEnvelope,
      422: ErrorEnvelope,
      502: ErrorEnvelope,
      ...standardErrors,
      ...authErrors,
      ...paymentErrors,
    },
    metadata: {
      payment: fixed('0.01'),
      auth: 'siwx',
      example: {
        body: {
          title: 'Solana priority fees in practice',
          description:
            'How to read recent prioritization fees and choose a compute-unit price that lands in the next blocks.',
          tags: ['solana', 'fees'],
          capabilities: ['fee-estimation', 'transaction-landing'],
          priceUsd: '0.50',
          format: 'markdown',
          content:
            '# Priority fees\n\nCall getRecentPrioritizationFees for the writable accounts you touch, take the 75th percentile…\n',
          preview: 'Percentile-based compute-unit pricing with worked examples.',
          sellerName: 'fee-scholar',
          negotiation: { mode: 'auto', maxDiscountPercent: 20 },
        },
      },
    } satisfies RouteMeta,
  },
  purchase: {
    method: 'POST',
    path: '/api/modules/:moduleId/purchase',
    pathParams: z.object({ moduleId: ModuleIdParam }),
    body: z
      .object({
        negotiationId: NegotiationIdParam.optional().describe(
          'an accepted negotiation for this module: its agreed price is charged',
        ),
        beneficiary: SolanaAddress.optional().describe(
          'the wallet the module is bought for, when the payer buys on someone’s behalf (the gateway does); with `negotiationId`, the agreement’s buyer (the default)',
        ),
      })
      .strict(),
    summary: 'Buy a module: pay its price, receive its content',
    description:
      'Design: the price depends on the request, so the route is priced adaptively between ' +
      `${MODULE_PRICE_MIN_USD} and ${MODULE_PRICE_MAX_USD} USD: the 402 quote asks for exactly the module’s list price, or the ` +
      'agreed price of the accepted negotiation named by `negotiationId` (read from the negotiation service before quoting). ' +
      'No demand surcharge applies. The quote’s payTo is the seller’s wallet, so the buyer pays the seller directly and the ' +
      'market holds no funds. The answer carries the content and its SHA-256, which equals the listed contentHash. The buyer ' +
      'is `beneficiary` when given, else the payer. An agreement (`negotiationId`) is honoured once, within its validity, ' +
      'and only when the x402 payer is the agreement’s buyer or the registered broker that opened it for them (the gateway ' +
      'buying for a buyer); the purchase is then the agreement’s buyer’s (`beneficiary` may be omitted, and must be that ' +
      'buyer when given), paidBy the payer. A payer who is neither is refused after verification and before settlement ' +
      '(403 not_agreement_buyer): nothing is charged and the agreement stays usable. (A deployment that charges nothing for ' +
      'purchases has no payer to check; there the agreement moves no money.) Errors: 403 not_agreement_buyer, 404 ' +
      'module_not_found, 404 negotiation_not_found, 409 negotiation_not_accepted, 409 ' +
      'negotiation_already_used, 409 agreement_expired, 422 negotiation_mismatch (another module, or another buyer), ' +
      '422 own_module (the buyer is the seller), 502 negotiation_unavailable. All are checked before the quote, so none is charged.',
    responses: {
      200: PurchaseSchema,
      403: ErrorEnvelope,
      404: ErrorEnvelope,
      409: ErrorEnvelope,
      422: ErrorEnvelope,
      502: ErrorEnvelope,
      ...standardErrors,
      ...paymentErrors,
    },
    metadata: {
      payment: adaptive(MODULE_PRICE_MIN_USD, MODULE_PRICE_MAX_USD),
      example: {
        params: { moduleId: 'mod_7Qk2Xb9LmP4tRw8Z' },
        body: { negotiationId: 'neg_9Vt4Lm2Qx8Kd3Rp7', beneficiary: EXAMPLE_BUYER },
      },
    } satisfies RouteMeta,
  },
  download: {
    method: 'GET',
    path: '/api/purchases/:purchaseId',
    pathParams: z.object({ purchaseId: PurchaseIdParam }),
    summary: 'A purchase again, content included',
    description:
      'Design: the stored purchase with its content, for a buyer who lost the purchase answer. Free: it was paid for. Only ' +
      'the buyer or the payer may read it. Errors: 404 purchase_not_found, 403 not_purchase_party.',
    responses: { 200: PurchaseSchema, 404: ErrorEnvelope, ...standardErrors, ...authErrors },
    metadata: {
      payment: free(),
      auth: 'siwx',
      example: { params: { purchaseId: 'pur_3Hd8Kq2WmX7pLz4N' } },
    } satisfies RouteMeta,
  },
  rate: {
    method: 'POST',
    path: '/api/modules/:moduleId/rate',
    pathParams: z.object({ moduleId: ModuleIdParam }),
    body: z
      .object({
        purchaseId: PurchaseIdParam.describe('your purchase of this module'),
        rating: z.number().int().min(1).max(5).describe('1 (useless) to 5 (excellent)'),
        comment: z.string().trim().min(1).max(1000).optional(),
      })
      .strict(),
    summary: 'Rate a module you bought',
    description:
      'Design: one rating per purchase, by its buyer; the module’s rating is the mean of its ratings. Free, so that ratings ' +
      'are not skewed toward buyers willing to pay for them; a purchase is required, which keeps out spam. This is the ' +
      '"rate" step of the gateway’s trade lifecycle for the module (the gateway also reports the trade to the reputation ' +
      'service). Errors: 404 module_not_found, 404 purchase_not_found, 403 not_buyer, 409 already_rated, 422 ' +
      'purchase_module_mismatch (the purchase is of another module).',
    responses: {
      200: RatingReceiptSchema,
      404: ErrorEnvelope,
      409: ErrorEnvelope,
      422: ErrorEnvelope,
      ...standardErrors,
      ...authErrors,
    },
    metadata: {
      payment: free(),
      auth: 'siwx',
      example: {
        params: { moduleId: 'mod_7Qk2Xb9LmP4tRw8Z' },
        body: { purchaseId: 'pur_3Hd8Kq2WmX7pLz4N', rating: 5, comment: 'Clear percentiles, worked on devnet.' },
      },
    } satisfies RouteMeta,
  },
  stats: {
    method: 'GET',
    path: '/api/stats',
    summary: 'Knowledge market statistics',
    description:
      'Design: modules, sellers, purchases and their volume, ratings, modules per format and the most declared capabilities. ' +
      'Free: descriptive, read by the gateway’s ecosystem overview.',
    responses: { 200: StatsSchema, ...standardErrors },
    metadata: { payment: free() } satisfies RouteMeta,
  },
});

export const knowledgeMarket = defineService({
  id: 'knowledge-market',
  title: 'Knowledge Market',
  description:
    'Knowledge modules for sale between agents: sellers publish modules with a price, tags, capabilities and a content ' +
    'hash; buyers search them, pay per purchase with x402 (at the list price or a negotiated one) and receive the content; ' +
    'buyers rate what they bought.',
  router,
});
