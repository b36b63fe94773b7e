import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { defineService } from '../core/service';
import { named } from '../core/names';
import { ErrorEnvelope, paymentErrors, standardErrors } from '../core/errors';
import { fixed, free, type RouteMeta } from '../core/payment';
import { Timestamp } from '../core/chain';
import { DataSource, Generator } from './shared';

const c = initContract();

// Flows are BTC moved onto (inflow) and off (outflow) centralized exchanges per UTC day; netflow = inflow − outflow.
// Positive netflow (coins arriving) reads as potential sell pressure, negative (withdrawals) as accumulation.
// BTC quantities are decimal strings with at most 8 decimals, USD values decimal strings of any precision (netflows
// and changes may be negative); z-scores, percents, confidences and weights are numbers.

export type FlowExchange =
  | 'binance'
  | 'coinbase'
  | 'kraken'
  | 'bitfinex'
  | 'okx'
  | 'bybit'
  | 'bitstamp'
  | 'gemini'
  | 'venue-a'
  | 'venue-b'
  | 'venue-c'
  | 'venue-d'
  | 'venue-e'
  | 'venue-f'
  | 'venue-g'
  | 'venue-h';
export type FlowDirection = 'inflow' | 'outflow' | 'balanced';
export type FlowSignalValue = 'bullish' | 'bearish' | 'neutral';

export interface BtcPriceSummary {
  asset: 'BTC';
  priceUsd: string;
  change24hUsd: string;
  change24hPercent: number;
  high24hUsd: string | null;
  low24hUsd: string | null;
  marketCapUsd: string;
  volume24hUsd: string;
  dominancePercent: number;
  circulatingSupplyBtc: string;
  lastUpdated: string;
  source: DataSource;
}
export interface DailyFlow {
  date: string;
  inflowBtc: string;
  outflowBtc: string;
  netflowBtc: string;
  inflowUsd: string;
  outflowUsd: string;
  netflowUsd: string;
  reserveBtc: string | null;
}
export interface ExchangeFlowBreakdown {
  exchange: FlowExchange;
  inflowBtc: string;
  outflowBtc: string;
  netflowBtc: string;
  shareOfFlowPercent: number;
  direction: FlowDirection;
}
export interface FlowAnalysis {
  startDate: string;
  endDate: string;
  days: DailyFlow[];
  totals: {
    inflowBtc: string;
    outflowBtc: string;
    netflowBtc: string;
    inflowUsd: string;
    outflowUsd: string;
    netflowUsd: string;
  };
  direction: FlowDirection;
  netflowZScore: number | null;
  reserveChangeBtc: string | null;
  reserveChangePercent: number | null;
  sentiment: FlowSignalValue;
  breakdown: ExchangeFlowBreakdown[];
  source: DataSource;
}
export interface ExchangeRanking {
  rank: number;
  exchange: FlowExchange;
  name: string;
  volume24hUsd: string;
  volumeSharePercent: number;
  reserveBtc: string;
  reserveUsd: string;
  reserveChangePercent: number | null;
  inflowBtc: string;
  outflowBtc: string;
  netflowBtc: string;
  direction: FlowDirection;
}
export interface ExchangeBreakdown {
  startDate: string;
  endDate: string;
  exchanges: ExchangeRanking[];
  totalReserveBtc: string;
  totalVolume24hUsd: string;
  source: DataSource;
}
export interface FlowSignalFactor {
  name: 'netflow' | 'netflow_zscore' | 'reserve_trend' | 'price_momentum' | 'exchange_concentration';
  value: number;
  reading: FlowSignalValue;
  weight: number;
}
export interface FlowSignal {
  signal: FlowSignalValue;
  confidence: number;
  reasoning: string;
  factors: FlowSignalFactor[];
  lookbackDays: number;
  generatedAt: string;
  generator: Generator;
  source: DataSource;
}
export interface FlowsRequest {
  days: number;
  exchanges?: FlowExchange[];
}
export interface FlowsRequestInput {
  days?: number;
  exchanges?: FlowExchange[];
}
export interface ExchangesRequest {
  days: number;
  sortBy: 'volume' | 'reserve' | 'netflow';
}
export interface ExchangesRequestInput {
  days?: number;
  sortBy?: 'volume' | 'reserve' | 'netflow';
}
export interface SignalRequest {
  lookbackDays: number;
}
export interface SignalRequestInput {
  lookbackDays?: number;
}

