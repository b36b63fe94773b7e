import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { defineService } from '../core/service';
import { named } from '../core/names';
import { ErrorEnvelope, paymentErrors, standardErrors } from '../core/errors';
import { fixed, free, type RouteMeta } from '../core/payment';
import { Timestamp } from '../core/chain';
import { DataSource, Generator } from './shared';

const c = initContract();

// Units: funding rates and basis are decimal fractions (0.0001 = 0.01 %); `fundingRate` is per the venue's own
// interval, `fundingRate8h` the same rate normalised to 8 hours (rate / intervalHours × 8) so venues compare;
// `annualizedFundingRate` is the simple APR fraction rate × (24 / intervalHours) × 365. USD values (prices, open
// interest, volume) are decimal strings of any precision; rates, ratios, percents and scores are numbers.

/** Real exchanges answer live (MARKET_DATA=live); the simulated market answers as neutral venues venue-a to venue-i. */
export type FundingExchange =
  | 'binance'
  | 'bybit'
  | 'okx'
  | 'bitget'
  | 'gate'
  | 'mexc'
  | 'hyperliquid'
  | 'dydx'
  | 'deribit'
  | 'venue-a'
  | 'venue-b'
  | 'venue-c'
  | 'venue-d'
  | 'venue-e'
  | 'venue-f'
  | 'venue-g'
  | 'venue-h'
  | 'venue-i';
export type SqueezeDirection = 'short_squeeze' | 'long_squeeze';
export type FundingSortKey = 'absFundingRate' | 'fundingRate' | 'openInterest' | 'volume' | 'squeezeRisk';
export type FundingSentimentLabel = 'strongly_bearish' | 'bearish' | 'neutral' | 'bullish' | 'strongly_bullish';

export interface SqueezeComponents {
  funding: number;
  openInterest: number;
  premium: number;
  longShort: number;
}
export interface FundingContractRow {
  exchange: FundingExchange;
  symbol: string;
  asset: string;
  quote: string;
  markPrice: string;
  indexPrice: string | null;
  fundingRate: number;
  fundingIntervalHours: number;
  fundingRate8h: number;
  annualizedFundingRate: number;
  nextFundingTime: string | null;
  openInterestUsd: string;
  volume24hUsd: string;
  basis: number | null;
  squeezeRiskScore: number;
  squeezeDirection: SqueezeDirection | 'none';
}
export interface FundingScanResult {
  items: FundingContractRow[];
  nextCursor: string | null;
  total: number;
  exchangesScanned: FundingExchange[];
  source: DataSource;
}
export interface SqueezeCandidate {
  rank: number;
  asset: string;
  direction: SqueezeDirection;
  riskScore: number;
  components: SqueezeComponents;
  weightedFundingRate8h: number;
  annualizedFundingRate: number;
  fundingZScore: number | null;
  openInterestUsd: string;
  openInterestChange24hPercent: number | null;
  priceChange24hPercent: number | null;
  premium: number | null;
  longShortRatio: number | null;
  exchanges: FundingExchange[];
  commentary: string;
}
export interface SqueezeScan {
  candidates: SqueezeCandidate[];
  thresholds: { annualizedFundingRate: number; fundingZScore: number };
  assetsScanned: number;
  summary: string;
  generator: Generator;
  source: DataSource;
}
export interface FundingVenueRow extends Omit<FundingContractRow, 'asset'> {
  openInterestSharePercent: number;
}
export interface FundingAssetView {
  asset: string;
  venues: FundingVenueRow[];
  weightedFundingRate8h: number;
  weightedAnnualizedFundingRate: number;
  fundingSpread8h: {
    highest: number;
    highestExchange: FundingExchange;
    lowest: number;
    lowestExchange: FundingExchange;
  };
  totalOpenInterestUsd: string;
  totalVolume24hUsd: string;
  squeezeRisk: {
    score: number;
    direction: SqueezeDirection | 'none';
    components: SqueezeComponents;
    fundingZScore: number | null;
  };
  source: DataSource;
}
export interface FundingExchangeStats {
  exchange: FundingExchange;
  status: 'ok' | 'unavailable';
  perpetualPairs: number;
  openInterestUsd: string;
  volume24hUsd: string;
  weightedFundingRate8h: number | null;
  positiveFundingPairs: number;
  negativeFundingPairs: number;
}
export interface FundingOverview {
  totalOpenInterestUsd: string;
  totalVolume24hUsd: string;
  perpetualPairs: number;
  assets: number;
  exchanges: FundingExchangeStats[];
  sentiment: {
    score: number;
    label: FundingSentimentLabel;
    weightedFundingRate8h: number;
    longsPayingOpenInterestPercent: number;
  };
  source: DataSource;
}

