import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { defineService } from '../core/service';
import { named } from '../core/names';
import { ErrorEnvelope, paymentErrors, standardErrors } from '../core/errors';
import { fixed, free, type RouteMeta } from '../core/payment';
import { Timestamp } from '../core/chain';
import { DataSource, Generator } from './shared';

const c = initContract();

// One contract for both deployments of the service (DESIGN.md: "one contract, a deployment option"): the second
// deployment adds `summary` to range results and fetches upstream data sequentially; the first adds
// `availableDateRanges` to /api/info. Dates are calendar days (UTC) written YYYY-MM-DD; values are daily closes.
// USD values are decimal strings of any precision; ratios (MVRV, Z-Score, SOPR, aSOPR, NUPL) are numbers.

/** Longest date range one request may ask for, in days (both ends included). */
export const BTC_MAX_RANGE_DAYS = 366;
/** Lifetime of a cached result, in seconds (spec: 1 hour, in memory). */
export const BTC_CACHE_TTL_SECONDS = 3600;

export type BtcMetricId = 'priceUsd' | 'mvrv' | 'mvrvZScore' | 'sopr' | 'asopr' | 'nupl';
export type BtcCyclePhase = 'capitulation' | 'accumulation' | 'optimism' | 'belief' | 'euphoria';
export type BtcZone =
  | 'undervalued'
  | 'neutral'
  | 'overvalued'
  | 'capitulation'
  | 'hope_fear'
  | 'optimism_anxiety'
  | 'belief_denial'
  | 'euphoria_greed'
  | 'loss_realization'
  | 'break_even'
  | 'profit_taking';

export interface BtcDailyMetrics {
  date: string;
  priceUsd: string;
  marketCapUsd: string;
  realizedCapUsd: string;
  realizedPriceUsd: string;
  mvrv: number;
  mvrvZScore: number;
  sopr: number | null;
  asopr: number | null;
  nupl: number;
}
export interface BtcCacheInfo {
  hit: boolean;
  cachedAt: string;
  expiresAt: string;
}
export interface BtcMetricsResult {
  kind: 'date' | 'range' | 'latest';
  startDate: string;
  endDate: string;
  days: BtcDailyMetrics[];
  /** Range results of the second deployment, whichever route asked for the range. */
  summary?: BtcRangeSummary;
  cache: BtcCacheInfo;
  source: DataSource;
}
export interface BtcMetricStats {
  count: number;
  min: number;
  minDate: string;
  max: number;
  maxDate: string;
  mean: number;
  median: number;
  stdDev: number;
  first: number;
  last: number;
  change: number;
  changePercent: number | null;
}
/** BtcMetricStats of a USD series: the values are USD decimal strings. */
export interface BtcUsdStats {
  count: number;
  min: string;
  minDate: string;
  max: string;
  maxDate: string;
  mean: string;
  median: string;
  stdDev: string;
  first: string;
  last: string;
  change: string;
  changePercent: number | null;
}
export interface BtcRangeSummary {
  days: number;
  priceUsd: BtcUsdStats;
  mvrv: BtcMetricStats;
  mvrvZScore: BtcMetricStats;
  sopr: BtcMetricStats | null;
  asopr: BtcMetricStats | null;
  nupl: BtcMetricStats;
}
export interface BtcRangeResult {
  startDate: string;
  endDate: string;
  days: BtcDailyMetrics[];
  summary?: BtcRangeSummary;
  cache: BtcCacheInfo;
  source: DataSource;
}
export interface BtcMetricSignal {
  metric: Exclude<BtcMetricId, 'priceUsd'>;
  value: number;
  zone: BtcZone;
  reading: string;
}
export interface BtcCycleInterpretation {
  phase: BtcCyclePhase;
  signals: BtcMetricSignal[];
  summary: string;
  generator: Generator;
}
export interface BtcLatestMetrics {
  date: string;
  metrics: BtcDailyMetrics;
  interpretation: BtcCycleInterpretation;
  cache: BtcCacheInfo;
  source: DataSource;
}
export interface BtcMetricDescription {
  id: BtcMetricId;
  name: string;
  formula: string;
  unit: string;
  interpretation: string;
}
export interface BtcUsage {
  method: 'GET' | 'POST';
  path: string;
  description: string;
  exampleBody: Record<string, string> | null;
}
export interface BtcDateRange {
  metric: BtcMetricId;
  from: string;
  to: string;
}
export interface BtcMetricsInfo {
  service: 'btc-metrics';
  deployment: { summaryStatistics: boolean; sequentialUpstreamFetch: boolean };
  /** The `source.mode` this deployment answers with. */
  dataMode: 'simulated' | 'live';
  metrics: BtcMetricDescription[];
  usage: BtcUsage[];
  limits: { maxRangeDays: number; cacheTtlSeconds: number };
  availableDateRanges?: BtcDateRange[];
}
export interface BtcMetricsRequest {
  date?: string;
  startDate?: string;
  endDate?: string;
}
export interface BtcRangeRequest {
  startDate: string;
  endDate: string;
}
export type BtcLatestRequest = Record<string, never>;