const REAL_EXCHANGES = ['binance', 'coinbase', 'kraken', 'bitfinex', 'okx', 'bybit', 'bitstamp', 'gemini'] as const;
/** The seeded model's venues: simulated answers never name real exchanges. */
export const SIMULATED_FLOW_VENUES = [
  'venue-a',
  'venue-b',
  'venue-c',
  'venue-d',
  'venue-e',
  'venue-f',
  'venue-g',
  'venue-h',
] as const;
const EXCHANGES = [...REAL_EXCHANGES, ...SIMULATED_FLOW_VENUES] as const;
const ExchangeSchema = named(
  'ExchangeFlowsExchange',
  z
    .enum(EXCHANGES)
    .describe(
      'an exchange: venue-a … venue-h are the simulated venues (source.mode simulated); real exchange ids appear only with live per-exchange data',
    ),
);
const IsoDate = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date written YYYY-MM-DD');
const BtcAmount = z
  .string()
  .regex(/^(0|[1-9]\d*)(\.\d{1,8})?$/, 'must be a non-negative BTC decimal string (at most 8 decimals)');
const SignedBtcAmount = z
  .string()
  .regex(/^-?(0|[1-9]\d*)(\.\d{1,8})?$/, 'must be a BTC decimal string (at most 8 decimals)');
const Btc = (what: string) => BtcAmount.describe(`${what}, BTC decimal string`);
const SignedBtc = (what: string) => SignedBtcAmount.describe(`${what}, BTC decimal string, may be negative`);
const UsdValue = z.string().regex(/^(0|[1-9]\d*)(\.\d+)?$/, 'must be a non-negative decimal string');
const SignedUsdValue = z.string().regex(/^-?(0|[1-9]\d*)(\.\d+)?$/, 'must be a decimal string');
const Usd = (what: string) => UsdValue.describe(`${what}, USD decimal string`);
const SignedUsd = (what: string) => SignedUsdValue.describe(`${what}, USD decimal string, may be negative`);
const DirectionSchema = named(
  'Direction',
  z
    .enum(['inflow', 'outflow', 'balanced'])
    .describe('net direction: inflow when netflow > 1 % of gross flow, outflow when < −1 %, else balanced'),
);
const SignalValue = z.enum(['bullish', 'bearish', 'neutral']);
const Days = (max: number, dflt: number) =>
  z
    .number()
    .int()
    .min(1)
    .max(max)
    .default(dflt)
    .describe(`days back from the latest full UTC day, 1 to ${max} (default ${dflt})`);

