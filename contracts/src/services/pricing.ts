import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { defineService } from '../core/service';
import { named } from '../core/names';
import { ErrorEnvelope, paymentErrors, standardErrors } from '../core/errors';
import { adaptive, free, type RouteMeta } from '../core/payment';
import { UsdAmount } from '../core/money';
import { SolanaAddress, SolanaSignature, Timestamp } from '../core/chain';
import { DataSource } from './shared';

const c = initContract();

// Interfaces first, then schemas annotated with them: keeps the emitted declarations small.

/** The four paid endpoints whose price moves with demand; a price check names one of them. */
export type PricedEndpoint = 'token-intel' | 'wallet-scan' | 'trending' | 'whale-watch';
/** Demand zone of an endpoint, read from its surge multiplier (low < 0.8 ≤ normal < 1.5 ≤ high < 3 ≤ surge). */
export type DemandZone = 'low' | 'normal' | 'high' | 'surge';
export type AnalyticsWindow = '1h' | '24h' | '7d';
export type TrendWindow = '1h' | '6h' | '24h';

export interface DemandReading {
  /** Paid calls of the endpoint in the last `windowSeconds`. */
  callsInWindow: number;
  windowSeconds: number;
  callsPerMinute: number;
  /** The call rate at which the multiplier is 1 (the endpoint's base price applies). */
  baselineCallsPerMinute: number;
  /** callsPerMinute / baselineCallsPerMinute, before clamping to the surge range. */
  loadRatio: number;
}
export interface EndpointPrice {
  endpoint: PricedEndpoint;
  method: 'POST';
  path: string;
  /** Price at multiplier 1; the spec's range is basePriceUsd × 0.5 to basePriceUsd × 5. */
  basePriceUsd: string;
  minPriceUsd: string;
  maxPriceUsd: string;
  /** basePriceUsd × surgeMultiplier, rounded half-up to 6 decimals: what a 402 quote asks right now. */
  currentPriceUsd: string;
  /** Decimal string in [0.5, 5] with at most 2 decimals. */
  surgeMultiplier: string;
  demandZone: DemandZone;
  demand: DemandReading;
  updatedAt: string;
}
export interface DemandZoneRule {
  zone: DemandZone;
  /** Lowest multiplier of the zone (inclusive). */
  fromMultiplier: string;
  /** Multiplier where the next zone starts (exclusive); null for surge, which runs to 5. */
  toMultiplier: string | null;
  meaning: string;
}
export interface MarketplaceOverview {
  endpoints: EndpointPrice[];
  surgeRange: { min: string; max: string };
  demandZones: DemandZoneRule[];
  updatedAt: string;
}
/** What this call was charged: the price of the 402 quote the payment answered. */
export interface AppliedPrice {
  priceUsd: string;
  surgeMultiplier: string;
  demandZone: DemandZone;
}
export interface PricePoint {
  /** Start of the bucket. */
  at: string;
  /** Average price charged in the bucket (the quoted price when nothing was sold). */
  priceUsd: string;
  surgeMultiplier: string;
  demandZone: DemandZone;
  calls: number;
  revenueUsd: string;
}
export interface RevenueStats {
  calls: number;
  revenueUsd: string;
  averagePriceUsd: string;
  lowestPriceUsd: string;
  highestPriceUsd: string;
}
export interface DemandTrend {
  direction: 'rising' | 'falling' | 'stable';
  /** Call rate of the last quarter of the window against the whole window's, in percent. */
  changePercent: number;
  callsPerMinuteNow: number;
  callsPerMinuteAverage: number;
  /** Share of the window's buckets spent in each zone, 0 to 1 (they sum to 1). */
  zoneShare: Record<DemandZone, number>;
}
export interface EndpointAnalytics {
  endpoint: PricedEndpoint;
  priceHistory: PricePoint[];
  revenue: RevenueStats;
  demandTrend: DemandTrend;
}
export interface MarketplaceAnalytics {
  window: AnalyticsWindow;
  from: string;
  to: string;
  bucketSeconds: number;
  endpoints: EndpointAnalytics[];
  totals: { calls: number; revenueUsd: string };
}
export interface TokenPairRef {
  dex: string;
  pairAddress: string;
  quoteSymbol: string;
  liquidityUsd: string;
  createdAt: string | null;
}
export interface RiskWarning {
  name: string;
  level: 'danger' | 'warn' | 'info';
  description: string;
}
export interface TokenIntel {
  mint: string;
  name: string | null;
  symbol: string | null;
  decimals: number;
  /** Circulating supply in whole tokens (UI amount). */
  supply: string;
  /** null when the deployment reads no market provider (`source.note` says so). */
  market: {
    priceUsd: string | null;
    priceChange24hPercent: number | null;
    volume24hUsd: string;
    liquidityUsd: string;
    marketCapUsd: string | null;
    fdvUsd: string | null;
    pairCount: number;
    primaryPair: TokenPairRef | null;
  } | null;
  holders: { total: number | null; top10Percent: number; largestHolderPercent: number };
  authorities: { mintAuthority: string | null; freezeAuthority: string | null; metadataMutable: boolean | null };
  risk: { score: number; level: 'low' | 'medium' | 'high'; warnings: RiskWarning[] };
  appliedPrice: AppliedPrice;
  source: DataSource;
}
export interface TokenBalance {
  mint: string;
  symbol: string | null;
  /** Whole tokens (UI amount). */
  amount: string;
  decimals: number;
  valueUsd: string | null;
}
export type WalletKind = 'wallet' | 'exchange' | 'protocol' | 'program' | 'unknown';
export interface WalletScan {
  address: string;
  balances: {
    lamports: string;
    sol: string;
    solValueUsd: string | null;
    tokens: TokenBalance[];
    tokenAccountCount: number;
    totalValueUsd: string | null;
  };
  identity: { kind: WalletKind; label: string | null; domains: string[] | null };
  fundingSource: {
    address: string;
    kind: WalletKind;
    label: string | null;
    signature: string;
    lamports: string;
    fundedAt: string;
  } | null;
  activity: {
    firstSeenAt: string | null;
    lastActiveAt: string | null;
    transactionCount: number;
    transactionCountIsLowerBound: boolean;
  };
  appliedPrice: AppliedPrice;
  source: DataSource;
}
export interface TrendingToken {
  rank: number;
  mint: string;
  symbol: string | null;
  name: string | null;
  priceUsd: string | null;
  priceChangePercent: number | null;
  volumeUsd: string | null;
  liquidityUsd: string | null;
  marketCapUsd: string | null;
  txns: { buys: number; sells: number } | null;
  /** Transactions that moved the token in the window, counted on the chain (the offline ranking); null in live mode. */
  transfers: number | null;
  listedBy: string[];
  trendScore: number;
}
export interface TrendingTokens {
  window: TrendWindow;
  tokens: TrendingToken[];
  appliedPrice: AppliedPrice;
  source: DataSource;
}
export interface Whale {
  rank: number;
  owner: string;
  amount: string;
  percentOfSupply: number;
  valueUsd: string | null;
  label: string | null;
  /** Net change of the holding over 24 hours in whole tokens (signed); null when unknown. */
  change24h: string | null;
}
export interface WhaleMove {
  signature: string;
  owner: string;
  direction: 'buy' | 'sell' | 'transfer-in' | 'transfer-out';
  amount: string;
  valueUsd: string | null;
  at: string;
}
export interface WhaleWatch {
  mint: string;
  symbol: string | null;
  supply: string;
  holderCount: number | null;
  thresholdPercent: number;
  concentration: {
    top1Percent: number;
    top10Percent: number;
    top20Percent: number;
    gini: number;
    hhi: number;
    level: 'low' | 'moderate' | 'high';
  };
  whales: Whale[];
  recentMoves: WhaleMove[];
  appliedPrice: AppliedPrice;
  source: DataSource;
}

