import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BTC_CACHE_TTL_SECONDS,
  type BtcDailyMetrics,
  type BtcMetricStats,
  type DataServiceHealth,
} from '@agent-economy/contracts';
import {
  ApiError,
  BadRequestError,
  InternalServerError,
  NotFoundError,
  PaymentOutcomeUnknownError,
  createClient,
  walletFromSecretKey,
} from '@agent-economy/sdk';
import { createBtcMetricsApp, type BtcMetricsOptions } from '../servers/src/services/btc-metrics';
import {
  cyclePhase,
  mvrvZone,
  populationStdDev,
  soprZone,
  zScoreZone,
} from '../servers/src/services/btc-metrics/domain';
import { ANCHORS } from '../servers/src/services/btc-metrics/model';
import { startEconomy, type Economy } from './support/economy';
import { listenLocal, startService, type RunningService } from './support/servers';

// Formulas against research/domain.md §1.4 (Coin Metrics reference rows and computed toy vectors); both
// deployments over the embedded model; the live adapter against a local server replaying Coin Metrics' and
// BGeometrics' documented JSON (real Coin Metrics rows 2020-03-24..29 from coinmetrics/data csv/btc.csv);
// one paid call through the local economy.

const FREE = { kind: 'fixed', usd: '0' } as const;
const ZERO = { metrics: FREE, range: FREE, latest: FREE };

/** The service's /health body (not a contract route: the runtime serves it with the upstream tracker's view). */
const healthOf = async (url: string) => (await (await fetch(`${url}/health`)).json()) as DataServiceHealth;

const start = (options: BtcMetricsOptions) =>
  startService((c) => createBtcMetricsApp({ ...c, prices: ZERO }, options), { id: 'btc-metrics' });

/**
 * What the service sent back as an error. Even when the SDK sent its payment up front (it knows the price), the
 * service's error comes back as itself: the answer says in PAYMENT-RESPONSE that nothing settled.
 */
async function failure(call: Promise<unknown>): Promise<ApiError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).not.toBeInstanceOf(PaymentOutcomeUnknownError);
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

/** The statistics of a series, computed here independently of the service. */
function expectedStats(days: readonly BtcDailyMetrics[], pick: (d: BtcDailyMetrics) => number): BtcMetricStats {
  const values = days.map(pick);
  const n = values.length;
  const mean = values.reduce((a, b) => a + b, 0) / n;
  const sorted = [...values].sort((x, y) => x - y);
  const median = n % 2 ? sorted[(n - 1) / 2]! : (sorted[n / 2 - 1]! + sorted[n / 2]!) / 2;
  const minIndex = values.indexOf(Math.min(...values));
  const maxIndex = values.indexOf(Math.max(...values));
  const first = values[0]!;
  const last = values[n - 1]!;
  return {
    count: n,
    min: values[minIndex]!,
    minDate: days[minIndex]!.date,
    max: values[maxIndex]!,
    maxDate: days[maxIndex]!.date,
    mean,
    median,
    stdDev: Math.sqrt(values.reduce((a, v) => a + (v - mean) ** 2, 0) / n),
    first,
    last,
    change: last - first,
    changePercent: ((last - first) / Math.abs(first)) * 100,
  };
}

