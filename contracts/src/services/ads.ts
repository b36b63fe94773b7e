import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { defineService } from '../core/service';
import { named } from '../core/names';
import { ErrorEnvelope, paymentErrors, standardErrors } from '../core/errors';
import { adaptive, free, type RouteMeta } from '../core/payment';
import { AtomicAmount, PositiveInt8Atomic } from '../core/money';
import { Caip2Network, SolanaAddress, SolanaSignature, Timestamp } from '../core/chain';
import { authErrors, PageQuery, page } from './shared';

const c = initContract();

// The ad network's own resources (campaigns, advertisers) keep the specification's snake_case field names,
// every field of them alike; the facilitator-facing bodies (match, events, conversions) are camelCase as the
// specification writes them. Amounts are atomic units of the 6-decimal USD stablecoin, as integer strings
// ("1000000" = 1.00 USD), like every atomic amount in the economy.

export type CampaignStatus = 'draft' | 'active' | 'paused' | 'exhausted' | 'completed';
export type BidStrategy = 'cpm' | 'cpa';
export type ResourceTransport = 'http' | 'mcp';

export interface AdvertiserRef {
  id: string;
  name: string;
  wallet_address: string;
  network: string;
}
export interface CampaignStats {
  matches: number;
  settlements: number;
  impressions: number;
  conversions: number;
}
export interface Campaign {
  id: string;
  advertiser_id: string;
  advertiser: AdvertiserRef;
  name: string;
  status: CampaignStatus;
  budget_total: string;
  budget_daily: string;
  max_bid_amount: string;
  bid_strategy: BidStrategy;
  schedule_start: string;
  schedule_end: string | null;
  target_categories: string[];
  target_networks: string[];
  target_transports: ResourceTransport[];
  target_url_patterns: string[];
  rec_resource_url: string;
  rec_description: string;
  rec_sponsor_name: string;
  rec_catalog_id: string | null;
  spent_total: string;
  spent_today: string;
  budget_funded: string;
  budget_refunded: string;
  budget_held: string;
  last_refund_transaction: string | null;
  stats: CampaignStats;
  created_at: string;
  updated_at: string;
  activated_at: string | null;
}
export interface Advertiser {
  id: string;
  name: string;
  wallet_address: string;
  network: string;
  campaign_count: number;
  active_campaigns: number;
  spent_total: string;
  created_at: string;
}
export interface Recommendation {
  resourceUrl: string;
  description: string;
  sponsor: string;
}
export interface MatchFound {
  matched: true;
  campaignId: string;
  recommendation: Recommendation;
  impressionBeacon: string;
  conversionResource: string;
}
export interface NoMatch {
  matched: false;
}
export type MatchResult = MatchFound | NoMatch;
export interface SettledResource {
  url: string;
  description: string;
}
export interface SettlementEvent {
  txHash: string;
  network: string;
  resource: SettledResource;
  payer: string;
  settledAmount: string;
  campaignId: string;
  timestamp: string;
}
export interface RecordedEvent extends SettlementEvent {
  eventId: string;
  chargedAmount: string;
  receivedAt: string;
}
export interface EventReceipt {
  accepted: true;
  eventId: string;
  duplicate: boolean;
  chargedAmount: string;
}
export interface Conversion {
  originalTxHash: string;
  conversionTxHash: string;
  campaignId: string;
  payerWallet: string;
  convertedResourceUrl: string;
  network: string;
  timestamp: string;
}
export interface RecordedConversion extends Conversion {
  conversionId: string;
  chargedAmount: string;
  recordedAt: string;
  duplicate: boolean;
}
export interface ManifestTargeting {
  categories: string[];
  networks: string[];
  transports: ResourceTransport[];
  urlPatterns: string[];
}
export interface ManifestCampaign {
  campaignId: string;
  recommendation: Recommendation;
  catalogId: string | null;
  targeting: ManifestTargeting;
  impressionBeacon: string;
  conversionResource: string;
  scheduleEnd: string | null;
}
export interface Manifest {
  version: string;
  generatedAt: string;
  ttlSeconds: number;
  campaigns: ManifestCampaign[];
}
export interface AdsHealth {
  status: 'ok' | 'degraded';
  service: string;
  version: string;
  bazaarResources: number;
}

