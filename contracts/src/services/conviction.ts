import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { defineService } from '../core/service';
import { named } from '../core/names';
import { ErrorEnvelope, paymentErrors, standardErrors } from '../core/errors';
import { fixed, free, type RouteMeta } from '../core/payment';
import { UsdAmount } from '../core/money';
import { isBase58OfLength, Timestamp } from '../core/chain';
import { DataSource, Generator, DataServiceHealth, ServiceHealth } from './shared';

const c = initContract();

// Interfaces first, then schemas annotated with them: keeps the emitted declarations small.

export type ConvictionDimensionId = 'liquidity' | 'bidConcentration' | 'volumeAsymmetry' | 'correlation' | 'firmness';
/** thin: composite below 50 (fragile, easy to move); firm: 50 and above (deep, high conviction). */
export type ConvictionReading = 'thin' | 'firm';
/** Distance of the composite from 50: marginal below 10, clear 10 to 25, strong above 25. */
export type ReadingStrength = 'marginal' | 'clear' | 'strong';

export interface ConvictionToken {
  symbol: string;
  name: string | null;
  /** The Solana mint when the token lives on Solana; null for assets known only by their ticker. */
  mint: string | null;
}
export interface LiquidityDimension {
  score: number;
  weight: number;
  bidDepthUsd: string;
  askDepthUsd: string;
  spreadBps: number;
  volume24hUsd: string;
  depthToVolumeRatio: number;
  venues: number;
}
export interface BidConcentrationDimension {
  score: number;
  weight: number;
  gini: number;
  levels: number;
  largestLevelShare: number;
}
export interface VolumeAsymmetryDimension {
  score: number;
  weight: number;
  imbalance: number;
  buyVolumeUsd: string;
  sellVolumeUsd: string;
  windowHours: number;
}
export interface CorrelationDimension {
  score: number;
  weight: number;
  withNative: number | null;
  withBtc: number | null;
  withEth: number | null;
  interval: '1h';
  returnsCount: number;
}
export interface FirmnessDimension {
  score: number;
  weight: number;
  notionalUsd: string;
  priceImpactBuyPercent: number;
  priceImpactSellPercent: number;
  bookImbalance: number;
  volatilityPercent: number;
}
export interface ConvictionDimensions {
  liquidity: LiquidityDimension;
  bidConcentration: BidConcentrationDimension;
  volumeAsymmetry: VolumeAsymmetryDimension;
  correlation: CorrelationDimension;
  firmness: FirmnessDimension;
}
export interface ConvictionCoverage {
  sourcesQueried: number;
  sourcesAnswered: number;
  venues: string[];
  bookLevels: number;
  tradesSampled: number;
  returnsCount: number;
}
export interface ConvictionResult {
  token: ConvictionToken;
  compositeScore: number;
  reading: ConvictionReading;
  readingStrength: ReadingStrength;
  confidenceScore: number;
  dimensions: ConvictionDimensions;
  summary: string;
  generator: Generator;
  coverage: ConvictionCoverage;
  analyzedAt: string;
  source: DataSource;
}
export interface QuickDimensionScores {
  liquidity: number;
  bidConcentration: number;
  volumeAsymmetry: number;
  firmness: number;
}
export interface QuickScore {
  token: ConvictionToken;
  compositeScore: number;
  reading: ConvictionReading;
  readingStrength: ReadingStrength;
  confidenceScore: number;
  dimensionScores: QuickDimensionScores;
  analyzedAt: string;
  source: DataSource;
}
export interface ConvictionDimensionScores extends QuickDimensionScores {
  correlation: number;
}
export interface ConvictionRankedToken {
  rank: number;
  token: ConvictionToken;
  compositeScore: number;
  reading: ConvictionReading;
  readingStrength: ReadingStrength;
  confidenceScore: number;
  dimensionScores: ConvictionDimensionScores;
}
export interface ConvictionComparison {
  ranking: ConvictionRankedToken[];
  firmest: ConvictionToken;
  thinnest: ConvictionToken;
  scoreSpread: number;
  analyzedAt: string;
  source: DataSource;
}
export interface ConvictionDimensionInfo {
  id: ConvictionDimensionId;
  name: string;
  description: string;
  formula: string;
  weight: number;
  /** Weight in the quick score (correlation left out, the other four renormalised); null for correlation. */
  quickScoreWeight: number | null;
  higherMeans: string;
}
export interface ConvictionInfo {
  service: string;
  version: string;
  description: string;
  methodology: { composite: string; reading: string; confidence: string; quickScore: string; comparison: string };
  dimensions: ConvictionDimensionInfo[];
  readingThresholds: { firmAtOrAbove: number; marginalWithin: number; strongBeyond: number };
  limits: { compareMinTokens: number; compareMaxTokens: number };
  dataSources: string[];
  endpoints: { method: 'GET' | 'POST'; path: string; priceUsd: string; summary: string }[];
}