describe('both deployments over the embedded model', () => {
  let clock = Date.parse('2026-01-01T00:00:00.000Z');
  let first: RunningService;
  let second: RunningService;

  beforeAll(async () => {
    first = await start({ deployment: 'first', now: () => clock });
    second = await start({ deployment: 'second', now: () => clock });
  });
  afterAll(async () => {
    await Promise.all([first?.close(), second?.close()]);
  });

  it('serves one date: the reference row of 2017-12-17 exactly, labelled embedded, then from the cache', async () => {
    const one = await first.client.btcMetrics.metrics({ body: { date: '2017-12-17' } });
    expect(one).toMatchObject({ kind: 'date', startDate: '2017-12-17', endDate: '2017-12-17' });
    expect(one.days).toHaveLength(1);
    const day = one.days[0]!;
    expect([day.priceUsd, day.marketCapUsd, day.realizedCapUsd, day.realizedPriceUsd]).toEqual([
      '19250.47',
      '322411617616.00',
      '75827043368.00',
      '4527.46',
    ]);
    expect(day.mvrv).toBeCloseTo(4.25193445, 8);
    expect(day.nupl).toBeCloseTo(1 - 1 / 4.25193445, 8);
    expect(day.sopr).toBeGreaterThan(0);
    expect(day.asopr).toBeGreaterThan(0);
    expect(one.source).toMatchObject({ mode: 'simulated', providers: ['btc-market-model'] });
    expect(one.cache).toEqual({
      hit: false,
      cachedAt: new Date(clock).toISOString(),
      expiresAt: new Date(clock + 3_600_000).toISOString(),
    });

    clock += 3_599_000; // 59 min 59 s later: still cached
    const again = await first.client.btcMetrics.metrics({ body: { date: '2017-12-17' } });
    expect(again.cache).toEqual({ ...one.cache, hit: true });
    expect(again.days).toEqual(one.days);
    clock += 1_000; // one hour: expired, read again
    const fresh = await first.client.btcMetrics.metrics({ body: { date: '2017-12-17' } });
    expect(fresh.cache).toMatchObject({ hit: false, cachedAt: new Date(clock).toISOString() });
    expect(fresh.days).toEqual(one.days);
  });

  it('the Z-Score of a day is (MC − RC) / σ of every market cap from the first day of data', async () => {
    const all = await first.client.btcMetrics.range({ body: { startDate: '2015-04-01', endDate: '2016-03-31' } });
    // The model's first day (2015-04-15) has no spread: the series is served from 2015-04-16; days before are skipped.
    expect(all.days[0]!.date).toBe('2015-04-16');
    expect(all.days).toHaveLength(351);
    const caps = [ANCHORS[0]!.marketCapUsd, ...all.days.map((d) => Number(d.marketCapUsd))];
    const k = 200;
    const window = caps.slice(0, k + 2);
    const day = all.days[k]!;
    // the USD strings are rounded to cents: the tolerance allows for it
    expect(day.mvrvZScore).toBeCloseTo(
      (Number(day.marketCapUsd) - Number(day.realizedCapUsd)) / populationStdDev(window),
      6,
    );
  });

  it('metrics with a range, and with {} for the latest day', async () => {
    const range = await first.client.btcMetrics.metrics({ body: { startDate: '2020-03-25', endDate: '2020-03-29' } });
    expect(range).toMatchObject({ kind: 'range', startDate: '2020-03-25', endDate: '2020-03-29' });
    expect(range.days.map((d) => d.date)).toEqual([
      '2020-03-25',
      '2020-03-26',
      '2020-03-27',
      '2020-03-28',
      '2020-03-29',
    ]);
    const latest = await first.client.btcMetrics.metrics({ body: {} });
    expect(latest).toMatchObject({ kind: 'latest', startDate: '2020-03-29', endDate: '2020-03-29' });
    expect(latest.days[0]).toEqual(range.days[4]);
    expect([latest.days[0]!.priceUsd, latest.days[0]!.marketCapUsd, latest.days[0]!.realizedCapUsd]).toEqual([
      '5904.86',
      '108023566971.00',
      '101441674689.00',
    ]);
  });

  it('range: no summary on the first deployment; exact statistics on the second', async () => {
    const body = { startDate: '2018-01-01', endDate: '2018-03-31' };
    const plain = await first.client.btcMetrics.range({ body });
    expect(plain.summary).toBeUndefined();
    expect(plain.days).toHaveLength(90);
    const withSummary = await second.client.btcMetrics.range({ body });
    expect(withSummary.days).toEqual(plain.days);
    // A range asked through /api/metrics carries the same summary on the second deployment, none on the first.
    const viaMetrics = await second.client.btcMetrics.metrics({ body });
    expect(viaMetrics).toMatchObject({ kind: 'range', summary: withSummary.summary });
    expect((await first.client.btcMetrics.metrics({ body })).summary).toBeUndefined();
    expect((await second.client.btcMetrics.metrics({ body: { date: '2018-01-18' } })).summary).toBeUndefined();
    const days = withSummary.days;
    const s = withSummary.summary!;
    expect(s.days).toBe(90);
    expect(s.mvrv).toEqual(expectedStats(days, (d) => d.mvrv));
    expect(s.mvrvZScore).toEqual(expectedStats(days, (d) => d.mvrvZScore));
    expect(s.nupl).toEqual(expectedStats(days, (d) => d.nupl));
    expect(s.sopr).toEqual(expectedStats(days, (d) => d.sopr!));
    expect(s.asopr).toEqual(expectedStats(days, (d) => d.asopr!));
    const price = expectedStats(days, (d) => Number(d.priceUsd));
    expect(s.priceUsd).toEqual({
      ...price,
      min: price.min.toFixed(2),
      max: price.max.toFixed(2),
      mean: price.mean.toFixed(2),
      median: price.median.toFixed(2),
      stdDev: price.stdDev.toFixed(2),
      first: price.first.toFixed(2),
      last: price.last.toFixed(2),
      change: (price.change < 0 ? '-' : '') + Math.abs(price.change).toFixed(2),
    });
    // 2018-01-18 is a reference row inside the range
    expect(days.find((d) => d.date === '2018-01-18')!.priceUsd).toBe('11246.04');
  });

  it('latest: the market-cycle interpretation follows the bands', async () => {
    const latest = await second.client.btcMetrics.latest({ body: {} });
    expect(latest.date).toBe('2020-03-29');
    const m = latest.metrics;
    expect(m.mvrv).toBeCloseTo(1.06488351, 8);
    const i = latest.interpretation;
    expect(i.generator).toEqual({ engine: 'builtin', model: 'builtin-rules-v1' });
    // NUPL 0.0609 is hope/fear, MVRV ≥ 1 and Z < 7: accumulation
    expect(i.phase).toBe(cyclePhase(m));
    expect(i.phase).toBe('accumulation');
    const zones = Object.fromEntries(i.signals.map((s) => [s.metric, s.zone]));
    expect(zones).toEqual({
      mvrv: mvrvZone(m.mvrv),
      mvrvZScore: zScoreZone(m.mvrvZScore),
      sopr: soprZone(m.sopr!),
      asopr: soprZone(m.asopr!),
      nupl: 'hope_fear',
    });
    expect(zones.mvrv).toBe('neutral');
    expect(i.signals.map((s) => s.value)).toEqual([m.mvrv, m.mvrvZScore, m.sopr, m.asopr, m.nupl]);
    expect(i.summary).toContain('On 2020-03-29 the metrics point to accumulation');
    expect(i.summary).toContain('nupl 0.061 (hope/fear)');
  });

  it('info: the first deployment lists the date ranges, the second says it summarizes and fetches sequentially', async () => {
    const a = await first.client.btcMetrics.info();
    expect(a.deployment).toEqual({ summaryStatistics: false, sequentialUpstreamFetch: false });
    expect(a.dataMode).toBe('simulated');
    expect(a.limits).toEqual({ maxRangeDays: 366, cacheTtlSeconds: BTC_CACHE_TTL_SECONDS });
    expect(a.metrics.map((m) => m.id)).toEqual(['priceUsd', 'mvrv', 'mvrvZScore', 'sopr', 'asopr', 'nupl']);
    expect(a.availableDateRanges).toEqual(
      ['priceUsd', 'mvrv', 'mvrvZScore', 'sopr', 'asopr', 'nupl'].map((metric) => ({
        metric,
        from: '2015-04-16',
        to: '2020-03-29',
      })),
    );
    const b = await second.client.btcMetrics.info();
    expect(b.deployment).toEqual({ summaryStatistics: true, sequentialUpstreamFetch: true });
    expect(b.availableDateRanges).toBeUndefined();
    expect(a.usage.map((u) => `${u.method} ${u.path}`)).toEqual([
      'POST /api/metrics',
      'POST /api/metrics/range',
      'POST /api/metrics/latest',
      'GET /api/info',
    ]);
  });

  it('a day outside the data is 404 metrics_not_available with the bounds', async () => {
    for (const body of [
      { date: '2015-04-15' },
      { date: '2024-03-14' },
      { startDate: '2015-01-01', endDate: '2015-04-15' },
      { startDate: '2020-03-30', endDate: '2020-04-30' },
    ]) {
      const error = await failure(first.client.btcMetrics.metrics({ body }));
      expect(error).toBeInstanceOf(NotFoundError);
      expect([error.code, error.details]).toEqual([
        'metrics_not_available',
        { earliest: '2015-04-16', latest: '2020-03-29' },
      ]);
    }
    const range = await failure(
      second.client.btcMetrics.range({ body: { startDate: '2021-01-01', endDate: '2021-12-31' } }),
    );
    expect([range.status, range.code, range.details]).toEqual([
      404,
      'metrics_not_available',
      { earliest: '2015-04-16', latest: '2020-03-29' },
    ]);
    // a range that overlaps the data keeps the days it has
    const edge = await second.client.btcMetrics.range({ body: { startDate: '2020-03-28', endDate: '2020-04-28' } });
    expect(edge.days.map((d) => d.date)).toEqual(['2020-03-28', '2020-03-29']);
    expect(edge.summary!.days).toBe(2);
  });

  it('bad dates and bodies are 400 naming the field', async () => {
    const cases: [() => Promise<unknown>, string][] = [
      [() => first.client.btcMetrics.metrics({ body: { date: '2020-02-30' } }), 'body.date'],
      [() => first.client.btcMetrics.metrics({ body: { date: '2020/03/01' } }), 'body.date'],
      [
        () =>
          first.client.btcMetrics.metrics({
            body: { date: '2020-03-01', startDate: '2020-03-01', endDate: '2020-03-02' },
          }),
        'body.date',
      ],
      [() => first.client.btcMetrics.metrics({ body: { startDate: '2020-03-01' } }), 'body.endDate'],
      [() => first.client.btcMetrics.metrics({ body: { endDate: '2020-03-01' } }), 'body.startDate'],
      [
        () => first.client.btcMetrics.metrics({ body: { startDate: '2020-03-02', endDate: '2020-03-01' } }),
        'body.endDate',
      ],
      [
        () => first.client.btcMetrics.range({ body: { startDate: '2019-01-01', endDate: '2020-01-02' } }),
        'body.endDate',
      ],
      [() => first.client.btcMetrics.range({ body: { startDate: '2019-01-01' } as never }), 'body.endDate'],
      [
        () => first.client.btcMetrics.range({ body: { startDate: 20190101, endDate: '2019-02-01' } as never }),
        'body.startDate',
      ],
      [() => first.client.btcMetrics.latest({ body: { date: '2020-03-29' } as never }), 'body.date'],
      [() => first.client.btcMetrics.metrics({ body: { days: 3 } as never }), 'body.days'],
    ];
    for (const [call, field] of cases) {
      const error = await failure(call());
      expect(error).toBeInstanceOf(BadRequestError);
      expect(error.code).toBe('invalid_request');
      expect((error.details as { fields: { field: string }[] }).fields.map((f) => f.field)).toContain(field);
    }
    // 366 days counting both ends is the longest range
    const longest = await first.client.btcMetrics.range({ body: { startDate: '2019-01-01', endDate: '2020-01-01' } });
    expect(longest.days).toHaveLength(366);
  });

  it('health: the embedded provider is ok once read', async () => {
    const health = await healthOf(first.url);
    expect(health).toMatchObject({
      status: 'ok',
      service: 'btc-metrics',
      database: 'ok',
      upstream: { mode: 'simulated', providers: [{ name: 'btc-market-model', status: 'ok' }] },
    });
  });
});

