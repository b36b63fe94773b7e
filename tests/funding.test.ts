import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataServiceHealth } from '@agent-economy/contracts';
import {
  BadRequestError,
  InternalServerError,
  NotFoundError,
  createClient,
  walletFromSecretKey,
} from '@agent-economy/sdk';
import { createFundingApp, type FundingOptions } from '../servers/src/services/funding';
import { encodeCursor, usd } from '../servers/src/services/funding/domain';
import {
  MarketModel,
  PERP_EXCHANGES,
  SIMULATED_VENUES,
  simulatedQuote,
  type PerpExchange,
  type PerpQuote,
  type PerpVenue,
} from '../servers/src/upstream/market';
import type { ServiceContext } from '../servers/src/runtime/context';
import { startEconomy, type Economy } from './support/economy';
import { listenLocal, startService, type RunningService } from './support/servers';

// The funding-rate scanner on the embedded market model (read at a fixed instant, so every figure is recomputed
// here from an independent MarketModel), and on live adapters pointed at a local server that replays each
// exchange's documented response format (the exchanges themselves cannot be reached from here).

const FREE = { kind: 'fixed', usd: '0' } as const;
const ZERO_PRICES = { scan: FREE, squeeze: FREE, asset: FREE };
const NOW = Date.parse('2026-11-22T09:00:30.000Z');
const MINUTE_OF_NOW = Date.parse('2026-11-22T09:00:00.000Z');
const EMBEDDED: FundingOptions = { market: 'simulated', now: () => NOW };

const factory =
  (options: FundingOptions, prices: Record<string, typeof FREE> | undefined = ZERO_PRICES) =>
  (c: ServiceContext) =>
    createFundingApp({ ...c, ...(prices ? { prices } : {}) }, options);

/** The service's /health body (the runtime's route, outside the contract: the spec lists no health endpoint here). */
async function healthOf(running: RunningService): Promise<DataServiceHealth> {
  const response = await fetch(`${running.url}/health`);
  expect(response.status).toBe(200);
  return (await response.json()) as DataServiceHealth;
}

const f8 = (q: PerpQuote) => (q.fundingRate / q.fundingIntervalHours) * 8;

// ---------------------------------------------------------------------------------------------------------------
// Formulas on hand-computed inputs

// ---------------------------------------------------------------------------------------------------------------
// Embedded market