const HttpUrl = z
  .string()
  .max(2048)
  .url()
  .regex(/^https?:\/\//, 'must be an http(s) address');
/** A positive number of atomic units: budgets and bids cannot be zero. */
const CampaignId = z.string().regex(/^cmp_[A-Za-z0-9]{8,40}$/, 'must be a campaign id such as "cmp_7Hq2LxN4pR8sT1vW"');
const AdvertiserId = z
  .string()
  .regex(/^adv_[A-Za-z0-9]{8,40}$/, 'must be an advertiser id such as "adv_3kP9mZ2qW7xR5tYb"');
const Category = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]{0,39}$/, 'must be a lowercase category slug such as "market-data"');
const UrlPattern = z
  .string()
  .min(1)
  .max(500)
  .describe('a glob over resource addresses: `*` matches any run of characters, e.g. "https://*.example.com/api/*"');
const StatusSchema = named('Status', z.enum(['draft', 'active', 'paused', 'exhausted', 'completed']));
const BidStrategySchema = named('BidStrategy', z.enum(['cpm', 'cpa']));
const TransportSchema = named('Transport', z.enum(['http', 'mcp']));

const AdvertiserRefSchema: z.ZodType<AdvertiserRef> = named(
  'AdvertiserRef',
  z.object({
    id: z.string(),
    name: z.string(),
    wallet_address: z.string(),
    network: z.string(),
  }),
);
const CampaignSchema: z.ZodType<Campaign> = named(
  'Campaign',
  z.object({
    id: z.string().describe('cmp_…'),
    advertiser_id: z.string(),
    advertiser: AdvertiserRefSchema.describe('the advertiser that owns the campaign'),
    name: z.string(),
    status: StatusSchema.describe(
      'draft (created, never activated), active (matching), paused, exhausted (budget_total spent), completed (schedule_end passed)',
    ),
    budget_total: AtomicAmount.describe('lifetime budget, atomic units'),
    budget_daily: AtomicAmount.describe('budget per UTC day, atomic units'),
    max_bid_amount: AtomicAmount.describe(
      'cpm: price of 1000 sponsored settlements; cpa: price of one conversion; atomic units',
    ),
    bid_strategy: BidStrategySchema,
    schedule_start: Timestamp,
    schedule_end: Timestamp.nullable(),
    target_categories: z.array(z.string()).describe('empty: any category'),
    target_networks: z.array(z.string()).describe('CAIP-2 ids; empty: any network'),
    target_transports: z.array(TransportSchema).describe('empty: any transport'),
    target_url_patterns: z.array(z.string()).describe('globs over the settled resource address; empty: any address'),
    rec_resource_url: z.string(),
    rec_description: z.string(),
    rec_sponsor_name: z.string(),
    rec_catalog_id: z.string().nullable(),
    spent_total: AtomicAmount.describe('charged so far, atomic units'),
    spent_today: AtomicAmount.describe('charged since 00:00 UTC, atomic units'),
    budget_funded: AtomicAmount.describe('paid into the network’s wallet by activations so far, atomic units'),
    budget_refunded: AtomicAmount.describe('paid back to the advertiser’s wallet by pauses so far, atomic units'),
    budget_held: AtomicAmount.describe(
      'budget_funded - budget_refunded - spent_total: what the network holds for the campaign now; charges never exceed it',
    ),
    last_refund_transaction: SolanaSignature.nullable().describe(
      'the transaction of the last refund of unspent budget; null before any',
    ),
    stats: z.object({
      matches: z.number().int().describe('times /v1/match chose this campaign'),
      settlements: z.number().int().describe('sponsored settlements recorded by POST /v1/events'),
      impressions: z.number().int().describe('impression beacon calls'),
      conversions: z.number().int(),
    }),
    created_at: Timestamp,
    updated_at: Timestamp,
    activated_at: Timestamp.nullable().describe('the last activation; null while draft'),
  }),
);
const AdvertiserSchema: z.ZodType<Advertiser> = named(
  'Advertiser',
  z.object({
    id: z.string().describe('adv_…'),
    name: z.string(),
    wallet_address: z.string(),
    network: z.string(),
    campaign_count: z.number().int(),
    active_campaigns: z.number().int(),
    spent_total: AtomicAmount.describe('charged across all campaigns, atomic units'),
    created_at: Timestamp,
  }),
);
const RecommendationSchema: z.ZodType<Recommendation> = named(
  'Recommendation',
  z.object({
    resourceUrl: z.string().describe('the recommended resource (the campaign’s rec_resource_url)'),
    description: z.string(),
    sponsor: z.string(),
  }),
);
const MatchResultSchema: z.ZodType<MatchResult> = named(
  'MatchResult',
  z.discriminatedUnion('matched', [
    z
      .object({
        matched: z.literal(true),
        campaignId: z.string(),
        recommendation: RecommendationSchema,
        impressionBeacon: z.string().describe('address of GET /v1/track/impression/:campaignId for the campaign'),
        conversionResource: z.string().describe('address of the recommended resource'),
      })
      .strict(),
    z.object({ matched: z.literal(false) }).strict(),
  ]),
);
const settlementEventFields = {
  txHash: SolanaSignature.describe('the settlement transaction'),
  network: Caip2Network,
  resource: z
    .object({
      url: HttpUrl,
      description: z.string().max(2000).describe('may be empty when the seller gave none'),
    })
    .strict(),
  payer: SolanaAddress,
  settledAmount: AtomicAmount.describe('atomic units'),
  campaignId: CampaignId.describe('the campaign /v1/match chose'),
  timestamp: Timestamp.describe('when the settlement confirmed'),
};
const RecordedEventSchema: z.ZodType<RecordedEvent> = named(
  'RecordedEvent',
  z.object({
    eventId: z.string().describe('evt_…'),
    txHash: z.string(),
    network: z.string(),
    resource: z.object({ url: z.string(), description: z.string() }),
    payer: z.string(),
    settledAmount: AtomicAmount,
    campaignId: z.string(),
    timestamp: Timestamp,
    chargedAmount: AtomicAmount.describe('what the campaign was charged for this settlement (cpm), atomic units'),
    receivedAt: Timestamp,
  }),
);
const EventReceiptSchema: z.ZodType<EventReceipt> = named(
  'EventReceipt',
  z.object({
    accepted: z.literal(true),
    eventId: z.string(),
    duplicate: z
      .boolean()
      .describe('true when this txHash was already recorded: nothing was recorded or charged again'),
    chargedAmount: AtomicAmount,
  }),
);
const conversionFields = {
  originalTxHash: SolanaSignature.describe('the sponsored settlement that carried the recommendation'),
  conversionTxHash: SolanaSignature.describe('the later payment for the recommended resource'),
  campaignId: CampaignId,
  payerWallet: SolanaAddress,
  convertedResourceUrl: HttpUrl,
  network: Caip2Network,
  timestamp: Timestamp.describe('when the conversion payment confirmed'),
};
const RecordedConversionSchema: z.ZodType<RecordedConversion> = named(
  'RecordedConversion',
  z.object({
    conversionId: z.string().describe('cnv_…'),
    originalTxHash: z.string(),
    conversionTxHash: z.string(),
    campaignId: z.string(),
    payerWallet: z.string(),
    convertedResourceUrl: z.string(),
    network: z.string(),
    timestamp: Timestamp,
    chargedAmount: AtomicAmount.describe('what the campaign was charged for this conversion (cpa), atomic units'),
    recordedAt: Timestamp,
    duplicate: z.boolean().describe('true when this conversionTxHash was already recorded'),
  }),
);
const ManifestSchema: z.ZodType<Manifest> = named(
  'Manifest',
  z.object({
    version: z.string().describe('changes whenever the set of campaigns or any of their fields changes'),
    generatedAt: Timestamp,
    ttlSeconds: z.number().int().describe('how long a publisher may cache this manifest before polling again'),
    campaigns: z.array(
      z.object({
        campaignId: z.string(),
        recommendation: RecommendationSchema,
        catalogId: z.string().nullable(),
        targeting: z.object({
          categories: z.array(z.string()),
          networks: z.array(z.string()),
          transports: z.array(TransportSchema),
          urlPatterns: z.array(z.string()),
        }),
        impressionBeacon: z.string(),
        conversionResource: z.string(),
        scheduleEnd: Timestamp.nullable(),
      }),
    ),
  }),
);
const AdsHealthSchema: z.ZodType<AdsHealth> = named(
  'AdsHealth',
  z.object({
    status: z
      .enum(['ok', 'degraded'])
      .describe("'ok' when healthy; 'degraded' when the resource catalog cannot be read"),
    service: z.string().describe('service name'),
    version: z.string().describe('version of the service'),
    bazaarResources: z.number().int().describe('count of catalog resources (x402 bazaar discovery) the matcher knows'),
  }),
);