/** A token as the caller names it: a Solana mint address or a ticker such as BONK (case-insensitive). */
const TokenRef = z
  .string()
  .trim()
  .refine(
    (s) => /^[A-Za-z0-9]{1,12}$/.test(s) || isBase58OfLength(s, 32),
    'must be a Solana mint address or a ticker of 1 to 12 letters and digits, such as BONK',
  )
  .describe('a Solana mint address or a ticker such as BONK');

const Score = z.number().min(0).max(100);
const Unit = z.number().min(0).max(1);
const Signed = z.number().min(-1).max(1);
const Count = z.number().int().min(0);
const UsdValue = z
  .string()
  .regex(/^(0|[1-9]\d*)(\.\d+)?$/, 'must be a non-negative decimal string')
  .describe('USD as a decimal string');
const ReadingSchema = named('Reading', z.enum(['thin', 'firm']).describe('thin below 50, firm at 50 and above'));
const ReadingStrengthSchema = named(
  'ReadingStrength',
  z
    .enum(['marginal', 'clear', 'strong'])
    .describe('|composite − 50|: marginal below 10, clear 10 to 25, strong above 25'),
);
const DimensionIdSchema = named(
  'DimensionId',
  z.enum(['liquidity', 'bidConcentration', 'volumeAsymmetry', 'correlation', 'firmness']),
);

