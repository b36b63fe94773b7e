import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { defineService } from '../core/service';
import { named } from '../core/names';
import { ErrorEnvelope, paymentErrors, standardErrors } from '../core/errors';
import { fixed, free, type RouteMeta } from '../core/payment';
import { UsdAmount } from '../core/money';
import { SolanaAddress, Timestamp } from '../core/chain';
import { PageQuery, authErrors, page } from './shared';
import { MODULE_PRICE_MAX_USD, MODULE_PRICE_MIN_USD, isModulePriceUsd } from './knowledge-market';

const c = initContract();

// Negotiation: a buyer and a seller haggle over the price of one knowledge-market module, in turns. The seller's
// side is answered by a deterministic responder (module negotiation mode "auto") or by the seller (mode "manual").
// An accepted negotiation is an agreement the knowledge market honours once, for its buyer, for 24 hours.

/** Buyer offers per negotiation: after the buyer's fifth offer the seller's side may only accept or reject. */
export const NEGOTIATION_MAX_ROUNDS = 5;
/** How long an agreement can be used for a purchase after it was accepted. */
export const NEGOTIATION_AGREEMENT_VALID_HOURS = 24;

/**
 * The automatic responder's rule, in words; the routes' descriptions repeat it. Prices are exact 6-decimal USD
 * amounts (atomic units); "rounded up" means to the next 0.000001.
 */
const STRATEGY =
  'Automatic responder (modules in negotiation mode "auto"), deterministic: list price L, floor F = L × (100 − ' +
  'maxDiscountPercent) / 100 rounded up, standing ask A (L until the first counter). An opening offer at or above L is ' +
  'accepted at L. For a buyer offer P in round k (the k-th buyer offer): if k < 5 it counters with C = max(F, (P + A) / 2 ' +
  'rounded up), splitting the difference and never going below the floor, and C becomes the new ask; in round 5 it ' +
  'accepts P when P ≥ F and otherwise rejects (reason below_floor). Every automatic move records its arithmetic in ' +
  '`rationale`. Example: L 0.50 and maxDiscountPercent 20 give F 0.40; an offer of 0.35 is countered with max(0.40, ' +
  '0.425) = 0.425; a second offer of 0.38 with max(0.40, 0.4025) = 0.4025; a fifth offer of 0.40 is accepted.';

export type NegotiationState = 'open' | 'countered' | 'accepted' | 'rejected' | 'expired';
export type NegotiationParty = 'buyer' | 'seller';

export interface NegotiationOffer {
  /** The buyer offer this belongs to: 1 for the opening offer and the answer to it, then 2, 3, … */
  round: number;
  by: NegotiationParty;
  priceUsd: string;
  message: string | null;
  /** True when the automatic responder made it for the seller. */
  automatic: boolean;
  /** The responder's arithmetic for an automatic move; null for a party's own move. */
  rationale: string | null;
  at: string;
}
export interface NegotiationAgreement {
  priceUsd: string;
  acceptedBy: NegotiationParty;
  automatic: boolean;
  acceptedAt: string;
  /** The knowledge market honours the agreement once, until this time. */
  validUntil: string;
}
export interface NegotiationRejection {
  by: NegotiationParty;
  automatic: boolean;
  reason: string | null;
  at: string;
}
export interface Negotiation {
  id: string;
  moduleId: string;
  moduleTitle: string;
  buyer: string;
  seller: string;
  /** The wallet that opened the negotiation for the buyer (the gateway), or null when the buyer opened it. */
  broker: string | null;
  mode: 'auto' | 'manual';
  state: NegotiationState;
  /** Whose move it is; null once the negotiation is closed. */
  turn: NegotiationParty | null;
  listPriceUsd: string;
  /** The responder's floor in mode auto (public, from the module's terms); null in mode manual. */
  floorUsd: string | null;
  /** The last offer, which the party in turn may accept; null once closed. */
  standingOffer: NegotiationOffer | null;
  rounds: number;
  maxRounds: number;
  offers: NegotiationOffer[];
  agreement: NegotiationAgreement | null;
  rejection: NegotiationRejection | null;
  openedAt: string;
  updatedAt: string;
  expiresAt: string;
}
export interface NegotiationSummary {
  id: string;
  moduleId: string;
  moduleTitle: string;
  mode: 'auto' | 'manual';
  state: NegotiationState;
  rounds: number;
  maxRounds: number;
  openedAt: string;
  updatedAt: string;
}
export interface NegotiatedTerms {
  negotiationId: string;
  moduleId: string;
  buyer: string;
  /**
   * The registered broker that opened the negotiation for the buyer and may pay with the agreement for them; null when
   * the buyer opened it.
   */
  broker: string | null;
  seller: string;
  priceUsd: string;
  listPriceUsd: string;
  acceptedAt: string;
  validUntil: string;
}
export interface NegotiationStats {
  negotiations: number;
  byState: Record<NegotiationState, number>;
  byMode: { auto: number; manual: number };
  /** accepted / (accepted + rejected + expired); null before any closed. */
  agreementRate: number | null;
  /** Mean buyer offers of closed negotiations. */
  averageRounds: number | null;
  /** Mean of (list − agreed) / list over accepted negotiations, in percent. */
  averageDiscountPercent: number | null;
  openedLast24h: number;
  asOf: string;
}