const targetFields = {
  target_categories: z
    .array(Category)
    .max(20)
    .describe('categories of the settled resource to match; empty or absent: any'),
  target_networks: z.array(Caip2Network).max(10).describe('CAIP-2 networks to match; empty or absent: any'),
  target_transports: z
    .array(TransportSchema)
    .max(2)
    .describe(
      'transports of the settled resource as the catalog lists it (a resource not in the catalog counts as http); empty or absent: any',
    ),
  target_url_patterns: z
    .array(UrlPattern)
    .max(20)
    .describe('globs over the settled resource address; empty or absent: any'),
};
const campaignCreateBody = z
  .object({
    advertiser_id: AdvertiserId,
    name: z.string().trim().min(1).max(100),
    budget_total: PositiveInt8Atomic.describe('lifetime budget, atomic units'),
    budget_daily: PositiveInt8Atomic.describe('budget per UTC day, atomic units; at most budget_total'),
    max_bid_amount: PositiveInt8Atomic.describe(
      'cpm: price of 1000 sponsored settlements; cpa: price of one conversion; atomic units',
    ),
    schedule_start: Timestamp.describe('matching never starts before this time'),
    rec_resource_url: HttpUrl.describe('recommended resource address'),
    rec_description: z.string().trim().min(1).max(500),
    rec_sponsor_name: z.string().trim().min(1).max(100),
    target_categories: targetFields.target_categories.default([]),
    target_networks: targetFields.target_networks.default([]),
    target_transports: targetFields.target_transports.default([]),
    target_url_patterns: targetFields.target_url_patterns.default([]),
    schedule_end: Timestamp.optional().describe('matching stops at this time; after schedule_start'),
    rec_catalog_id: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe('identifier of a catalog entry of the recommended resource'),
    bid_strategy: BidStrategySchema.default('cpm').describe(
      'cpm (default): charged per sponsored settlement; cpa: charged per conversion',
    ),
  })
  .strict();