const SummarySchema: z.ZodType<BtcPriceSummary> = named(
  'BtcPriceSummary',
  z.object({
    asset: z.literal('BTC'),
    priceUsd: Usd('BTC price'),
    change24hUsd: SignedUsd('price change over 24 hours'),
    change24hPercent: z.number().describe('price change over 24 hours, percent'),
    high24hUsd: Usd('highest price over 24 hours').nullable(),
    low24hUsd: Usd('lowest price over 24 hours').nullable(),
    marketCapUsd: Usd('market cap'),
    volume24hUsd: Usd('traded volume over 24 hours'),
    dominancePercent: z.number().min(0).max(100).describe('bitcoin’s share of the total crypto market cap, percent'),
    circulatingSupplyBtc: Btc('circulating supply'),
    lastUpdated: Timestamp,
    source: DataSource,
  }),
);
const FlowAnalysisSchema: z.ZodType<FlowAnalysis> = named(
  'FlowAnalysis',
  z.object({
    startDate: IsoDate,
    endDate: IsoDate,
    days: z
      .array(
        z.object({
          date: IsoDate,
          inflowBtc: Btc('moved onto exchanges'),
          outflowBtc: Btc('withdrawn from exchanges'),
          netflowBtc: SignedBtc('inflow − outflow'),
          inflowUsd: Usd('inflow valued at the day’s price'),
          outflowUsd: Usd('outflow valued at the day’s price'),
          netflowUsd: SignedUsd('netflow valued at the day’s price'),
          reserveBtc: Btc('held on exchanges at the end of the day').nullable(),
        }),
      )
      .describe('daily flows of the selected exchanges, oldest first'),
    totals: z.object({
      inflowBtc: BtcAmount,
      outflowBtc: BtcAmount,
      netflowBtc: SignedBtcAmount,
      inflowUsd: UsdValue,
      outflowUsd: UsdValue,
      netflowUsd: SignedUsdValue,
    }),
    direction: DirectionSchema,
    netflowZScore: z
      .number()
      .nullable()
      .describe('mean daily netflow of the period against the 90 days before it; null without history'),
    reserveChangeBtc: SignedBtc('exchange reserve change over the period').nullable(),
    reserveChangePercent: z.number().nullable(),
    sentiment: SignalValue.describe(
      'sentiment signal: outflow with netflowZScore ≤ −1 bullish, inflow with ≥ 1 bearish, else neutral',
    ),
    breakdown: z
      .array(
        z.object({
          exchange: ExchangeSchema,
          inflowBtc: BtcAmount,
          outflowBtc: BtcAmount,
          netflowBtc: SignedBtcAmount,
          shareOfFlowPercent: z
            .number()
            .min(0)
            .max(100)
            .describe('share of the period’s gross flow (inflow + outflow)'),
          direction: DirectionSchema,
        }),
      )
      .describe('per-exchange totals over the period, largest gross flow first'),
    source: DataSource,
  }),
);
const ExchangeBreakdownSchema: z.ZodType<ExchangeBreakdown> = named(
  'ExchangeBreakdown',
  z.object({
    startDate: IsoDate,
    endDate: IsoDate,
    exchanges: z.array(
      z.object({
        rank: z.number().int().min(1),
        exchange: ExchangeSchema,
        name: z.string().describe('display name, e.g. "Coinbase"'),
        volume24hUsd: Usd('BTC spot volume over 24 hours'),
        volumeSharePercent: z.number().min(0).max(100),
        reserveBtc: Btc('estimated BTC held by the exchange’s labelled wallets'),
        reserveUsd: Usd('reserve valued at the current price'),
        reserveChangePercent: z.number().nullable().describe('reserve change over the period, percent'),
        inflowBtc: BtcAmount,
        outflowBtc: BtcAmount,
        netflowBtc: SignedBtcAmount,
        direction: DirectionSchema,
      }),
    ),
    totalReserveBtc: Btc('reserves of the listed exchanges (none listed: of all exchanges the provider tracks)'),
    totalVolume24hUsd: Usd('volume of the listed exchanges over 24 hours (none listed: BTC volume of all markets)'),
    source: DataSource,
  }),
);
const SignalSchema: z.ZodType<FlowSignal> = named(
  'FlowSignal',
  z.object({
    signal: SignalValue,
    confidence: z.number().min(0).max(1).describe('0 to 1: how strongly and consistently the factors agree'),
    reasoning: z.string().describe('why: the factors and what they mean together'),
    factors: z
      .array(
        z.object({
          name: z.enum(['netflow', 'netflow_zscore', 'reserve_trend', 'price_momentum', 'exchange_concentration']),
          value: z.number(),
          reading: SignalValue,
          weight: z.number().min(0).max(1),
        }),
      )
      .describe('the inputs of the signal, each with its own reading and weight (weights sum to 1)'),
    lookbackDays: z.number().int(),
    generatedAt: Timestamp,
    generator: Generator,
    source: DataSource,
  }),
);

const FlowsBody: z.ZodType<FlowsRequest, z.ZodTypeDef, FlowsRequestInput> = named(
  'FlowsRequest',
  z
    .object({
      days: Days(90, 7),
      exchanges: z
        .array(ExchangeSchema)
        .min(1)
        .max(SIMULATED_FLOW_VENUES.length)
        .optional()
        .describe('only these exchanges (default: all tracked); simulated mode tracks venue-a … venue-h'),
    })
    .strict(),
);
const ExchangesBody: z.ZodType<ExchangesRequest, z.ZodTypeDef, ExchangesRequestInput> = named(
  'ExchangesRequest',
  z
    .object({
      days: Days(90, 7).describe('period for reserve change and flows, 1 to 90 days (default 7)'),
      sortBy: z
        .enum(['volume', 'reserve', 'netflow'])
        .default('volume')
        .describe('ranking: 24 h volume, reserve, or netflow (largest first)'),
    })
    .strict(),
);
const SignalBody: z.ZodType<SignalRequest, z.ZodTypeDef, SignalRequestInput> = named(
  'SignalRequest',
  z.object({ lookbackDays: Days(90, 30).describe('days of flows the signal weighs, 1 to 90 (default 30)') }).strict(),
);

