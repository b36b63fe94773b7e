import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { defineService } from '../core/service';
import { named } from '../core/names';
import { ErrorEnvelope, standardErrors } from '../core/errors';
import { free, type RouteMeta } from '../core/payment';
import { SolanaAddress, Timestamp } from '../core/chain';
import { PageQuery, page } from './shared';

const c = initContract();

// Read-only views over the facilitator's settlement records and the resource catalog. The specification types
// the list item's priceUsd and stats.totalVolumeUsd as JSON numbers; every USD figure of this API follows it
// (display values rounded to 6 decimals, never used to pay: payments quote atomic units in their 402).

export type Timeframe = '1d' | '7d' | '30d' | '90d';

export interface ResourceStats {
  totalCalls: number;
  totalVolumeUsd: number;
}
export interface MarketplaceResource {
  resourceUrl: string;
  displayName: string;
  description: string;
  category: string;
  priceUsd: number;
  payTo: string;
  stats: ResourceStats;
}
export interface MarketplaceResources {
  ok: boolean;
  resources: MarketplaceResource[];
}
export interface EcosystemProject {
  payTo: string;
  displayName: string;
  category: string;
  resourceCount: number;
  settlements: number;
  volumeUsd: number;
  uniqueBuyers: number;
  lastSettlementAt: string | null;
}
export interface SellerResource {
  resourceUrl: string;
  displayName: string;
  priceUsd: number;
}
export interface SellerProfile {
  payTo: string;
  displayName: string;
  description: string;
  category: string;
  websiteUrl: string | null;
  agentCardUrl: string | null;
  networks: string[];
  resources: SellerResource[];
  firstSettlementAt: string | null;
}
export interface TimeframeStats {
  timeframe: Timeframe;
  settlements: number;
  volumeUsd: number;
  uniqueBuyers: number;
}
export interface TopResource {
  resourceUrl: string;
  totalCalls: number;
  totalVolumeUsd: number;
}
export interface SellerStats {
  payTo: string;
  stats: ResourceStats;
  uniqueBuyers: number;
  averagePriceUsd: number;
  lastSettlementAt: string | null;
  timeframes: TimeframeStats[];
  topResources: TopResource[];
  asOf: string;
}

const TimeframeSchema = named('Timeframe', z.enum(['1d', '7d', '30d', '90d']));
const ResourceStatsSchema: z.ZodType<ResourceStats> = named(
  'ResourceStats',
  z.object({
    totalCalls: z.number().int().describe('settled calls, all time'),
    totalVolumeUsd: z.number().describe('USD settled, all time'),
  }),
);
const MarketplaceResourceSchema: z.ZodType<MarketplaceResource> = named(
  'MarketplaceResource',
  z.object({
    resourceUrl: z.string(),
    displayName: z.string(),
    description: z.string(),
    category: z.string(),
    priceUsd: z.number().describe('price per call in USD'),
    payTo: z.string().describe('seller wallet'),
    stats: ResourceStatsSchema,
  }),
);
const MarketplaceResourcesSchema: z.ZodType<MarketplaceResources> = named(
  'MarketplaceResources',
  z.object({
    ok: z.boolean(),
    resources: z.array(MarketplaceResourceSchema),
  }),
);
const EcosystemProjectSchema: z.ZodType<EcosystemProject> = named(
  'EcosystemProject',
  z.object({
    payTo: z.string().describe('seller wallet: the project’s identity'),
    displayName: z.string(),
    category: z.string().describe('the category of most of its resources'),
    resourceCount: z.number().int(),
    settlements: z.number().int().describe('settled calls within the timeframe'),
    volumeUsd: z.number().describe('USD settled within the timeframe'),
    uniqueBuyers: z.number().int().describe('distinct payer wallets within the timeframe'),
    lastSettlementAt: Timestamp.nullable(),
  }),
);
const SellerProfileSchema: z.ZodType<SellerProfile> = named(
  'SellerProfile',
  z.object({
    payTo: z.string(),
    displayName: z.string(),
    description: z.string(),
    category: z.string(),
    websiteUrl: z.string().nullable().describe('the origin serving the seller’s resources'),
    agentCardUrl: z
      .string()
      .nullable()
      .describe('the descriptor the name and description were read from, when there is one'),
    networks: z.array(z.string()).describe('CAIP-2 networks the seller has been paid on'),
    resources: z.array(z.object({ resourceUrl: z.string(), displayName: z.string(), priceUsd: z.number() })),
    firstSettlementAt: Timestamp.nullable(),
  }),
);
const SellerStatsSchema: z.ZodType<SellerStats> = named(
  'SellerStats',
  z.object({
    payTo: z.string(),
    stats: ResourceStatsSchema.describe('all time, across the seller’s resources'),
    uniqueBuyers: z.number().int().describe('distinct payer wallets, all time'),
    averagePriceUsd: z.number().describe('totalVolumeUsd / totalCalls; 0 without calls'),
    lastSettlementAt: Timestamp.nullable(),
    timeframes: z
      .array(
        z.object({
          timeframe: TimeframeSchema,
          settlements: z.number().int(),
          volumeUsd: z.number(),
          uniqueBuyers: z.number().int(),
        }),
      )
      .describe('one entry per timeframe: 1d, 7d, 30d, 90d'),
    topResources: z
      .array(z.object({ resourceUrl: z.string(), totalCalls: z.number().int(), totalVolumeUsd: z.number() }))
      .describe('up to 10 resources by volume, all time'),
    asOf: Timestamp.describe('when the statistics were computed'),
  }),
);