describe('on the simulated market model', () => {
  let service: RunningService;
  const model = new MarketModel();
  let all: PerpQuote[];
  const funding = () => service.client.funding;

  beforeAll(async () => {
    service = await startService(factory(EMBEDDED), { id: 'funding' });
    // What the service answers: the model's contracts on neutral venues under neutral instrument names.
    all = model.perpetuals(MINUTE_OF_NOW, { history: true }).map(simulatedQuote);
  });
  afterAll(() => service?.close());

  it('overview: totals, per-exchange stats and sentiment equal the model’s', async () => {
    const o = await funding().overview();
    expect(o.source).toEqual({ mode: 'simulated', providers: ['market-model'], asOf: '2026-11-22T09:00:00.000Z' });
    expect(o.perpetualPairs).toBe(all.length);
    expect(o.perpetualPairs).toBeGreaterThan(2000);
    expect(o.assets).toBe(640);
    const totalOi = all.reduce((a, q) => a + q.openInterestUsd, 0);
    expect(Number(o.totalOpenInterestUsd)).toBeCloseTo(totalOi, 1);
    expect(o.exchanges.map((e) => e.exchange)).toEqual([...SIMULATED_VENUES]);
    for (const e of o.exchanges) {
      const rows = all.filter((q) => q.exchange === e.exchange);
      expect(e).toMatchObject({
        status: 'ok',
        perpetualPairs: rows.length,
        positiveFundingPairs: rows.filter((q) => q.fundingRate > 0).length,
        negativeFundingPairs: rows.filter((q) => q.fundingRate < 0).length,
      });
      const w =
        rows.reduce((a, q) => a + f8(q) * q.openInterestUsd, 0) / rows.reduce((a, q) => a + q.openInterestUsd, 0);
      expect(e.weightedFundingRate8h).toBeCloseTo(w, 12);
    }
    const weighted = all.reduce((a, q) => a + f8(q) * q.openInterestUsd, 0) / totalOi;
    expect(o.sentiment.weightedFundingRate8h).toBeCloseTo(weighted, 12);
    expect(o.sentiment.score).toBeCloseTo(Math.max(-100, Math.min(100, ((weighted - 0.0001) / 0.0004) * 100)), 2);
    const longsPaying = all.filter((q) => q.fundingRate > 0).reduce((a, q) => a + q.openInterestUsd, 0);
    expect(o.sentiment.longsPayingOpenInterestPercent).toBeCloseTo((longsPaying / totalOi) * 100, 3);
  });

  it('scan: rows carry the contract’s formulas, filters apply, pages join up without gaps', async () => {
    const filters = { exchanges: ['venue-a', 'venue-g'] as PerpVenue[], minOpenInterestUsd: '20000000' };
    const expected = all.filter((q) => filters.exchanges.includes(q.exchange) && q.openInterestUsd >= 20_000_000);
    const seen: Awaited<ReturnType<ReturnType<typeof funding>['scan']>>['items'] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await funding().scan({
        body: { ...filters, sortBy: 'absFundingRate', limit: 100, ...(cursor ? { cursor } : {}) },
      });
      expect(page.total).toBe(expected.length);
      expect(page.exchangesScanned).toEqual(['venue-a', 'venue-g']);
      seen.push(...page.items);
      cursor = page.nextCursor ?? undefined;
      pages++;
    } while (cursor);
    expect(pages).toBe(Math.ceil(expected.length / 100));
    expect(seen).toHaveLength(expected.length);
    expect(new Set(seen.map((r) => `${r.exchange}:${r.symbol}`)).size).toBe(expected.length);
    for (let i = 1; i < seen.length; i++)
      expect(Math.abs(seen[i - 1]!.fundingRate8h)).toBeGreaterThanOrEqual(Math.abs(seen[i]!.fundingRate8h));
    for (const row of seen) {
      const q = expected.find((e) => e.exchange === row.exchange && e.symbol === row.symbol)!;
      expect(row.asset).toBe(q.asset);
      expect(row.fundingRate).toBeCloseTo(q.fundingRate, 14);
      expect(row.fundingRate8h).toBeCloseTo((row.fundingRate / row.fundingIntervalHours) * 8, 14);
      expect(row.annualizedFundingRate).toBeCloseTo(row.fundingRate * (24 / row.fundingIntervalHours) * 365, 10);
      expect(Number(row.openInterestUsd)).toBeGreaterThanOrEqual(20_000_000);
      // Prices keep 8 significant digits.
      expect(Math.abs(Number(row.markPrice) / q.markPrice - 1)).toBeLessThan(1e-7);
      expect(row.basis).toBeCloseTo((q.markPrice - q.indexPrice!) / q.indexPrice!, 10);
      expect(row.squeezeRiskScore).toBeGreaterThanOrEqual(0);
      expect(row.squeezeRiskScore).toBeLessThanOrEqual(100);
    }
    // venue-g is the model's hourly-funding venue profile.
    const hl = seen.find((r) => r.exchange === 'venue-g')!;
    expect(hl.fundingIntervalHours).toBe(1);
    expect(Date.parse(hl.nextFundingTime!)).toBe(Date.parse('2026-11-22T10:00:00.000Z'));
  });

  it('scan: asset filter, sort orders, and the default page', async () => {
    const page = await funding().scan({ body: { assets: ['btc', 'ETH'], sortBy: 'openInterest', limit: 100 } });
    expect(page.total).toBe(all.filter((q) => q.asset === 'BTC' || q.asset === 'ETH').length);
    expect(page.total).toBe(18);
    expect(new Set(page.items.map((r) => r.asset))).toEqual(new Set(['BTC', 'ETH']));
    for (let i = 1; i < page.items.length; i++)
      expect(Number(page.items[i - 1]!.openInterestUsd)).toBeGreaterThanOrEqual(Number(page.items[i]!.openInterestUsd));
    const first = page.items[0]!;
    const top = all
      .filter((q) => q.asset === 'BTC' || q.asset === 'ETH')
      .sort((a, b) => b.openInterestUsd - a.openInterestUsd)[0]!;
    expect([first.exchange, first.symbol]).toEqual([top.exchange, top.symbol]);

    const byRate = await funding().scan({ body: { sortBy: 'fundingRate' } });
    expect(byRate.items).toHaveLength(20);
    expect(byRate.total).toBe(all.length);
    expect(byRate.items[0]!.fundingRate8h).toBeCloseTo(Math.max(...all.map(f8)), 12);
    const byRisk = await funding().scan({ body: { sortBy: 'squeezeRisk', limit: 5 } });
    for (let i = 1; i < 5; i++)
      expect(byRisk.items[i - 1]!.squeezeRiskScore).toBeGreaterThanOrEqual(byRisk.items[i]!.squeezeRiskScore);
  });

  it('scan: a cursor from other filters, or not ours, is 400 invalid_cursor', async () => {
    const page = await funding().scan({ body: { exchanges: ['venue-e'], limit: 10 } });
    const other = await funding()
      .scan({ body: { exchanges: ['venue-f'], limit: 10, cursor: page.nextCursor! } })
      .catch((e) => e);
    expect(other).toBeInstanceOf(BadRequestError);
    expect(other).toMatchObject({ code: 'invalid_cursor' });
    expect((other as BadRequestError).fields.map((f) => f.field)).toEqual(['body.cursor']);
    const junk = await funding()
      .scan({ body: { cursor: 'bm90LWEtY3Vyc29y' } })
      .catch((e) => e);
    expect(junk).toMatchObject({ status: 400, code: 'invalid_cursor' });
    // A cursor older than an hour has expired (the market would have to be re-simulated at its instant).
    const stale = encodeCursor(10, NOW - 2 * 3_600_000, {
      exchanges: ['venue-e'],
      minOpenInterestUsd: '0',
      sortBy: 'absFundingRate',
    });
    const expired = await funding()
      .scan({ body: { exchanges: ['venue-e'], limit: 10, cursor: stale } })
      .catch((e) => e);
    expect(expired).toMatchObject({ status: 400, code: 'invalid_cursor' });
    expect((expired as BadRequestError).message).toContain('expired');
    // The same filters with another page size are fine.
    const next = await funding().scan({ body: { exchanges: ['venue-e'], limit: 5, cursor: page.nextCursor! } });
    expect(next.items).toHaveLength(5);
  });

  it('squeeze: ranked candidates whose figures recompute from the model, with builtin commentary', async () => {
    const r = await funding().squeeze({ body: { limit: 50, minRiskScore: 40 } });
    expect(r.generator).toEqual({ engine: 'builtin', model: 'builtin-rules-v1' });
    expect(r.thresholds).toEqual({ annualizedFundingRate: 0.3, fundingZScore: 2 });
    expect(r.assetsScanned).toBe(640);
    expect(r.candidates.length).toBeGreaterThan(5);
    expect(r.summary).toContain(`${r.candidates.length} squeeze candidate`);
    r.candidates.forEach((c, i) => {
      expect(c.rank).toBe(i + 1);
      if (i > 0) expect(r.candidates[i - 1]!.riskScore).toBeGreaterThanOrEqual(c.riskScore);
      expect(c.riskScore).toBeGreaterThanOrEqual(40);
      const { funding: fc, openInterest, premium, longShort } = c.components;
      expect(c.riskScore).toBeCloseTo(fc + openInterest + premium + longShort, 6);
      expect(c.direction).toBe(c.weightedFundingRate8h > 0 ? 'long_squeeze' : 'short_squeeze');
      expect(Math.abs(c.annualizedFundingRate) >= 0.3 || Math.abs(c.fundingZScore!) >= 2).toBe(true);
      expect(c.commentary).toContain(c.asset);
    });
    // The top candidate, recomputed from the model's contracts and their 30-day settlement history.
    const top = r.candidates[0]!;
    const rows = all.filter((q) => q.asset === top.asset);
    const oi = rows.reduce((a, q) => a + q.openInterestUsd, 0);
    const weighted = rows.reduce((a, q) => a + f8(q) * q.openInterestUsd, 0) / oi;
    expect(top.weightedFundingRate8h).toBeCloseTo(weighted, 12);
    expect(top.annualizedFundingRate).toBeCloseTo(weighted * 1095, 10);
    expect(top.exchanges).toEqual(SIMULATED_VENUES.filter((e) => rows.some((q) => q.exchange === e)));
    const past = rows[0]!.history!.fundingRate8h.map((_, k) => {
      const w = rows.reduce((a, q) => a + q.history!.openInterestUsd[k]!, 0);
      return rows.reduce((a, q) => a + q.history!.fundingRate8h[k]! * q.history!.openInterestUsd[k]!, 0) / w;
    });
    const mean = past.reduce((a, b) => a + b, 0) / past.length;
    const sd = Math.sqrt(past.reduce((a, b) => a + (b - mean) ** 2, 0) / past.length);
    expect(top.fundingZScore).toBeCloseTo((weighted - mean) / sd, 3);
    expect(top.components.funding).toBeCloseTo(40 * Math.min(1, Math.abs((weighted - mean) / sd) / 3), 2);
    const before = rows.reduce((a, q) => a + q.openInterestUsd24hAgo!, 0);
    expect(top.openInterestChange24hPercent).toBeCloseTo(((oi - before) / before) * 100, 3);
    expect(top.longShortRatio).toBeCloseTo(rows.find((q) => q.exchange === 'venue-a')?.longShortRatio ?? NaN, 3);

    const shorts = await funding().squeeze({ body: { direction: 'short_squeeze', minRiskScore: 0, limit: 50 } });
    expect(shorts.candidates.length).toBeGreaterThan(0);
    for (const c of shorts.candidates) expect(c.direction).toBe('short_squeeze');
    const none = await funding().squeeze({ body: { assets: ['BTC'], minRiskScore: 100 } });
    expect(none.candidates).toEqual([]);
    expect(none.assetsScanned).toBe(1);
    expect(none.summary).toContain('No asset among 1 scanned');
  });

  it('asset: one asset across its venues, OI-weighted funding computed here', async () => {
    const v = await funding().asset({ params: { symbol: 'eth' }, body: {} });
    const rows = all.filter((q) => q.asset === 'ETH');
    const oi = rows.reduce((a, q) => a + q.openInterestUsd, 0);
    const weighted = rows.reduce((a, q) => a + f8(q) * q.openInterestUsd, 0) / oi;
    expect(v.asset).toBe('ETH');
    expect(v.venues).toHaveLength(9);
    expect(v.weightedFundingRate8h).toBeCloseTo(weighted, 12);
    expect(v.weightedAnnualizedFundingRate).toBeCloseTo(weighted * 3 * 365, 10);
    expect(Number(v.totalOpenInterestUsd)).toBeCloseTo(oi, 1);
    expect(v.venues.reduce((a, x) => a + x.openInterestSharePercent, 0)).toBeCloseTo(100, 2);
    for (let i = 1; i < v.venues.length; i++)
      expect(v.venues[i - 1]!.fundingRate8h).toBeGreaterThanOrEqual(v.venues[i]!.fundingRate8h);
    expect(v.fundingSpread8h).toEqual({
      highest: v.venues[0]!.fundingRate8h,
      highestExchange: v.venues[0]!.exchange,
      lowest: v.venues[8]!.fundingRate8h,
      lowestExchange: v.venues[8]!.exchange,
    });
    expect(v.squeezeRisk.score).toBeCloseTo(
      Object.values(v.squeezeRisk.components).reduce((a, b) => a + b, 0),
      6,
    );
    expect(v.source.mode).toBe('simulated');

    const two = await funding().asset({ params: { symbol: 'ETH' }, body: { exchanges: ['venue-c', 'venue-h'] } });
    expect(two.venues.map((x) => x.exchange).sort()).toEqual(['venue-c', 'venue-h']);
    const pair = rows.filter((q) => q.exchange === 'venue-c' || q.exchange === 'venue-h');
    expect(two.weightedFundingRate8h).toBeCloseTo(
      pair.reduce((a, q) => a + f8(q) * q.openInterestUsd, 0) / pair.reduce((a, q) => a + q.openInterestUsd, 0),
      12,
    );
    // The long/short account ratio is the asset's (the first venue publishes it), whichever venues are selected.
    const ls = rows.find((q) => q.exchange === 'venue-a')!.longShortRatio!;
    const side = two.weightedFundingRate8h >= 0 ? (ls - 1) / 1 : (1 - ls) / 0.3;
    expect(two.squeezeRisk.components.longShort).toBeCloseTo(20 * Math.min(1, Math.max(0, side)), 2);
  });

  it('asset: 404 asset_not_found for an unlisted ticker or none of the selected venues', async () => {
    const unknown = await funding()
      .asset({ params: { symbol: 'NOTACOIN1' }, body: {} })
      .catch((e) => e);
    expect(unknown).toBeInstanceOf(NotFoundError);
    expect(unknown).toMatchObject({ code: 'asset_not_found', details: { symbol: 'NOTACOIN1' } });
    const tail = model.assets.find((a) => !a.exchanges.includes('deribit') && !a.core)!;
    const off = await funding()
      .asset({ params: { symbol: tail.symbol }, body: { exchanges: ['venue-i'] } })
      .catch((e) => e);
    expect(off).toMatchObject({ status: 404, code: 'asset_not_found' });
  });

  it('never names a real exchange or a real venue’s instrument, and refuses real venues it does not serve', async () => {
    const page = await funding().scan({ body: { sortBy: 'openInterest', limit: 100 } });
    const text = JSON.stringify([
      page,
      await funding().overview(),
      await funding().asset({ params: { symbol: 'BTC' }, body: {} }),
    ]);
    for (const real of PERP_EXCHANGES) expect(text).not.toContain(`"${real}"`);
    expect(text).not.toMatch(/BTCUSDT|BTC-PERPETUAL|BTC-USDT-SWAP/);
    expect(page.items[0]!.symbol).toMatch(/^[A-Z0-9]+-(USDT|USDC|USD)-PERP$/);
    const real = await funding()
      .scan({ body: { exchanges: ['binance', 'venue-b'] } })
      .catch((e) => e);
    expect(real).toMatchObject({ status: 422, code: 'venue_not_served', details: { venues: ['binance'] } });
  });

  it('health: ok, reading the market model', async () => {
    const h = await healthOf(service);
    expect(h).toMatchObject({
      status: 'ok',
      service: 'funding',
      database: 'ok',
      upstream: { mode: 'simulated', providers: [{ name: 'market-model', status: 'ok' }] },
    });
  });

  describe('bad input: 400 naming the field, before anything is computed or charged', () => {
    const cases: [string, string, () => Promise<unknown>, string][] = [
      [
        'scan',
        'unknown exchange',
        () => funding().scan({ body: { exchanges: ['kraken' as PerpExchange] } }),
        'body.exchanges.0',
      ],
      ['scan', 'no exchanges', () => funding().scan({ body: { exchanges: [] } }), 'body.exchanges'],
      ['scan', 'bad ticker', () => funding().scan({ body: { assets: ['BT-C'] } }), 'body.assets.0'],
      [
        'scan',
        'negative minimum',
        () => funding().scan({ body: { minOpenInterestUsd: '-5' } }),
        'body.minOpenInterestUsd',
      ],
      [
        'scan',
        'numeric minimum',
        () => funding().scan({ body: { minOpenInterestUsd: 5 as unknown as string } }),
        'body.minOpenInterestUsd',
      ],
      ['scan', 'sort key', () => funding().scan({ body: { sortBy: 'price' as 'volume' } }), 'body.sortBy'],
      ['scan', 'zero limit', () => funding().scan({ body: { limit: 0 } }), 'body.limit'],
      ['scan', 'limit 101', () => funding().scan({ body: { limit: 101 } }), 'body.limit'],
      ['scan', 'fractional limit', () => funding().scan({ body: { limit: 1.5 } }), 'body.limit'],
      ['scan', 'empty cursor', () => funding().scan({ body: { cursor: '' } }), 'body.cursor'],
      ['scan', 'unknown field', () => funding().scan({ body: { venue: 'x' } as never }), 'body.venue'],
      ['squeeze', 'direction', () => funding().squeeze({ body: { direction: 'up' as 'both' } }), 'body.direction'],
      ['squeeze', 'score above 100', () => funding().squeeze({ body: { minRiskScore: 101 } }), 'body.minRiskScore'],
      ['squeeze', 'limit 51', () => funding().squeeze({ body: { limit: 51 } }), 'body.limit'],
      [
        'squeeze',
        '51 assets',
        () => funding().squeeze({ body: { assets: Array.from({ length: 51 }, (_, i) => `A${i}`) } }),
        'body.assets',
      ],
      ['asset', 'bad symbol', () => funding().asset({ params: { symbol: 'B$C' }, body: {} }), 'params.symbol'],
      [
        'asset',
        'unknown exchange',
        () => funding().asset({ params: { symbol: 'BTC' }, body: { exchanges: ['ftx' as PerpExchange] } }),
        'body.exchanges.0',
      ],
      [
        'asset',
        'unknown field',
        () => funding().asset({ params: { symbol: 'BTC' }, body: { depth: 1 } as never }),
        'body.depth',
      ],
    ];
    for (const [route, what, call, field] of cases) {
      it(`${route}: ${what} → 400 naming ${field}`, async () => {
        const error = await call().catch((e) => e);
        expect(error).toBeInstanceOf(BadRequestError);
        expect((error as BadRequestError).code).toBe('invalid_request');
        expect((error as BadRequestError).fields.map((f) => f.field)).toContain(field);
      });
    }
  });
});