// ---- the live adapter against a local replay of the providers' documented JSON ----------------------------

/**
 * Coin Metrics csv/btc.csv rows (time, PriceUSD, CapMrktCurUSD, CapMVRVCur, SplyCur) as the API returns them: strings.
 */
const CM_ROWS = [
  ['2020-03-24', '6775.05761893629', '123884332494.9688614881683857339', '1.21902362', '18285354.82099991'],
  ['2020-03-25', '6689.96901285798', '122336150605.9674601611104227818', '1.20405859', '18286504.82099991'],
  ['2020-03-26', '6754.46033606078', '123528980419.078971156980783377', '1.21539093', '18288504.82096715'],
  ['2020-03-27', '6490.79541502046', '118719519155.5943182925382261774', '1.168733', '18290442.32096169'],
  ['2020-03-28', '6231.81989023963', '113993258453.1145417390111497747', '1.12273873', '18292129.82096169'],
  ['2020-03-29', '5904.85758679135', '108023566970.5730026188233733815', '1.06488351', '18294017.32096169'],
].map(([time, PriceUSD, CapMrktCurUSD, CapMVRVCur, SplyCur]) => ({
  asset: 'btc',
  time: `${time}T00:00:00.000000000Z`,
  PriceUSD,
  CapMrktCurUSD,
  CapMVRVCur,
  SplyCur,
}));
/** BGeometrics /v1/sopr rows: { d, unixTs, sopr } with the value as a string (illustrative values). */
const BG_ROWS = [
  { d: '2020-03-26', unixTs: '1585180800', sopr: '0.9861' },
  { d: '2020-03-27', unixTs: '1585267200', sopr: '0.9788' },
  { d: '2020-03-28', unixTs: '1585353600', sopr: '0.9702' },
  { d: '2020-03-29', unixTs: '1585440000', sopr: '0.9655' },
];