const campaignUpdateBody = z
  .object({
    name: z.string().trim().min(1).max(100),
    budget_total: PositiveInt8Atomic,
    budget_daily: PositiveInt8Atomic,
    max_bid_amount: PositiveInt8Atomic,
    bid_strategy: BidStrategySchema,
    schedule_start: Timestamp,
    schedule_end: Timestamp.nullable().describe('null removes the end'),
    rec_resource_url: HttpUrl,
    rec_description: z.string().trim().min(1).max(500),
    rec_sponsor_name: z.string().trim().min(1).max(100),
    rec_catalog_id: z.string().min(1).max(200).nullable().describe('null removes the catalog reference'),
    ...targetFields,
  })
  .partial()
  .strict()
  .refine((body) => Object.keys(body).length > 0, 'must change at least one field');

const CampaignParams = z.object({ id: CampaignId });
const siwxNote = 'Caller identity: SIGN-IN-WITH-X; ';
const facilitatorOnly =
  'Caller identity: SIGN-IN-WITH-X signed by the facilitator’s wallet (the facilitator address this deployment is ' +
  'configured to trust), else 403 not_facilitator: only the facilitator calls it. ';
const freeInfra =
  'Free: the ad network is settlement infrastructure, paid for by campaign budgets (spend charged per sponsored settlement or ' +
  'conversion) and the facilitator’s settlement fees; a per-call fee would tax every settlement. ';

