import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conviction as convictionContract, listRoutes, type RouteMeta } from '@agent-economy/contracts';
import {
  BadRequestError,
  NotFoundError,
  UnprocessableEntityError,
  createClient,
  walletFromSecretKey,
} from '@agent-economy/sdk';
import { createConvictionApp, type ConvictionOptions } from '../servers/src/services/conviction';
import {
  builtinSummary,
  composite,
  quickComposite,
  readingOf,
  WEIGHTS,
} from '../servers/src/services/conviction/domain';
import { gini, logReturns, pearson, standardDeviation } from '../servers/src/upstream/measures';
import { MarketModel } from '../servers/src/upstream/market';
import { SimulatedSpotMarket } from '../servers/src/upstream/market/book';
import type { ServiceContext } from '../servers/src/runtime/context';
import { startEconomy, type Economy } from './support/economy';
import { listenLocal, startService, type RunningService } from './support/servers';

// The conviction index on the seeded spot market (read at a fixed instant, so figures are recomputed here from the raw
// books and bars with the research's formulas), and on live adapters pointed at a local server that replays Binance's
// and OKX's documented responses (the exchanges cannot be reached from here).

const FREE = { kind: 'fixed', usd: '0' } as const;
const ZERO_PRICES = { analyze: FREE, quickScore: FREE, compare: FREE };
const NOW = Date.parse('2026-11-22T09:00:30.000Z');
const MINUTE_OF_NOW = Date.parse('2026-11-22T09:00:00.000Z');
const HOUR = 3_600_000;
// The live adapters' clock: mid-hour, after CoinGecko has stamped the last complete hour's price (37 s past it).
const LIVE_NOW = Date.parse('2026-11-22T09:30:00.000Z');
const SIMULATED: ConvictionOptions = { market: 'simulated', now: () => NOW };
const BONK_MINT = 'DezXAZ8z7PnrnRJjz3wXBoRgixCa6xjnB7YaB1pPB263';

const factory =
  (options: ConvictionOptions, prices: Record<string, typeof FREE> | undefined = ZERO_PRICES) =>
  (c: ServiceContext) =>
    createConvictionApp({ ...c, ...(prices ? { prices } : {}) }, options);

const round = (x: number, d = 6) => Math.round(x * 10 ** d) / 10 ** d;

// ---------------------------------------------------------------------------------------------------------------
// Formulas on the research vectors (research/domain.md §4)

// ---------------------------------------------------------------------------------------------------------------
// The seeded spot market