const DAY_MS = 86_400_000;
const IsoDate = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date written YYYY-MM-DD')
  .refine((s) => {
    const t = Date.parse(`${s}T00:00:00.000Z`);
    return Number.isFinite(t) && new Date(t).toISOString().startsWith(s);
  }, 'must be a real calendar date');
const daysBetween = (start: string, end: string) => Math.round((Date.parse(end) - Date.parse(start)) / DAY_MS) + 1;

function checkRange(start: string | undefined, end: string | undefined, ctx: z.RefinementCtx): void {
  if (!start || !end || !/^\d{4}-\d{2}-\d{2}$/.test(start) || !/^\d{4}-\d{2}-\d{2}$/.test(end)) return;
  if (start > end)
    ctx.addIssue({ code: z.ZodIssueCode.custom, path: ['endDate'], message: 'endDate must not be before startDate' });
  else if (daysBetween(start, end) > BTC_MAX_RANGE_DAYS)
    ctx.addIssue({
      code: z.ZodIssueCode.custom,
      path: ['endDate'],
      message: `a range may span at most ${BTC_MAX_RANGE_DAYS} days`,
    });
}

const UsdValue = z
  .string()
  .regex(/^(0|[1-9]\d*)(\.\d+)?$/, 'must be a non-negative decimal string')
  .describe('USD as a decimal string (any precision)');
const SignedUsdValue = z
  .string()
  .regex(/^-?(0|[1-9]\d*)(\.\d+)?$/, 'must be a decimal string')
  .describe('USD as a signed decimal string');