const NEGOTIATION_ID = /^neg_[A-Za-z0-9]{16,40}$/;
const NegotiationIdParam = z.string().regex(NEGOTIATION_ID, 'must be a negotiation id such as "neg_9Vt4Lm2Qx8Kd3Rp7"');
const ModuleIdParam = z
  .string()
  .regex(/^mod_[A-Za-z0-9]{16,40}$/, 'must be a module id such as "mod_7Qk2Xb9LmP4tRw8Z"');
const OfferPrice = UsdAmount.refine(
  isModulePriceUsd,
  `must be between ${MODULE_PRICE_MIN_USD} and ${MODULE_PRICE_MAX_USD} USD`,
);
const StateSchema = named('NegotiationState', z.enum(['open', 'countered', 'accepted', 'rejected', 'expired']));
const PartySchema = named('NegotiationParty', z.enum(['buyer', 'seller']));
const ModeSchema = named('NegotiationMode', z.enum(['auto', 'manual']));
const Message = z.string().trim().min(1).max(500);

const OfferSchema: z.ZodType<NegotiationOffer> = named(
  'NegotiationOffer',
  z.object({
    round: z
      .number()
      .int()
      .min(1)
      .describe('the buyer offer this belongs to: 1 for the opening offer and its answer, then 2, 3, …'),
    by: PartySchema,
    priceUsd: UsdAmount,
    message: z.string().nullable(),
    automatic: z.boolean().describe('made by the automatic responder for the seller'),
    rationale: z
      .string()
      .nullable()
      .describe('the responder’s arithmetic for an automatic move; null for a party’s own move'),
    at: Timestamp,
  }),
);
const NegotiationSchema: z.ZodType<Negotiation> = named(
  'Negotiation',
  z.object({
    id: z.string().describe('negotiation id, neg_…'),
    moduleId: z.string(),
    moduleTitle: z.string(),
    buyer: SolanaAddress,
    seller: SolanaAddress,
    broker: SolanaAddress.nullable().describe('the wallet that opened it for the buyer (the gateway), or null'),
    mode: ModeSchema.describe('auto: the responder answers for the seller; manual: the seller answers'),
    state: StateSchema.describe(
      'open: the opening offer awaits the seller; countered: a counter-offer awaits the other party (see turn); ' +
        'accepted, rejected, expired: closed',
    ),
    turn: PartySchema.nullable().describe('whose move it is; null once closed'),
    listPriceUsd: UsdAmount.describe('the module’s list price when the negotiation opened'),
    floorUsd: UsdAmount.nullable().describe('the responder’s floor in mode auto; null in mode manual'),
    standingOffer: OfferSchema.nullable().describe(
      'the last offer, which the party in turn may accept; null once closed',
    ),
    rounds: z.number().int().min(1).describe('buyer offers so far'),
    maxRounds: z.number().int().describe(`buyer offers allowed (${NEGOTIATION_MAX_ROUNDS})`),
    offers: z.array(OfferSchema).describe('every offer, oldest first'),
    agreement: z
      .object({
        priceUsd: UsdAmount,
        acceptedBy: PartySchema,
        automatic: z.boolean(),
        acceptedAt: Timestamp,
        validUntil: Timestamp.describe(
          `${NEGOTIATION_AGREEMENT_VALID_HOURS} hours after acceptance; usable for one purchase`,
        ),
      })
      .nullable(),
    rejection: z
      .object({ by: PartySchema, automatic: z.boolean(), reason: z.string().nullable(), at: Timestamp })
      .nullable(),
    openedAt: Timestamp,
    updatedAt: Timestamp,
    expiresAt: Timestamp.describe('an open or countered negotiation becomes expired at this time'),
  }),
);
const SummarySchema: z.ZodType<NegotiationSummary> = named(
  'NegotiationSummary',
  z.object({
    id: z.string(),
    moduleId: z.string(),
    moduleTitle: z.string(),
    mode: ModeSchema,
    state: StateSchema,
    rounds: z.number().int(),
    maxRounds: z.number().int(),
    openedAt: Timestamp,
    updatedAt: Timestamp,
  }),
);
const TermsSchema: z.ZodType<NegotiatedTerms> = named(
  'NegotiatedTerms',
  z.object({
    negotiationId: z.string(),
    moduleId: z.string(),
    buyer: SolanaAddress.describe('the wallet the agreement is for: the purchase is recorded as theirs'),
    broker: SolanaAddress.nullable().describe(
      'the registered broker that opened it for the buyer, which may also pay with it; null when the buyer opened it',
    ),
    seller: SolanaAddress,
    priceUsd: UsdAmount.describe('the agreed price'),
    listPriceUsd: UsdAmount,
    acceptedAt: Timestamp,
    validUntil: Timestamp,
  }),
);
const count = z.number().int().min(0);
const StatsSchema: z.ZodType<NegotiationStats> = named(
  'NegotiationStats',
  z.object({
    negotiations: count,
    byState: z.object({ open: count, countered: count, accepted: count, rejected: count, expired: count }),
    byMode: z.object({ auto: count, manual: count }),
    agreementRate: z
      .number()
      .min(0)
      .max(1)
      .nullable()
      .describe('accepted / (accepted + rejected + expired); null before any closed'),
    averageRounds: z.number().min(1).nullable().describe('mean buyer offers of closed negotiations'),
    averageDiscountPercent: z
      .number()
      .min(0)
      .max(100)
      .nullable()
      .describe('mean (list − agreed) / list of accepted ones, percent'),
    openedLast24h: count,
    asOf: Timestamp,
  }),
);