const TokenIdentitySchema: z.ZodType<ConvictionToken> = named(
  'ConvictionToken',
  z.object({
    symbol: z.string(),
    name: z.string().nullable(),
    mint: z.string().nullable().describe('the Solana mint; null for assets known only by their ticker'),
  }),
);
const weight = Unit.describe('weight of the dimension in the composite');
const ConvictionDimensionsSchema: z.ZodType<ConvictionDimensions> = named(
  'ConvictionDimensions',
  z.object({
    liquidity: z.object({
      score: Score,
      weight,
      bidDepthUsd: UsdValue.describe('bids within 2 % below mid, Σ price × qty'),
      askDepthUsd: UsdValue.describe('asks within 2 % above mid, Σ price × qty'),
      spreadBps: z.number().min(0).describe('(ask − bid) / mid × 10⁴'),
      volume24hUsd: UsdValue,
      depthToVolumeRatio: z.number().min(0).describe('(bid + ask depth) / 24-hour volume'),
      venues: Count.describe('order books aggregated'),
    }),
    bidConcentration: z.object({
      score: Score.describe('100 × (1 − gini)'),
      weight,
      gini: Unit.describe('Gini coefficient of bid level notionals within 2 % of mid'),
      levels: Count,
      largestLevelShare: Unit.describe('share of bid depth in the largest level'),
    }),
    volumeAsymmetry: z.object({
      score: Score.describe('100 × (1 − |imbalance|)'),
      weight,
      imbalance: Signed.describe('(taker buy − taker sell) / (taker buy + taker sell)'),
      buyVolumeUsd: UsdValue,
      sellVolumeUsd: UsdValue,
      windowHours: z.number().int().min(1),
    }),
    correlation: z.object({
      score: Score.describe('100 × mean of max(0, ρ) over the three majors'),
      weight,
      withNative: Signed.nullable().describe('Pearson ρ of hourly log returns with SOL; null for SOL itself'),
      withBtc: Signed.nullable().describe('Pearson ρ of hourly log returns with BTC; null for BTC itself'),
      withEth: Signed.nullable().describe('Pearson ρ of hourly log returns with ETH; null for ETH itself'),
      interval: z.literal('1h'),
      returnsCount: Count.describe('aligned returns used (168 = 7 days)'),
    }),
    firmness: z.object({
      score: Score,
      weight,
      notionalUsd: UsdValue.describe('the order size walked through the book'),
      priceImpactBuyPercent: z.number().min(0),
      priceImpactSellPercent: z.number().min(0),
      bookImbalance: Signed.describe('(bid depth − ask depth) / (bid depth + ask depth)'),
      volatilityPercent: z.number().min(0).describe('standard deviation of hourly log returns over 24 hours, percent'),
    }),
  }),
);
const CoverageSchema: z.ZodType<ConvictionCoverage> = named(
  'ConvictionCoverage',
  z.object({
    sourcesQueried: Count,
    sourcesAnswered: Count,
    venues: z.array(z.string()),
    bookLevels: Count,
    tradesSampled: Count,
    returnsCount: Count,
  }),
);
const ConvictionResultSchema: z.ZodType<ConvictionResult> = named(
  'ConvictionResult',
  z.object({
    token: TokenIdentitySchema,
    compositeScore: Score.describe('Σ weight × dimension score, one decimal'),
    reading: ReadingSchema,
    readingStrength: ReadingStrengthSchema,
    confidenceScore: Unit.describe(
      'data coverage: sources answered, book levels, trades and returns against their targets',
    ),
    dimensions: ConvictionDimensionsSchema,
    summary: z.string().describe('a plain-language reading of the scores'),
    generator: Generator,
    coverage: CoverageSchema,
    analyzedAt: Timestamp,
    source: DataSource,
  }),
);
const QuickScoreSchema: z.ZodType<QuickScore> = named(
  'QuickScore',
  z.object({
    token: TokenIdentitySchema,
    compositeScore: Score.describe('weighted over the four dimensions other than correlation, weights renormalised'),
    reading: ReadingSchema,
    readingStrength: ReadingStrengthSchema,
    confidenceScore: Unit,
    dimensionScores: z.object({ liquidity: Score, bidConcentration: Score, volumeAsymmetry: Score, firmness: Score }),
    analyzedAt: Timestamp,
    source: DataSource,
  }),
);
const ComparisonSchema: z.ZodType<ConvictionComparison> = named(
  'ConvictionComparison',
  z.object({
    ranking: z
      .array(
        z.object({
          rank: z.number().int().min(1).max(5),
          token: TokenIdentitySchema,
          compositeScore: Score,
          reading: ReadingSchema,
          readingStrength: ReadingStrengthSchema,
          confidenceScore: Unit,
          dimensionScores: z.object({
            liquidity: Score,
            bidConcentration: Score,
            volumeAsymmetry: Score,
            correlation: Score,
            firmness: Score,
          }),
        }),
      )
      .describe('highest composite first; ties by confidence, then request order'),
    firmest: TokenIdentitySchema,
    thinnest: TokenIdentitySchema,
    scoreSpread: Score.describe('highest − lowest composite'),
    analyzedAt: Timestamp,
    source: DataSource,
  }),
);
const ConvictionInfoSchema: z.ZodType<ConvictionInfo> = named(
  'ConvictionInfo',
  z.object({
    service: z.string(),
    version: z.string(),
    description: z.string(),
    methodology: z.object({
      composite: z.string(),
      reading: z.string(),
      confidence: z.string(),
      quickScore: z.string(),
      comparison: z.string(),
    }),
    dimensions: z.array(
      z.object({
        id: DimensionIdSchema,
        name: z.string(),
        description: z.string(),
        formula: z.string(),
        weight: Unit,
        quickScoreWeight: Unit.nullable(),
        higherMeans: z.string(),
      }),
    ),
    readingThresholds: z.object({ firmAtOrAbove: Score, marginalWithin: Score, strongBeyond: Score }),
    limits: z.object({ compareMinTokens: z.number().int(), compareMaxTokens: z.number().int() }),
    dataSources: z.array(z.string()),
    endpoints: z.array(
      z.object({
        method: z.enum(['GET', 'POST']),
        path: z.string(),
        priceUsd: UsdAmount.describe('"0" when free'),
        summary: z.string(),
      }),
    ),
  }),
);

const TokenBody = z.object({ token: TokenRef }).strict();
const analysisErrors = {
  404: ErrorEnvelope,
  422: ErrorEnvelope,
  502: ErrorEnvelope,
  ...standardErrors,
  ...paymentErrors,
} as const;
const ERRORS_TEXT =
  ' Errors: 404 token_not_found (no market found for the token), 422 insufficient_market_data (no order book or too few ' +
  'trades to score), 502 upstream_unavailable; none of them is charged.';