export interface FundingScanRequest {
  exchanges?: FundingExchange[];
  assets?: string[];
  minOpenInterestUsd: string;
  sortBy: FundingSortKey;
  limit: number;
  cursor?: string;
}
export interface FundingScanRequestInput extends Partial<
  Pick<FundingScanRequest, 'minOpenInterestUsd' | 'sortBy' | 'limit'>
> {
  exchanges?: FundingExchange[];
  assets?: string[];
  cursor?: string;
}
export interface SqueezeRequest {
  exchanges?: FundingExchange[];
  assets?: string[];
  direction: SqueezeDirection | 'both';
  minRiskScore: number;
  minOpenInterestUsd: string;
  limit: number;
}
export interface SqueezeRequestInput extends Partial<
  Pick<SqueezeRequest, 'direction' | 'minRiskScore' | 'minOpenInterestUsd' | 'limit'>
> {
  exchanges?: FundingExchange[];
  assets?: string[];
}
export interface FundingAssetRequest {
  exchanges?: FundingExchange[];
}

const REAL_EXCHANGES = ['binance', 'bybit', 'okx', 'bitget', 'gate', 'mexc', 'hyperliquid', 'dydx', 'deribit'] as const;
const SIMULATED_VENUES = [
  'venue-a',
  'venue-b',
  'venue-c',
  'venue-d',
  'venue-e',
  'venue-f',
  'venue-g',
  'venue-h',
  'venue-i',
] as const;
const EXCHANGES = [...REAL_EXCHANGES, ...SIMULATED_VENUES] as const;
const ExchangeSchema = named(
  'FundingExchange',
  z
    .enum(EXCHANGES)
    .describe(
      'a real exchange with live data (MARKET_DATA=live), or a simulated venue (venue-a to venue-i) of the seeded market model',
    ),
);
const Ticker = z
  .string()
  .regex(/^[A-Za-z0-9]{1,20}$/, 'must be an asset ticker such as "BTC" or "1000PEPE"')
  .transform((s) => s.toUpperCase());
const ExchangeFilter = z
  .array(ExchangeSchema)
  .min(1)
  .max(REAL_EXCHANGES.length)
  .describe(
    'only these venues (default: all); real exchanges on a live deployment, venue-a to venue-i on a simulated one (422 venue_not_served otherwise)',
  );
const AssetFilter = z.array(Ticker).min(1).max(50).describe('only these base assets, by ticker (default: all)');
const MinOpenInterest = z
  .string()
  .regex(/^(0|[1-9]\d{0,12})(\.\d+)?$/, 'must be a non-negative USD decimal string such as "10000000"')
  .default('0')
  .describe('leave out contracts whose open interest is below this many USD, a decimal string (default "0")');
const UsdValue = z
  .string()
  .regex(/^(0|[1-9]\d*)(\.\d+)?$/, 'must be a non-negative decimal string')
  .describe('USD as a decimal string (any precision)');
const Usd = (what: string) => UsdValue.describe(`${what}, USD as a decimal string`);
const Rate = (what: string) => z.number().describe(`${what}, decimal fraction (0.0001 = 0.01 %)`);
const Score = z.number().min(0).max(100);
const Direction = z.enum(['short_squeeze', 'long_squeeze']);
const DirectionOrNone = z
  .enum(['short_squeeze', 'long_squeeze', 'none'])
  .describe('short_squeeze for very negative funding, long_squeeze for very positive funding, none otherwise');

const ComponentsSchema: z.ZodType<SqueezeComponents> = named(
  'SqueezeComponents',
  z
    .object({
      funding: z
        .number()
        .min(0)
        .max(40)
        .describe('funding extremeness: 40 × min(1, |fundingZScore| / 3), or from |APR| / 100 % without history'),
      openInterest: z.number().min(0).max(25).describe('open-interest build-up: 25 × min(1, max(0, ΔOI 24 h %) / 20)'),
      premium: z.number().min(0).max(15).describe('perpetual premium: 15 × min(1, |premium| / 0.005)'),
      longShort: z
        .number()
        .min(0)
        .max(20)
        .describe('long/short account-ratio extremeness in the direction of the squeeze'),
    })
    .describe('points per factor; riskScore is their sum'),
);

