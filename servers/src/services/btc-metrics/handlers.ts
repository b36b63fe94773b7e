import {
  BTC_CACHE_TTL_SECONDS,
  BTC_MAX_RANGE_DAYS,
  type BtcCacheInfo,
  type BtcMetricDescription,
  type BtcMetricsRequest,
  type BtcMetricsResult,
  type BtcUsage,
  type btcMetrics,
} from '@agent-economy/contracts';
import type { RouterImplementation } from '../../runtime/app';
import type { ParsedRequest } from '../../runtime/validation';
import { rangeSummary } from './domain';
import type { Answer, LatestAnswer, MetricsService } from './metrics';

export interface Deployment {
  /** Range results carry `summary` (the second deployment). */
  summaryStatistics: boolean;
  /** Upstream requests go one at a time (the second deployment). */
  sequentialUpstreamFetch: boolean;
  /** /api/info lists the dates each metric has data for (the first deployment). */
  availableDateRanges: boolean;
}

type Looked = { value: Answer | LatestAnswer; cache: BtcCacheInfo };

/**
 * Looks up what a request asks for. The preflight (before the paywall) does it and keeps the answer for the
 * handler of the same request, so a day outside the data or a failing upstream is a 404/502 nobody pays for.
 */
export function answerer(service: MetricsService) {
  const answered = new WeakMap<object, Looked>();
  const lookup = (route: 'metrics' | 'range' | 'latest', body: BtcMetricsRequest): Promise<Looked> => {
    if (route === 'latest') return service.latest();
    if (body.date) return service.forDate(body.date);
    if (body.startDate && body.endDate) return service.forRange(body.startDate, body.endDate);
    return service.latestDay();
  };
  return {
    preflight: (route: 'metrics' | 'range' | 'latest') => async (request: ParsedRequest) => {
      answered.set(request, await lookup(route, request.body as BtcMetricsRequest));
    },
    answer: async (route: 'metrics' | 'range' | 'latest', parsed: ParsedRequest | undefined, body: BtcMetricsRequest) =>
      (parsed && answered.get(parsed)) ?? (await lookup(route, body)),
  };
}

const METRICS: BtcMetricDescription[] = [
  {
    id: 'priceUsd',
    name: 'BTC price',
    formula: 'daily close in USD: Coin Metrics PriceUSD when live (MARKET_DATA=live), the seeded model when simulated',
    unit: 'USD',
    interpretation: 'the market price the other metrics compare with the cost basis',
  },
  {
    id: 'mvrv',
    name: 'MVRV ratio',
    formula: 'MC / RC: market cap (price × supply) over realized cap (every coin at the price it last moved)',
    unit: 'ratio',
    interpretation:
      '< 1 undervalued (historical cycle bottoms), 1 to 3.5 neutral, ≥ 3.5 overvalued (historical cycle tops)',
  },
  {
    id: 'mvrvZScore',
    name: 'MVRV Z-Score',
    formula:
      '(MC − RC) / σ(MC), σ the population standard deviation of the market cap from the first day of data through the day',
    unit: 'ratio',
    interpretation:
      '< 0 undervalued (bottom zone), 0 to 7 neutral, ≥ 7 overvalued (top zone); values depend on where the series starts',
  },
  {
    id: 'sopr',
    name: 'SOPR (spent output profit ratio)',
    formula: 'Σ value × price at spend / Σ value × price at creation, over the outputs spent that day',
    unit: 'ratio',
    interpretation:
      '< 0.99 loss realization, 0.99 to 1.01 break-even, > 1.01 profit taking; 1 acts as support in bull and resistance in bear markets',
  },
  {
    id: 'asopr',
    name: 'aSOPR (adjusted SOPR)',
    formula: 'SOPR leaving out outputs spent less than 1 hour after they were created',
    unit: 'ratio',
    interpretation: 'as SOPR, without the noise of change outputs and self-transfers',
  },
  {
    id: 'nupl',
    name: 'NUPL (net unrealized profit/loss)',
    formula: '(MC − RC) / MC = 1 − 1 / MVRV',
    unit: 'ratio',
    interpretation:
      '< 0 capitulation, 0 to 0.25 hope/fear, 0.25 to 0.5 optimism/anxiety, 0.5 to 0.75 belief/denial, ≥ 0.75 euphoria/greed',
  },
];

const USAGE: BtcUsage[] = [
  {
    method: 'POST',
    path: '/api/metrics',
    description: 'one day (`date`), a range (`startDate` and `endDate`), or the latest day (`{}`)',
    exampleBody: { date: '2020-03-29' },
  },
  {
    method: 'POST',
    path: '/api/metrics/range',
    description: `every day of a range, at most ${BTC_MAX_RANGE_DAYS} days; the second deployment adds summary statistics`,
    exampleBody: { startDate: '2020-01-01', endDate: '2020-03-29' },
  },
  {
    method: 'POST',
    path: '/api/metrics/latest',
    description: 'the latest day with a market cycle interpretation',
    exampleBody: {},
  },
  { method: 'GET', path: '/api/info', description: 'this guide', exampleBody: null },
];

// Handlers only translate between the contract and the domain.
export function btcMetricsHandlers(
  service: MetricsService,
  deployment: Deployment,
  answers: ReturnType<typeof answerer>,
): RouterImplementation<typeof btcMetrics.router> {
  const parsedOf = (res: { locals: Record<string, unknown> }) => res.locals.parsed as ParsedRequest | undefined;
  return {
    metrics: async ({ body, res }) => {
      const { value, cache } = await answers.answer('metrics', parsedOf(res), body);
      const kind: BtcMetricsResult['kind'] = body.date ? 'date' : body.startDate ? 'range' : 'latest';
      const startDate = body.date ?? body.startDate ?? value.days[0]!.date;
      const endDate = body.date ?? body.endDate ?? value.days[0]!.date;
      // Every range result of the second deployment carries its summary, whichever route asked for the range.
      const summary = kind === 'range' && deployment.summaryStatistics ? { summary: rangeSummary(value.days) } : {};
      return {
        status: 200,
        body: { kind, startDate, endDate, days: value.days, ...summary, cache, source: value.source },
      };
    },

    range: async ({ body, res }) => {
      const { value, cache } = await answers.answer('range', parsedOf(res), body);
      return {
        status: 200,
        body: {
          startDate: body.startDate,
          endDate: body.endDate,
          days: value.days,
          ...(deployment.summaryStatistics ? { summary: rangeSummary(value.days) } : {}),
          cache,
          source: value.source,
        },
      };
    },

    latest: async ({ res }) => {
      const { value, cache } = await answers.answer('latest', parsedOf(res), {});
      const latest = value as LatestAnswer;
      const day = latest.days[0]!;
      return {
        status: 200,
        body: { date: day.date, metrics: day, interpretation: latest.interpretation, cache, source: latest.source },
      };
    },

    info: async () => ({
      status: 200,
      body: {
        service: 'btc-metrics' as const,
        deployment: {
          summaryStatistics: deployment.summaryStatistics,
          sequentialUpstreamFetch: deployment.sequentialUpstreamFetch,
        },
        dataMode: service.source.mode as 'simulated' | 'live',
        metrics: METRICS,
        usage: USAGE,
        limits: { maxRangeDays: BTC_MAX_RANGE_DAYS, cacheTtlSeconds: BTC_CACHE_TTL_SECONDS },
        ...(deployment.availableDateRanges ? { availableDateRanges: (await service.coverage()).value } : {}),
      },
    }),
  };
}