// Spec ranges (Endpoints table) and the surge limit (0.5x to 5x): base = min × 2, so base × 0.5 = min and base × 5 =
// max.
const ENDPOINTS = ['token-intel', 'wallet-scan', 'trending', 'whale-watch'] as const;
const PricedEndpointSchema = named('PricedEndpoint', z.enum(ENDPOINTS));
const DemandZoneSchema = named('DemandZone', z.enum(['low', 'normal', 'high', 'surge']));
const TrendWindowSchema = named('TrendWindow', z.enum(['1h', '6h', '24h']));

/** A surge multiplier: a decimal string in [0.5, 5] with at most 2 decimals. */
const SurgeMultiplier = z
  .string()
  .regex(/^(?:0\.[5-9]\d?|[1-4](?:\.\d{1,2})?|5(?:\.0{1,2})?)$/, 'must be a decimal string from "0.5" to "5"')
  .describe('surge multiplier, a decimal string from "0.5" to "5"');
/** A USD market value (price, volume, liquidity): a decimal string of any precision; token prices can be tiny. */
const UsdValue = z
  .string()
  .regex(/^(0|[1-9]\d*)(\.\d+)?$/, 'must be a non-negative decimal string')
  .describe('USD as a decimal string (any precision)');
const TokenAmount = z
  .string()
  .regex(/^(0|[1-9]\d*)(\.\d+)?$/)
  .describe('whole tokens (UI amount) as a decimal string');