describe('determinism across replicas', () => {
  it('answers the same for the same seed and instant, and differently for another seed', async () => {
    const [a, b, c] = await Promise.all([
      startService(factory(EMBEDDED), { id: 'funding' }),
      startService(factory(EMBEDDED), { id: 'funding' }),
      startService(factory({ ...EMBEDDED, seed: 'another-market' }), { id: 'funding' }),
    ]);
    try {
      const body = { sortBy: 'squeezeRisk' as const, limit: 50 };
      const [scanA, scanB, scanC] = await Promise.all([
        a.client.funding.scan({ body }),
        b.client.funding.scan({ body }),
        c.client.funding.scan({ body }),
      ]);
      expect(scanB).toEqual(scanA);
      expect(scanC.items).not.toEqual(scanA.items);
      // A cursor from one replica continues on another.
      const nextB = await b.client.funding.scan({ body: { ...body, cursor: scanA.nextCursor! } });
      const nextA = await a.client.funding.scan({ body: { ...body, cursor: scanA.nextCursor! } });
      expect(nextB).toEqual(nextA);
      const [sqA, sqB] = await Promise.all([a, b].map((s) => s.client.funding.squeeze({ body: {} })));
      expect(sqB).toEqual(sqA);
    } finally {
      await Promise.all([a, b, c].map((s) => s.close()));
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Live adapters against a replay of each exchange's documented responses

const NEXT_8H = 1_763_827_200_000; // 2025-11-22T16:00:00Z

/** Each venue's documented response bodies, by path and query, as its public API returns them. */
const REPLAY: Record<PerpExchange, Record<string, unknown>> = {
  binance: {
    '/fapi/v1/premiumIndex': [
      {
        symbol: 'BTCUSDT',
        markPrice: '95010.00000000',
        indexPrice: '95000.00000000',
        estimatedSettlePrice: '95001.10',
        lastFundingRate: '0.00010000',
        interestRate: '0.00010000',
        nextFundingTime: NEXT_8H,
        time: NEXT_8H - 3_600_000,
      },
      {
        symbol: 'ETHUSDT',
        markPrice: '3400.50',
        indexPrice: '3400.00',
        estimatedSettlePrice: '3400.10',
        lastFundingRate: '0.00030000',
        interestRate: '0.00010000',
        nextFundingTime: NEXT_8H,
        time: NEXT_8H - 3_600_000,
      },
      {
        symbol: '1000PEPEUSDT',
        markPrice: '0.0180000',
        indexPrice: '0.0179000',
        estimatedSettlePrice: '0.0179',
        lastFundingRate: '-0.00050000',
        interestRate: '0.00010000',
        nextFundingTime: NEXT_8H,
        time: NEXT_8H - 3_600_000,
      },
      {
        symbol: 'BTCUSDT_251226',
        markPrice: '96000',
        indexPrice: '95000',
        estimatedSettlePrice: '95000',
        lastFundingRate: '',
        interestRate: '',
        nextFundingTime: 0,
        time: NEXT_8H - 3_600_000,
      },
    ],
    '/fapi/v1/ticker/24hr': [
      {
        symbol: 'BTCUSDT',
        priceChange: '2300',
        priceChangePercent: '2.500',
        lastPrice: '95010',
        volume: '150000',
        quoteVolume: '15000000000.00',
      },
      {
        symbol: 'ETHUSDT',
        priceChange: '60',
        priceChangePercent: '1.800',
        lastPrice: '3400.5',
        volume: '2000000',
        quoteVolume: '6800000000.00',
      },
      {
        symbol: '1000PEPEUSDT',
        priceChange: '0.001',
        priceChangePercent: '-7.000',
        lastPrice: '0.018',
        volume: '50000000000',
        quoteVolume: '900000000.00',
      },
    ],
    '/fapi/v1/fundingInfo': [
      {
        symbol: '1000PEPEUSDT',
        adjustedFundingRateCap: '0.02000000',
        adjustedFundingRateFloor: '-0.02000000',
        fundingIntervalHours: 4,
        disclaimer: false,
      },
    ],
    '/fapi/v1/openInterest?symbol=BTCUSDT': {
      openInterest: '100000.000',
      symbol: 'BTCUSDT',
      time: NEXT_8H - 3_600_000,
    },
    '/fapi/v1/openInterest?symbol=ETHUSDT': {
      openInterest: '1000000.000',
      symbol: 'ETHUSDT',
      time: NEXT_8H - 3_600_000,
    },
    '/fapi/v1/openInterest?symbol=1000PEPEUSDT': {
      openInterest: '5000000000',
      symbol: '1000PEPEUSDT',
      time: NEXT_8H - 3_600_000,
    },
  },
  bybit: {
    '/v5/market/instruments-info?category=linear&limit=1000': {
      retCode: 0,
      retMsg: 'OK',
      result: {
        category: 'linear',
        list: [
          {
            symbol: 'BTCUSDT',
            contractType: 'LinearPerpetual',
            status: 'Trading',
            baseCoin: 'BTC',
            quoteCoin: 'USDT',
            fundingInterval: 480,
          },
          {
            symbol: 'ETHUSDT',
            contractType: 'LinearPerpetual',
            status: 'Trading',
            baseCoin: 'ETH',
            quoteCoin: 'USDT',
            fundingInterval: 480,
          },
          {
            symbol: 'BTC-26DEC25',
            contractType: 'LinearFutures',
            status: 'Trading',
            baseCoin: 'BTC',
            quoteCoin: 'USDT',
            fundingInterval: 0,
          },
        ],
        nextPageCursor: '',
      },
      retExtInfo: {},
      time: NEXT_8H,
    },
    '/v5/market/tickers?category=linear': {
      retCode: 0,
      retMsg: 'OK',
      result: {
        category: 'linear',
        list: [
          {
            symbol: 'BTCUSDT',
            lastPrice: '95020.00',
            indexPrice: '95000.00',
            markPrice: '95019.50',
            prevPrice24h: '93000.00',
            price24hPcnt: '0.021720',
            highPrice24h: '95500',
            lowPrice24h: '92800',
            prevPrice1h: '94900',
            openInterest: '50000',
            openInterestValue: '4750975000.00',
            turnover24h: '8000000000.00',
            volume24h: '84000',
            fundingRate: '0.00005',
            nextFundingTime: String(NEXT_8H),
            basis: '',
            basisRate: '',
            bid1Price: '95019.5',
            ask1Price: '95020',
          },
          {
            symbol: 'ETHUSDT',
            lastPrice: '3401.00',
            indexPrice: '3400.00',
            markPrice: '3400.90',
            prevPrice24h: '3340.00',
            price24hPcnt: '0.018263',
            highPrice24h: '3420',
            lowPrice24h: '3330',
            prevPrice1h: '3398',
            openInterest: '600000',
            openInterestValue: '2040540000.00',
            turnover24h: '3000000000.00',
            volume24h: '880000',
            fundingRate: '0.0002',
            nextFundingTime: String(NEXT_8H),
            basis: '',
            basisRate: '',
            bid1Price: '3400.9',
            ask1Price: '3401',
          },
          {
            symbol: 'BTC-26DEC25',
            lastPrice: '96000',
            indexPrice: '95000',
            markPrice: '96000',
            prevPrice24h: '94000',
            price24hPcnt: '0.02',
            openInterest: '100',
            openInterestValue: '9600000',
            turnover24h: '1000000',
            volume24h: '10',
            fundingRate: '',
            nextFundingTime: '',
            basis: '1000',
            basisRate: '0.0105',
          },
        ],
      },
      retExtInfo: {},
      time: NEXT_8H,
    },
  },
  okx: {
    '/api/v5/public/funding-rate?instId=ANY': {
      code: '0',
      msg: '',
      data: [
        {
          instType: 'SWAP',
          instId: 'BTC-USDT-SWAP',
          fundingRate: '0.0001',
          nextFundingRate: '',
          fundingTime: String(NEXT_8H),
          nextFundingTime: String(NEXT_8H + 28_800_000),
          minFundingRate: '-0.0075',
          maxFundingRate: '0.0075',
          settFundingRate: '0.0001',
          settState: 'settled',
          premium: '0.0001',
          method: 'current_period',
          ts: String(NEXT_8H - 3_600_000),
        },
      ],
    },
    '/api/v5/public/open-interest?instType=SWAP': {
      code: '0',
      msg: '',
      data: [
        {
          instType: 'SWAP',
          instId: 'BTC-USDT-SWAP',
          oi: '2000000',
          oiCcy: '20000',
          oiUsd: '1900000000',
          ts: String(NEXT_8H),
        },
      ],
    },
    '/api/v5/public/mark-price?instType=SWAP': {
      code: '0',
      msg: '',
      data: [{ instType: 'SWAP', instId: 'BTC-USDT-SWAP', markPx: '95005', ts: String(NEXT_8H) }],
    },
    '/api/v5/market/tickers?instType=SWAP': {
      code: '0',
      msg: '',
      data: [
        {
          instType: 'SWAP',
          instId: 'BTC-USDT-SWAP',
          last: '95004',
          open24h: '93100',
          volCcy24h: '30000',
          vol24h: '3000000',
          ts: String(NEXT_8H),
        },
      ],
    },
    '/api/v5/market/index-tickers?quoteCcy=USDT': {
      code: '0',
      msg: '',
      data: [{ instId: 'BTC-USDT', idxPx: '95000', ts: String(NEXT_8H) }],
    },
  },
  bitget: {
    '/api/v2/mix/market/tickers?productType=USDT-FUTURES': {
      code: '00000',
      msg: 'success',
      requestTime: NEXT_8H,
      data: [
        {
          symbol: 'BTCUSDT',
          lastPr: '95001',
          markPrice: '95001',
          indexPrice: '95000',
          fundingRate: '0.0001',
          holdingAmount: '30000',
          usdtVolume: '4000000000',
          quoteVolume: '4000000000',
          change24h: '0.02',
          ts: String(NEXT_8H),
        },
      ],
    },
  },
  gate: {
    '/api/v4/futures/usdt/contracts': [
      {
        name: 'BTC_USDT',
        type: 'direct',
        quanto_multiplier: '0.0001',
        funding_interval: 28800,
        funding_next_apply: NEXT_8H / 1000,
        funding_rate: '0.00008',
        mark_price: '95002',
        index_price: '95000',
        in_delisting: false,
      },
    ],
    '/api/v4/futures/usdt/tickers': [
      {
        contract: 'BTC_USDT',
        last: '95003',
        mark_price: '95002',
        index_price: '95000',
        funding_rate: '0.00008',
        funding_rate_indicative: '0.00008',
        total_size: '50000000',
        volume_24h_quote: '3000000000',
        change_percentage: '2.1',
      },
    ],
  },
  mexc: {
    '/api/v1/contract/detail': {
      success: true,
      code: 0,
      data: [
        {
          symbol: 'BTC_USDT',
          displayName: 'BTC_USDT永续',
          baseCoin: 'BTC',
          quoteCoin: 'USDT',
          settleCoin: 'USDT',
          contractSize: 0.0001,
        },
      ],
    },
    '/api/v1/contract/ticker': {
      success: true,
      code: 0,
      data: [
        {
          symbol: 'BTC_USDT',
          lastPrice: 95000.5,
          fairPrice: 95000.5,
          indexPrice: 95000,
          fundingRate: 0.0001,
          holdVol: 100000000,
          amount24: 2000000000,
          riseFallRate: 0.02,
          timestamp: NEXT_8H,
        },
      ],
    },
  },
  hyperliquid: {
    'POST /info metaAndAssetCtxs': [
      {
        universe: [
          { name: 'BTC', szDecimals: 5, maxLeverage: 40 },
          { name: 'ETH', szDecimals: 4, maxLeverage: 25 },
          { name: 'kPEPE', szDecimals: 0, maxLeverage: 10 },
        ],
      },
      [
        {
          funding: '0.0000125',
          openInterest: '20000',
          prevDayPx: '93000',
          dayNtlVlm: '2000000000',
          premium: '0.0001',
          oraclePx: '95000',
          markPx: '95010',
          midPx: '95009.5',
          impactPxs: ['95009', '95010'],
        },
        {
          funding: '0.00005',
          openInterest: '300000',
          prevDayPx: '3350',
          dayNtlVlm: '900000000',
          premium: '0.0002',
          oraclePx: '3400',
          markPx: '3401',
          midPx: '3400.9',
          impactPxs: ['3400.8', '3401'],
        },
        {
          funding: '-0.00005',
          openInterest: '3000000000',
          prevDayPx: '0.0195',
          dayNtlVlm: '60000000',
          premium: '0.0055',
          oraclePx: '0.018',
          markPx: '0.0181',
          midPx: '0.0181',
          impactPxs: ['0.0180', '0.0181'],
        },
      ],
    ],
  },
  dydx: {
    '/v4/perpetualMarkets': {
      markets: {
        'BTC-USD': {
          ticker: 'BTC-USD',
          status: 'ACTIVE',
          oraclePrice: '95000',
          priceChange24H: '2000',
          volume24H: '300000000',
          trades24H: 50000,
          nextFundingRate: '0.00001',
          openInterest: '3000',
          initialMarginFraction: '0.02',
          maintenanceMarginFraction: '0.012',
        },
      },
    },
  },
  deribit: {
    '/api/v2/public/get_book_summary_by_currency?currency=BTC&kind=future': {
      jsonrpc: '2.0',
      result: [
        {
          instrument_name: 'BTC-PERPETUAL',
          base_currency: 'BTC',
          quote_currency: 'USD',
          mark_price: 95004,
          estimated_delivery_price: 95000,
          funding_8h: 0.00012,
          current_funding: 0.00001,
          open_interest: 1000000000,
          volume_usd: 1500000000,
          price_change: 2.2,
        },
        {
          instrument_name: 'BTC-26DEC25',
          base_currency: 'BTC',
          quote_currency: 'USD',
          mark_price: 96000,
          estimated_delivery_price: 95000,
          open_interest: 50000000,
          volume_usd: 1000000,
          price_change: 2,
        },
      ],
      usIn: 1,
      usOut: 2,
      usDiff: 1,
      testnet: false,
    },
    '/api/v2/public/get_book_summary_by_currency?currency=ETH&kind=future': {
      jsonrpc: '2.0',
      result: [],
      usIn: 1,
      usOut: 2,
      usDiff: 1,
      testnet: false,
    },
    '/api/v2/public/get_book_summary_by_currency?currency=USDC&kind=future': {
      jsonrpc: '2.0',
      result: [
        {
          instrument_name: 'BTC_USDC-PERPETUAL',
          base_currency: 'BTC',
          quote_currency: 'USDC',
          mark_price: 95003,
          estimated_delivery_price: 95000,
          funding_8h: 0.0001,
          current_funding: 0,
          open_interest: 100,
          volume_usd: 10000000,
          price_change: 2,
        },
      ],
      usIn: 1,
      usOut: 2,
      usDiff: 1,
      testnet: false,
    },
  },
};

interface Replay {
  url: string;
  /** Venues that answer 503 until removed. */
  failing: Set<PerpExchange>;
  requests: string[];
  close(): Promise<void>;
}

async function startReplay(): Promise<Replay> {
  const failing = new Set<PerpExchange>();
  const requests: string[] = [];
  const { url, close } = await listenLocal((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (chunk) => (raw += chunk));
    req.on('end', () => {
      const [, venue, ...rest] = (req.url ?? '').split('/');
      const path = `/${rest.join('/')}`;
      requests.push(`${req.method} ${venue}${path}`);
      const key = req.method === 'POST' ? `POST ${path} ${(JSON.parse(raw || '{}') as { type?: string }).type}` : path;
      const body = REPLAY[venue as PerpExchange]?.[key];
      if (failing.has(venue as PerpExchange)) {
        res.writeHead(503, { 'content-type': 'text/plain' }).end('Service Unavailable');
      } else if (body === undefined) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"code":-1,"msg":"not found"}');
      } else {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      }
    });
  });
  return {
    url,
    failing,
    requests,
    close,
  };
}

const venueUrls = (base: string) =>
  Object.fromEntries(PERP_EXCHANGES.map((e) => [e, `${base}/${e}`])) as Record<PerpExchange, string>;
const LIVE = (base: string): FundingOptions => ({ market: 'live', venueUrls: venueUrls(base), liveCacheMs: 0 });

describe('live adapters against replayed exchange responses', () => {
  let replay: Replay;
  let service: RunningService;
  const funding = () => service.client.funding;

  beforeAll(async () => {
    replay = await startReplay();
    service = await startService(factory(LIVE(replay.url)), { id: 'funding' });
  });
  afterAll(async () => {
    await service?.close();
    await replay?.close();
  });

  it('health is unknown before the first read', async () => {
    const h = await healthOf(service);
    expect(h.status).toBe('ok');
    expect(h.upstream.mode).toBe('live');
    expect(h.upstream.providers.map((p) => [p.name, p.status])).toEqual(PERP_EXCHANGES.map((e) => [e, 'unknown']));
  });

  it('maps every venue’s documented fields into rows (units, intervals, multipliers, perpetuals only)', async () => {
    const page = await funding().scan({ body: { sortBy: 'openInterest', limit: 100 } });
    expect(page.source.mode).toBe('live');
    expect(page.source.providers).toEqual([...PERP_EXCHANGES]);
    expect(page.exchangesScanned).toEqual([...PERP_EXCHANGES]);
    const row = (exchange: PerpExchange, asset: string) =>
      page.items.find((r) => r.exchange === exchange && r.asset === asset)!;
    // Dated futures are left out; Deribit keeps its inverse BTC perpetual over the smaller USDC one.
    expect(page.total).toBe(14);
    expect(
      page.items
        .filter((r) => r.asset === 'BTC')
        .map((r) => r.exchange)
        .sort(),
    ).toEqual([...PERP_EXCHANGES].sort());
    expect(row('binance', 'BTC')).toMatchObject({
      symbol: 'BTCUSDT',
      quote: 'USDT',
      markPrice: '95010',
      indexPrice: '95000',
      fundingRate: 0.0001,
      fundingIntervalHours: 8,
      fundingRate8h: 0.0001,
      annualizedFundingRate: 0.1095,
      openInterestUsd: '9501000000',
      volume24hUsd: '15000000000',
      nextFundingTime: '2025-11-22T16:00:00.000Z',
    });
    expect(row('binance', 'BTC').basis).toBeCloseTo(10 / 95000, 15);
    // 1000PEPE quotes 1000 tokens and funds every 4 hours: per token, and per 8 hours.
    expect(row('binance', 'PEPE')).toMatchObject({
      symbol: '1000PEPEUSDT',
      markPrice: '0.000018',
      indexPrice: '0.0000179',
      fundingRate: -0.0005,
      fundingIntervalHours: 4,
      fundingRate8h: -0.001,
      annualizedFundingRate: -1.095,
      openInterestUsd: '90000000',
    });
    expect(row('bybit', 'BTC')).toMatchObject({
      fundingRate: 0.00005,
      fundingIntervalHours: 8,
      openInterestUsd: '4750975000',
      volume24hUsd: '8000000000',
    });
    expect(row('okx', 'BTC')).toMatchObject({
      symbol: 'BTC-USDT-SWAP',
      markPrice: '95005',
      indexPrice: '95000',
      fundingIntervalHours: 8,
      openInterestUsd: '1900000000',
      volume24hUsd: '2850120000',
      nextFundingTime: '2025-11-22T16:00:00.000Z',
    });
    expect(row('bitget', 'BTC')).toMatchObject({ openInterestUsd: '2850030000', volume24hUsd: '4000000000' });
    // Gate: total_size contracts × quanto_multiplier × mark; funding_interval in seconds.
    expect(row('gate', 'BTC')).toMatchObject({
      symbol: 'BTC_USDT',
      openInterestUsd: '475010000',
      fundingIntervalHours: 8,
      nextFundingTime: '2025-11-22T16:00:00.000Z',
    });
    // MEXC: holdVol contracts × contractSize × fair price.
    expect(row('mexc', 'BTC')).toMatchObject({
      openInterestUsd: '950005000',
      markPrice: '95000.5',
      volume24hUsd: '2000000000',
    });
    // Hyperliquid funds hourly: 0.00125 % an hour is 0.01 % per 8 h, 10.95 % a year; kPEPE is 1000 PEPE.
    expect(row('hyperliquid', 'BTC')).toMatchObject({
      quote: 'USDC',
      fundingRate: 0.0000125,
      fundingIntervalHours: 1,
      fundingRate8h: 0.0001,
      annualizedFundingRate: 0.1095,
      openInterestUsd: '1900200000',
    });
    expect(row('hyperliquid', 'PEPE')).toMatchObject({
      symbol: 'kPEPE',
      markPrice: '0.0000181',
      indexPrice: '0.000018',
      fundingRate8h: -0.0004,
      openInterestUsd: '54300000',
    });
    // dYdX gives only the oracle price: no index, no basis.
    expect(row('dydx', 'BTC')).toMatchObject({
      quote: 'USD',
      markPrice: '95000',
      indexPrice: null,
      basis: null,
      fundingRate8h: 0.00008,
      openInterestUsd: '285000000',
    });
    // Deribit's inverse perpetual counts open interest in USD.
    expect(row('deribit', 'BTC')).toMatchObject({
      symbol: 'BTC-PERPETUAL',
      quote: 'USD',
      fundingRate: 0.00012,
      openInterestUsd: '1000000000',
      nextFundingTime: null,
    });
    expect(replay.requests).toContain('GET binance/fapi/v1/openInterest?symbol=BTCUSDT');
  });

  it('asset: the OI-weighted average funding over the replayed venues, computed by hand', async () => {
    const v = await funding().asset({ params: { symbol: 'BTC' }, body: {} });
    // [fundingRate8h, OI USD] per venue, from the replayed bodies.
    const venues: [number, number][] = [
      [0.0001, 100000 * 95010], // binance
      [0.00005, 4750975000], // bybit
      [0.0001, 1900000000], // okx
      [0.0001, 30000 * 95001], // bitget
      [0.00008, 50000000 * 0.0001 * 95002], // gate
      [0.0001, 100000000 * 0.0001 * 95000.5], // mexc
      [0.0001, 20000 * 95010], // hyperliquid (0.0000125 per hour)
      [0.00008, 3000 * 95000], // dydx (0.00001 per hour)
      [0.00012, 1000000000], // deribit
    ];
    const oi = venues.reduce((a, [, w]) => a + w, 0);
    const weighted = venues.reduce((a, [f, w]) => a + f * w, 0) / oi;
    expect(v.weightedFundingRate8h).toBeCloseTo(weighted, 14);
    expect(v.weightedAnnualizedFundingRate).toBeCloseTo(weighted * 1095, 12);
    expect(v.totalOpenInterestUsd).toBe(usd(oi));
    expect(v.fundingSpread8h).toEqual({
      highest: 0.00012,
      highestExchange: 'deribit',
      lowest: 0.00005,
      lowestExchange: 'bybit',
    });
    expect(v.venues.find((x) => x.exchange === 'binance')!.openInterestSharePercent).toBeCloseTo(
      (9501000000 / oi) * 100,
      3,
    );
    // Live venues give no 30-day history here: no z-score; the funding component comes from the APR.
    expect(v.squeezeRisk.fundingZScore).toBeNull();
    expect(v.squeezeRisk.components.funding).toBeCloseTo(40 * Math.min(1, (weighted * 1095) / 1), 2);
    expect(v.squeezeRisk.direction).toBe('none');
  });

  it('squeeze: PEPE’s crowded shorts rank, scored from the replayed funding and premium', async () => {
    const r = await funding().squeeze({ body: { minRiskScore: 0 } });
    const pepe = r.candidates.find((c) => c.asset === 'PEPE')!;
    const [oiB, oiH] = [5000000000 * 0.018, 3000000000 * 0.0181];
    const weighted = (-0.001 * oiB + -0.0004 * oiH) / (oiB + oiH);
    expect(pepe.direction).toBe('short_squeeze');
    expect(pepe.weightedFundingRate8h).toBeCloseTo(weighted, 14);
    const premium = (((0.018 - 0.0179) / 0.0179) * oiB + ((0.0181 - 0.018) / 0.018) * oiH) / (oiB + oiH);
    expect(pepe.premium).toBeCloseTo(premium, 10);
    expect(pepe.components).toEqual({
      funding: Math.round(40 * Math.min(1, Math.abs(weighted * 1095)) * 100) / 100,
      openInterest: 0,
      premium: 15,
      longShort: 0,
    });
    expect(pepe.priceChange24hPercent).toBe(-7);
    expect(pepe.exchanges).toEqual(['binance', 'hyperliquid']);
    expect(r.candidates.every((c) => c.direction !== 'long_squeeze' || c.annualizedFundingRate >= 0.3)).toBe(true);
  });

  it('a failing venue is left out and marks health degraded; the others still answer', async () => {
    replay.failing.add('okx');
    try {
      const page = await funding().scan({ body: { assets: ['BTC'] } });
      expect(page.exchangesScanned).toEqual(PERP_EXCHANGES.filter((e) => e !== 'okx'));
      expect(page.source.providers).not.toContain('okx');
      expect(page.total).toBe(8);
      const o = await funding().overview();
      expect(o.exchanges.find((e) => e.exchange === 'okx')).toEqual({
        exchange: 'okx',
        status: 'unavailable',
        perpetualPairs: 0,
        openInterestUsd: '0',
        volume24hUsd: '0',
        weightedFundingRate8h: null,
        positiveFundingPairs: 0,
        negativeFundingPairs: 0,
      });
      const h = await healthOf(service);
      expect(h.status).toBe('degraded');
      expect(h.upstream.providers.find((p) => p.name === 'okx')).toMatchObject({ status: 'failing' });
      expect(h.upstream.providers.find((p) => p.name === 'binance')).toMatchObject({ status: 'ok' });
    } finally {
      replay.failing.delete('okx');
    }
    await funding().overview();
    expect((await healthOf(service)).status).toBe('ok');
  });

  it('every venue failing: 502 upstream_unavailable with Retry-After on every data route', async () => {
    for (const e of PERP_EXCHANGES) replay.failing.add(e);
    try {
      const calls = [
        () => funding().scan({ body: {} }),
        () => funding().squeeze({ body: {} }),
        () => funding().asset({ params: { symbol: 'BTC' }, body: {} }),
        () => funding().overview(),
      ];
      for (const call of calls) {
        const error = await call().catch((e) => e);
        expect(error).toBeInstanceOf(InternalServerError);
        expect(error).toMatchObject({ status: 502, code: 'upstream_unavailable' });
        expect((error as InternalServerError).headers['retry-after']).toBe('5');
      }
      const h = await healthOf(service);
      expect(h.status).toBe('degraded');
      expect(h.upstream.providers.every((p) => p.status === 'failing')).toBe(true);
    } finally {
      replay.failing.clear();
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('paid for real through the facilitator', () => {
  let economy: Economy;
  let replay: Replay;
  beforeAll(async () => {
    economy = await startEconomy();
    replay = await startReplay();
  });
  afterAll(async () => {
    await economy?.close();
    await replay?.close();
  });

  it('charges the scan’s 0.01 USD, and nothing when every exchange fails', async () => {
    const paid = await economy.startPaidService((c) => createFundingApp(c, EMBEDDED), { id: 'funding' });
    const buyer = await walletFromSecretKey(economy.buyer.secretKey);
    const client = createClient({
      baseUrls: { funding: paid.url },
      wallet: buyer,
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    });
    const seller = paid.context.wallet.address;
    const [buyerBefore, sellerBefore] = [
      economy.ledger.tokenBalance(economy.buyer.address),
      economy.ledger.tokenBalance(seller),
    ];
    const page = await client.funding.scan({ body: { assets: ['SOL'], limit: 3 } });
    expect(page.items).toHaveLength(3);
    expect(page.total).toBe(9);
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(buyerBefore - 10_000n);
    expect(economy.ledger.tokenBalance(seller)).toBe(sellerBefore + 10_000n);
    // The free overview charges nothing.
    await client.funding.overview();
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(buyerBefore - 10_000n);

    for (const e of PERP_EXCHANGES) replay.failing.add(e);
    const dark = await economy.startPaidService((c) => createFundingApp(c, LIVE(replay.url)), { id: 'funding' });
    const darkClient = createClient({
      baseUrls: { funding: dark.url },
      wallet: buyer,
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    });
    const error = await darkClient.funding.squeeze({ body: {} }).catch((e) => e);
    expect(error).toMatchObject({ status: 502, code: 'upstream_unavailable' });
    expect(darkClient.payments.spentUsd()).toBe('0');
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(buyerBefore - 10_000n);
    expect(economy.ledger.tokenBalance(dark.context.wallet.address)).toBe(0n);
  });
});