const DailyMetricsSchema: z.ZodType<BtcDailyMetrics> = named(
  'BtcDailyMetrics',
  z.object({
    date: IsoDate,
    priceUsd: UsdValue.describe('BTC price, USD decimal string (daily close)'),
    marketCapUsd: UsdValue.describe('MC = price × current supply, USD decimal string'),
    realizedCapUsd: UsdValue.describe(
      'RC: every coin valued at the price it last moved, USD decimal string (MC / MVRV where the upstream gives MVRV)',
    ),
    realizedPriceUsd: UsdValue.describe('RC / supply, USD decimal string'),
    mvrv: z.number().describe('MC / RC; below 1 undervalued, 3.5 and above overvalued'),
    mvrvZScore: z
      .number()
      .describe(
        '(MC − RC) / σ(MC), σ the population standard deviation of the market cap from the first day of data to this day',
      ),
    sopr: z
      .number()
      .nullable()
      .describe('value of spent outputs at spend price / at creation price; null when no source has it for the day'),
    asopr: z
      .number()
      .nullable()
      .describe('SOPR leaving out outputs spent less than 1 hour after creation; null when unavailable'),
    nupl: z.number().describe('(MC − RC) / MC = 1 − 1 / MVRV'),
  }),
);
const CacheSchema: z.ZodType<BtcCacheInfo> = named(
  'BtcCacheInfo',
  z
    .object({
      hit: z.boolean().describe('true when the answer came from the 1-hour in-memory cache'),
      cachedAt: Timestamp.describe('when the cached data was read from upstream'),
      expiresAt: Timestamp.describe('cachedAt + 1 hour'),
    })
    .describe('the in-memory result cache (1 hour)'),
);
const MetricsResultSchema: z.ZodType<BtcMetricsResult> = named(
  'BtcMetricsResult',
  z.object({
    kind: z.enum(['date', 'range', 'latest']).describe('what the request asked for'),
    startDate: IsoDate,
    endDate: IsoDate,
    days: z.array(DailyMetricsSchema).describe('one entry per day with data, oldest first'),
    summary: z
      .lazy(() => RangeSummarySchema)
      .optional()
      .describe(
        'with kind "range", on the second deployment: summary statistics per metric, as /api/metrics/range gives',
      ),
    cache: CacheSchema,
    source: DataSource,
  }),
);
const StatsSchema: z.ZodType<BtcMetricStats> = named(
  'BtcMetricStats',
  z.object({
    count: z.number().int().min(1).describe('days with a value'),
    min: z.number(),
    minDate: IsoDate,
    max: z.number(),
    maxDate: IsoDate,
    mean: z.number(),
    median: z.number(),
    stdDev: z.number().min(0).describe('population standard deviation'),
    first: z.number(),
    last: z.number(),
    change: z.number().describe('last − first'),
    changePercent: z.number().nullable().describe('(last − first) / |first| × 100; null when first is 0'),
  }),
);
const UsdStatsSchema: z.ZodType<BtcUsdStats> = named(
  'BtcUsdStats',
  z
    .object({
      count: z.number().int().min(1),
      min: UsdValue,
      minDate: IsoDate,
      max: UsdValue,
      maxDate: IsoDate,
      mean: UsdValue,
      median: UsdValue,
      stdDev: UsdValue.describe('population standard deviation'),
      first: UsdValue,
      last: UsdValue,
      change: SignedUsdValue.describe('last − first'),
      changePercent: z.number().nullable().describe('(last − first) / first × 100; null when first is 0'),
    })
    .describe('statistics of a USD series, values as decimal strings'),
);
const RangeSummarySchema: z.ZodType<BtcRangeSummary> = named(
  'BtcRangeSummary',
  z
    .object({
      days: z.number().int().min(1),
      priceUsd: UsdStatsSchema,
      mvrv: StatsSchema,
      mvrvZScore: StatsSchema,
      sopr: StatsSchema.nullable().describe('null when no day in the range has a SOPR value'),
      asopr: StatsSchema.nullable(),
      nupl: StatsSchema,
    })
    .describe('summary statistics per metric; served by the second deployment only'),
);
const RangeResultSchema: z.ZodType<BtcRangeResult> = named(
  'BtcRangeResult',
  z.object({
    startDate: IsoDate,
    endDate: IsoDate,
    days: z.array(DailyMetricsSchema).describe('one entry per day with data, oldest first'),
    summary: RangeSummarySchema.optional(),
    cache: CacheSchema,
    source: DataSource,
  }),
);
const ZoneSchema = named(
  'Zone',
  z.enum([
    'undervalued',
    'neutral',
    'overvalued',
    'capitulation',
    'hope_fear',
    'optimism_anxiety',
    'belief_denial',
    'euphoria_greed',
    'loss_realization',
    'break_even',
    'profit_taking',
  ]),
);
const LatestSchema: z.ZodType<BtcLatestMetrics> = named(
  'BtcLatestMetrics',
  z.object({
    date: IsoDate.describe('the latest day with data'),
    metrics: DailyMetricsSchema,
    interpretation: z
      .object({
        phase: z
          .enum(['capitulation', 'accumulation', 'optimism', 'belief', 'euphoria'])
          .describe(
            'market cycle phase from the NUPL band (< 0 capitulation, < 0.25 accumulation, < 0.5 optimism, < 0.75 belief, ' +
              'else euphoria), raised to euphoria when MVRV Z-Score ≥ 7 and lowered to capitulation when MVRV < 1',
          ),
        signals: z
          .array(
            z.object({
              metric: z.enum(['mvrv', 'mvrvZScore', 'sopr', 'asopr', 'nupl']),
              value: z.number(),
              zone: ZoneSchema.describe(
                'MVRV: < 1 undervalued, < 3.5 neutral, else overvalued; Z-Score: < 0 undervalued, < 7 neutral, else ' +
                  'overvalued; NUPL: capitulation < 0 ≤ hope_fear < 0.25 ≤ optimism_anxiety < 0.5 ≤ belief_denial < 0.75 ≤ ' +
                  'euphoria_greed; SOPR/aSOPR: < 0.99 loss_realization, ≤ 1.01 break_even, else profit_taking',
              ),
              reading: z.string().describe('what the zone has meant historically'),
            }),
          )
          .describe('one per metric with a value on the day'),
        summary: z.string().describe('AI reading of the cycle position from the signals'),
        generator: Generator,
      })
      .describe('market cycle interpretation'),
    cache: CacheSchema,
    source: DataSource,
  }),
);
const MetricIdSchema = named('MetricId', z.enum(['priceUsd', 'mvrv', 'mvrvZScore', 'sopr', 'asopr', 'nupl']));
const InfoSchema: z.ZodType<BtcMetricsInfo> = named(
  'BtcMetricsInfo',
  z.object({
    service: z.literal('btc-metrics'),
    deployment: z
      .object({
        summaryStatistics: z.boolean().describe('range results carry `summary` (second deployment)'),
        sequentialUpstreamFetch: z
          .boolean()
          .describe('upstream requests are made one at a time to respect rate limits (second deployment)'),
      })
      .describe('the options this deployment runs with'),
    dataMode: z
      .enum(['simulated', 'live'])
      .describe(
        'the `source.mode` of this deployment’s answers: simulated (the seeded model, the default) or live (MARKET_DATA=live)',
      ),
    metrics: z.array(
      z.object({
        id: MetricIdSchema,
        name: z.string(),
        formula: z.string(),
        unit: z.string().describe('"USD" or "ratio"'),
        interpretation: z.string().describe('the standard reading bands'),
      }),
    ),
    usage: z
      .array(
        z.object({
          method: z.enum(['GET', 'POST']),
          path: z.string(),
          description: z.string(),
          exampleBody: z.record(z.string()).nullable(),
        }),
      )
      .describe('how to call each route'),
    limits: z.object({
      maxRangeDays: z.number().int().describe(`longest range per request (${BTC_MAX_RANGE_DAYS} days)`),
      cacheTtlSeconds: z.number().int().describe(`result cache lifetime (${BTC_CACHE_TTL_SECONDS} s)`),
    }),
    availableDateRanges: z
      .array(z.object({ metric: MetricIdSchema, from: IsoDate, to: IsoDate }))
      .optional()
      .describe('the dates each metric has data for (first deployment only)'),
  }),
);