interface Replay {
  url: string;
  requests: string[];
  maxInFlight: number;
  /** 'ok', or which provider answers 503. */
  failing: 'none' | 'coinmetrics' | 'bgeometrics';
  /** Hold each response until this many requests are in flight (or 2 s pass). */
  holdUntil: number;
  reset(): void;
  close(): Promise<void>;
}

async function startReplay(): Promise<Replay> {
  let inFlight = 0;
  const waiters: (() => void)[] = [];
  const state = {
    url: '',
    requests: [] as string[],
    maxInFlight: 0,
    failing: 'none' as Replay['failing'],
    holdUntil: 1,
  };
  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url!, state.url);
    if (url.pathname === '/v4/timeseries/asset-metrics') {
      if (state.failing === 'coinmetrics')
        return send(res, 503, { error: { type: 'unavailable', message: 'Service unavailable' } });
      const end = url.searchParams.get('end_time');
      const rows = CM_ROWS.filter((r) => !end || r.time.slice(0, 10) <= end);
      // Two pages of at most 4 rows: the second is reached through next_page_url.
      const offset = Number(url.searchParams.get('next_page_token') ?? '0');
      const page = rows.slice(offset, offset + 4);
      const next =
        offset + 4 < rows.length
          ? {
              next_page_token: String(offset + 4),
              next_page_url: `${state.url}/v4/timeseries/asset-metrics?${url.searchParams}&next_page_token=${offset + 4}`,
            }
          : {};
      return send(res, 200, { data: page, ...next });
    }
    if (url.pathname === '/v1/sopr') {
      if (state.failing === 'bgeometrics') return send(res, 429, { error: 'Too many requests' });
      const from = url.searchParams.get('startday') ?? '0000';
      const to = url.searchParams.get('endday') ?? '9999';
      return send(
        res,
        200,
        BG_ROWS.filter((r) => r.d >= from && r.d <= to),
      );
    }
    send(res, 404, { error: 'not found' });
  };
  const local = await listenLocal((req, res) => {
    state.requests.push(new URL(req.url!, 'http://x').pathname);
    inFlight += 1;
    state.maxInFlight = Math.max(state.maxInFlight, inFlight);
    const release = () => {
      inFlight -= 1;
      handle(req, res);
    };
    if (inFlight >= state.holdUntil) {
      for (const w of waiters.splice(0)) w();
      // a short pause so that overlapping requests would show
      setTimeout(release, 15);
    } else {
      const waiter = () => {
        clearTimeout(timer);
        setTimeout(release, 15);
      };
      const timer = setTimeout(() => {
        waiters.splice(waiters.indexOf(waiter), 1);
        release();
      }, 2000);
      waiters.push(waiter);
    }
  });
  state.url = local.url;
  return Object.assign(state, {
    reset() {
      state.requests = [];
      state.maxInFlight = 0;
      state.failing = 'none';
      state.holdUntil = 1;
    },
    close: local.close,
  });
}