export interface NegotiationOpenBodyOut {
  moduleId: string;
  offerUsd: string;
  message?: string;
  buyer?: string;
  ttlSeconds: number;
}
export interface NegotiationOpenBodyIn extends Omit<NegotiationOpenBodyOut, 'ttlSeconds'> {
  ttlSeconds?: number;
}
const OpenBody: z.ZodType<NegotiationOpenBodyOut, z.ZodTypeDef, NegotiationOpenBodyIn> = named(
  'NegotiationOpenBodyOut',
  z
    .object({
      moduleId: ModuleIdParam.describe('the knowledge-market module to negotiate over'),
      offerUsd: OfferPrice.describe('the buyer’s opening offer in USD'),
      message: Message.optional(),
      buyer: SolanaAddress.optional().describe(
        'the buyer, when a registered broker (the gateway) opens the negotiation on the buyer’s behalf; default the caller. ' +
          'Another wallet than the caller’s is refused unless the caller is a registered broker (403 not_a_broker)',
      ),
      ttlSeconds: z
        .number()
        .int()
        .min(60)
        .max(604_800)
        .default(86_400)
        .describe('seconds until an unfinished negotiation expires, 60 to 604800 (7 days); default 86400'),
    })
    .strict(),
);

const NegotiationParams = z.object({ negotiationId: NegotiationIdParam });
const EXAMPLE_ID = 'neg_9Vt4Lm2Qx8Kd3Rp7';