const MetricsBody: z.ZodType<BtcMetricsRequest> = named(
  'BtcMetricsRequest',
  z
    .object({
      date: IsoDate.optional().describe('one day'),
      startDate: IsoDate.optional().describe('first day of a range (with endDate)'),
      endDate: IsoDate.optional().describe('last day of a range, included (with startDate)'),
    })
    .strict()
    .superRefine((body, ctx) => {
      if (body.date !== undefined && (body.startDate !== undefined || body.endDate !== undefined))
        ctx.addIssue({
          code: z.ZodIssueCode.custom,
          path: ['date'],
          message: 'give either date or startDate and endDate, not both',
        });
      if ((body.startDate === undefined) !== (body.endDate === undefined))
        ctx.addIssue({
          code: z.ZodIssueCode.custom,
          path: [body.startDate === undefined ? 'startDate' : 'endDate'],
          message: 'startDate and endDate go together',
        });
      checkRange(body.startDate, body.endDate, ctx);
    }),
);
const RangeBody: z.ZodType<BtcRangeRequest> = named(
  'BtcRangeRequest',
  z
    .object({
      startDate: IsoDate.describe('first day of the range'),
      endDate: IsoDate.describe(
        `last day of the range, included; at most ${BTC_MAX_RANGE_DAYS} days after startDate counting both ends`,
      ),
    })
    .strict()
    .superRefine((body, ctx) => checkRange(body.startDate, body.endDate, ctx)),
);
const LatestBody: z.ZodType<BtcLatestRequest> = named('BtcLatestRequest', z.object({}).strict());