const upstream = '502 upstream_unavailable (with Retry-After) when the data provider fails; nothing is charged.';

const router = c.router({
  summary: {
    method: 'GET',
    path: '/api/summary',
    summary: 'BTC price summary',
    description:
      'Bitcoin price, 24-hour change (USD and percent), 24-hour high, low and volume, market cap, circulating supply and ' +
      'dominance (share of the total crypto market cap). Design: fields as listed. ' +
      upstream,
    responses: { 200: SummarySchema, 502: ErrorEnvelope, ...standardErrors },
    metadata: { payment: free(), example: {} } satisfies RouteMeta,
  },
  flows: {
    method: 'POST',
    path: '/api/flows',
    body: FlowsBody,
    summary: 'Flow analysis: daily inflow, outflow, net direction, sentiment, breakdown',
    description:
      'Daily BTC inflow, outflow and netflow (BTC and USD) for the major exchanges over the last `days` full UTC days, ' +
      'the period totals, the net flow direction, the netflow z-score against the previous 90 days, the reserve change, ' +
      'a sentiment signal and a per-exchange breakdown. Design: fields and rules as described on them. ' +
      upstream,
    responses: { 200: FlowAnalysisSchema, 502: ErrorEnvelope, ...standardErrors, ...paymentErrors },
    metadata: { payment: fixed('0.01'), example: { body: { days: 7 } } } satisfies RouteMeta,
  },
  exchanges: {
    method: 'POST',
    path: '/api/exchanges',
    body: ExchangesBody,
    summary: 'Per-exchange breakdown: volume rankings, reserves, flow direction',
    description:
      'Each tracked exchange ranked by 24-hour BTC volume (or reserve, or netflow), with its estimated BTC reserve, the ' +
      'reserve change over `days`, its inflow, outflow and net flow direction. Reserves are estimates from labelled ' +
      'wallets. Per-exchange data is not free: with live data and no per-exchange provider the list is empty and ' +
      '`source.note` says so. ' +
      upstream,
    responses: { 200: ExchangeBreakdownSchema, 502: ErrorEnvelope, ...standardErrors, ...paymentErrors },
    metadata: { payment: fixed('0.01'), example: { body: { days: 30, sortBy: 'reserve' } } } satisfies RouteMeta,
  },
  signal: {
    method: 'POST',
    path: '/api/signal',
    body: SignalBody,
    summary: 'Signal: bullish, bearish or neutral, with confidence and reasoning',
    description:
      'An AI signal from exchange flows over `lookbackDays`: one of bullish, bearish or neutral, a confidence from 0 to ' +
      '1, written reasoning and the weighted factors it rests on (netflow, its z-score, reserve trend, price momentum, ' +
      'concentration of flows on one exchange). Sustained outflows and falling reserves read bullish; inflows and rising ' +
      'reserves bearish. ' +
      upstream,
    responses: { 200: SignalSchema, 502: ErrorEnvelope, ...standardErrors, ...paymentErrors },
    metadata: { payment: fixed('0.02'), example: { body: { lookbackDays: 30 } } } satisfies RouteMeta,
  },
});

export const exchangeFlows = defineService({
  id: 'exchange-flows',
  title: 'Bitcoin Exchange-Flow Monitor',
  description:
    'Daily BTC inflow and outflow across centralized exchanges: a free price summary, flow analysis with net direction ' +
    'and sentiment, per-exchange volume rankings and reserve estimates, and an AI-generated bullish, bearish or neutral ' +
    'signal with confidence and reasoning.',
  router,
  dataModes: {
    simulated: 'the seeded flow model over neutral venues venue-a to venue-h, the default',
    live: 'Coin Metrics Community aggregate flows and CoinGecko, with MARKET_DATA=live; per-exchange fields empty',
  },
});
