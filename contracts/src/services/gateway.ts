import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { defineService } from '../core/service';
import { named } from '../core/names';
import { ErrorEnvelope, paymentErrors, standardErrors } from '../core/errors';
import { adaptive, fixed, free, type RouteMeta } from '../core/payment';
import { UsdAmount, atomicToUsd, usdToAtomic } from '../core/money';
import { Caip2Network, SolanaAddress, SolanaSignature, Timestamp } from '../core/chain';
import { Generator, PageQuery, authErrors } from './shared';
import { MODULE_PRICE_MAX_USD, MODULE_PRICE_MIN_USD, isModulePriceUsd } from './knowledge-market';

const c = initContract();

// The gateway: one entry point over the knowledge market, negotiation, reputation and verification services.
// Trade lifecycle (spec 000): discover, negotiate, verify, purchase, rate.
//
// Who pays (design): the buyer pays the gateway once, with x402, for POST /api/trade/execute: the module's price
// plus the gateway's fee. The route settles first (the buyer's money is in the gateway's wallet before it buys);
// the gateway then pays the knowledge market from its own wallet (x402, beneficiary = the buyer, so the purchase,
// its content and its rating belong to the buyer) and pays the reputation report. Why: the spec has execute run
// verification, purchase and reputation reporting in one call; one payment means one budget check in the buyer's
// SDK. Every refusal that can be decided before the payment is (nothing charged); a step that fails before the
// purchase is refunded on chain in full. Once bought, the purchase is the buyer's (the market cannot take it back), so
// the trade is served, never refunded while the buyer keeps it: content that does not hash to its certificate is
// delivered flagged (contentMatches false) and reported. Every plan also lists each step's own endpoint and price, so
// a buyer's SDK may run the steps itself instead, paying each service directly.

/**
 * The gateway's fee on POST /api/trade/execute, on top of the module's price: it pays the reputation report and the
 * relay.
 */
export const TRADE_GATEWAY_FEE_USD = '0.02';
/** A trade plan can be executed for this long after POST /api/trade/start. */
export const TRADE_PLAN_VALID_MINUTES = 60;

const addUsd = (a: string, b: string) => atomicToUsd(usdToAtomic(a) + usdToAtomic(b));

export type GatewayServiceId = 'gateway' | 'knowledge-market' | 'negotiation' | 'reputation' | 'verification';
export type TradeStepName = 'discover' | 'negotiate' | 'verify' | 'purchase' | 'rate';
export type GatewaySearchType = 'module' | 'agent' | 'certificate' | 'negotiation';
export type GatewayServiceStatus = 'up' | 'degraded' | 'down';
type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface GatewayPricing {
  kind: 'free' | 'fixed' | 'adaptive' | 'tiered';
  minUsd: string;
  maxUsd: string;
  tiers?: { id: string; usd: string; description: string }[];
}
/** A call to make: service, method and path (with any ids already filled in). */
export interface GatewayEndpointRef {
  service: GatewayServiceId;
  method: HttpMethod;
  path: string;
}
export interface GatewayDirectoryEntry {
  service: GatewayServiceId;
  /** The route key: the SDK method name under the service. */
  key: string;
  method: HttpMethod;
  path: string;
  url: string;
  summary: string;
  description: string;
  pricing: GatewayPricing;
  auth: 'none' | 'siwx';
  usage: {
    sdk: string;
    curl: string;
    example: { params?: Record<string, string>; query?: Record<string, unknown>; body?: unknown } | null;
  };
}
export interface GatewayDirectory {
  services: {
    id: GatewayServiceId;
    title: string;
    url: string;
    /** The service's descriptor (A2A agent card) and OpenAPI document on this deployment. */
    agentCardUrl: string;
    openApiUrl: string;
    endpoints: number;
  }[];
  endpoints: GatewayDirectoryEntry[];
  total: number;
  generatedAt: string;
}
export interface GatewayServiceHealth {
  id: GatewayServiceId;
  title: string;
  url: string;
  status: GatewayServiceStatus;
  responseTimeMs: { last: number | null; p50: number | null; p95: number | null };
  availabilityPercent: number | null;
  checks: number;
  uptimeSeconds: number | null;
  lastCheckedAt: string | null;
  lastError: string | null;
}
export interface GatewayHealth {
  status: 'ok' | 'degraded' | 'down';
  startedAt: string;
  uptimeSeconds: number;
  checkedAt: string;
  windowSeconds: number;
  probeIntervalSeconds: number;
  services: GatewayServiceHealth[];
}
export interface GatewayEcosystemStats {
  registeredAgents: number;
  modules: number | null;
  sellers: number | null;
  purchases: number | null;
  marketVolumeUsd: string | null;
  averageModuleRating: number | null;
  negotiationsOpen: number | null;
  agreementRate: number | null;
  scans: number | null;
  certificatesValid: number | null;
  ratedAgents: number | null;
  averageReputation: number | null;
  tradesExecuted: number;
  tradeVolumeUsd: string;
  asOf: string;
}
export interface GatewayEcosystem {
  lifecycle: TradeStepName[];
  services: {
    id: GatewayServiceId;
    title: string;
    description: string;
    url: string;
    status: GatewayServiceStatus;
    responseTimeMs: number | null;
    availabilityPercent: number | null;
    endpoints: number;
    paidEndpoints: number;
  }[];
  stats: GatewayEcosystemStats;
  directory: GatewayDirectoryEntry[];
  generatedAt: string;
}