const SignedTokenAmount = z
  .string()
  .regex(/^-?(0|[1-9]\d*)(\.\d+)?$/)
  .describe('signed whole tokens as a decimal string');
const Lamports = z
  .string()
  .regex(/^(0|[1-9]\d*)$/)
  .describe('lamports as an integer string (1 SOL = 1,000,000,000)');
const Percent = z.number().min(0).max(100);
const Unit = z.number().min(0).max(1);
const Count = z.number().int().min(0);

const DemandReadingSchema: z.ZodType<DemandReading> = named(
  'DemandReading',
  z.object({
    callsInWindow: Count,
    windowSeconds: z.number().int().min(1),
    callsPerMinute: z.number().min(0),
    baselineCallsPerMinute: z.number().min(0),
    loadRatio: z
      .number()
      .min(0)
      .describe('callsPerMinute / baselineCallsPerMinute; the multiplier is this clamped to [0.5, 5]'),
  }),
);
const EndpointPriceSchema: z.ZodType<EndpointPrice> = named(
  'EndpointPrice',
  z.object({
    endpoint: PricedEndpointSchema,
    method: z.literal('POST'),
    path: z.string().describe('e.g. /api/token-intel'),
    basePriceUsd: UsdAmount.describe('price at multiplier 1'),
    minPriceUsd: UsdAmount.describe('price at multiplier 0.5'),
    maxPriceUsd: UsdAmount.describe('price at multiplier 5'),
    currentPriceUsd: UsdAmount.describe('basePriceUsd × surgeMultiplier, rounded half-up to 6 decimals'),
    surgeMultiplier: SurgeMultiplier,
    demandZone: DemandZoneSchema,
    demand: DemandReadingSchema,
    updatedAt: Timestamp,
  }),
);
const AppliedPriceSchema: z.ZodType<AppliedPrice> = named(
  'AppliedPrice',
  z
    .object({ priceUsd: UsdAmount, surgeMultiplier: SurgeMultiplier, demandZone: DemandZoneSchema })
    .describe('the price this call was charged (the 402 quote the payment answered)'),
);
const MarketplaceOverviewSchema: z.ZodType<MarketplaceOverview> = named(
  'MarketplaceOverview',
  z.object({
    endpoints: z.array(EndpointPriceSchema),
    surgeRange: z.object({ min: z.string(), max: z.string() }).describe('always { min: "0.5", max: "5" }'),
    demandZones: z.array(
      z.object({
        zone: DemandZoneSchema,
        fromMultiplier: z.string(),
        toMultiplier: z.string().nullable(),
        meaning: z.string(),
      }),
    ),
    updatedAt: Timestamp,
  }),
);
const PricePointSchema: z.ZodType<PricePoint> = named(
  'PricePoint',
  z.object({
    at: Timestamp.describe('start of the bucket'),
    priceUsd: UsdAmount.describe('average price charged in the bucket; the quoted price when nothing sold'),
    surgeMultiplier: SurgeMultiplier,
    demandZone: DemandZoneSchema,
    calls: Count,
    revenueUsd: UsdAmount,
  }),
);
const MarketplaceAnalyticsSchema: z.ZodType<MarketplaceAnalytics> = named(
  'MarketplaceAnalytics',
  z.object({
    window: z.enum(['1h', '24h', '7d']),
    from: Timestamp,
    to: Timestamp,
    bucketSeconds: z.number().int().min(1).describe('300 for 1h, 3600 for 24h, 21600 for 7d'),
    endpoints: z.array(
      z.object({
        endpoint: PricedEndpointSchema,
        priceHistory: z.array(PricePointSchema).describe('one point per bucket, oldest first'),
        revenue: z.object({
          calls: Count,
          revenueUsd: UsdAmount,
          averagePriceUsd: UsdAmount,
          lowestPriceUsd: UsdAmount,
          highestPriceUsd: UsdAmount,
        }),
        demandTrend: z.object({
          direction: z.enum(['rising', 'falling', 'stable']).describe('rising above +10 %, falling below −10 %'),
          changePercent: z
            .number()
            .describe('call rate of the last quarter of the window vs the whole window, percent'),
          callsPerMinuteNow: z.number().min(0),
          callsPerMinuteAverage: z.number().min(0),
          zoneShare: z
            .object({ low: Unit, normal: Unit, high: Unit, surge: Unit })
            .describe('share of buckets per zone'),
        }),
      }),
    ),
    totals: z.object({ calls: Count, revenueUsd: UsdAmount }),
  }),
);
const TokenIntelSchema: z.ZodType<TokenIntel> = named(
  'TokenIntel',
  z.object({
    mint: SolanaAddress,
    name: z.string().nullable().describe('from the token metadata, else the market pair; null when neither names it'),
    symbol: z.string().nullable(),
    decimals: z.number().int().min(0).max(18),
    supply: TokenAmount,
    market: z
      .object({
        priceUsd: UsdValue.nullable(),
        priceChange24hPercent: z.number().nullable(),
        volume24hUsd: UsdValue,
        liquidityUsd: UsdValue.describe('summed over every pair of the token'),
        marketCapUsd: UsdValue.nullable(),
        fdvUsd: UsdValue.nullable(),
        pairCount: Count,
        primaryPair: z
          .object({
            dex: z.string(),
            pairAddress: SolanaAddress,
            quoteSymbol: z.string(),
            liquidityUsd: UsdValue,
            createdAt: Timestamp.nullable(),
          })
          .nullable()
          .describe('the pair with the most liquidity: the reference price'),
      })
      .nullable()
      .describe('null when the deployment reads no market provider (MARKET_DATA=live reads DexScreener)'),
    holders: z.object({
      total: Count.nullable(),
      top10Percent: Percent.describe('share of supply held by the 10 largest owners (AMM vaults and burn excluded)'),
      largestHolderPercent: Percent,
    }),
    authorities: z.object({
      mintAuthority: SolanaAddress.nullable().describe('null: renounced'),
      freezeAuthority: SolanaAddress.nullable().describe('null: renounced'),
      metadataMutable: z.boolean().nullable(),
    }),
    risk: z.object({
      score: Percent.describe('0 (safe) to 100 (riskiest)'),
      level: z.enum(['low', 'medium', 'high']).describe('low below 30, medium 30 to 60, high above 60'),
      warnings: z.array(
        z.object({ name: z.string(), level: z.enum(['danger', 'warn', 'info']), description: z.string() }),
      ),
    }),
    appliedPrice: AppliedPriceSchema,
    source: DataSource,
  }),
);
const WalletKindSchema = named('WalletKind', z.enum(['wallet', 'exchange', 'protocol', 'program', 'unknown']));
const WalletScanSchema: z.ZodType<WalletScan> = named(
  'WalletScan',
  z.object({
    address: SolanaAddress,
    balances: z.object({
      lamports: Lamports,
      sol: TokenAmount,
      solValueUsd: UsdValue.nullable().describe('null without a live SOL price'),
      tokens: z
        .array(
          z.object({
            mint: SolanaAddress,
            symbol: z.string().nullable(),
            amount: TokenAmount,
            decimals: z.number().int().min(0).max(18),
            valueUsd: UsdValue.nullable().describe('null when the token has no price'),
          }),
        )
        .describe('the 100 largest holdings by USD value, largest first; zero balances omitted'),
      tokenAccountCount: Count,
      totalValueUsd: UsdValue.nullable().describe('SOL and priced tokens; null without a live SOL price'),
    }),
    identity: z.object({
      kind: WalletKindSchema,
      label: z.string().nullable().describe('a known name, e.g. an exchange hot wallet'),
      domains: z.array(z.string()).nullable().describe('.sol names pointing at the address; null when not resolved'),
    }),
    fundingSource: z
      .object({
        address: SolanaAddress,
        kind: WalletKindSchema,
        label: z.string().nullable(),
        signature: SolanaSignature,
        lamports: Lamports,
        fundedAt: Timestamp,
      })
      .nullable()
      .describe('the first SOL transfer into the wallet; null when not found'),
    activity: z.object({
      firstSeenAt: Timestamp.nullable(),
      lastActiveAt: Timestamp.nullable(),
      transactionCount: Count,
      transactionCountIsLowerBound: z.boolean().describe('true when the history scan stopped at its page limit'),
    }),
    appliedPrice: AppliedPriceSchema,
    source: DataSource,
  }),
);
const TrendingTokensSchema: z.ZodType<TrendingTokens> = named(
  'TrendingTokens',
  z.object({
    window: TrendWindowSchema,
    tokens: z.array(
      z.object({
        rank: z.number().int().min(1),
        mint: SolanaAddress,
        symbol: z.string().nullable(),
        name: z.string().nullable(),
        priceUsd: UsdValue.nullable().describe('null without a market provider'),
        priceChangePercent: z.number().nullable().describe('over the window'),
        volumeUsd: UsdValue.nullable().describe('over the window'),
        liquidityUsd: UsdValue.nullable(),
        marketCapUsd: UsdValue.nullable(),
        txns: z.object({ buys: Count, sells: Count }).nullable().describe('over the window'),
        transfers: Count.nullable().describe(
          'transactions moving the token in the window, counted on the chain (offline ranking)',
        ),
        listedBy: z.array(z.string()).describe('the providers whose trending list holds the token'),
        trendScore: Percent.describe('reciprocal-rank fusion of the providers’ ranks, scaled to 0..100'),
      }),
    ),
    appliedPrice: AppliedPriceSchema,
    source: DataSource,
  }),
);
const WhaleWatchSchema: z.ZodType<WhaleWatch> = named(
  'WhaleWatch',
  z.object({
    mint: SolanaAddress,
    symbol: z.string().nullable().describe('null when neither the metadata nor a market pair names it'),
    supply: TokenAmount,
    holderCount: Count.nullable(),
    thresholdPercent: z.number().describe('the minPercent asked for'),
    concentration: z.object({
      top1Percent: Percent,
      top10Percent: Percent,
      top20Percent: Percent,
      gini: Unit.describe('Gini coefficient of the largest holdings (up to 20 owners), 0 equal to 1 concentrated'),
      hhi: Unit.describe('Herfindahl-Hirschman index Σ s² of the holders’ supply shares, 0 to 1'),
      level: z
        .enum(['low', 'moderate', 'high'])
        .describe('by HHI: low below 0.15, moderate 0.15 to 0.25, high above 0.25'),
    }),
    whales: z
      .array(
        z.object({
          rank: z.number().int().min(1),
          owner: SolanaAddress.describe('the owning wallet (token accounts are mapped to owners)'),
          amount: TokenAmount,
          percentOfSupply: Percent,
          valueUsd: UsdValue.nullable(),
          label: z.string().nullable(),
          change24h: SignedTokenAmount.nullable(),
        }),
      )
      .describe('owners holding at least minPercent of supply, largest first (AMM vaults and burn addresses excluded)'),
    recentMoves: z
      .array(
        z.object({
          signature: SolanaSignature,
          owner: SolanaAddress,
          direction: z.enum(['buy', 'sell', 'transfer-in', 'transfer-out']),
          amount: TokenAmount,
          valueUsd: UsdValue.nullable(),
          at: Timestamp,
        }),
      )
      .describe('the whales’ moves in the last 24 hours, newest first, at most 50'),
    appliedPrice: AppliedPriceSchema,
    source: DataSource,
  }),
);