describe('on the simulated market', () => {
  let service: RunningService;
  const market = new SimulatedSpotMarket(new MarketModel());
  const conviction = () => service.client.conviction;

  beforeAll(async () => {
    service = await startService(factory(SIMULATED), { id: 'conviction' });
  });
  afterAll(() => service?.close());

  it('analyze: five dimensions recomputed from the model’s books and bars, composite, reading, summary, provenance', async () => {
    const r = await conviction().analyze({ body: { token: 'BONK' } });
    expect(r.token).toEqual({ symbol: 'BONK', name: 'Bonk', mint: BONK_MINT });
    expect(r.source).toEqual({ mode: 'simulated', providers: ['market-model'], asOf: '2026-11-22T09:00:00.000Z' });
    expect(r.coverage).toEqual({
      sourcesQueried: 6,
      sourcesAnswered: 6,
      venues: ['simulated-book-a', 'simulated-book-b'],
      bookLevels: 240,
      tradesSampled: r.coverage.tradesSampled,
      returnsCount: 168,
    });
    expect(r.generator).toEqual({ engine: 'builtin', model: 'builtin-rules-v1' });

    // Liquidity and concentration from the two books, each venue's depth against its own mid.
    const books = market.books('BONK', MINUTE_OF_NOW);
    let bidDepth = 0;
    let askDepth = 0;
    const bidNotionals: number[] = [];
    for (const b of books) {
      const mid = (b.bids[0]!.price + b.asks[0]!.price) / 2;
      const within = b.bids.filter((l) => l.price >= mid * 0.98);
      bidDepth += within.reduce((s, l) => s + l.price * l.quantity, 0);
      askDepth += b.asks.filter((l) => l.price <= mid * 1.02).reduce((s, l) => s + l.price * l.quantity, 0);
      bidNotionals.push(...within.map((l) => l.price * l.quantity));
    }
    expect(Number(r.dimensions.liquidity.bidDepthUsd)).toBeCloseTo(bidDepth, 1);
    expect(Number(r.dimensions.liquidity.askDepthUsd)).toBeCloseTo(askDepth, 1);
    expect(r.dimensions.liquidity.venues).toBe(2);
    expect(r.dimensions.bidConcentration.gini).toBe(gini(bidNotionals));
    expect(r.dimensions.bidConcentration.score).toBe(round(100 * (1 - gini(bidNotionals)), 1));
    expect(r.dimensions.bidConcentration.levels).toBe(bidNotionals.length);
    expect(r.dimensions.firmness.bookImbalance).toBe(round((bidDepth - askDepth) / (bidDepth + askDepth)));

    // Volume asymmetry from the last 24 hourly bars' taker side.
    const bars = market.bars('BONK', MINUTE_OF_NOW, 169);
    const day = bars.slice(-24);
    const volume = day.reduce((s, b) => s + b.quoteVolumeUsd, 0);
    const buy = day.reduce((s, b) => s + b.takerBuyQuoteVolumeUsd, 0);
    expect(Number(r.dimensions.liquidity.volume24hUsd)).toBeCloseTo(volume, 1);
    expect(Number(r.dimensions.volumeAsymmetry.buyVolumeUsd)).toBeCloseTo(buy, 1);
    expect(r.dimensions.volumeAsymmetry.imbalance).toBe(round((2 * buy - volume) / volume));
    expect(r.dimensions.volumeAsymmetry.windowHours).toBe(24);
    expect(r.coverage.tradesSampled).toBe(day.reduce((s, b) => s + b.trades, 0));

    // Correlation: Pearson ρ of 168 hourly log returns with each major.
    for (const [major, field] of [
      ['SOL', 'withNative'],
      ['BTC', 'withBtc'],
      ['ETH', 'withEth'],
    ] as const) {
      const other = market.bars(major, MINUTE_OF_NOW, 169);
      expect(r.dimensions.correlation[field]).toBe(
        pearson(logReturns(bars.map((b) => b.close)), logReturns(other.map((b) => b.close))),
      );
    }
    const rhos = [
      r.dimensions.correlation.withNative!,
      r.dimensions.correlation.withBtc!,
      r.dimensions.correlation.withEth!,
    ];
    expect(r.dimensions.correlation.score).toBe(round((100 * rhos.reduce((s, x) => s + Math.max(0, x), 0)) / 3, 1));
    expect(r.dimensions.correlation.returnsCount).toBe(168);
    expect(r.dimensions.firmness.volatilityPercent).toBe(
      round(standardDeviation(logReturns(bars.slice(-25).map((b) => b.close))) * 100, 4),
    );

    // Weights, composite, reading.
    for (const [k, w] of Object.entries(WEIGHTS)) expect(r.dimensions[k as keyof typeof WEIGHTS].weight).toBe(w);
    expect(r.compositeScore).toBe(composite(r.dimensions));
    expect(readingOf(r.compositeScore)).toEqual({ reading: r.reading, readingStrength: r.readingStrength });
    expect(r.summary).toBe(
      builtinSummary({
        token: r.token,
        compositeScore: r.compositeScore,
        reading: r.reading,
        readingStrength: r.readingStrength,
        confidenceScore: r.confidenceScore,
        dimensions: r.dimensions,
        mode: 'simulated',
      }).summary,
    );
    expect(r.summary).toContain('simulated market data');
    // No real venue is named anywhere in a simulated answer.
    expect(JSON.stringify(r)).not.toMatch(/binance|okx|coingecko/i);
  });

  it('analyze: a major’s correlation with itself is null and the mean runs over the other two', async () => {
    const r = await conviction().analyze({ body: { token: 'sol' } });
    expect(r.token).toEqual({ symbol: 'SOL', name: 'Solana', mint: 'So11111111111111111111111111111111111111112' });
    expect(r.dimensions.correlation.withNative).toBeNull();
    const { withBtc, withEth } = r.dimensions.correlation;
    expect(r.dimensions.correlation.score).toBe(round((100 * (Math.max(0, withBtc!) + Math.max(0, withEth!))) / 2, 1));
  });

  it('quickScore: the mint and the ticker give one answer; four dimensions, weights renormalised', async () => {
    const [byMint, byTicker, full] = await Promise.all([
      conviction().quickScore({ body: { token: BONK_MINT } }),
      conviction().quickScore({ body: { token: 'bonk' } }),
      conviction().analyze({ body: { token: 'BONK' } }),
    ]);
    // Both read at the service's clock, which also stamps the answers.
    expect(byMint).toEqual(byTicker);
    expect(byMint.analyzedAt).toBe(new Date(NOW).toISOString());
    expect(full.analyzedAt).toBe(new Date(NOW).toISOString());
    expect(byMint.dimensionScores).toEqual({
      liquidity: full.dimensions.liquidity.score,
      bidConcentration: full.dimensions.bidConcentration.score,
      volumeAsymmetry: full.dimensions.volumeAsymmetry.score,
      firmness: full.dimensions.firmness.score,
    });
    expect(byMint.compositeScore).toBe(quickComposite(byMint.dimensionScores));
    expect(byMint).not.toHaveProperty('summary');
    expect(byMint.source.mode).toBe('simulated');
  });

  it('compare: ranked by composite, firmest and thinnest, spread', async () => {
    const c = await conviction().compare({ body: { tokens: ['BONK', 'WIF', 'JUP', 'BTC'] } });
    expect(c.ranking.map((x) => x.rank)).toEqual([1, 2, 3, 4]);
    const scores = c.ranking.map((x) => x.compositeScore);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    const singles = await Promise.all(
      ['BONK', 'WIF', 'JUP', 'BTC'].map((t) => conviction().analyze({ body: { token: t } })),
    );
    for (const s of singles) {
      const row = c.ranking.find((x) => x.token.symbol === s.token.symbol)!;
      expect(row.compositeScore).toBe(s.compositeScore);
      expect(row.dimensionScores.correlation).toBe(s.dimensions.correlation.score);
    }
    expect(c.firmest).toEqual(c.ranking[0]!.token);
    expect(c.thinnest).toEqual(c.ranking[3]!.token);
    expect(c.scoreSpread).toBe(round(scores[0]! - scores[3]!, 1));
  });

  it('compare: one unknown token fails the call with 404 naming it; a mint and its ticker are one token', async () => {
    const unknown = await conviction()
      .compare({ body: { tokens: ['BONK', 'NOTACOIN1'] } })
      .catch((e) => e);
    expect(unknown).toBeInstanceOf(NotFoundError);
    expect(unknown).toMatchObject({ code: 'token_not_found', details: { token: 'NOTACOIN1' } });
    const twice = await conviction()
      .compare({ body: { tokens: ['BONK', BONK_MINT] } })
      .catch((e) => e);
    expect(twice).toBeInstanceOf(BadRequestError);
    expect((twice as BadRequestError).fields.map((f) => f.field)).toContain('body.tokens');
  });

  it('analyze and quickScore: 404 token_not_found for an unknown ticker or mint', async () => {
    const a = await conviction()
      .analyze({ body: { token: 'NOTACOIN1' } })
      .catch((e) => e);
    expect(a).toMatchObject({ status: 404, code: 'token_not_found', details: { token: 'NOTACOIN1' } });
    const unknownMint = '11111111111111111111111111111111';
    const q = await conviction()
      .quickScore({ body: { token: unknownMint } })
      .catch((e) => e);
    expect(q).toMatchObject({ status: 404, code: 'token_not_found', details: { token: unknownMint } });
  });

  it('info: methodology, weights, thresholds, limits and every endpoint with its contract price', async () => {
    const info = await conviction().info();
    expect(info.service).toBe('conviction');
    expect(info.dimensions.map((d) => [d.id, d.weight, d.quickScoreWeight])).toEqual([
      ['liquidity', 0.25, 0.294118],
      ['bidConcentration', 0.2, 0.235294],
      ['volumeAsymmetry', 0.15, 0.176471],
      ['correlation', 0.15, null],
      ['firmness', 0.25, 0.294118],
    ]);
    expect(info.readingThresholds).toEqual({ firmAtOrAbove: 50, marginalWithin: 10, strongBeyond: 25 });
    expect(info.limits).toEqual({ compareMinTokens: 2, compareMaxTokens: 5 });
    expect(info.endpoints.map((e) => [e.method, e.path, e.priceUsd])).toEqual([
      ['POST', '/api/conviction', '0'],
      ['POST', '/api/quick-score', '0'],
      ['POST', '/api/compare', '0'],
      ['GET', '/api/info', '0'],
      ['GET', '/health', '0'],
    ]);
    expect(info.dataSources.join(' ')).toMatch(/simulated/);
  });

  it('health: ok, reading the market model', async () => {
    const h = await conviction().health();
    expect(h).toMatchObject({
      status: 'ok',
      service: 'conviction',
      version: '1.0.0',
      database: 'ok',
      upstream: { mode: 'simulated', providers: [{ name: 'market-model', status: 'ok' }] },
    });
  });

  it('every route’s contract example succeeds', async () => {
    const client = conviction() as unknown as Record<string, (args?: unknown) => Promise<unknown>>;
    for (const { key, route } of listRoutes(convictionContract.router)) {
      const example = (route.metadata as RouteMeta).example ?? {};
      await expect(client[key]!(Object.keys(example).length ? example : undefined)).resolves.toBeTruthy();
    }
  });

  describe('bad input: 400 naming the field', () => {
    const cases: [string, () => Promise<unknown>, string][] = [
      ['analyze: no token', () => conviction().analyze({ body: {} as never }), 'body.token'],
      ['analyze: a ticker with a dash', () => conviction().analyze({ body: { token: 'BO-NK' } }), 'body.token'],
      ['analyze: a 13-letter ticker', () => conviction().analyze({ body: { token: 'ABCDEFGHIJKLM' } }), 'body.token'],
      ['analyze: a number', () => conviction().analyze({ body: { token: 5 as unknown as string } }), 'body.token'],
      [
        'analyze: an unknown field',
        () => conviction().analyze({ body: { token: 'BONK', depth: 1 } as never }),
        'body.depth',
      ],
      [
        'quickScore: an address of the wrong length',
        () => conviction().quickScore({ body: { token: `${BONK_MINT}x` } }),
        'body.token',
      ],
      ['compare: one token', () => conviction().compare({ body: { tokens: ['BONK'] } }), 'body.tokens'],
      [
        'compare: six tokens',
        () => conviction().compare({ body: { tokens: ['A', 'B', 'C', 'D', 'E', 'F'] } }),
        'body.tokens',
      ],
      ['compare: a repeated ticker', () => conviction().compare({ body: { tokens: ['BONK', 'bonk'] } }), 'body.tokens'],
      ['compare: a bad ticker', () => conviction().compare({ body: { tokens: ['BONK', 'W$F'] } }), 'body.tokens.1'],
    ];
    for (const [what, call, field] of cases) {
      it(`${what} → 400 naming ${field}`, async () => {
        const error = await call().catch((e) => e);
        expect(error).toBeInstanceOf(BadRequestError);
        expect((error as BadRequestError).code).toBe('invalid_request');
        expect((error as BadRequestError).fields.map((f) => f.field)).toContain(field);
      });
    }
  });
});