const SellerParams = z.object({ payTo: SolanaAddress.describe('the seller wallet') });
const openNote =
  'Public and free: read-only listings anyone may browse; the economy is paid for by the calls it lists, not by looking ' +
  'them up. ';

const router = c.router({
  resources: {
    method: 'GET',
    path: '/api/facilitator/marketplace/resources',
    summary: 'All available pay-per-call resources',
    description:
      'Every pay-per-call resource the facilitator knows (from its catalog and settlement records), with its seller wallet, ' +
      'price per call in USD and all-time statistics: `{ ok, resources }`. Design: the resources are the paid routes of ' +
      'the running services, read from their descriptors and OpenAPI documents (a tiered route shows its lowest paid ' +
      'tier); the statistics count the facilitator’s settlements that called the route and paid its payTo, never a ' +
      'wallet paying itself; ordered by total volume, highest first. ' +
      openNote,
    responses: { 200: MarketplaceResourcesSchema, ...standardErrors },
    metadata: { payment: free() } satisfies RouteMeta,
  },
  projects: {
    method: 'GET',
    path: '/api/ecosystem/projects',
    query: z
      .object({
        timeframe: TimeframeSchema.default('30d').describe('window of the statistics: 1d, 7d, 30d or 90d; default 30d'),
        sort: z
          .enum(['volume', 'settlements', 'recent'])
          .default('volume')
          .describe('volume (USD settled), settlements (count) or recent (last settlement); default volume'),
        direction: z.enum(['asc', 'desc']).default('desc').describe('default desc'),
        ...PageQuery,
      })
      .strict(),
    summary: 'All sellers with aggregated stats',
    description:
      'Every seller (project, identified by its payTo wallet) with settlements, volume and distinct buyers within the ' +
      'timeframe, sorted as asked; sellers without settlements in the timeframe are listed with zeros. Design: paged ' +
      '(`limit`, `cursor`). ' +
      openNote,
    responses: { 200: page(EcosystemProjectSchema), ...standardErrors },
    metadata: {
      payment: free(),
      example: { query: { timeframe: '7d', sort: 'volume', direction: 'desc' } },
    } satisfies RouteMeta,
  },
  profile: {
    method: 'GET',
    path: '/api/facilitator/sellers/:payTo/profile',
    pathParams: SellerParams,
    summary: 'Seller public profile',
    description:
      'Design: the seller’s name, description and category (read from the descriptor at its resources’ origin when it ' +
      'publishes one, else derived from its resources), networks and listed resources. Errors: 404 seller_not_found (no ' +
      'resource or settlement pays to this wallet). ' +
      openNote,
    responses: { 200: SellerProfileSchema, 404: ErrorEnvelope, ...standardErrors },
    metadata: {
      payment: free(),
      example: { params: { payTo: '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM' } },
    } satisfies RouteMeta,
  },
  stats: {
    method: 'GET',
    path: '/api/facilitator/sellers/:payTo/stats',
    pathParams: SellerParams,
    summary: 'Seller aggregated stats',
    description:
      'Design: all-time calls and volume, distinct buyers, average price, last settlement, figures for each timeframe ' +
      '(1d, 7d, 30d, 90d) and the top resources by volume. Errors: 404 seller_not_found. ' +
      openNote,
    responses: { 200: SellerStatsSchema, 404: ErrorEnvelope, ...standardErrors },
    metadata: {
      payment: free(),
      example: { params: { payTo: '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM' } },
    } satisfies RouteMeta,
  },
});

export const marketplace = defineService({
  id: 'marketplace',
  title: 'Public Marketplace API',
  description:
    'Read-only, public listings of the economy’s pay-per-call resources and of its sellers with aggregated statistics, ' +
    'computed from the facilitator’s settlement records.',
  router,
});