const router = c.router({
  match: {
    method: 'POST',
    path: '/v1/match',
    body: z
      .object({
        resourceUrl: HttpUrl.describe('address of the settled resource'),
        resourceDescription: z.string().max(2000).describe('the settled resource’s description; may be empty'),
        network: Caip2Network.describe('chain of the settlement, <namespace>:<reference>'),
        payerWallet: SolanaAddress.describe('the wallet that paid'),
        settledAmount: AtomicAmount.describe('amount settled, atomic units'),
        txHash: SolanaSignature.optional().describe(
          'the settlement transaction: the match is recorded as this settlement’s delivery, which events, the impression ' +
            'beacon and conversions then refer to; without it the match records nothing and cannot be charged',
        ),
      })
      .strict(),
    summary: 'Find a campaign for a settled resource',
    description:
      facilitatorOnly +
      'The facilitator calls it right after a settlement confirms (it gives up after 2 s and settles without a recommendation). ' +
      'Eligible campaigns are active, inside their schedule, with budget left today and in total, and every non-empty target ' +
      'list matching: target_networks contains `network`, target_url_patterns has a glob matching `resourceUrl`, ' +
      'target_categories and target_transports contain the category and transport the resource catalog lists for ' +
      '`resourceUrl` (a resource outside the catalog matches only campaigns without category targeting, and counts as http). ' +
      'A campaign never matches its own recommended resource. Design: the highest bid per delivery wins (cpm: max_bid_amount / ' +
      '1000; cpa: max_bid_amount / 100, assuming a 1 % conversion rate), ties going to the campaign served least recently. ' +
      'A match charges nothing (the settlement event does) and counts in the campaign’s stats.matches. With `txHash` ' +
      'the settlement is recorded (once per txHash: a repeat answers the first match again), whether or not a campaign ' +
      'matched: it is the facilitator’s record conversions sent by clients are checked against. ' +
      'The answer is `{ matched: false }` and nothing else when no campaign is eligible. ' +
      freeInfra,
    responses: { 200: MatchResultSchema, ...standardErrors, ...authErrors },
    metadata: {
      payment: free(),
      auth: 'siwx',
      example: {
        body: {
          resourceUrl: 'http://127.0.0.1:4107/api/intel/competitors',
          resourceDescription: 'Competitive intelligence report',
          network: 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1',
          payerWallet: '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM',
          settledAmount: '50000',
        },
      },
    } satisfies RouteMeta,
  },
  campaigns: {
    list: {
      method: 'GET',
      path: '/v1/campaigns',
      query: z
        .object({
          status: StatusSchema.optional().describe('only campaigns in this status'),
          advertiser_id: AdvertiserId.optional().describe('only this advertiser’s campaigns'),
          ...PageQuery,
        })
        .strict(),
      summary: 'All campaigns with advertiser info',
      description:
        'Every campaign, newest first, each with its advertiser (id, name, wallet, network), budgets, spend and stats. ' +
        'Design: open to anyone, like the manifest (the ad network is a public directory of sponsored recommendations); ' +
        'filter by `status` or `advertiser_id`. ' +
        freeInfra,
      responses: { 200: page(CampaignSchema), ...standardErrors },
      metadata: { payment: free(), example: { query: { status: 'active', limit: 20 } } } satisfies RouteMeta,
    },
    get: {
      method: 'GET',
      path: '/v1/campaigns/:id',
      pathParams: CampaignParams,
      summary: 'One campaign',
      description:
        'One campaign with its advertiser, budgets, spend and stats. Errors: 404 campaign_not_found. Design: open to anyone. ' +
        freeInfra,
      responses: { 200: CampaignSchema, 404: ErrorEnvelope, ...standardErrors },
      metadata: { payment: free(), example: { params: { id: 'cmp_7Hq2LxN4pR8sT1vW' } } } satisfies RouteMeta,
    },
    create: {
      method: 'POST',
      path: '/v1/campaigns',
      body: campaignCreateBody,
      summary: 'Create a campaign',
      description:
        siwxNote +
        'the proof’s wallet must be the advertiser’s wallet_address (403 not_advertiser_owner). Required: advertiser_id, name, ' +
        'budget_total, budget_daily, max_bid_amount (atomic units), schedule_start, rec_resource_url, rec_description, ' +
        'rec_sponsor_name; optional: target_categories, target_networks, target_transports, target_url_patterns, schedule_end, ' +
        'rec_catalog_id, bid_strategy (default cpm). Design: a new campaign is `draft` and matches nothing until POST ' +
        '/v1/campaigns/:id/activate. Answers 201 with the campaign. Errors: 404 advertiser_not_found; 422 ' +
        'budget_daily_exceeds_total (budget_daily > budget_total), bid_exceeds_daily_budget (max_bid_amount > budget_daily), ' +
        'schedule_invalid (schedule_end not after schedule_start, or already past). ' +
        freeInfra,
      responses: { 201: CampaignSchema, 404: ErrorEnvelope, 422: ErrorEnvelope, ...standardErrors, ...authErrors },
      metadata: {
        payment: free(),
        auth: 'siwx',
        example: {
          body: {
            advertiser_id: 'adv_3kP9mZ2qW7xR5tYb',
            name: 'Gas optimizer for market-data buyers',
            budget_total: '50000000',
            budget_daily: '5000000',
            max_bid_amount: '2000000',
            schedule_start: '2026-01-01T00:00:00.000Z',
            rec_resource_url: 'http://127.0.0.1:4109/api/gas/estimate',
            rec_description: 'Priority-fee estimates for Solana transactions',
            rec_sponsor_name: 'Gas Optimizer',
            target_categories: ['market-data'],
            target_networks: ['solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1'],
            bid_strategy: 'cpm',
          },
        },
      } satisfies RouteMeta,
    },
    update: {
      method: 'PATCH',
      path: '/v1/campaigns/:id',
      pathParams: CampaignParams,
      body: campaignUpdateBody,
      summary: 'Update campaign fields',
      description:
        siwxNote +
        'only the owning advertiser’s wallet (403 not_advertiser_owner). Design: send any campaign field except advertiser_id ' +
        '(a campaign never changes owner) and status (use activate and pause); target lists are replaced whole (an empty list ' +
        'means any); null clears schedule_end or rec_catalog_id. Changes apply to the next match. Raising budget_total of an ' +
        '`exhausted` campaign, or moving schedule_end of a `completed` one into the future, makes it `paused`. Answers the ' +
        'updated campaign. Errors: 404 campaign_not_found; 422 budget_below_spent (budget_total under spent_total), ' +
        'budget_daily_exceeds_total, bid_exceeds_daily_budget, schedule_invalid. ' +
        freeInfra,
      responses: { 200: CampaignSchema, 404: ErrorEnvelope, 422: ErrorEnvelope, ...standardErrors, ...authErrors },
      metadata: {
        payment: free(),
        auth: 'siwx',
        example: {
          params: { id: 'cmp_7Hq2LxN4pR8sT1vW' },
          body: { budget_daily: '8000000', target_url_patterns: ['http://127.0.0.1:4106/*'] },
        },
      } satisfies RouteMeta,
    },
    activate: {
      method: 'POST',
      path: '/v1/campaigns/:id/activate',
      pathParams: CampaignParams,
      body: c.noBody(),
      summary: 'Set a campaign active',
      description:
        siwxNote +
        'only the owning advertiser’s wallet (403 not_advertiser_owner). Sets status `active` from `draft` or `paused`: the ' +
        'campaign matches from the next /v1/match on (once schedule_start is reached). Activating an active campaign answers it ' +
        'unchanged. Answers the campaign. Design: budgets are funded up front. The price of an activation is what the ' +
        'campaign still lacks to cover its remaining budget, budget_total - spent_total - budget_held (atomic units, paid ' +
        'with x402 into the network’s wallet, settled before the campaign changes); a campaign that holds enough activates ' +
        'free. Pausing pays the unspent part back. If the activation then fails, the payment is refunded on chain. Errors: ' +
        '404 campaign_not_found; 409 campaign_ended (status exhausted or completed: raise budget_total or move schedule_end ' +
        'first), 409 funding_changed (the budget changed between the quote and the payment: refunded, ask again); 422 ' +
        'budget_too_large (more than one activation can fund). ' +
        'Paid: the unfunded budget, at most 1,000,000 USD per activation.',
      responses: {
        200: CampaignSchema,
        404: ErrorEnvelope,
        409: ErrorEnvelope,
        422: ErrorEnvelope,
        ...standardErrors,
        ...paymentErrors,
        ...authErrors,
      },
      metadata: {
        payment: adaptive('0', '1000000'),
        settle: 'first',
        auth: 'siwx',
        example: { params: { id: 'cmp_7Hq2LxN4pR8sT1vW' } },
      } satisfies RouteMeta,
    },
    pause: {
      method: 'POST',
      path: '/v1/campaigns/:id/pause',
      pathParams: CampaignParams,
      body: c.noBody(),
      summary: 'Set a campaign paused',
      description:
        siwxNote +
        'only the owning advertiser’s wallet (403 not_advertiser_owner). Sets status `paused` from `active`: the campaign ' +
        'stops matching at once. Design: pausing also withdraws: what the campaign holds (budget_held) is sent back on chain ' +
        'from the network’s wallet to the advertiser’s wallet (last_refund_transaction), so events and conversions of ' +
        'earlier matches are still recorded but charge only what is still held (nothing). Pausing a paused campaign answers ' +
        'it unchanged (and finishes a refund the chain did not take); pausing an exhausted or completed campaign keeps its ' +
        'status and withdraws what it still holds. Answers the campaign. Errors: 404 campaign_not_found; 409 ' +
        'campaign_not_active (status draft); 503 chain_unavailable (the refund could not be sent: pause again). ' +
        freeInfra,
      responses: {
        200: CampaignSchema,
        404: ErrorEnvelope,
        409: ErrorEnvelope,
        503: ErrorEnvelope,
        ...standardErrors,
        ...authErrors,
      },
      metadata: {
        payment: free(),
        auth: 'siwx',
        example: { params: { id: 'cmp_7Hq2LxN4pR8sT1vW' } },
      } satisfies RouteMeta,
    },
  },
  advertisers: {
    list: {
      method: 'GET',
      path: '/v1/advertisers',
      query: z.object({ ...PageQuery }).strict(),
      summary: 'List advertisers',
      description:
        'Every registered advertiser, newest first, with campaign counts and total spend. Design: open to anyone. ' +
        freeInfra,
      responses: { 200: page(AdvertiserSchema), ...standardErrors },
      metadata: { payment: free(), example: { query: { limit: 20 } } } satisfies RouteMeta,
    },
    create: {
      method: 'POST',
      path: '/v1/advertisers',
      body: z
        .object({
          name: z.string().trim().min(1).max(100),
          wallet_address: SolanaAddress.describe('the advertiser’s wallet: it signs every campaign write'),
          network: Caip2Network.describe('chain of wallet_address'),
        })
        .strict(),
      summary: 'Register an advertiser',
      description:
        siwxNote +
        'the proof’s wallet must be wallet_address (403 wallet_mismatch): that wallet then owns the advertiser’s campaigns. ' +
        'Required: name, wallet_address, network. Answers 201 with the advertiser. Errors: 409 advertiser_exists (the wallet is ' +
        'already registered on that network); 422 unsupported_network (network is not the deployment’s: campaigns are ' +
        'funded and refunded there). ' +
        freeInfra,
      responses: { 201: AdvertiserSchema, 409: ErrorEnvelope, 422: ErrorEnvelope, ...standardErrors, ...authErrors },
      metadata: {
        payment: free(),
        auth: 'siwx',
        example: {
          body: {
            name: 'Gas Optimizer Labs',
            wallet_address: '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM',
            network: 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1',
          },
        },
      } satisfies RouteMeta,
    },
  },
  events: {
    create: {
      method: 'POST',
      path: '/v1/events',
      body: z.object(settlementEventFields).strict(),
      summary: 'Record a sponsored settlement event',
      description:
        facilitatorOnly +
        'The facilitator calls it after every sponsored settlement (fire and forget). Design: only a settlement the ' +
        'facilitator’s /v1/match delivered for this campaign (same txHash, campaignId, payer, resource url and network) can ' +
        'be recorded, else 404 settlement_not_found: a made-up settlement never costs a campaign anything. Any signed-in ' +
        'caller may report such a delivered settlement (when the facilitator’s own report was lost); it is charged once. ' +
        'A cpm campaign is charged ' +
        'max_bid_amount / 1000 (rounded down to an atomic unit) per event, a cpa campaign nothing; a charge never exceeds what ' +
        'is left of the daily and total budgets, and a campaign whose total budget is spent becomes `exhausted`. The event is ' +
        'recorded even if the campaign was paused since the match. Idempotent by txHash: a repeat answers the first receipt with ' +
        '`duplicate: true`. Errors: 404 campaign_not_found, settlement_not_found; 422 event_invalid (settledAmount is not ' +
        'the amount the facilitator reported). ' +
        freeInfra,
      responses: { 200: EventReceiptSchema, 404: ErrorEnvelope, 422: ErrorEnvelope, ...standardErrors, ...authErrors },
      metadata: {
        payment: free(),
        auth: 'siwx',
        example: {
          body: {
            txHash: '5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW',
            network: 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1',
            resource: {
              url: 'http://127.0.0.1:4107/api/intel/competitors',
              description: 'Competitive intelligence report',
            },
            payer: '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM',
            settledAmount: '50000',
            campaignId: 'cmp_7Hq2LxN4pR8sT1vW',
            timestamp: '2026-03-02T14:05:09.123Z',
          },
        },
      } satisfies RouteMeta,
    },
    list: {
      method: 'GET',
      path: '/v1/events',
      query: z
        .object({
          limit: z.coerce.number().int().min(1).max(200).default(50).describe('events per page, 1 to 200; default 50'),
          cursor: PageQuery.cursor,
          campaignId: CampaignId.optional().describe('only this campaign’s events'),
        })
        .strict(),
      summary: 'Recent settlement events',
      description:
        'Recorded settlement events, most recent first, with what each charged its campaign. `limit` defaults to 50. ' +
        'Design: open to anyone (settlements are public on the chain); page on with `cursor`. ' +
        freeInfra,
      responses: { 200: page(RecordedEventSchema), ...standardErrors },
      metadata: { payment: free(), example: { query: { limit: 50 } } } satisfies RouteMeta,
    },
  },
  conversions: {
    create: {
      method: 'POST',
      path: '/v1/conversions',
      body: z.object(conversionFields).strict(),
      summary: 'Record a conversion',
      description:
        facilitatorOnly +
        'Records that the payer of a sponsored settlement later paid for the recommended resource (the facilitator sees both ' +
        'payments and reports it). Design: a caller other than the facilitator must be payerWallet itself (403 not_payer), ' +
        'and its conversionTxHash must be a settlement the facilitator reported to /v1/match, paid by payerWallet for ' +
        'convertedResourceUrl (else 422 conversion_unverified): nobody can forge a conversion. convertedResourceUrl must be ' +
        'the campaign’s rec_resource_url (422 conversion_invalid). A cpa campaign is charged max_bid_amount (capped by what ' +
        'is left of its budgets and of what it holds), a cpm campaign ' +
        'nothing. Idempotent by conversionTxHash (`duplicate: true` on a repeat). Answers the recorded conversion. Errors: 404 campaign_not_found, event_not_found (originalTxHash is not a recorded event of the ' +
        'campaign); 422 conversion_invalid (conversionTxHash equals originalTxHash, payerWallet is not the original payer, ' +
        'convertedResourceUrl is not the recommended resource, or the timestamp precedes the original settlement). ' +
        freeInfra,
      responses: {
        200: RecordedConversionSchema,
        404: ErrorEnvelope,
        422: ErrorEnvelope,
        ...standardErrors,
        ...authErrors,
      },
      metadata: {
        payment: free(),
        auth: 'siwx',
        example: {
          body: {
            originalTxHash: '5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW',
            conversionTxHash:
              '3nqf9zR2bS7cJpW4yTtYwK1xGvB6mLhQ8dNfE5uPaZrKcX2jVbHsM9gDq4oUeT7iLwRyA1kNzF3pC6vJxB8mQhSt',
            campaignId: 'cmp_7Hq2LxN4pR8sT1vW',
            payerWallet: '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM',
            convertedResourceUrl: 'http://127.0.0.1:4109/api/gas/estimate',
            network: 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1',
            timestamp: '2026-03-02T14:09:41.500Z',
          },
        },
      } satisfies RouteMeta,
    },
    list: {
      method: 'GET',
      path: '/v1/campaigns/:id/conversions',
      pathParams: CampaignParams,
      query: z.object({ ...PageQuery }).strict(),
      summary: 'All conversions of a campaign',
      description:
        'Every conversion recorded for the campaign, most recent first, with what each charged. Design: open to anyone, paged ' +
        'with `cursor`. Errors: 404 campaign_not_found. ' +
        freeInfra,
      responses: { 200: page(RecordedConversionSchema), 404: ErrorEnvelope, ...standardErrors },
      metadata: {
        payment: free(),
        example: { params: { id: 'cmp_7Hq2LxN4pR8sT1vW' }, query: { limit: 20 } },
      } satisfies RouteMeta,
    },
  },
  manifest: {
    method: 'GET',
    path: '/v1/manifest',
    summary: 'Active campaigns for publisher middleware',
    description:
      'The campaigns that can match right now (active, inside their schedule, budget left), with their recommendation, ' +
      'targeting, impression beacon and conversion resource, but no budgets or bids. Publisher middleware polls it and caches ' +
      'it for `ttlSeconds`; `version` changes whenever the content does. Open to anyone. ' +
      freeInfra,
    responses: { 200: ManifestSchema, ...standardErrors },
    metadata: { payment: free() } satisfies RouteMeta,
  },
  impression: {
    method: 'GET',
    path: '/v1/track/impression/:campaignId',
    pathParams: z.object({ campaignId: CampaignId }),
    query: z
      .object({
        tx: SolanaSignature.optional().describe(
          'the sponsored settlement whose recommendation was delivered (the facilitator’s beacon carries it)',
        ),
      })
      .strict(),
    summary: 'Impression beacon',
    description:
      'Clients fire it to confirm a recommendation was delivered; answers 204 with no body. Open to anyone. Design: it ' +
      'counts in the campaign’s stats.impressions once per settlement: only with `tx` naming a settlement /v1/match ' +
      'delivered for this campaign, the first time (a repeat, an unknown settlement or no `tx` answers 204 and counts ' +
      'nothing, so beacon traffic cannot inflate the figure); it charges nothing (charges follow facilitator-reported ' +
      'settlements and conversions, so beacon traffic cannot drain a budget). Errors: 404 campaign_not_found. ' +
      freeInfra,
    responses: { 204: c.noBody(), 404: ErrorEnvelope, ...standardErrors },
    metadata: { payment: free(), example: { params: { campaignId: 'cmp_7Hq2LxN4pR8sT1vW' } } } satisfies RouteMeta,
  },
  health: {
    method: 'GET',
    path: '/healthz',
    summary: 'Health check',
    description:
      'Status, service name, version and `bazaarResources`, the count of catalog resources the matcher knows. Free: ' +
      'monitors poll it. 503 database_unavailable when the database does not answer.',
    responses: { 200: AdsHealthSchema, 503: ErrorEnvelope, ...standardErrors },
    metadata: { payment: free() } satisfies RouteMeta,
  },
});

export const ads = defineService({
  id: 'ads',
  title: 'Ad Network',
  description:
    'Sponsored recommendations attached to settled payments: at settle time the facilitator asks for a campaign matching the ' +
    'settled resource and reports the sponsored settlement and later conversions; advertisers manage campaigns (budgets and ' +
    'bids in atomic units of the 6-decimal USD stablecoin); publishers poll the active-campaign manifest; clients fire an ' +
    'impression beacon.',
  router,
});