describe('determinism across replicas', () => {
  it('answers the same for the same seed and minute, and differently for another seed', async () => {
    const [a, b, c] = await Promise.all([
      startService(factory(SIMULATED), { id: 'conviction' }),
      startService(factory(SIMULATED), { id: 'conviction' }),
      startService(factory({ ...SIMULATED, seed: 'another-market' }), { id: 'conviction' }),
    ]);
    try {
      const body = { token: 'WIF' };
      const [x, y, z] = await Promise.all([a, b, c].map((s) => s.client.conviction.analyze({ body })));
      expect(y).toEqual(x);
      expect(z!.dimensions).not.toEqual(x!.dimensions);
    } finally {
      await Promise.all([a, b, c].map((s) => s.close()));
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Live adapters against a replay of Binance's and OKX's documented responses

/**
 * Binance kline rows ([openTime, open, high, low, close, volume, closeTime, quoteVolume, trades, takerBuyBase,
 * takerBuyQuote, ignore]), strings as Binance sends them.
 */
function klines(closes: number[], lastOpen: number, volumeOf: (i: number) => number, buyShare: number) {
  return closes.map((close, i) => {
    const openTime = lastOpen - (closes.length - 1 - i) * HOUR;
    const quote = volumeOf(i);
    return [
      openTime,
      String(close),
      String(close),
      String(close),
      String(close),
      String(quote / close),
      openTime + HOUR - 1,
      quote.toFixed(2),
      100 + i,
      String((quote * buyShare) / close),
      (quote * buyShare).toFixed(2),
      '0',
    ];
  });
}

interface Replay {
  url: string;
  failing: Set<string>;
  requests: string[];
  close(): Promise<void>;
}

async function startReplay(): Promise<Replay> {
  const failing = new Set<string>();
  const requests: string[] = [];
  // 172 hourly closes per symbol from simple deterministic paths; the last kline is the hour still trading at the
  // service's clock (LIVE pins it to LIVE_NOW), so no hour can end between this replay's start and a read.
  const currentOpen = Math.floor(LIVE_NOW / HOUR) * HOUR;
  const path = (seed: number, beta: number) =>
    Array.from({ length: 172 }, (_, i) => 100 * Math.exp(beta * 0.01 * Math.sin(i * 0.7) + 0.004 * Math.sin(i * seed)));
  const series: Record<string, number[]> = {
    TSTUSDT: path(1.3, 1),
    SOLUSDT: path(2.1, 0.8),
    BTCUSDT: path(0.9, 1.1),
    ETHUSDT: path(3.7, 0.5),
    THINUSDT: path(1.1, 1),
  };
  const binanceBook = {
    lastUpdateId: 1027024,
    bids: [
      ['99.90000000', '5.00000000'],
      ['99.00000000', '10.00000000'],
      ['98.00000000', '20.00000000'],
      ['97.00000000', '50.00000000'],
    ],
    asks: [
      ['100.10000000', '4.00000000'],
      ['101.00000000', '8.00000000'],
      ['102.00000000', '15.00000000'],
      ['103.00000000', '40.00000000'],
    ],
  };
  const { url, close } = await listenLocal((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://replay');
    const [, provider] = url.pathname.split('/');
    const rest = url.pathname.slice(provider!.length + 1);
    requests.push(`${provider}${rest}${url.search}`);
    const send = (status: number, body: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (failing.has(provider!) || failing.has(`${provider}${rest}?symbol=${url.searchParams.get('symbol')}`))
      return void res.writeHead(503, { 'content-type': 'text/plain' }).end('Service Unavailable');
    if (provider === 'binance') {
      const symbol = url.searchParams.get('symbol') ?? '';
      if (rest === '/api/v3/depth') {
        if (symbol === 'TSTUSDT') return send(200, binanceBook);
        if (symbol === 'THINUSDT') return send(200, { lastUpdateId: 1, bids: [], asks: binanceBook.asks });
      }
      if (rest === '/api/v3/klines' && series[symbol] && url.searchParams.get('interval') === '1h') {
        const limit = Number(url.searchParams.get('limit'));
        const all = klines(series[symbol]!, currentOpen, (i) => 1000 + 10 * i, symbol === 'TSTUSDT' ? 0.6 : 0.5);
        return send(200, all.slice(-limit));
      }
      return send(400, { code: -1121, msg: 'Invalid symbol.' });
    }
    // CoinGecko's hourly market chart: prices a little after each hour, as CoinGecko stamps them; the open hour's is
    // not out yet.
    const chart = /^\/api\/v3\/coins\/(solana|bitcoin|ethereum)\/market_chart$/.exec(rest);
    if (provider === 'coingecko' && chart && url.searchParams.get('vs_currency') === 'usd') {
      const closes = series[{ solana: 'SOLUSDT', bitcoin: 'BTCUSDT', ethereum: 'ETHUSDT' }[chart[1]!]!]!;
      const prices = closes
        .slice(0, -1)
        .map((close, i) => [currentOpen - (closes.length - 1 - i) * HOUR + HOUR + 37_000, close]);
      return send(200, {
        prices,
        market_caps: prices.map(([t]) => [t, 1e9]),
        total_volumes: prices.map(([t]) => [t, 1e7]),
      });
    }
    if (provider === 'okx' && rest === '/api/v5/market/books') {
      if (url.searchParams.get('instId') === 'TST-USDT') {
        return send(200, {
          code: '0',
          msg: '',
          data: [
            {
              asks: [['100.2', '10', '0', '2']],
              bids: [
                ['99.8', '10', '0', '3'],
                ['98.5', '100', '0', '1'],
              ],
              ts: '1700000000000',
            },
          ],
        });
      }
      return send(200, { code: '51001', msg: "Instrument ID doesn't exist", data: [] });
    }
    send(404, { msg: 'not found' });
  });
  return {
    url,
    failing,
    requests,
    close,
  };
}

const LIVE = (base: string): ConvictionOptions => ({
  market: 'live',
  now: () => LIVE_NOW,
  live: { binanceUrl: `${base}/binance`, okxUrl: `${base}/okx`, coingeckoUrl: `${base}/coingecko`, cacheMs: 0 },
});

describe('live adapters against replayed provider responses', () => {
  let replay: Replay;
  let service: RunningService;
  const conviction = () => service.client.conviction;

  beforeAll(async () => {
    replay = await startReplay();
    service = await startService(factory(LIVE(replay.url)), { id: 'conviction' });
  });
  afterAll(async () => {
    await service?.close();
    await replay?.close();
  });

  it('analyze: depth from Binance’s and OKX’s books, taker side and returns from Binance klines', async () => {
    const r = await conviction().analyze({ body: { token: 'TST' } });
    expect(r.source.mode).toBe('live');
    expect(r.source.providers).toEqual(['binance', 'okx']);
    // OKX's replayed book stops within 2 % of mid on both sides: the answer says its depth counts what was returned.
    expect(r.source.note).toBe(
      "okx's book as returned does not reach 2 % from mid: its depth counts the levels returned",
    );
    expect(r.token).toEqual({ symbol: 'TST', name: null, mint: null });
    // Binance: the research's book (3,449.5 and 2,738.4); OKX: mid 100, bids 998 + 9,850 within 2 %, asks 1,002.
    expect(Number(r.dimensions.liquidity.bidDepthUsd)).toBeCloseTo(3449.5 + 998 + 9850, 6);
    expect(Number(r.dimensions.liquidity.askDepthUsd)).toBeCloseTo(2738.4 + 1002, 6);
    expect(r.dimensions.liquidity.spreadBps).toBe(20);
    expect(r.dimensions.liquidity.venues).toBe(2);
    expect(r.coverage.venues).toEqual(['binance', 'okx']);
    expect(r.coverage.bookLevels).toBe(8 + 3);
    expect(r.dimensions.bidConcentration.gini).toBe(gini([99.9 * 5, 99 * 10, 98 * 20, 998, 9850]));
    // The last 24 complete hours (the open one is left out): volume 1000 + 10·i, takers buying 60 %.
    const volume = Array.from({ length: 24 }, (_, k) => 1000 + 10 * (147 + k)).reduce((a, b) => a + b, 0);
    expect(r.dimensions.liquidity.volume24hUsd).toBe(String(volume));
    expect(r.dimensions.volumeAsymmetry.imbalance).toBe(0.2);
    expect(r.coverage.tradesSampled).toBe(
      Array.from({ length: 24 }, (_, k) => 100 + 147 + k).reduce((a, b) => a + b, 0),
    );
    expect(r.dimensions.correlation.returnsCount).toBe(168);
    expect(r.coverage).toMatchObject({ sourcesQueried: 6, sourcesAnswered: 6 });
    expect(replay.requests).toContain('binance/api/v3/klines?symbol=BTCUSDT&interval=1h&limit=170');
    expect(replay.requests).toContain('okx/api/v5/market/books?instId=TST-USDT&sz=400');
  });

  it('correlation equals Pearson ρ of the replayed closes’ log returns', async () => {
    const r = await conviction().analyze({ body: { token: 'TST' } });
    const closes = (seed: number, beta: number) =>
      Array.from(
        { length: 172 },
        (_, i) => 100 * Math.exp(beta * 0.01 * Math.sin(i * 0.7) + 0.004 * Math.sin(i * seed)),
      ).slice(2, 171);
    const tst = logReturns(closes(1.3, 1));
    expect(r.dimensions.correlation.withNative).toBe(pearson(tst, logReturns(closes(2.1, 0.8))));
    expect(r.dimensions.correlation.withBtc).toBe(pearson(tst, logReturns(closes(0.9, 1.1))));
    expect(r.dimensions.correlation.withEth).toBe(pearson(tst, logReturns(closes(3.7, 0.5))));
  });

  it('a ticker Binance does not list is 404 token_not_found; a book without bids is 422', async () => {
    const missing = await conviction()
      .quickScore({ body: { token: 'NOPE' } })
      .catch((e) => e);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect(missing).toMatchObject({ code: 'token_not_found', details: { token: 'NOPE' } });
    const thin = await conviction()
      .quickScore({ body: { token: 'THIN' } })
      .catch((e) => e);
    expect(thin).toBeInstanceOf(UnprocessableEntityError);
    expect(thin).toMatchObject({ code: 'insufficient_market_data' });
  });

  it('Binance failing for a major: its returns come from CoinGecko’s hourly chart, aligned on the hour', async () => {
    const before = await conviction().analyze({ body: { token: 'TST' } });
    replay.failing.add('binance/api/v3/klines?symbol=ETHUSDT');
    try {
      const r = await conviction().analyze({ body: { token: 'TST' } });
      expect(r.dimensions.correlation.withEth).toBe(before.dimensions.correlation.withEth);
      expect(r.dimensions.correlation.returnsCount).toBe(168);
      expect(r.source.providers).toEqual(['binance', 'okx', 'coingecko']);
      expect(r.source.note).toMatch(/Binance did not answer for ETH klines: its returns are CoinGecko's hourly prices/);
      expect(r.coverage).toMatchObject({ sourcesQueried: 7, sourcesAnswered: 6 });
      expect(replay.requests).toContain('coingecko/api/v3/coins/ethereum/market_chart?vs_currency=usd&days=8');
    } finally {
      replay.failing.clear();
    }
  });

  it('OKX or a major failing: the answer comes from the rest, says why, and health is degraded', async () => {
    replay.failing.add('okx');
    replay.failing.add('coingecko');
    replay.failing.add('binance/api/v3/klines?symbol=ETHUSDT');
    try {
      const r = await conviction().analyze({ body: { token: 'TST' } });
      expect(r.source.providers).toEqual(['binance']);
      expect(r.source.note).toMatch(/OKX did not answer/);
      expect(r.source.note).toMatch(/correlation with ETH is null/);
      expect(r.dimensions.correlation.withEth).toBeNull();
      expect(r.coverage).toMatchObject({ sourcesQueried: 7, sourcesAnswered: 4, venues: ['binance'] });
      expect(Number(r.dimensions.liquidity.bidDepthUsd)).toBeCloseTo(3449.5, 6);
      const h = await conviction().health();
      expect(h.status).toBe('degraded');
      expect(h.upstream.providers.find((p) => p.name === 'okx')!.status).toBe('failing');
    } finally {
      replay.failing.clear();
    }
  });

  it('Binance failing: 502 upstream_unavailable', async () => {
    replay.failing.add('binance');
    try {
      const error = await conviction()
        .analyze({ body: { token: 'TST' } })
        .catch((e) => e);
      expect(error).toMatchObject({ status: 502, code: 'upstream_unavailable' });
    } finally {
      replay.failing.clear();
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Paid for real on the local ledger

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

  it('charges 0.05, 0.01 and 0.08; nothing for info, health, an unknown token or a provider down', async () => {
    const paid = await economy.startPaidService((c) => createConvictionApp(c, SIMULATED), { id: 'conviction' });
    const buyer = await walletFromSecretKey(economy.buyer.secretKey);
    const client = createClient({
      baseUrls: { conviction: paid.url },
      wallet: buyer,
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    });
    const seller = paid.context.wallet.address;
    const buyerBefore = economy.ledger.tokenBalance(economy.buyer.address);
    const sellerBefore = economy.ledger.tokenBalance(seller);
    const balances = () => [economy.ledger.tokenBalance(economy.buyer.address), economy.ledger.tokenBalance(seller)];

    const full = await client.conviction.analyze({ body: { token: 'BONK' } });
    expect(full.token.symbol).toBe('BONK');
    expect(balances()).toEqual([buyerBefore - 50_000n, sellerBefore + 50_000n]);
    await client.conviction.quickScore({ body: { token: BONK_MINT } });
    expect(balances()).toEqual([buyerBefore - 60_000n, sellerBefore + 60_000n]);
    const compared = await client.conviction.compare({ body: { tokens: ['BONK', 'WIF', 'JUP'] } });
    expect(compared.ranking).toHaveLength(3);
    expect(balances()).toEqual([buyerBefore - 140_000n, sellerBefore + 140_000n]);

    // Free routes and refused requests move nothing.
    const info = await client.conviction.info();
    expect(info.endpoints.map((e) => e.priceUsd)).toEqual(['0.05', '0.01', '0.08', '0', '0']);
    await client.conviction.health();
    const unknown = await client.conviction.analyze({ body: { token: 'NOTACOIN1' } }).catch((e) => e);
    expect(unknown).toMatchObject({ status: 404, code: 'token_not_found' });
    const bad = await client.conviction.compare({ body: { tokens: ['BONK'] } }).catch((e) => e);
    expect(bad).toBeInstanceOf(BadRequestError);
    expect(balances()).toEqual([buyerBefore - 140_000n, sellerBefore + 140_000n]);
    expect(client.payments.spentUsd()).toBe('0.14');

    replay.failing.add('binance');
    const dark = await economy.startPaidService((c) => createConvictionApp(c, LIVE(replay.url)), { id: 'conviction' });
    const darkClient = createClient({
      baseUrls: { conviction: dark.url },
      wallet: buyer,
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    });
    const error = await darkClient.conviction.analyze({ body: { token: 'TST' } }).catch((e) => e);
    expect(error).toMatchObject({ status: 502, code: 'upstream_unavailable' });
    expect(darkClient.payments.spentUsd()).toBe('0');
    expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(buyerBefore - 140_000n);
    expect(economy.ledger.tokenBalance(dark.context.wallet.address)).toBe(0n);
  });
});