const rowFields = {
  exchange: ExchangeSchema,
  symbol: z.string().describe('the venue’s own instrument name, e.g. "BTCUSDT", "BTC-USDT-SWAP", "BTC-PERPETUAL"'),
  quote: z.string().describe('settlement currency, e.g. "USDT", "USDC", "USD"'),
  markPrice: Usd('mark price'),
  indexPrice: Usd('index price').nullable(),
  fundingRate: Rate('current (predicted) funding rate per the venue’s interval; positive = longs pay shorts'),
  fundingIntervalHours: z
    .number()
    .min(0.25)
    .max(24)
    .describe('hours between funding payments on this venue, e.g. 8, 4 or 1'),
  fundingRate8h: Rate('fundingRate normalised to 8 hours'),
  annualizedFundingRate: Rate('simple APR: fundingRate × (24 / fundingIntervalHours) × 365'),
  nextFundingTime: Timestamp.nullable(),
  openInterestUsd: Usd('open interest (base-unit OI × mark price)'),
  volume24hUsd: Usd('traded volume over 24 hours'),
  basis: Rate('perpetual basis (mark − index) / index; null when the venue gives no index').nullable(),
  squeezeRiskScore: Score.describe('0 to 100; see POST /api/squeeze for the scoring'),
  squeezeDirection: DirectionOrNone,
};
const ContractRowSchema: z.ZodType<FundingContractRow> = named(
  'FundingContractRow',
  z.object({
    ...rowFields,
    asset: z.string().describe('base asset ticker, e.g. "BTC"'),
  }),
);
const ScanResultSchema: z.ZodType<FundingScanResult> = named(
  'FundingScanResult',
  z.object({
    items: z.array(ContractRowSchema),
    nextCursor: z.string().nullable(),
    total: z.number().int().min(0).describe('contracts matching the filters, over all pages'),
    exchangesScanned: z.array(ExchangeSchema).describe('exchanges that answered; a venue that failed is left out'),
    source: DataSource,
  }),
);
const SqueezeScanSchema: z.ZodType<SqueezeScan> = named(
  'SqueezeScan',
  z.object({
    candidates: z
      .array(
        z.object({
          rank: z.number().int().min(1),
          asset: z.string(),
          direction: Direction.describe(
            'short_squeeze: funding very negative (shorts crowded); long_squeeze: very positive (longs crowded)',
          ),
          riskScore: Score,
          components: ComponentsSchema,
          weightedFundingRate8h: Rate('open-interest-weighted funding across venues, per 8 hours'),
          annualizedFundingRate: Rate('weightedFundingRate8h as simple APR'),
          fundingZScore: z
            .number()
            .nullable()
            .describe('weighted funding against its own 30-day history; null without history'),
          openInterestUsd: Usd('open interest summed over the venues'),
          openInterestChange24hPercent: z.number().nullable(),
          priceChange24hPercent: z.number().nullable(),
          premium: Rate('open-interest-weighted perpetual premium (mark − index) / index').nullable(),
          longShortRatio: z.number().min(0).nullable().describe('long/short account ratio, where a venue publishes it'),
          exchanges: z.array(ExchangeSchema).describe('venues listing the asset'),
          commentary: z
            .string()
            .describe('AI commentary on the setup: why it is crowded and what would trigger the squeeze'),
        }),
      )
      .describe('ranked by riskScore, highest first'),
    thresholds: z
      .object({
        annualizedFundingRate: z
          .number()
          .describe('|APR| at or above which funding counts as very positive / very negative (0.3 = 30 %)'),
        fundingZScore: z.number().describe('|z| at or above which funding counts as extreme (2)'),
      })
      .describe('what "very negative" and "very positive" funding mean in this answer'),
    assetsScanned: z.number().int().min(0),
    summary: z.string().describe('AI overview of the candidates'),
    generator: Generator,
    source: DataSource,
  }),
);
const AssetViewSchema: z.ZodType<FundingAssetView> = named(
  'FundingAssetView',
  z.object({
    asset: z.string(),
    venues: z
      .array(z.object({ ...rowFields, openInterestSharePercent: z.number().min(0).max(100) }))
      .describe('one row per exchange listing the asset, highest fundingRate8h first'),
    weightedFundingRate8h: Rate('open-interest-weighted mean of the venues’ fundingRate8h'),
    weightedAnnualizedFundingRate: Rate('weightedFundingRate8h × 3 × 365'),
    fundingSpread8h: z.object({
      highest: z.number(),
      highestExchange: ExchangeSchema,
      lowest: z.number(),
      lowestExchange: ExchangeSchema,
    }),
    totalOpenInterestUsd: Usd('open interest over the venues'),
    totalVolume24hUsd: Usd('volume over 24 hours over the venues'),
    squeezeRisk: z.object({
      score: Score,
      direction: DirectionOrNone,
      components: ComponentsSchema,
      fundingZScore: z.number().nullable(),
    }),
    source: DataSource,
  }),
);
const OverviewSchema: z.ZodType<FundingOverview> = named(
  'FundingOverview',
  z.object({
    totalOpenInterestUsd: Usd('open interest over every contract'),
    totalVolume24hUsd: Usd('volume over 24 hours over every contract'),
    perpetualPairs: z.number().int().min(0).describe('perpetual contracts tracked across all exchanges'),
    assets: z.number().int().min(0).describe('distinct base assets'),
    exchanges: z.array(
      z.object({
        exchange: ExchangeSchema,
        status: z.enum(['ok', 'unavailable']).describe('unavailable: the venue did not answer; its figures are zero'),
        perpetualPairs: z.number().int().min(0),
        openInterestUsd: UsdValue,
        volume24hUsd: UsdValue,
        weightedFundingRate8h: Rate('open-interest-weighted funding on this venue, per 8 hours').nullable(),
        positiveFundingPairs: z.number().int().min(0),
        negativeFundingPairs: z.number().int().min(0),
      }),
    ),
    sentiment: z
      .object({
        score: z
          .number()
          .min(-100)
          .max(100)
          .describe(
            'clamp(−100, 100, (weightedFundingRate8h − 0.0001) / 0.0004 × 100): the 0.01 % per 8 h baseline reads 0',
          ),
        label: z
          .enum(['strongly_bearish', 'bearish', 'neutral', 'bullish', 'strongly_bullish'])
          .describe('score ≤ −50 strongly_bearish, < −15 bearish, ≤ 15 neutral, < 50 bullish, else strongly_bullish'),
        weightedFundingRate8h: Rate('open-interest-weighted funding over every contract, per 8 hours'),
        longsPayingOpenInterestPercent: z
          .number()
          .min(0)
          .max(100)
          .describe('share of open interest on contracts with positive funding'),
      })
      .describe('aggregate sentiment indicator from funding'),
    source: DataSource,
  }),
);