const MintBody = z.object({ mint: SolanaAddress.describe('the token’s mint address') }).strict();

const dataErrors = { 404: ErrorEnvelope, 502: ErrorEnvelope, ...standardErrors, ...paymentErrors } as const;

const router = c.router({
  overview: {
    method: 'GET',
    path: '/api/marketplace',
    summary: 'Marketplace overview: prices, demand zones and surge multipliers of every endpoint',
    description:
      'The four paid endpoints with their current price, base price, price range, surge multiplier and demand zone, and the ' +
      'zone rules. Design: multiplier = clamp(loadRatio, 0.5, 5) rounded to 2 decimals, where loadRatio is the endpoint’s paid ' +
      'calls per minute over the last 5 minutes divided by its baseline rate; price = base × multiplier, rounded half-up to ' +
      '6 decimals; base = the spec’s minimum × 2. Zones: low below 0.8 (discount), normal 0.8 to below 1.5, high 1.5 to ' +
      'below 3, surge 3 and above.',
    responses: { 200: MarketplaceOverviewSchema, ...standardErrors },
    metadata: { payment: free(), example: {} } satisfies RouteMeta,
  },
  priceCheck: {
    method: 'GET',
    path: '/api/price-check/:endpoint',
    pathParams: z.object({
      endpoint: PricedEndpointSchema.describe('one of token-intel, wallet-scan, trending, whale-watch'),
    }),
    summary: 'Current price and demand zone of one endpoint',
    description:
      'The current price, demand zone and surge multiplier (a decimal string from "0.5" to "5") of one paid endpoint, with the ' +
      'demand reading they come from. The price is what a 402 quote asks at this moment; it can move before you call, but a ' +
      'payment of a price a 402 quoted is accepted until that quote expires (the quote’s maxTimeoutSeconds). An ' +
      'endpoint name outside the four is 400 invalid_request.',
    responses: { 200: EndpointPriceSchema, ...standardErrors },
    metadata: { payment: free(), example: { params: { endpoint: 'token-intel' } } } satisfies RouteMeta,
  },
  analytics: {
    method: 'GET',
    path: '/api/analytics',
    query: z.object({
      window: z
        .enum(['1h', '24h', '7d'])
        .default('24h')
        .describe('1h (5-minute buckets), 24h (hourly) or 7d (6-hour buckets)'),
      endpoint: PricedEndpointSchema.optional().describe('only this endpoint; all four when absent'),
    }),
    summary: 'Price history, revenue stats and demand trends',
    description:
      'Per endpoint over the window: price history in buckets (price, multiplier, zone, calls, revenue), revenue statistics ' +
      'and the demand trend. Design: the trend compares the call rate of the last quarter of the window with the whole ' +
      'window (rising above +10 %, falling below −10 %, else stable).',
    responses: { 200: MarketplaceAnalyticsSchema, ...standardErrors },
    metadata: { payment: free(), example: { query: { window: '24h', endpoint: 'whale-watch' } } } satisfies RouteMeta,
  },
  tokenIntel: {
    method: 'POST',
    path: '/api/token-intel',
    body: MintBody,
    summary: 'Deep token intelligence from third-party providers',
    description:
      'Identity, supply, market (price, volume, liquidity, market cap, primary pair), holder concentration, mint and freeze ' +
      'authorities and a risk score with warnings: mint, authorities, metadata and holders from the Solana RPC, market from ' +
      'DexScreener with MARKET_DATA=live (else `market` is null and `source.note` says why). Design: 404 token_not_found ' +
      'for an address that is not a mint (not charged); 502 upstream_unavailable when a provider fails (not charged). ' +
      'Risk score: the points of each finding, capped at 100. `appliedPrice` is what the call was charged.',
    responses: { 200: TokenIntelSchema, ...dataErrors },
    metadata: {
      payment: adaptive('0.01', '0.10'),
      example: { body: { mint: '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU' } },
    } satisfies RouteMeta,
  },
  walletScan: {
    method: 'POST',
    path: '/api/wallet-scan',
    body: z.object({ address: SolanaAddress.describe('the wallet to scan') }).strict(),
    summary: 'Wallet analysis: balances, identity, funding source',
    description:
      'SOL and token balances with USD values, the wallet’s identity (known label, .sol names, kind) and its funding source ' +
      '(the first SOL transfer into it), with first/last activity. Design: an address never seen on chain is a 200 with empty ' +
      'balances and null fundingSource; 502 upstream_unavailable when the chain cannot be read (not charged).',
    responses: { 200: WalletScanSchema, 502: ErrorEnvelope, ...standardErrors, ...paymentErrors },
    metadata: {
      payment: adaptive('0.025', '0.25'),
      example: { body: { address: '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM' } },
    } satisfies RouteMeta,
  },
  trending: {
    method: 'POST',
    path: '/api/trending',
    body: z
      .object({
        window: TrendWindowSchema.default('24h').describe('the window prices, volumes and trades are measured over'),
        limit: z.number().int().min(1).max(50).default(20).describe('how many tokens, 1 to 50'),
      })
      .strict(),
    summary: 'Live trending tokens from two third-party providers',
    description:
      'Tokens trending now on two providers (live mode, MARKET_DATA=live: DexScreener top boosts and latest token profiles, ' +
      'keyless), merged and ranked by trendScore, with market figures of each token’s most liquid pair. Offline: the tokens ' +
      'moved by the most transactions on the chain in the window (source.mode chain, market fields null). Design: trendScore ' +
      'is reciprocal-rank fusion (Σ 1 / (60 + rank) over the lists holding the token) scaled so the top token is 100; ' +
      '`listedBy` names the lists. 502 upstream_unavailable when both providers fail (not charged).',
    responses: { 200: TrendingTokensSchema, 502: ErrorEnvelope, ...standardErrors, ...paymentErrors },
    metadata: {
      payment: adaptive('0.005', '0.05'),
      example: { body: { window: '6h', limit: 10 } },
    } satisfies RouteMeta,
  },
  whaleWatch: {
    method: 'POST',
    path: '/api/whale-watch',
    body: MintBody.extend({
      minPercent: z
        .number()
        .min(0.01)
        .max(100)
        .default(1)
        .describe('percent of supply an owner must hold to count as a whale, 0.01 to 100'),
      limit: z.number().int().min(1).max(100).default(20).describe('at most this many whales, 1 to 100'),
    }).strict(),
    summary: 'Whale wallet tracking and holder concentration analysis',
    description:
      'The largest owners of a token (token accounts mapped to wallets, AMM vaults and burn addresses excluded), their 24-hour ' +
      'changes and recent moves, and holder concentration: top-1/10/20 shares, Gini coefficient G = 2·Σ i·x(i) / (n·Σx) − ' +
      '(n+1)/n over the holdings sorted ascending, and HHI = Σ s². Design: 404 token_not_found for an unknown mint (not ' +
      'charged).',
    responses: { 200: WhaleWatchSchema, ...dataErrors },
    metadata: {
      payment: adaptive('0.04', '0.40'),
      example: { body: { mint: '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU', minPercent: 0.5, limit: 10 } },
    } satisfies RouteMeta,
  },
});

export const pricing = defineService({
  id: 'pricing',
  title: 'Adaptive-Pricing Marketplace',
  description:
    'Blockchain data (token intelligence, wallet scans, trending tokens, whale tracking) priced by demand: high load raises ' +
    'prices, low demand gives discounts, through a surge multiplier between 0.5x and 5x. Free endpoints show the marketplace, ' +
    'the price of one endpoint and analytics.',
  router,
  dataModes: {
    chain:
      "the deployment's Solana RPC: the local ledger, or a cluster with SOLANA_RPC_URL; market fields null, source.note says why",
    live: 'the chain plus DexScreener, with MARKET_DATA=live',
  },
});