interface SearchHitBase {
  id: string;
  title: string;
  snippet: string;
  /** Relevance, 0 to 1 (BM25 normalised per type), the order of the merged results. */
  score: number;
  service: GatewayServiceId;
  /** Where the full record is. */
  href: GatewayEndpointRef;
}
export interface GatewayModuleHit extends SearchHitBase {
  type: 'module';
  module: {
    priceUsd: string;
    seller: string;
    rating: number | null;
    ratingCount: number;
    tags: string[];
    capabilities: string[];
    negotiationMode: 'auto' | 'manual' | 'off';
    contentHash: string;
  };
}
export interface GatewayAgentHit extends SearchHitBase {
  type: 'agent';
  agent: {
    wallet: string;
    name: string;
    role: 'buyer' | 'seller' | 'both';
    capabilities: string[];
    reputationScore: number | null;
    tradeCount: number | null;
  };
}
export interface GatewayCertificateHit extends SearchHitBase {
  type: 'certificate';
  certificate: {
    moduleId: string | null;
    contentHash: string;
    score: number;
    status: 'valid' | 'expired' | 'revoked';
    holder: string | null;
    expiresAt: string;
  };
}
export interface GatewayNegotiationHit extends SearchHitBase {
  type: 'negotiation';
  negotiation: {
    moduleId: string;
    moduleTitle: string;
    state: 'open' | 'countered' | 'accepted' | 'rejected' | 'expired';
    mode: 'auto' | 'manual';
    rounds: number;
    maxRounds: number;
    updatedAt: string;
  };
}
export type GatewaySearchHit = GatewayModuleHit | GatewayAgentHit | GatewayCertificateHit | GatewayNegotiationHit;
export interface GatewaySearchResult {
  query: string;
  types: GatewaySearchType[];
  items: GatewaySearchHit[];
  nextCursor: string | null;
  /** Hits per type over all pages, as the services reported them. */
  counts: Record<GatewaySearchType, number>;
  /** Services that did not answer in time: their hits are missing from this page. */
  unavailable: GatewayServiceId[];
  tookMs: number;
}

export interface GatewayRecommendedModule {
  moduleId: string;
  title: string;
  seller: string;
  priceUsd: string;
  rating: number | null;
  certified: boolean;
  matchedCapabilities: string[];
  matchedInterests: string[];
  score: number;
  reason: string;
}
export interface GatewayGuideStep {
  order: number;
  title: string;
  detail: string;
  endpoint: GatewayEndpointRef;
  pricing: GatewayPricing;
}
export interface GatewayOnboarding {
  agent: {
    wallet: string;
    name: string;
    role: 'buyer' | 'seller' | 'both';
    capabilities: string[];
    interests: string[];
    description: string | null;
    registeredAt: string;
    newlyRegistered: boolean;
  };
  registrations: {
    service: GatewayServiceId;
    status: 'registered' | 'already-registered' | 'ready';
    reference: string | null;
    detail: string;
  }[];
  recommendedModules: GatewayRecommendedModule[];
  guide: { summary: string; steps: GatewayGuideStep[] };
  generator: Generator;
}

export interface TradeCandidate {
  moduleId: string;
  title: string;
  seller: { wallet: string; name: string | null };
  priceUsd: string;
  /** The lowest price reachable: the floor in negotiation mode auto, else the list price. */
  lowestPriceUsd: string;
  negotiationMode: 'auto' | 'manual' | 'off';
  rating: { average: number | null; count: number };
  sellerScore: number | null;
  certificate: { id: string; score: number; status: 'valid' | 'expired' | 'revoked'; expiresAt: string } | null;
  matchScore: number;
  matchedCapabilities: string[];
  reasons: string[];
}
export interface TradeNegotiationSnapshot {
  id: string;
  moduleId: string;
  mode: 'auto' | 'manual';
  state: 'open' | 'countered' | 'accepted' | 'rejected' | 'expired';
  turn: 'buyer' | 'seller' | null;
  listPriceUsd: string;
  floorUsd: string | null;
  lastBuyerOfferUsd: string;
  standingOffer: { by: 'buyer' | 'seller'; priceUsd: string } | null;
  agreedPriceUsd: string | null;
  rounds: number;
  maxRounds: number;
  rationale: string | null;
  expiresAt: string;
}
export interface TradeStepEndpoint extends GatewayEndpointRef {
  purpose: string;
  pricing: GatewayPricing;
  /** Who pays this call when the step runs through the gateway. */
  paidBy: 'buyer' | 'gateway' | 'nobody';
}
export interface TradeStep {
  order: number;
  name: TradeStepName;
  /** done; ready (can run now); waiting (on the other party); skipped (not needed); failed. */
  status: 'done' | 'ready' | 'waiting' | 'skipped' | 'failed';
  summary: string;
  /** The gateway call that runs this step: trade/start for discover and negotiate, trade/execute for the rest. */
  via: GatewayEndpointRef;
  endpoints: TradeStepEndpoint[];
}
export interface TradeEstimate {
  modulePriceUsd: string;
  priceBasis: 'agreed' | 'standing-offer' | 'list';
  gatewayFeeUsd: string;
  totalUsd: string;
  withinBudget: boolean;
}
export interface TradePlan {
  id: string;
  buyer: string;
  need: string;
  maxPriceUsd: string;
  requireCertificate: boolean;
  candidates: TradeCandidate[];
  selectedModuleId: string;
  negotiation: TradeNegotiationSnapshot | null;
  steps: TradeStep[];
  estimate: TradeEstimate;
  nextAction: string;
  createdAt: string;
  expiresAt: string;
}
export interface TradeExecution {
  id: string;
  planId: string;
  buyer: string;
  seller: string;
  moduleId: string;
  title: string;
  verification: {
    status: 'certified' | 'skipped';
    certificateId: string | null;
    certificateScore: number | null;
    contentHash: string;
    contentMatches: boolean;
    checkedAt: string;
  };
  purchase: {
    purchaseId: string;
    priceUsd: string;
    listPriceUsd: string;
    priceBasis: 'agreed' | 'list';
    negotiationId: string | null;
    format: 'markdown' | 'text' | 'json' | 'code';
    language: string | null;
    content: string;
    contentHash: string;
    paidBy: string;
    transaction: string;
    network: string;
  };
  reputation: { status: 'reported' | 'queued'; reportId: string | null; detail: string };
  charges: { modulePriceUsd: string; gatewayFeeUsd: string; totalUsd: string };
  steps: TradeStep[];
  completedAt: string;
}
export interface GatewayAssistAnswer {
  question: string;
  topic: 'general' | 'trading' | 'endpoints' | 'disputes';
  answer: string;
  steps: string[];
  endpoints: {
    service: string;
    method: HttpMethod;
    path: string;
    summary: string;
    pricing: GatewayPricing;
    why: string;
  }[];
  followUps: string[];
  generator: Generator;
}

// ---- schemas ----