const ScanBody: z.ZodType<FundingScanRequest, z.ZodTypeDef, FundingScanRequestInput> = named(
  'FundingScanRequest',
  z
    .object({
      exchanges: ExchangeFilter.optional(),
      assets: AssetFilter.optional(),
      minOpenInterestUsd: MinOpenInterest,
      sortBy: z
        .enum(['absFundingRate', 'fundingRate', 'openInterest', 'volume', 'squeezeRisk'])
        .default('absFundingRate')
        .describe('order, largest first (absFundingRate: by |fundingRate8h|)'),
      limit: z.number().int().min(1).max(100).default(20).describe('rows per page, 1 to 100'),
      cursor: z
        .string()
        .min(1)
        .max(200)
        .optional()
        .describe('the nextCursor of the previous page, with the same filters'),
    })
    .strict(),
);
const SqueezeBody: z.ZodType<SqueezeRequest, z.ZodTypeDef, SqueezeRequestInput> = named(
  'SqueezeRequest',
  z
    .object({
      exchanges: ExchangeFilter.optional(),
      assets: AssetFilter.optional(),
      direction: z.enum(['short_squeeze', 'long_squeeze', 'both']).default('both'),
      minRiskScore: Score.default(50).describe('leave out candidates scoring below this (default 50)'),
      minOpenInterestUsd: MinOpenInterest,
      limit: z.number().int().min(1).max(50).default(10).describe('candidates to return, 1 to 50'),
    })
    .strict(),
);
const AssetBody: z.ZodType<FundingAssetRequest> = named(
  'FundingAssetRequest',
  z.object({ exchanges: ExchangeFilter.optional() }).strict(),
);

const upstream =
  '502 upstream_unavailable (with Retry-After) when every exchange fails; a single failing venue is left out.';