describe('the live adapter (Coin Metrics + BGeometrics) against a local replay', () => {
  let replay: Replay;
  let first: RunningService;
  let second: RunningService;
  const live = (deployment: 'first' | 'second'): BtcMetricsOptions => ({
    deployment,
    market: 'live',
    coinMetricsUrl: `${replay.url}/v4`,
    bgeometricsUrl: replay.url,
    now: () => Date.parse('2020-03-30T12:00:00.000Z'),
  });

  beforeAll(async () => {
    replay = await startReplay();
    first = await start(live('first'));
    second = await start(live('second'));
  });
  afterAll(async () => {
    await Promise.all([first?.close(), second?.close()]);
    await replay?.close();
  });

  it('reads price, MC and MVRV from Coin Metrics (two pages), RC = MC / MVRV, SOPR from BGeometrics; the hour after, from the cache', async () => {
    replay.reset();
    const one = await first.client.btcMetrics.metrics({ body: { date: '2020-03-29' } });
    expect(replay.requests.sort()).toEqual([
      '/v1/sopr',
      '/v4/timeseries/asset-metrics',
      '/v4/timeseries/asset-metrics',
    ]);
    const day = one.days[0]!;
    expect(day.priceUsd).toBe('5904.85758679135'); // the upstream's decimal, verbatim
    expect(day.marketCapUsd).toBe('108023566970.57');
    // Coin Metrics' own CapRealUSD that day is 101441674688.99; CapMVRVCur has 8 decimals, so RC agrees to 1e-8
    expect(Math.abs(Number(day.realizedCapUsd) / 101_441_674_688.99 - 1)).toBeLessThan(1e-8);
    expect(day.realizedPriceUsd).toBe((Number(day.realizedCapUsd) / 18_294_017.32096169).toFixed(2));
    expect(day.mvrv).toBeCloseTo(1.06488351, 12);
    expect(day.nupl).toBeCloseTo(1 - 1 / 1.06488351, 12);
    // Z over the six replayed market caps (the first day of this upstream's data through 2020-03-29)
    const caps = CM_ROWS.map((r) => Number(r.CapMrktCurUSD));
    expect(day.mvrvZScore).toBeCloseTo((caps[5]! - caps[5]! / 1.06488351) / populationStdDev(caps), 9);
    expect([day.sopr, day.asopr]).toEqual([0.9655, null]); // no free source publishes aSOPR
    expect(one.source).toMatchObject({ mode: 'live', providers: ['coinmetrics', 'bgeometrics'] });
    expect(one.cache.hit).toBe(false);

    const again = await first.client.btcMetrics.metrics({ body: { date: '2020-03-29' } });
    expect(again.cache.hit).toBe(true);
    expect(again.days).toEqual(one.days);
    expect(replay.requests).toHaveLength(3); // nothing more went upstream
  });

  it('a range, the latest day and info from the upstream; a day before the data is 404 with the bounds', async () => {
    const range = await second.client.btcMetrics.range({ body: { startDate: '2020-03-20', endDate: '2020-03-29' } });
    expect(range.days.map((d) => d.date)).toEqual([
      '2020-03-25',
      '2020-03-26',
      '2020-03-27',
      '2020-03-28',
      '2020-03-29',
    ]);
    expect(range.days.map((d) => d.sopr)).toEqual([null, 0.9861, 0.9788, 0.9702, 0.9655]);
    expect(range.summary!.sopr).toMatchObject({
      count: 4,
      min: 0.9655,
      minDate: '2020-03-29',
      max: 0.9861,
      maxDate: '2020-03-26',
      first: 0.9861,
      last: 0.9655,
    });
    expect(range.summary!.priceUsd).toMatchObject({
      count: 5,
      min: '5904.86',
      max: '6754.46',
      first: '6689.97',
      last: '5904.86',
      change: '-785.11',
    });
    expect(range.summary!.asopr).toBeNull();

    const latest = await first.client.btcMetrics.latest({ body: {} });
    expect(latest.date).toBe('2020-03-29');
    expect(latest.interpretation.phase).toBe('accumulation');
    expect(latest.interpretation.signals.map((s) => s.metric)).toEqual(['mvrv', 'mvrvZScore', 'sopr', 'nupl']);

    const info = await first.client.btcMetrics.info();
    expect(info.dataMode).toBe('live');
    expect(info.availableDateRanges).toEqual([
      { metric: 'priceUsd', from: '2020-03-25', to: '2020-03-29' },
      { metric: 'mvrv', from: '2020-03-25', to: '2020-03-29' },
      { metric: 'mvrvZScore', from: '2020-03-25', to: '2020-03-29' },
      { metric: 'sopr', from: '2020-03-26', to: '2020-03-29' },
      { metric: 'nupl', from: '2020-03-25', to: '2020-03-29' },
    ]);

    const before = await failure(first.client.btcMetrics.metrics({ body: { date: '2019-12-31' } }));
    expect([before.status, before.code, before.details]).toEqual([
      404,
      'metrics_not_available',
      { earliest: '2020-03-25', latest: '2020-03-29' },
    ]);
  });

  it('the second deployment has at most one upstream request in flight; the first sends its reads at once', async () => {
    replay.reset();
    const bodies = [{ date: '2020-03-25' }, { date: '2020-03-26' }, { date: '2020-03-27' }];
    await Promise.all(bodies.map((body) => second.client.btcMetrics.metrics({ body })));
    // per request: one Coin Metrics page (≤ 4 rows through its date) and one SOPR read
    expect(replay.requests).toHaveLength(6);
    expect(replay.maxInFlight).toBe(1);

    replay.reset();
    replay.holdUntil = 2; // answer only once two requests overlap (or after 2 s)
    await first.client.btcMetrics.metrics({ body: { date: '2020-03-28' } });
    expect(replay.maxInFlight).toBe(2);
  });

  it('a failing Coin Metrics is 502 upstream_unavailable with Retry-After and health degraded; a failing BGeometrics drops SOPR, uncached', async () => {
    replay.reset();
    replay.failing = 'coinmetrics';
    const error = await failure(second.client.btcMetrics.metrics({ body: { date: '2020-03-28' } }));
    expect(error).toBeInstanceOf(InternalServerError);
    expect([error.status, error.code]).toEqual([502, 'upstream_unavailable']);
    expect(error.headers['retry-after']).toBe('5');
    const degraded = await healthOf(second.url);
    expect(degraded).toMatchObject({ status: 'degraded', service: 'btc-metrics-2', upstream: { mode: 'live' } });
    expect(degraded.upstream.providers.find((p) => p.name === 'coinmetrics')!.status).toBe('failing');

    replay.failing = 'bgeometrics';
    const partial = await second.client.btcMetrics.metrics({ body: { date: '2020-03-28' } });
    expect([partial.days[0]!.sopr, partial.source.providers, partial.cache.hit]).toEqual([
      null,
      ['coinmetrics'],
      false,
    ]);
    const health = await healthOf(second.url);
    expect(health.status).toBe('degraded');
    expect(Object.fromEntries(health.upstream.providers.map((p) => [p.name, p.status]))).toEqual({
      coinmetrics: 'ok',
      bgeometrics: 'failing',
    });

    replay.failing = 'none';
    const whole = await second.client.btcMetrics.metrics({ body: { date: '2020-03-28' } });
    expect([whole.days[0]!.sopr, whole.cache.hit]).toEqual([0.9702, false]); // the partial answer was not kept
    expect((await healthOf(second.url)).status).toBe('ok');
  });
});