const ServiceIdSchema = named(
  'ServiceId',
  z.enum(['gateway', 'knowledge-market', 'negotiation', 'reputation', 'verification']),
);
const MethodSchema = named('Method', z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']));
const StepNameSchema = named('StepName', z.enum(['discover', 'negotiate', 'verify', 'purchase', 'rate']));
const SearchTypeSchema = named('SearchType', z.enum(['module', 'agent', 'certificate', 'negotiation']));
const ServiceStatusSchema = named('ServiceStatus', z.enum(['up', 'degraded', 'down']));
const NegotiationStateSchema = named(
  'GatewayNegotiationState',
  z.enum(['open', 'countered', 'accepted', 'rejected', 'expired']),
);
const ModeSchema = named('GatewayMode', z.enum(['auto', 'manual', 'off']));
const RoleSchema = named('GatewayRole', z.enum(['buyer', 'seller', 'both']));
const CertificateStatusSchema = named('GatewayCertificateStatus', z.enum(['valid', 'expired', 'revoked']));
const ContentHash = z.string().regex(/^[0-9a-f]{64}$/, 'must be a SHA-256 hex digest (64 lowercase hex characters)');
const Slug = z.string().regex(/^[a-z0-9][a-z0-9-]{0,47}$/, 'must be a lowercase slug such as "fee-estimation"');
const ModuleIdParam = z
  .string()
  .regex(/^mod_[A-Za-z0-9]{16,40}$/, 'must be a module id such as "mod_7Qk2Xb9LmP4tRw8Z"');
const PlanIdParam = z
  .string()
  .regex(/^plan_[A-Za-z0-9]{16,40}$/, 'must be a trade plan id such as "plan_5Jr8Tq2Vn6Xc3Lm9"');
const Score100 = z.number().min(0).max(100);
const Unit = z.number().min(0).max(1);
const count = z.number().int().min(0);
const ModulePrice = UsdAmount.refine(
  isModulePriceUsd,
  `must be between ${MODULE_PRICE_MIN_USD} and ${MODULE_PRICE_MAX_USD} USD`,
);

const PricingSchema: z.ZodType<GatewayPricing> = named(
  'GatewayPricing',
  z.object({
    kind: z.enum(['free', 'fixed', 'adaptive', 'tiered']),
    minUsd: UsdAmount,
    maxUsd: UsdAmount,
    tiers: z
      .array(z.object({ id: z.string(), usd: UsdAmount, description: z.string() }))
      .optional()
      .describe('for kind tiered'),
  }),
);
const endpointRefFields = {
  service: ServiceIdSchema,
  method: MethodSchema,
  path: z.string().describe('the path, ids filled in where known'),
};
const EndpointRefSchema: z.ZodType<GatewayEndpointRef> = named('GatewayEndpointRef', z.object(endpointRefFields));
const DirectoryEntrySchema: z.ZodType<GatewayDirectoryEntry> = named(
  'GatewayDirectoryEntry',
  z.object({
    service: ServiceIdSchema,
    key: z.string().describe('route key: the SDK method, e.g. client.knowledgeMarket.purchase'),
    method: MethodSchema,
    path: z.string().describe('as the contract declares it, e.g. /api/modules/:moduleId'),
    url: z.string().describe('absolute address on this deployment'),
    summary: z.string(),
    description: z.string(),
    pricing: PricingSchema,
    auth: z.enum(['none', 'siwx']).describe('siwx: the caller proves its wallet with the SIGN-IN-WITH-X header'),
    usage: z.object({
      sdk: z.string().describe('a call through the typed SDK'),
      curl: z.string().describe('the same request with curl (a paid route first answers 402 with the quote)'),
      example: z
        .object({
          params: z.record(z.string()).optional(),
          query: z.record(z.unknown()).optional(),
          body: z.unknown().optional(),
        })
        .nullable()
        .describe('the contract’s example request; null for a route without input'),
    }),
  }),
);
const DirectorySchema: z.ZodType<GatewayDirectory> = named(
  'GatewayDirectory',
  z.object({
    services: z.array(
      z.object({
        id: ServiceIdSchema,
        title: z.string(),
        url: z.string().describe('base address on this deployment'),
        agentCardUrl: z.string().describe('<url>/.well-known/agent-card.json, the service’s descriptor'),
        openApiUrl: z.string().describe('<url>/openapi.json'),
        endpoints: count,
      }),
    ),
    endpoints: z.array(DirectoryEntrySchema),
    total: count,
    generatedAt: Timestamp,
  }),
);
const ServiceHealthSchema: z.ZodType<GatewayServiceHealth> = named(
  'GatewayServiceHealth',
  z.object({
    id: ServiceIdSchema,
    title: z.string(),
    url: z.string(),
    status: ServiceStatusSchema.describe(
      'up: last probe answered within 2000 ms; degraded: answered slower, or availability under 99 percent; down: last probe failed',
    ),
    responseTimeMs: z
      .object({
        last: z.number().min(0).nullable(),
        p50: z.number().min(0).nullable(),
        p95: z.number().min(0).nullable(),
      })
      .describe('of the successful probes in the window; null before the first'),
    availabilityPercent: z
      .number()
      .min(0)
      .max(100)
      .nullable()
      .describe('successful probes / probes in the window; null before the first'),
    checks: count.describe('probes in the window'),
    uptimeSeconds: z.number().int().min(0).nullable().describe('as the service reports it; null when down'),
    lastCheckedAt: Timestamp.nullable(),
    lastError: z.string().nullable(),
  }),
);
const HealthSchema: z.ZodType<GatewayHealth> = named(
  'GatewayHealth',
  z.object({
    status: z
      .enum(['ok', 'degraded', 'down'])
      .describe('ok: every service up; down: every service down; degraded otherwise'),
    startedAt: Timestamp,
    uptimeSeconds: z.number().int().min(0).describe('of the gateway'),
    checkedAt: Timestamp,
    windowSeconds: z.number().int().describe('the window of availability and percentiles: 86400'),
    probeIntervalSeconds: z.number().int().describe('how often each service is probed: 30'),
    services: z.array(ServiceHealthSchema).describe('the four connected services'),
  }),
);
const EcosystemSchema: z.ZodType<GatewayEcosystem> = named(
  'GatewayEcosystem',
  z.object({
    lifecycle: z.array(StepNameSchema).describe('the trade lifecycle: discover, negotiate, verify, purchase, rate'),
    services: z.array(
      z.object({
        id: ServiceIdSchema,
        title: z.string(),
        description: z.string(),
        url: z.string(),
        status: ServiceStatusSchema,
        responseTimeMs: z.number().min(0).nullable().describe('last probe'),
        availabilityPercent: z.number().min(0).max(100).nullable(),
        endpoints: count,
        paidEndpoints: count,
      }),
    ),
    stats: z
      .object({
        registeredAgents: count.describe('agents onboarded through the gateway'),
        modules: count.nullable(),
        sellers: count.nullable(),
        purchases: count.nullable(),
        marketVolumeUsd: UsdAmount.nullable(),
        averageModuleRating: z.number().min(1).max(5).nullable(),
        negotiationsOpen: count.nullable().describe('open or countered'),
        agreementRate: Unit.nullable(),
        scans: count.nullable(),
        certificatesValid: count.nullable(),
        ratedAgents: count.nullable(),
        averageReputation: Score100.nullable(),
        tradesExecuted: count.describe('trades completed through POST /api/trade/execute'),
        tradeVolumeUsd: UsdAmount.describe('module prices paid through the gateway'),
        asOf: Timestamp,
      })
      .describe('from each service’s free GET /api/stats; a figure is null when its service did not answer'),
    directory: z
      .array(DirectoryEntrySchema)
      .describe('every endpoint of the five services, as GET /api/directory lists them'),
    generatedAt: Timestamp,
  }),
);

const hitFields = {
  id: z.string(),
  title: z.string(),
  snippet: z.string().describe('the matching text, up to 200 characters'),
  score: Unit.describe(
    'relevance 0 to 1: BM25 (k1 1.2, b 0.75) over the record’s text divided by the best BM25 of its type, times the share of the query’s terms it contains; results are ordered by it',
  ),
  service: ServiceIdSchema,
  href: EndpointRefSchema.describe('where the full record is'),
};
const SearchHitSchema: z.ZodType<GatewaySearchHit> = named(
  'GatewaySearchHit',
  z.discriminatedUnion('type', [
    z.object({
      type: z.literal('module'),
      ...hitFields,
      module: z.object({
        priceUsd: UsdAmount,
        seller: SolanaAddress,
        rating: z.number().min(1).max(5).nullable(),
        ratingCount: count,
        tags: z.array(z.string()),
        capabilities: z.array(z.string()),
        negotiationMode: ModeSchema,
        contentHash: ContentHash,
      }),
    }),
    z.object({
      type: z.literal('agent'),
      ...hitFields,
      agent: z.object({
        wallet: SolanaAddress,
        name: z.string(),
        role: RoleSchema,
        capabilities: z.array(z.string()),
        reputationScore: Score100.nullable().describe('cached from the reputation service, refreshed at most hourly'),
        tradeCount: count.nullable(),
      }),
    }),
    z.object({
      type: z.literal('certificate'),
      ...hitFields,
      certificate: z.object({
        moduleId: z.string().nullable(),
        contentHash: ContentHash,
        score: Score100,
        status: CertificateStatusSchema,
        holder: SolanaAddress.nullable(),
        expiresAt: Timestamp,
      }),
    }),
    z.object({
      type: z.literal('negotiation'),
      ...hitFields,
      negotiation: z.object({
        moduleId: z.string(),
        moduleTitle: z.string(),
        state: NegotiationStateSchema,
        mode: z.enum(['auto', 'manual']),
        rounds: count,
        maxRounds: count,
        updatedAt: Timestamp,
      }),
    }),
  ]),
);
const SearchResultSchema: z.ZodType<GatewaySearchResult> = named(
  'GatewaySearchResult',
  z.object({
    query: z.string(),
    types: z.array(SearchTypeSchema),
    items: z.array(SearchHitSchema),
    nextCursor: z.string().nullable(),
    counts: z
      .object({ module: count, agent: count, certificate: count, negotiation: count })
      .describe('hits per type over all pages'),
    unavailable: z.array(ServiceIdSchema).describe('services that did not answer in time; their hits are missing'),
    tookMs: z.number().min(0),
  }),
);

const GuideStepSchema: z.ZodType<GatewayGuideStep> = named(
  'GatewayGuideStep',
  z.object({
    order: z.number().int().min(1),
    title: z.string(),
    detail: z.string(),
    endpoint: EndpointRefSchema,
    pricing: PricingSchema,
  }),
);
const OnboardingSchema: z.ZodType<GatewayOnboarding> = named(
  'GatewayOnboarding',
  z.object({
    agent: z.object({
      wallet: SolanaAddress,
      name: z.string(),
      role: RoleSchema,
      capabilities: z.array(z.string()),
      interests: z.array(z.string()),
      description: z.string().nullable(),
      registeredAt: Timestamp,
      newlyRegistered: z.boolean().describe('false when the wallet was onboarded before (its profile was updated)'),
    }),
    registrations: z
      .array(
        z.object({
          service: ServiceIdSchema,
          status: z
            .enum(['registered', 'already-registered', 'ready'])
            .describe('ready: the service identifies agents by wallet and needs no registration'),
          reference: z.string().nullable().describe('the agent’s record there, e.g. /api/reputation/agent/<wallet>'),
          detail: z.string(),
        }),
      )
      .describe('one entry per service of the five'),
    recommendedModules: z
      .array(
        z.object({
          moduleId: z.string(),
          title: z.string(),
          seller: SolanaAddress,
          priceUsd: UsdAmount,
          rating: z.number().min(1).max(5).nullable(),
          certified: z.boolean(),
          matchedCapabilities: z.array(z.string()),
          matchedInterests: z.array(z.string()),
          score: Unit.describe('0.6 × capability overlap + 0.2 × interest overlap + 0.2 × rating / 5 (unrated: 0.5)'),
          reason: z.string(),
        }),
      )
      .describe('up to 5, best first; certified modules first on equal scores'),
    guide: z
      .object({ summary: z.string(), steps: z.array(GuideStepSchema) })
      .describe('getting started, for the agent’s role'),
    generator: Generator,
  }),
);

const TradeStepEndpointSchema: z.ZodType<TradeStepEndpoint> = named(
  'TradeStepEndpoint',
  z.object({
    ...endpointRefFields,
    purpose: z.string(),
    pricing: PricingSchema,
    paidBy: z
      .enum(['buyer', 'gateway', 'nobody'])
      .describe('who pays this call when the step runs through the gateway'),
  }),
);
const TradeStepSchema: z.ZodType<TradeStep> = named(
  'TradeStep',
  z.object({
    order: z.number().int().min(1).max(5),
    name: StepNameSchema,
    status: z
      .enum(['done', 'ready', 'waiting', 'skipped', 'failed'])
      .describe('waiting: on the other party (a manual seller’s move)'),
    summary: z.string(),
    via: EndpointRefSchema.describe('the gateway call that runs the step'),
    endpoints: z
      .array(TradeStepEndpointSchema)
      .describe('the services’ own endpoints the step uses, to run it without the gateway'),
  }),
);
const CandidateSchema: z.ZodType<TradeCandidate> = named(
  'TradeCandidate',
  z.object({
    moduleId: z.string(),
    title: z.string(),
    seller: z.object({ wallet: SolanaAddress, name: z.string().nullable() }),
    priceUsd: UsdAmount.describe('list price'),
    lowestPriceUsd: UsdAmount.describe('the floor in negotiation mode auto, else the list price'),
    negotiationMode: ModeSchema,
    rating: z.object({ average: z.number().min(1).max(5).nullable(), count }),
    sellerScore: Score100.nullable().describe(
      'the seller’s reputation score; null when the reputation service did not answer',
    ),
    certificate: z
      .object({ id: z.string(), score: Score100, status: CertificateStatusSchema, expiresAt: Timestamp })
      .nullable()
      .describe('the verification certificate bound to the module’s contentHash, if any'),
    matchScore: Unit.describe(
      '0.5 × text relevance + 0.2 × capability overlap + 0.15 × rating / 5 + 0.15 × sellerScore / 100 (unknown rating or score: half)',
    ),
    matchedCapabilities: z.array(z.string()),
    reasons: z.array(z.string()).describe('why it ranks where it does, in words'),
  }),
);
const NegotiationSnapshotSchema: z.ZodType<TradeNegotiationSnapshot> = named(
  'TradeNegotiationSnapshot',
  z.object({
    id: z.string(),
    moduleId: z.string(),
    mode: z.enum(['auto', 'manual']),
    state: NegotiationStateSchema,
    turn: z.enum(['buyer', 'seller']).nullable(),
    listPriceUsd: UsdAmount,
    floorUsd: UsdAmount.nullable(),
    lastBuyerOfferUsd: UsdAmount,
    standingOffer: z.object({ by: z.enum(['buyer', 'seller']), priceUsd: UsdAmount }).nullable(),
    agreedPriceUsd: UsdAmount.nullable(),
    rounds: count,
    maxRounds: count,
    rationale: z.string().nullable().describe('the automatic responder’s arithmetic for its last move'),
    expiresAt: Timestamp,
  }),
);
const EstimateSchema: z.ZodType<TradeEstimate> = named(
  'TradeEstimate',
  z.object({
    modulePriceUsd: UsdAmount,
    priceBasis: z
      .enum(['agreed', 'standing-offer', 'list'])
      .describe(
        'agreed: accepted negotiation; standing-offer: the seller’s counter, accepted by execute; list: no negotiation',
      ),
    gatewayFeeUsd: UsdAmount,
    totalUsd: UsdAmount.describe('what POST /api/trade/execute would charge now'),
    withinBudget: z.boolean().describe('modulePriceUsd ≤ maxPriceUsd'),
  }),
);
const TradePlanSchema: z.ZodType<TradePlan> = named(
  'TradePlan',
  z.object({
    id: z.string().describe('plan id, plan_…'),
    buyer: SolanaAddress,
    need: z.string(),
    maxPriceUsd: UsdAmount,
    requireCertificate: z.boolean(),
    candidates: z.array(CandidateSchema).describe('matching sellers’ modules, best first'),
    selectedModuleId: z.string().describe('the best candidate; the negotiation, if any, is about it'),
    negotiation: NegotiationSnapshotSchema.nullable().describe(
      'null when the selected module’s negotiation mode is off',
    ),
    steps: z.array(TradeStepSchema).describe('discover, negotiate, verify, purchase, rate, in that order'),
    estimate: EstimateSchema,
    nextAction: z.string().describe('what to do next, in words'),
    createdAt: Timestamp,
    expiresAt: Timestamp.describe(`${TRADE_PLAN_VALID_MINUTES} minutes after creation`),
  }),
);
const ExecutionSchema: z.ZodType<TradeExecution> = named(
  'TradeExecution',
  z.object({
    id: z.string().describe('trade id, trd_…'),
    planId: z.string(),
    buyer: SolanaAddress,
    seller: SolanaAddress,
    moduleId: z.string(),
    title: z.string(),
    verification: z.object({
      status: z
        .enum(['certified', 'skipped'])
        .describe('skipped only when the plan did not require a certificate and none exists'),
      certificateId: z.string().nullable(),
      certificateScore: Score100.nullable(),
      contentHash: ContentHash.describe('SHA-256 of the delivered content'),
      contentMatches: z.boolean().describe('the delivered content hashes to the listed (and certified) contentHash'),
      checkedAt: Timestamp,
    }),
    purchase: z.object({
      purchaseId: z
        .string()
        .describe('the knowledge market’s purchase; its buyer is you (GET /api/purchases/:purchaseId there)'),
      priceUsd: UsdAmount,
      listPriceUsd: UsdAmount,
      priceBasis: z.enum(['agreed', 'list']),
      negotiationId: z.string().nullable(),
      format: z.enum(['markdown', 'text', 'json', 'code']),
      language: z.string().nullable(),
      content: z.string(),
      contentHash: ContentHash,
      paidBy: SolanaAddress.describe('the gateway’s wallet'),
      transaction: SolanaSignature.describe('the on-chain transfer from the gateway to the seller'),
      network: Caip2Network,
    }),
    reputation: z.object({
      status: z
        .enum(['reported', 'queued'])
        .describe('queued: the reputation service did not answer; the gateway retries'),
      reportId: z.string().nullable(),
      detail: z.string(),
    }),
    charges: z.object({
      modulePriceUsd: UsdAmount,
      gatewayFeeUsd: UsdAmount,
      totalUsd: UsdAmount.describe('what this call charged: module price + fee'),
    }),
    steps: z.array(TradeStepSchema),
    completedAt: Timestamp,
  }),
);
const AssistAnswerSchema: z.ZodType<GatewayAssistAnswer> = named(
  'GatewayAssistAnswer',
  z.object({
    question: z.string(),
    topic: z
      .enum(['general', 'trading', 'endpoints', 'disputes'])
      .describe('as asked, else detected from the question'),
    answer: z.string(),
    steps: z.array(z.string()).describe('actions to take, in order; empty when the answer is informational'),
    endpoints: z.array(
      z.object({
        service: z.string().describe('a service id of the economy, e.g. "knowledge-market" or "escrow"'),
        method: MethodSchema,
        path: z.string(),
        summary: z.string(),
        pricing: PricingSchema,
        why: z.string(),
      }),
    ),
    followUps: z.array(z.string()).describe('questions worth asking next'),
    generator: Generator,
  }),
);

// ---- request bodies ----

export interface GatewayOnboardBodyOut {
  wallet: string;
  name: string;
  capabilities: string[];
  interests: string[];
  role: 'buyer' | 'seller' | 'both';
  description?: string;
}
export interface GatewayOnboardBodyIn extends Omit<GatewayOnboardBodyOut, 'interests' | 'role'> {
  interests?: string[];
  role?: 'buyer' | 'seller' | 'both';
}
const OnboardBody: z.ZodType<GatewayOnboardBodyOut, z.ZodTypeDef, GatewayOnboardBodyIn> = named(
  'GatewayOnboardBodyOut',
  z
    .object({
      wallet: SolanaAddress.describe('the agent’s wallet; must be the signed-in wallet'),
      name: z.string().trim().min(2).max(64).describe('display name'),
      capabilities: z.array(Slug).min(1).max(20).describe('what the agent can do, 1 to 20 slugs'),
      interests: z.array(Slug).max(20).default([]).describe('topics it wants to learn or buy, up to 20 slugs'),
      role: RoleSchema.default('both').describe('buyer, seller or both; shapes the guide'),
      description: z.string().trim().min(1).max(500).optional(),
    })
    .strict(),
);

export interface GatewayTradeStartBodyOut {
  need: string;
  capabilities?: string[];
  moduleId?: string;
  negotiationId?: string;
  maxPriceUsd: string;
  offerUsd?: string;
  minSellerScore?: number;
  requireCertificate: boolean;
  maxCandidates: number;
}
export interface GatewayTradeStartBodyIn extends Omit<
  GatewayTradeStartBodyOut,
  'requireCertificate' | 'maxCandidates'
> {
  requireCertificate?: boolean;
  maxCandidates?: number;
}
const TradeStartBody: z.ZodType<GatewayTradeStartBodyOut, z.ZodTypeDef, GatewayTradeStartBodyIn> = named(
  'GatewayTradeStartBodyOut',
  z
    .object({
      need: z.string().trim().min(3).max(500).describe('what the buyer wants, in words; searched in the market'),
      capabilities: z
        .array(Slug)
        .min(1)
        .max(10)
        .optional()
        .describe('capabilities the module must declare (any of them)'),
      moduleId: ModuleIdParam.optional().describe('trade this module: discovery then only ranks it'),
      negotiationId: z
        .string()
        .regex(/^neg_[A-Za-z0-9]{16,40}$/, 'must be a negotiation id such as "neg_9Vt4Lm2Qx8Kd3Rp7"')
        .optional()
        .describe(
          'an accepted negotiation the gateway brokered for you (one you finished yourself after an earlier plan): its module is selected at the agreed price and no negotiation is opened',
        ),
      maxPriceUsd: ModulePrice.describe('the most the buyer pays for the module, USD (the gateway fee comes on top)'),
      offerUsd: ModulePrice.optional().describe(
        'opening offer; default the lower of maxPriceUsd and 80 percent of the list price',
      ),
      minSellerScore: z
        .number()
        .min(0)
        .max(100)
        .optional()
        .describe('only sellers with at least this reputation score'),
      requireCertificate: z
        .boolean()
        .default(true)
        .describe('only modules with a valid verification certificate for their contentHash (default true)'),
      maxCandidates: z.number().int().min(1).max(10).default(5).describe('candidates to return, 1 to 10'),
    })
    .strict(),
);

export interface GatewayTradeExecuteBodyOut {
  planId: string;
  moduleId?: string;
  maxPriceUsd?: string;
}
const TradeExecuteBody: z.ZodType<GatewayTradeExecuteBodyOut> = named(
  'GatewayTradeExecuteBodyOut',
  z
    .object({
      planId: PlanIdParam.describe('the plan POST /api/trade/start returned; the stored plan is used, not a copy'),
      moduleId: ModuleIdParam.optional().describe(
        'another candidate of the plan, bought at its list price; default the selected one',
      ),
      maxPriceUsd: ModulePrice.optional().describe('a lower cap than the plan’s for the module price'),
    })
    .strict(),
);

export interface GatewayAssistBodyOut {
  question: string;
  topic?: 'general' | 'trading' | 'endpoints' | 'disputes';
  moduleId?: string;
}
const AssistBody: z.ZodType<GatewayAssistBodyOut> = named(
  'GatewayAssistBodyOut',
  z
    .object({
      question: z.string().trim().min(3).max(2000),
      topic: z
        .enum(['general', 'trading', 'endpoints', 'disputes'])
        .optional()
        .describe('detected from the question when omitted'),
      moduleId: ModuleIdParam.optional().describe('a module the question is about'),
    })
    .strict(),
);

const EXAMPLE_BUYER = 'AwzqSRCDZAUN3utZvfiggpY5GvajfeG5h2LunF77n24L';

const router = c.router({
  ecosystem: {
    method: 'GET',
    path: '/api/ecosystem',
    summary: 'Every connected service with health, aggregate stats and the endpoint directory',
    description:
      'Design: the four connected services (knowledge market, negotiation, reputation, verification) with their health ' +
      'from the gateway’s probes, aggregate statistics read from each service’s free GET /api/stats (a figure is null when ' +
      'its service did not answer) plus the gateway’s own trade records, the trade lifecycle, and the full endpoint ' +
      'directory of the five services.',
    responses: { 200: EcosystemSchema, ...standardErrors },
    metadata: { payment: free() } satisfies RouteMeta,
  },
  search: {
    method: 'GET',
    path: '/api/search',
    query: z
      .object({
        q: z.string().trim().min(1).max(200).describe('the query'),
        types: z
          .string()
          .regex(
            /^(module|agent|certificate|negotiation)(,(module|agent|certificate|negotiation)){0,3}$/,
            'must be comma-separated types among module, agent, certificate, negotiation',
          )
          .optional()
          .describe('comma-separated: module, agent, certificate, negotiation; all four when omitted'),
        ...PageQuery,
      })
      .strict(),
    summary: 'One query over modules, agents, certificates and negotiations',
    description:
      'Design: unified hits, best first: modules (knowledge market listings), agents (onboarded through the gateway, with ' +
      'their reputation score cached at most an hour), certificates (the verification registry) and negotiations (public ' +
      'summaries only: parties and prices stay private). Each service is asked in parallel with a 2-second budget; one ' +
      'that does not answer is named in `unavailable` rather than failing the search. `nextCursor` is opaque and encodes ' +
      'each service’s position.',
    responses: { 200: SearchResultSchema, ...standardErrors },
    metadata: {
      payment: free(),
      example: { query: { q: 'solana priority fees', types: 'module,certificate', limit: 20 } },
    } satisfies RouteMeta,
  },
  onboard: {
    method: 'POST',
    path: '/api/onboard',
    body: OnboardBody,
    summary: 'Register an agent across the services; recommended modules and a getting-started guide',
    description:
      'Design: records the agent (wallet, name, role, capabilities, interests) in the gateway’s registry, which search and ' +
      'recommendations read; the knowledge market, negotiation, reputation and verification services identify agents by ' +
      'wallet, so each is reported `ready` with the agent’s record there (a new agent’s reputation starts at 50, unrated). ' +
      'Onboarding again updates the profile. Recommends up to 5 modules by capability and interest overlap with rating ' +
      '(formula on `score`), and writes a step-by-step guide for the agent’s role, every step with its endpoint and price. ' +
      'Errors: 403 wallet_mismatch (`wallet` is not the signed-in wallet; not charged).',
    responses: { 200: OnboardingSchema, ...standardErrors, ...authErrors, ...paymentErrors },
    metadata: {
      payment: fixed('0.01'),
      auth: 'siwx',
      example: {
        body: {
          wallet: EXAMPLE_BUYER,
          name: 'fee-tuner',
          capabilities: ['transaction-landing', 'fee-estimation'],
          interests: ['solana', 'mev'],
          role: 'buyer',
        },
      },
    } satisfies RouteMeta,
  },
  startTrade: {
    method: 'POST',
    path: '/api/trade/start',
    body: TradeStartBody,
    summary: 'Find matching sellers, start a negotiation, return the trade plan',
    description:
      'Design: discover: searches the market for `need` (or takes `moduleId`), keeps modules whose lowest reachable price ' +
      '(the floor in negotiation mode auto, else the list price) is within maxPriceUsd, that carry a valid certificate ' +
      'for their contentHash when requireCertificate, and whose seller meets minSellerScore; ranks them (formula on ' +
      '`matchScore`). negotiate: for the best candidate, opens a negotiation for the signed-in buyer with the gateway as ' +
      'broker at `offerUsd`, default the lower of maxPriceUsd and 80 percent of the list price; a seller in mode auto ' +
      'answers at once with the negotiation service’s deterministic rule (an opening offer at or above the list price is ' +
      'accepted at the list price). With `negotiationId`, an accepted negotiation the gateway brokered for the buyer is used ' +
      'instead (the market honours an agreement only when its buyer or the broker that opened it pays). The plan lists the five steps in lifecycle order with their endpoints, who pays each, and the estimate of ' +
      'POST /api/trade/execute. Keep negotiating with the negotiation service (the plan’s negotiate step lists the calls) ' +
      `or execute now. The plan is valid for ${TRADE_PLAN_VALID_MINUTES} minutes. Errors: 404 module_not_found ` +
      '(`moduleId`), 404 negotiation_not_found, 409 negotiation_exists (the buyer already has an unfinished negotiation over ' +
      'the selected module, opened without the gateway; details.negotiationId: buy with it directly in the market, or reject ' +
      'it), 409 negotiation_not_accepted (`negotiationId`), 422 negotiation_mismatch (`negotiationId` is another buyer’s or ' +
      'about another module), 422 negotiation_not_brokered (`negotiationId` was not opened through the gateway), 422 ' +
      'no_matching_sellers (details: how many modules each filter removed), 502 upstream_unavailable (the market or the ' +
      'negotiation service did not answer); none is charged.',
    responses: {
      200: TradePlanSchema,
      404: ErrorEnvelope,
      409: ErrorEnvelope,
      422: ErrorEnvelope,
      502: ErrorEnvelope,
      ...standardErrors,
      ...authErrors,
      ...paymentErrors,
    },
    metadata: {
      payment: fixed('0.03'),
      auth: 'siwx',
      example: {
        body: {
          need: 'choose compute-unit prices that land Solana transactions in the next blocks',
          capabilities: ['fee-estimation'],
          maxPriceUsd: '0.45',
          minSellerScore: 60,
          requireCertificate: true,
          maxCandidates: 5,
        },
      },
    } satisfies RouteMeta,
  },
  executeTrade: {
    method: 'POST',
    path: '/api/trade/execute',
    body: TradeExecuteBody,
    summary: 'Run a trade plan: verification, purchase and reputation reporting in one call',
    description:
      'Design: one x402 payment by the buyer covers the trade: the price is the module price plus the gateway fee of ' +
      `${TRADE_GATEWAY_FEE_USD} USD, so the route is priced adaptively between ${addUsd(MODULE_PRICE_MIN_USD, TRADE_GATEWAY_FEE_USD)} ` +
      `and ${addUsd(MODULE_PRICE_MAX_USD, TRADE_GATEWAY_FEE_USD)} USD and the 402 quote asks for exactly that sum (no demand ` +
      'surcharge). Module price: the agreed price of the plan’s accepted negotiation; else the seller’s standing ' +
      'counter-offer, which the gateway accepts for the buyer as broker; else the list price when the module is not ' +
      'negotiated (mode off, or another candidate named by `moduleId`); never above maxPriceUsd. Then: verify (a valid ' +
      'certificate bound to the module’s contentHash; skipped only when the plan did not require one), purchase (the ' +
      'gateway pays the knowledge market from its own wallet with beneficiary = the buyer, and checks that the content ' +
      'hashes to the certified contentHash), rate (a verified trade report about the seller to the reputation service, ' +
      'queued and retried if it does not answer). The payment settles before these steps run; if one fails before the ' +
      'purchase, the whole payment is refunded on chain and the error says so (details.refund). Once bought, the ' +
      'purchase is the buyer’s and the trade is served: content that does not hash to the certified contentHash is ' +
      'delivered with verification.contentMatches false and reported to reputation, never refunded while the buyer ' +
      'keeps it. A gateway that dies after paying the market presents that same recorded payment again when the ' +
      'buyer’s payment comes back: it never buys twice. Rate the module ' +
      'later with the knowledge market’s POST /api/modules/:moduleId/rate. Only the plan’s buyer may execute it, once ' +
      '(per plan and per payment; a plan whose execution failed and was refunded may be executed again). ' +
      'Errors: 404 plan_not_found, 403 not_plan_owner, 409 plan_expired, 409 plan_already_executed (details.purchaseId: ' +
      'fetch the content again from the knowledge market), 409 negotiation_pending (the seller’s move), 409 ' +
      'negotiation_closed (rejected or expired: start a new plan), 422 module_not_in_plan, 422 price_above_max, 422 ' +
      'verification_failed (no valid certificate bound to the contentHash: missing, expired or revoked since the plan), ' +
      '502 upstream_unavailable. Those decided before the payment (plan, owner, expiry, module, price, negotiation, ' +
      'certificate) are not charged; an upstream failure before the market is paid is refunded. Once the market payment ' +
      'may have settled, the buyer’s payment is kept, not refunded, while its outcome is unknown: 503 trade_pending ' +
      '(Retry-After; present the same payment again to finish the trade, never charged twice); refunded in full once the ' +
      'facilitator shows the market payment never settled and never will; 502 market_kept_payment when it settled and the ' +
      'market will not deliver (not refunded: the gateway does not fund what the market kept; the market is reported to ' +
      'reputation).',
    responses: {
      200: ExecutionSchema,
      404: ErrorEnvelope,
      409: ErrorEnvelope,
      422: ErrorEnvelope,
      502: ErrorEnvelope,
      ...standardErrors,
      ...authErrors,
      ...paymentErrors,
    },
    metadata: {
      payment: adaptive(
        addUsd(MODULE_PRICE_MIN_USD, TRADE_GATEWAY_FEE_USD),
        addUsd(MODULE_PRICE_MAX_USD, TRADE_GATEWAY_FEE_USD),
      ),
      auth: 'siwx',
      settle: 'first',
      example: { body: { planId: 'plan_5Jr8Tq2Vn6Xc3Lm9', maxPriceUsd: '0.45' } },
    } satisfies RouteMeta,
  },
  assist: {
    method: 'POST',
    path: '/api/assist',
    body: AssistBody,
    summary: 'AI assistant: questions, trading guidance, endpoint lookup, dispute help',
    description:
      'Design: answers one question about the ecosystem from the endpoint directory, the trade lifecycle and the services’ ' +
      'rules (negotiation strategy, prices, certificates, reputation, escrow disputes), with the steps to take and the ' +
      'endpoints to call, each with its price. Errors: 404 module_not_found (`moduleId`), 422 question_out_of_scope (the ' +
      'question is not about the ecosystem); neither is charged.',
    responses: { 200: AssistAnswerSchema, 404: ErrorEnvelope, 422: ErrorEnvelope, ...standardErrors, ...paymentErrors },
    metadata: {
      payment: fixed('0.01'),
      example: { body: { question: 'How do I get a discount on a module before buying it?', topic: 'trading' } },
    } satisfies RouteMeta,
  },
  health: {
    method: 'GET',
    path: '/api/health',
    summary: 'Uptime, response times and availability of all services',
    description:
      'Design: the gateway probes each connected service’s GET /health every 30 seconds and keeps 24 hours of results: per ' +
      'service the status, last, median and 95th-percentile response times and availability over the window, plus the ' +
      'gateway’s own uptime. Always answers 200 while the gateway runs; read `status`. Free: monitors poll it.',
    responses: { 200: HealthSchema, ...standardErrors },
    metadata: { payment: free() } satisfies RouteMeta,
  },
  directory: {
    method: 'GET',
    path: '/api/directory',
    query: z
      .object({
        service: ServiceIdSchema.optional().describe('only this service’s endpoints'),
        paid: z.enum(['true', 'false']).optional().describe('only paid (true) or only free (false) endpoints'),
        q: z.string().trim().min(1).max(100).optional().describe('words to find in path, summary or description'),
      })
      .strict(),
    summary: 'Every endpoint of the five services with descriptions, pricing, methods and usage',
    description:
      'Design: read from each service’s own OpenAPI document (GET <url>/openapi.json, generated from its contract with ' +
      'this deployment’s prices; kept 5 minutes; a service that does not answer is listed from its contract), in each service’s ' +
      'listing order: gateway, knowledge-market, negotiation, reputation, verification. Each entry has its method, path, ' +
      'address on this deployment, pricing, whether SIGN-IN-WITH-X is required, and usage: an SDK call, a curl line and the ' +
      'contract’s example request. Not paged: the list is bounded by the contracts.',
    responses: { 200: DirectorySchema, ...standardErrors },
    metadata: {
      payment: free(),
      example: { query: { service: 'knowledge-market', paid: 'true' } },
    } satisfies RouteMeta,
  },
});

export const gateway = defineService({
  id: 'gateway',
  title: 'Gateway',
  description:
    'The single entry point over the knowledge market, negotiation, reputation and verification services: agent ' +
    'onboarding with module recommendations, trade lifecycle orchestration (discover, negotiate, verify, purchase, rate), ' +
    'ecosystem-wide search, health monitoring of the connected services, an endpoint directory and an AI assistant.',
  router,
});