const errors =
  'A day outside the data (before the first day or after the latest) is 404 metrics_not_available with ' +
  '`details: { earliest, latest }`; 502 upstream_unavailable (with Retry-After) when the upstream fails and nothing is cached.';

const router = c.router({
  metrics: {
    method: 'POST',
    path: '/api/metrics',
    body: MetricsBody,
    summary: 'Metrics for a date, a date range, or the latest date',
    description:
      'MVRV, MVRV Z-Score, SOPR, aSOPR, NUPL and BTC price (with the market cap, realized cap and realized price they ' +
      'come from) for `date`, for `startDate`..`endDate` (both included, at most 366 days), or for the latest day with ' +
      'data when the body is `{}`. Results are cached in memory for 1 hour. Design: dates YYYY-MM-DD (UTC); a mixed, ' +
      'half or inverted range is 400 invalid_request. ' +
      errors,
    responses: {
      200: MetricsResultSchema,
      404: ErrorEnvelope,
      502: ErrorEnvelope,
      ...standardErrors,
      ...paymentErrors,
    },
    metadata: { payment: fixed('0.005'), example: { body: { date: '2020-03-14' } } } satisfies RouteMeta,
  },
  range: {
    method: 'POST',
    path: '/api/metrics/range',
    body: RangeBody,
    summary: 'Daily values over a date range',
    description:
      'Every day’s metric set from `startDate` to `endDate` (both included, at most 366 days), oldest first. The second ' +
      'deployment adds `summary`: count, min, max (with their dates), mean, median, population standard deviation, first, ' +
      'last and change per metric; the first deployment leaves it out. Results are cached in memory for 1 hour. Days ' +
      'without data inside the range are skipped. ' +
      errors,
    responses: { 200: RangeResultSchema, 404: ErrorEnvelope, 502: ErrorEnvelope, ...standardErrors, ...paymentErrors },
    metadata: {
      payment: fixed('0.005'),
      example: { body: { startDate: '2020-01-01', endDate: '2020-03-29' } },
    } satisfies RouteMeta,
  },
  latest: {
    method: 'POST',
    path: '/api/metrics/latest',
    body: LatestBody,
    summary: 'Latest metrics with market cycle interpretation',
    description:
      'The latest day’s metric set and an interpretation of the market cycle: each metric’s zone on the standard bands, ' +
      'the phase they point to and a written summary. Send `{}`. Design: bands as described on the fields. 502 ' +
      'upstream_unavailable (with Retry-After) when the upstream fails and nothing is cached.',
    responses: { 200: LatestSchema, 502: ErrorEnvelope, ...standardErrors, ...paymentErrors },
    metadata: { payment: fixed('0.01'), example: { body: {} } } satisfies RouteMeta,
  },
  info: {
    method: 'GET',
    path: '/api/info',
    summary: 'Metric descriptions and usage guide',
    description:
      'What each metric means and how it is computed, how to call each route, the range and cache limits, and the ' +
      'options this deployment runs with. The first deployment also lists the dates each metric has data for ' +
      '(`availableDateRanges`). Free: descriptive. Design: with live data the ranges are read from the upstream (cached ' +
      'for 1 hour), so 502 upstream_unavailable when it fails.',
    responses: { 200: InfoSchema, 502: ErrorEnvelope, ...standardErrors },
    metadata: { payment: free(), example: {} } satisfies RouteMeta,
  },
});

export const btcMetrics = defineService({
  id: 'btc-metrics',
  title: 'Bitcoin On-Chain Metrics',
  description:
    'Bitcoin on-chain valuation metrics (MVRV, MVRV Z-Score, SOPR, aSOPR, NUPL) and BTC price for a single date, a date ' +
    'range or the latest date, with a market cycle interpretation of the latest values; results are cached in memory ' +
    'for 1 hour. Two deployments serve this contract: the second adds summary statistics to range results and fetches ' +
    'upstream data sequentially to respect upstream rate limits.',
  router,
  dataModes: {
    simulated: 'the seeded model pinned to Coin Metrics reference rows, 2015-04-16 to 2020-03-29, the default',
    live: 'Coin Metrics Community and BGeometrics, with MARKET_DATA=live',
  },
});