describe('a paid call through the local economy', () => {
  let economy: Economy;
  let replay: Replay;
  let paid: RunningService;

  beforeAll(async () => {
    economy = await startEconomy();
    replay = await startReplay();
    paid = await economy.startPaidService(
      (c) =>
        createBtcMetricsApp(c, {
          deployment: 'second',
          market: 'live',
          coinMetricsUrl: `${replay.url}/v4`,
          bgeometricsUrl: replay.url,
        }),
      { id: 'btc-metrics' },
    );
  }, 60_000);
  afterAll(async () => {
    await economy?.close();
    await replay?.close();
  });

  it('charges 0.005 USD for a range; a 404 day and a failing upstream charge nothing', async () => {
    const client = createClient({
      baseUrls: { 'btc-metrics': paid.url },
      wallet: await walletFromSecretKey(economy.buyer.secretKey),
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    });
    const seller = paid.context.wallet.address;
    const balances = () =>
      [economy.ledger.tokenBalance(economy.buyer.address), economy.ledger.tokenBalance(seller)] as const;
    const before = balances();
    const response = await client.btcMetrics.range.withResponse({
      body: { startDate: '2020-03-26', endDate: '2020-03-29' },
    });
    expect(response.payment).toMatchObject({
      amountUsd: '0.005',
      amount: '5000',
      payTo: seller,
      payer: economy.buyer.address,
    });
    expect(response.data.days).toHaveLength(4);
    expect(response.data.summary!.days).toBe(4);
    expect(balances()).toEqual([before[0] - 5000n, before[1] + 5000n]);

    const missing = await failure(client.btcMetrics.metrics({ body: { date: '2019-01-01' } }));
    expect(missing.status).toBe(404);
    replay.failing = 'coinmetrics';
    const down = await failure(client.btcMetrics.latest({ body: {} }));
    expect([down.status, down.code]).toEqual([502, 'upstream_unavailable']);
    expect(balances()).toEqual([before[0] - 5000n, before[1] + 5000n]);
    // Both were paid up front and refused before the paywall: the budget holds nothing for them.
    expect(client.payments.pending).toEqual([]);
    expect(client.payments.spentUsd()).toBe('0.005');
  }, 60_000);
});