const router = c.router({
  analyze: {
    method: 'POST',
    path: '/api/conviction',
    body: TokenBody,
    summary: 'Full conviction analysis: 5 dimensions, AI summary, confidence score',
    description:
      'Scores whether a token’s market is thin (fragile, easy to manipulate) or firm (deep, high conviction) over 5 dimensions, ' +
      'each 0 to 100: deep liquidity (±2 % depth, spread, depth against volume), bid concentration (Gini coefficient of bid ' +
      'levels), volume asymmetry (taker buy/sell imbalance), cross-market correlation (Pearson ρ of hourly log returns with ' +
      'SOL, BTC and ETH) and market firmness (price impact of a fixed notional, book imbalance, volatility). Design: ' +
      'composite = Σ weight × score (weights 0.25, 0.20, 0.15, 0.15, 0.25); reading thin below 50, firm at 50 and above; ' +
      'confidenceScore from data coverage over six or more sources; `summary` is AI-written (`generator`).' +
      ERRORS_TEXT,
    responses: { 200: ConvictionResultSchema, ...analysisErrors },
    metadata: { payment: fixed('0.05'), example: { body: { token: 'BONK' } } } satisfies RouteMeta,
  },
  quickScore: {
    method: 'POST',
    path: '/api/quick-score',
    body: TokenBody,
    summary: 'Composite score only, without correlation analysis or AI summary; faster',
    description:
      'The composite over liquidity, bid concentration, volume asymmetry and firmness, their weights renormalised to sum to 1 ' +
      '(0.25/0.85, 0.20/0.85, 0.15/0.85, 0.25/0.85): no return series for correlation, no AI summary.' +
      ERRORS_TEXT,
    responses: { 200: QuickScoreSchema, ...analysisErrors },
    metadata: {
      payment: fixed('0.01'),
      example: { body: { token: 'DezXAZ8z7PnrnRJjz3wXBoRgixCa6xjnB7YaB1pPB263' } },
    } satisfies RouteMeta,
  },
  compare: {
    method: 'POST',
    path: '/api/compare',
    body: z
      .object({
        tokens: z
          .array(TokenRef)
          .min(2)
          .max(5)
          .refine(
            (tokens) => new Set(tokens.map((t) => t.toUpperCase())).size === tokens.length,
            'must not repeat a token',
          )
          .describe('2 to 5 distinct tokens'),
      })
      .strict(),
    summary: '2 to 5 tokens side by side, ranked by composite score',
    description:
      'Scores 2 to 5 tokens on all 5 dimensions (no AI summary) and ranks them by composite score, highest first; ties by ' +
      'confidence, then request order. Design: one unknown token fails the whole call with 404 token_not_found naming it in ' +
      '`details.token`; 422 insufficient_market_data likewise; 502 upstream_unavailable; none is charged.',
    responses: { 200: ComparisonSchema, ...analysisErrors },
    metadata: { payment: fixed('0.08'), example: { body: { tokens: ['BONK', 'WIF', 'JUP'] } } } satisfies RouteMeta,
  },
  info: {
    method: 'GET',
    path: '/api/info',
    summary: 'Documentation, scoring methodology and dimension descriptions',
    description:
      'How the index is computed: the composite, the thin-or-firm thresholds, the confidence score, each dimension’s ' +
      'formula and weight, the comparison limits (2 to 5 tokens), the data sources and every endpoint with its price.',
    responses: { 200: ConvictionInfoSchema, ...standardErrors },
    metadata: { payment: free(), example: {} } satisfies RouteMeta,
  },
  health: {
    method: 'GET',
    path: '/health',
    summary: 'Health check',
    description:
      'Liveness for monitors: free, because monitors poll it. Design: status degraded when an upstream provider’s last call ' +
      'failed (the service still answers from the others); 503 database_unavailable when the database does not answer.',
    responses: { 200: DataServiceHealth, 503: ServiceHealth, ...standardErrors },
    metadata: { payment: free(), example: {} } satisfies RouteMeta,
  },
});

export const conviction = defineService({
  id: 'conviction',
  title: 'Market Conviction Index',
  description:
    'Scores whether a token’s market is thin (fragile, easy to manipulate) or firm (deep, high conviction) over 5 dimensions: ' +
    'deep liquidity, bid concentration (Gini coefficient), volume asymmetry, cross-market correlation with SOL, BTC and ETH, ' +
    'and market firmness, from six or more data sources, with an AI summary.',
  router,
  dataModes: {
    simulated: 'the seeded order-book and trade model on neutral venue names, the default',
    live: 'Binance and OKX spot books and klines, CoinGecko as fallback, with MARKET_DATA=live',
  },
});