const router = c.router({
  scan: {
    method: 'POST',
    path: '/api/scan',
    body: ScanBody,
    summary: 'Scan all perpetual contracts: funding, open interest, basis, squeeze risk',
    description:
      'One row per perpetual contract across 9 exchanges (Binance, Bybit, OKX, Bitget, Gate, MEXC, Hyperliquid, dYdX, ' +
      'Deribit): funding rate (raw, per 8 hours and annualised), open interest, 24-hour volume, basis and squeeze risk ' +
      'score. Filters: `exchanges`, `assets` (tickers) and `minOpenInterestUsd`; paged with `limit` and `cursor` in the ' +
      'body. Design: rates are decimal fractions; a cursor from other filters is 400 invalid_cursor. ' +
      upstream,
    responses: { 200: ScanResultSchema, 422: ErrorEnvelope, 502: ErrorEnvelope, ...standardErrors, ...paymentErrors },
    metadata: {
      payment: fixed('0.01'),
      example: {
        body: {
          exchanges: ['venue-a', 'venue-b', 'venue-c'],
          minOpenInterestUsd: '10000000',
          sortBy: 'absFundingRate',
          limit: 20,
        },
      },
    } satisfies RouteMeta,
  },
  squeeze: {
    method: 'POST',
    path: '/api/squeeze',
    body: SqueezeBody,
    summary: 'Ranked squeeze candidates with risk score and AI commentary',
    description:
      'Assets whose funding is extreme, ranked by squeeze risk score (0 to 100), each with AI commentary. Very negative ' +
      'funding (shorts crowded) signals a short squeeze, very positive funding (longs crowded) a long squeeze. Design: ' +
      'per asset, funding is open-interest-weighted across venues; "very" means |annualised funding| ≥ 30 % or |funding ' +
      'z-score against 30 days| ≥ 2. riskScore = funding (≤ 40) + open-interest build-up over 24 h (≤ 25) + premium ' +
      '(≤ 15) + long/short ratio extremeness (≤ 20); the components are returned for audit. An empty list is a valid ' +
      'answer. ' +
      upstream,
    responses: { 200: SqueezeScanSchema, 422: ErrorEnvelope, 502: ErrorEnvelope, ...standardErrors, ...paymentErrors },
    metadata: {
      payment: fixed('0.03'),
      example: { body: { direction: 'both', minRiskScore: 60, minOpenInterestUsd: '5000000', limit: 10 } },
    } satisfies RouteMeta,
  },
  asset: {
    method: 'POST',
    path: '/api/asset/:symbol',
    pathParams: z.object({ symbol: Ticker.describe('asset ticker such as "BTC"; case-insensitive') }),
    body: AssetBody,
    summary: 'One asset across all exchanges',
    description:
      'Funding-rate comparison of one asset across every exchange listing it: each venue’s row, the open-interest-weighted ' +
      'average funding rate (per 8 hours and annualised), the spread between the highest and lowest venue, aggregate open ' +
      'interest and volume, and the asset’s squeeze risk. The body may restrict `exchanges`; send `{}` for all. ' +
      '404 asset_not_found when no (selected) exchange lists a perpetual on the ticker. ' +
      upstream,
    responses: {
      200: AssetViewSchema,
      404: ErrorEnvelope,
      422: ErrorEnvelope,
      502: ErrorEnvelope,
      ...standardErrors,
      ...paymentErrors,
    },
    metadata: { payment: fixed('0.005'), example: { params: { symbol: 'BTC' }, body: {} } } satisfies RouteMeta,
  },
  overview: {
    method: 'GET',
    path: '/api/overview',
    summary: 'Market overview: exchange-level stats, no payment',
    description:
      'Per exchange: perpetual pairs, open interest, volume, weighted funding and how many pairs pay positive or negative ' +
      'funding; in total: open interest, number of perpetual pairs and assets, and an aggregate sentiment indicator from ' +
      'funding. Design: sentiment score and labels as described on the fields. ' +
      upstream,
    responses: { 200: OverviewSchema, 502: ErrorEnvelope, ...standardErrors },
    metadata: { payment: free(), example: {} } satisfies RouteMeta,
  },
});

export const funding = defineService({
  id: 'funding',
  title: 'Funding-Rate Scanner',
  description:
    'Monitors perpetual futures funding rates on 9 major derivatives exchanges and 600+ assets: every contract’s funding, ' +
    'open interest, volume, basis and squeeze risk; ranked short- and long-squeeze candidates with AI commentary; one ' +
    'asset across all exchanges; and a free market overview.',
  router,
  dataModes: {
    simulated: 'the seeded market model, the default: never observed data',
    live: "the nine venues' public APIs, with MARKET_DATA=live",
  },
});