const router = c.router({
  open: {
    method: 'POST',
    path: '/api/negotiations',
    body: OpenBody,
    summary: 'Open a negotiation over a module with an opening offer',
    description:
      'Design: the signed-in wallet offers a price for a module of the knowledge market as its buyer. A registered broker ' +
      '(the gateway; the deployment lists brokers’ wallets in NEGOTIATION_BROKERS) may instead open it for another wallet ' +
      'named in `buyer`: the negotiation and its agreement record the broker, which may then move and pay for the buyer. ' +
      'Anyone else naming a `buyer` other than themselves is refused (403 not_a_broker), so nobody can open, or block, a ' +
      'negotiation in another buyer’s name. The seller is the module’s seller and the mode is ' +
      'the module’s negotiation mode. An opening offer at or above the list price is accepted at the list price at once. ' +
      'In mode auto the responder answers within this call, so the answer may already be countered, accepted or rejected; ' +
      `in mode manual the negotiation is open until the seller moves. ${STRATEGY} The price is a small fee against spam. Errors: 404 module_not_found, ` +
      '409 negotiation_exists (an unfinished negotiation of this buyer over this module; details.negotiationId names it), ' +
      '403 not_a_broker (`buyer` names another wallet and the caller is not a registered broker), ' +
      '422 not_negotiable (the module’s negotiation mode is off), 422 own_module (the buyer is the seller), 502 ' +
      'market_unavailable; none is charged.',
    responses: {
      201: NegotiationSchema,
      404: ErrorEnvelope,
      409: ErrorEnvelope,
      422: ErrorEnvelope,
      502: ErrorEnvelope,
      ...standardErrors,
      ...authErrors,
      ...paymentErrors,
    },
    metadata: {
      payment: fixed('0.002'),
      auth: 'siwx',
      example: { body: { moduleId: 'mod_7Qk2Xb9LmP4tRw8Z', offerUsd: '0.35', message: 'Bulk buyer, fair offer.' } },
    } satisfies RouteMeta,
  },
  get: {
    method: 'GET',
    path: '/api/negotiations/:negotiationId',
    pathParams: NegotiationParams,
    summary: 'One negotiation with every offer',
    description:
      'Design: the negotiation with its offers, whose turn it is, the standing offer, and the agreement or rejection. ' +
      'Visible to the buyer, the seller and the broker; an unfinished negotiation past expiresAt reads as expired. Free: ' +
      'the parties poll it while waiting for a move. Errors: 404 negotiation_not_found, 403 not_a_party.',
    responses: { 200: NegotiationSchema, 404: ErrorEnvelope, ...standardErrors, ...authErrors },
    metadata: { payment: free(), auth: 'siwx', example: { params: { negotiationId: EXAMPLE_ID } } } satisfies RouteMeta,
  },
  counter: {
    method: 'POST',
    path: '/api/negotiations/:negotiationId/counter',
    pathParams: NegotiationParams,
    body: z
      .object({ offerUsd: OfferPrice.describe('your counter-offer in USD'), message: Message.optional() })
      .strict(),
    summary: 'Make a counter-offer',
    description:
      'Design: the party in turn answers the standing offer with a new price; the turn passes to the other party and the ' +
      'state becomes countered. A buyer counter starts the next round; in mode auto the responder answers it within this ' +
      `call. ${STRATEGY} Moves must converge: a buyer may not offer less than before, a seller may not ask more than ` +
      'before, and nobody may counter at or past the other side’s standing offer (accept it instead). Errors: 404 ' +
      'negotiation_not_found, 403 not_a_party, 409 not_your_turn, 409 negotiation_closed (details.state: accepted, ' +
      `rejected or expired), 409 max_rounds_reached (the buyer made ${NEGOTIATION_MAX_ROUNDS} offers: the seller may only ` +
      'accept or reject), 422 offer_regressed, 422 counter_crosses_offer; none is charged.',
    responses: {
      200: NegotiationSchema,
      404: ErrorEnvelope,
      409: ErrorEnvelope,
      422: ErrorEnvelope,
      ...standardErrors,
      ...authErrors,
      ...paymentErrors,
    },
    metadata: {
      payment: fixed('0.001'),
      auth: 'siwx',
      example: { params: { negotiationId: EXAMPLE_ID }, body: { offerUsd: '0.40', message: 'Meet me at 0.40.' } },
    } satisfies RouteMeta,
  },
  accept: {
    method: 'POST',
    path: '/api/negotiations/:negotiationId/accept',
    pathParams: NegotiationParams,
    body: z
      .object({
        expectedPriceUsd: UsdAmount.optional().describe(
          'the standing offer’s price as you read it; refused if it has changed',
        ),
        message: Message.optional(),
      })
      .strict(),
    summary: 'Accept the standing offer',
    description:
      'Design: the party in turn accepts the other side’s standing offer: the state becomes accepted and the agreement ' +
      `holds its price for one purchase in the knowledge market within ${NEGOTIATION_AGREEMENT_VALID_HOURS} hours. Free: ` +
      'closing a deal must not cost, and the purchase is paid. Errors: 404 negotiation_not_found, 403 not_a_party, 409 ' +
      'not_your_turn, 409 negotiation_closed, 409 offer_changed (expectedPriceUsd differs from the standing offer).',
    responses: { 200: NegotiationSchema, 404: ErrorEnvelope, 409: ErrorEnvelope, ...standardErrors, ...authErrors },
    metadata: {
      payment: free(),
      auth: 'siwx',
      example: { params: { negotiationId: EXAMPLE_ID }, body: { expectedPriceUsd: '0.425' } },
    } satisfies RouteMeta,
  },
  reject: {
    method: 'POST',
    path: '/api/negotiations/:negotiationId/reject',
    pathParams: NegotiationParams,
    body: z.object({ reason: Message.optional().describe('why, for the other party') }).strict(),
    summary: 'Reject and close the negotiation',
    description:
      'Design: either party walks away at any time before agreement, in turn or not; the state becomes rejected. Free: ' +
      'walking away must not cost. Errors: 404 negotiation_not_found, 403 not_a_party, 409 negotiation_closed.',
    responses: { 200: NegotiationSchema, 404: ErrorEnvelope, 409: ErrorEnvelope, ...standardErrors, ...authErrors },
    metadata: {
      payment: free(),
      auth: 'siwx',
      example: { params: { negotiationId: EXAMPLE_ID }, body: { reason: 'Found a certified alternative.' } },
    } satisfies RouteMeta,
  },
  list: {
    method: 'GET',
    path: '/api/agents/:wallet/negotiations',
    pathParams: z.object({ wallet: SolanaAddress }),
    query: z
      .object({
        role: z
          .enum(['buyer', 'seller', 'broker', 'any'])
          .default('any')
          .describe('negotiations where the wallet has this role'),
        state: StateSchema.optional().describe('all states when omitted'),
        ...PageQuery,
      })
      .strict(),
    summary: 'An agent’s negotiations',
    description:
      'Design: the negotiations of the signed-in wallet (the path’s wallet must be it), most recently updated first, ' +
      'filtered by role and state. Free: agents read their own records. Errors: 403 not_your_negotiations.',
    responses: { 200: page(NegotiationSchema), ...standardErrors, ...authErrors },
    metadata: {
      payment: free(),
      auth: 'siwx',
      example: {
        params: { wallet: 'AwzqSRCDZAUN3utZvfiggpY5GvajfeG5h2LunF77n24L' },
        query: { role: 'buyer', state: 'countered', limit: 20 },
      },
    } satisfies RouteMeta,
  },
  search: {
    method: 'GET',
    path: '/api/negotiations',
    query: z
      .object({
        q: z.string().trim().min(1).max(200).optional().describe('words to find in the module title'),
        moduleId: ModuleIdParam.optional(),
        state: StateSchema.optional(),
        ...PageQuery,
      })
      .strict(),
    summary: 'Public summaries of negotiations',
    description:
      'Design: what anyone may see of negotiations, most recently updated first: module, mode, state and rounds, as a ' +
      'signal of demand; parties, offers and prices stay private to the parties. Free: the gateway’s free search reads it.',
    responses: { 200: page(SummarySchema), ...standardErrors },
    metadata: {
      payment: free(),
      example: { query: { q: 'priority fees', state: 'countered', limit: 20 } },
    } satisfies RouteMeta,
  },
  agreement: {
    method: 'GET',
    path: '/api/negotiations/:negotiationId/agreement',
    pathParams: NegotiationParams,
    summary: 'The agreed terms of an accepted negotiation',
    description:
      'Design: only the terms a purchase needs: module, buyer, broker, seller, agreed price, validity. The knowledge market ' +
      'reads it to price a purchase, and honours it only when the purchase’s payer is the buyer or the broker (knowing the ' +
      'id is not enough to spend it); nothing else of the negotiation is shown. Private like the negotiation: the caller ' +
      'signs in, and only its buyer, seller or broker, or a trusted reader (the knowledge market; the deployment lists ' +
      'readers’ wallets in NEGOTIATION_TRUSTED_READERS) may read it; anyone else, even holding an id from the public ' +
      'search, is refused before the state is revealed. Free: read service to service. Errors: 404 ' +
      'negotiation_not_found, 403 not_a_party (the caller is none of these), 409 negotiation_not_accepted (details.state).',
    responses: { 200: TermsSchema, 404: ErrorEnvelope, 409: ErrorEnvelope, ...standardErrors, ...authErrors },
    metadata: { payment: free(), auth: 'siwx', example: { params: { negotiationId: EXAMPLE_ID } } } satisfies RouteMeta,
  },
  stats: {
    method: 'GET',
    path: '/api/stats',
    summary: 'Negotiation statistics',
    description:
      'Design: negotiations by state and mode, agreement rate, average rounds and average discount. Free: descriptive, read ' +
      'by the gateway’s ecosystem overview.',
    responses: { 200: StatsSchema, ...standardErrors },
    metadata: { payment: free() } satisfies RouteMeta,
  },
});

export const negotiation = defineService({
  id: 'negotiation',
  title: 'Negotiation Service',
  description:
    'Price negotiation between a buyer and a seller over a knowledge-market module: opening offer, counter-offers in ' +
    `turns (at most ${NEGOTIATION_MAX_ROUNDS} buyer offers), acceptance or rejection, expiry. Sellers may let a ` +
    'deterministic responder answer for them (split the difference, never below a published floor); an accepted ' +
    'negotiation is an agreement the knowledge market honours for one purchase.',
  router,
});
