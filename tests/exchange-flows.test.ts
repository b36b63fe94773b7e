import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  exchangeFlows,
  listRoutes,
  type DataServiceHealth,
  type FlowAnalysis,
  type RouteMeta,
} from '@agent-economy/contracts';
import {
  ApiError,
  BadRequestError,
  PaymentOutcomeUnknownError,
  PaymentRequiredError,
  createClient,
  walletFromSecretKey,
  type AgentEconomyClient,
} from '@agent-economy/sdk';
import { openAiReasoner } from '../servers/src/ai';
import { createExchangeFlowsApp, type ExchangeFlowsOptions } from '../servers/src/services/exchange-flows';
import {
  btcText,
  combineSignal,
  directionOf,
  netflowZScore,
  sentimentOf,
  signalFactors,
  usdText,
} from '../servers/src/services/exchange-flows/domain';
import { coinGeckoSummary, coinMetricsFlowDays } from '../servers/src/services/exchange-flows/sources';
import { startEconomy, type Economy } from './support/economy';
import { listenLocal, type RunningService } from './support/servers';

// Formulas on known vectors; every route through the SDK, paid on the local ledger, over the seeded model (the
// default deployment) and over the live adapters against a local server replaying Coin Metrics', CoinGecko's and an
// OpenAI-compatible LLM's documented JSON; a failing provider is 502 and charges nothing.

const REAL_EXCHANGES = ['binance', 'coinbase', 'kraken', 'bitfinex', 'okx', 'bybit', 'bitstamp', 'gemini'];

async function failure(call: Promise<unknown>): Promise<ApiError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).not.toBeInstanceOf(PaymentOutcomeUnknownError);
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

/** a × b of two non-negative decimal strings, exact (an implementation independent of the service's). */
function mulDec(a: string, b: string): string {
  const [ai, af = ''] = a.split('.');
  const [bi, bf = ''] = b.split('.');
  const product = BigInt(ai! + af) * BigInt(bi! + bf);
  const scale = af.length + bf.length;
  const digits = product.toString().padStart(scale + 1, '0');
  const whole = digits.slice(0, digits.length - scale);
  const fraction = digits.slice(digits.length - scale).replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : whole;
}
const sats = (btc: string) => {
  const negative = btc.startsWith('-');
  const [i, f = ''] = (negative ? btc.slice(1) : btc).split('.');
  const v = BigInt(i!) * 100_000_000n + BigInt(f.padEnd(8, '0'));
  return negative ? -v : v;
};

// ---- the default deployment: the seeded model, paid on the local ledger ------------------------------------

const NOW = Date.parse('2026-01-15T12:00:00.000Z');

describe('the default deployment (simulated) through the SDK, paid on the local ledger', () => {
  let economy: Economy;
  let service: RunningService;
  let replica: RunningService;
  let client: AgentEconomyClient;
  let clock = NOW;
  const balances = () =>
    [
      economy.ledger.tokenBalance(economy.buyer.address),
      economy.ledger.tokenBalance(service.context.wallet.address),
    ] as const;

  beforeAll(async () => {
    economy = await startEconomy();
    service = await economy.startPaidService((c) => createExchangeFlowsApp(c, { now: () => clock }), {
      id: 'exchange-flows',
    });
    // A second replica of the same seed: one simulated market.
    replica = await economy.startPaidService((c) => createExchangeFlowsApp(c, { now: () => clock }), {
      id: 'exchange-flows',
    });
    client = createClient({
      baseUrls: { 'exchange-flows': service.url },
      wallet: await walletFromSecretKey(economy.buyer.secretKey),
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    });
  }, 120_000);
  afterAll(async () => {
    await economy?.close();
  });

  it('summary (free): the model’s price, 24-hour change, range, market cap = price × supply, dominance', async () => {
    const before = balances();
    const s = await client.exchangeFlows.summary();
    expect(balances()).toEqual(before);
    expect(s.source).toEqual({
      mode: 'simulated',
      providers: ['exchange-flow-model'],
      asOf: new Date(NOW).toISOString(),
    });
    expect(s.lastUpdated).toBe(new Date(NOW).toISOString());
    expect(Number(s.low24hUsd)).toBeLessThanOrEqual(Number(s.priceUsd));
    expect(Number(s.high24hUsd)).toBeGreaterThanOrEqual(Number(s.priceUsd));
    expect(s.marketCapUsd).toBe(mulDec(s.circulatingSupplyBtc, s.priceUsd));
    // ~19.97 M BTC in January 2026 on the 10-minute schedule
    expect(Number(s.circulatingSupplyBtc)).toBeGreaterThan(19_900_000);
    expect(Number(s.circulatingSupplyBtc)).toBeLessThan(20_100_000);
    expect(s.change24hPercent).toBeCloseTo(
      (Number(s.change24hUsd) / (Number(s.priceUsd) - Number(s.change24hUsd))) * 100,
      2,
    );
    expect(s.dominancePercent).toBeGreaterThanOrEqual(35);
    expect(s.dominancePercent).toBeLessThanOrEqual(75);
    // not a fixed number: the model moves with the clock, and two replicas agree
    clock = NOW + 6 * 3_600_000;
    const later = await client.exchangeFlows.summary();
    expect(later.priceUsd).not.toBe(s.priceUsd);
    const other = createClient({ baseUrls: { 'exchange-flows': replica.url } });
    expect(await other.exchangeFlows.summary()).toEqual(later);
    clock = NOW;
  });

  let seven: FlowAnalysis;

  it('flows (0.01 USD): days, totals, direction, z-score, reserve change, sentiment and a breakdown over simulated venues', async () => {
    const before = balances();
    const response = await client.exchangeFlows.flows.withResponse({ body: { days: 7 } });
    expect(response.payment).toMatchObject({
      amountUsd: '0.01',
      amount: '10000',
      payTo: service.context.wallet.address,
      payer: economy.buyer.address,
    });
    expect(balances()).toEqual([before[0] - 10_000n, before[1] + 10_000n]);
    const f = (seven = response.data);
    expect([f.startDate, f.endDate, f.days.length]).toEqual(['2026-01-08', '2026-01-14', 7]);
    expect(f.source).toEqual({
      mode: 'simulated',
      providers: ['exchange-flow-model'],
      asOf: new Date(NOW).toISOString(),
    });
    let inflow = 0n;
    let outflow = 0n;
    let inflowUsd = 0;
    for (const d of f.days) {
      expect(sats(d.netflowBtc)).toBe(sats(d.inflowBtc) - sats(d.outflowBtc));
      // USD at the day's price: netflowUsd / netflowBtc is the same price as inflowUsd / inflowBtc
      const price = Number(d.inflowUsd) / Number(d.inflowBtc);
      expect(Number(d.outflowUsd)).toBeCloseTo(Number(d.outflowBtc) * price, 2);
      inflow += sats(d.inflowBtc);
      outflow += sats(d.outflowBtc);
      inflowUsd += Number(d.inflowUsd);
    }
    expect([sats(f.totals.inflowBtc), sats(f.totals.outflowBtc), sats(f.totals.netflowBtc)]).toEqual([
      inflow,
      outflow,
      inflow - outflow,
    ]);
    expect(Number(f.totals.inflowUsd)).toBeCloseTo(inflowUsd, 3);
    expect(f.direction).toBe(directionOf(inflow, outflow));
    // the model's reserves and flows agree to the satoshi: reserve change = Σ netflow; each day's reserve = the day
    // before + its netflow
    expect(sats(f.reserveChangeBtc!)).toBe(inflow - outflow);
    for (let i = 1; i < 7; i++)
      expect(sats(f.days[i]!.reserveBtc!) - sats(f.days[i - 1]!.reserveBtc!)).toBe(sats(f.days[i]!.netflowBtc));
    expect(f.reserveChangePercent).toBeCloseTo(
      (Number(inflow - outflow) / Number(sats(f.days[6]!.reserveBtc!) - (inflow - outflow))) * 100,
      5,
    );
    expect(f.sentiment).toBe(sentimentOf(f.direction, f.netflowZScore));
    // breakdown: the 8 simulated venues, largest gross first, summing to the totals
    expect(f.breakdown.map((b) => b.exchange).sort()).toEqual([
      'venue-a',
      'venue-b',
      'venue-c',
      'venue-d',
      'venue-e',
      'venue-f',
      'venue-g',
      'venue-h',
    ]);
    const gross = f.breakdown.map((b) => sats(b.inflowBtc) + sats(b.outflowBtc));
    expect([...gross].sort((a, b) => (b > a ? 1 : b < a ? -1 : 0))).toEqual(gross);
    expect(f.breakdown.reduce((s, b) => s + sats(b.inflowBtc), 0n)).toBe(inflow);
    expect(f.breakdown.reduce((s, b) => s + sats(b.outflowBtc), 0n)).toBe(outflow);
    expect(f.breakdown.reduce((s, b) => s + b.shareOfFlowPercent, 0)).toBeCloseTo(100, 4);
    for (const b of f.breakdown) expect(b.direction).toBe(directionOf(sats(b.inflowBtc), sats(b.outflowBtc)));
    expect(JSON.stringify(f)).not.toMatch(new RegExp(REAL_EXCHANGES.join('|'), 'i'));
  });

  it('flows: the z-score is the period’s mean netflow against the 90 days before it; the filter sums the chosen venues', async () => {
    // deterministic: the same clock gives the same answer
    const long = await client.exchangeFlows.flows({ body: { days: 90 } });
    expect((await client.exchangeFlows.flows({ body: { days: 90 } })).days).toEqual(long.days);
    expect([long.startDate, long.endDate]).toEqual(['2025-10-17', '2026-01-14']);
    expect(long.days.slice(-7)).toEqual(seven.days);
    // seven days: history 2025-10-10 … 2026-01-07 = the 90-day answer of a clock one week earlier
    clock = NOW - 7 * 86_400_000;
    const weekEarlier = await client.exchangeFlows.flows({ body: { days: 90 } });
    clock = NOW;
    expect(weekEarlier.endDate).toBe('2026-01-07');
    expect(seven.netflowZScore).toBe(
      netflowZScore(
        seven.days.map((d) => Number(d.netflowBtc)),
        weekEarlier.days.map((d) => Number(d.netflowBtc)),
      ),
    );

    const picked = await client.exchangeFlows.flows({ body: { days: 7, exchanges: ['venue-b', 'venue-e'] } });
    const fromBreakdown = seven.breakdown.filter((b) => b.exchange === 'venue-b' || b.exchange === 'venue-e');
    expect(sats(picked.totals.inflowBtc)).toBe(fromBreakdown.reduce((s, b) => s + sats(b.inflowBtc), 0n));
    expect(sats(picked.totals.netflowBtc)).toBe(fromBreakdown.reduce((s, b) => s + sats(b.netflowBtc), 0n));
    expect(picked.breakdown.map((b) => b.exchange).sort()).toEqual(['venue-b', 'venue-e']);
  });

  it('exchanges (0.01 USD): ranked by volume, reserve or netflow; totals are the venues’ sums', async () => {
    const before = balances();
    const byReserve = await client.exchangeFlows.exchanges({ body: { days: 30, sortBy: 'reserve' } });
    expect(balances()).toEqual([before[0] - 10_000n, before[1] + 10_000n]);
    expect([byReserve.startDate, byReserve.endDate]).toEqual(['2025-12-16', '2026-01-14']);
    const list = byReserve.exchanges;
    expect(list.map((e) => e.rank)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    for (let i = 1; i < list.length; i++) expect(sats(list[i - 1]!.reserveBtc) >= sats(list[i]!.reserveBtc)).toBe(true);
    expect(sats(byReserve.totalReserveBtc)).toBe(list.reduce((s, e) => s + sats(e.reserveBtc), 0n));
    expect(Number(byReserve.totalVolume24hUsd)).toBeCloseTo(
      list.reduce((s, e) => s + Number(e.volume24hUsd), 0),
      2,
    );
    expect(list.reduce((s, e) => s + e.volumeSharePercent, 0)).toBeCloseTo(100, 4);
    const summary = await client.exchangeFlows.summary();
    for (const e of list) {
      expect(e.name).toBe(`Venue ${e.exchange.slice(-1).toUpperCase()}`);
      expect(e.reserveUsd).toBe(usdText(sats(e.reserveBtc), summary.priceUsd));
      expect(sats(e.netflowBtc)).toBe(sats(e.inflowBtc) - sats(e.outflowBtc));
      expect(e.direction).toBe(directionOf(sats(e.inflowBtc), sats(e.outflowBtc)));
      // the reserve change over the period is its netflow over the reserve 30 days ago
      expect(e.reserveChangePercent).toBeCloseTo(
        (Number(sats(e.netflowBtc)) / Number(sats(e.reserveBtc) - sats(e.netflowBtc))) * 100,
        5,
      );
    }
    const byVolume = await client.exchangeFlows.exchanges({ body: { days: 30 } });
    for (let i = 1; i < 8; i++)
      expect(Number(byVolume.exchanges[i - 1]!.volume24hUsd)).toBeGreaterThanOrEqual(
        Number(byVolume.exchanges[i]!.volume24hUsd),
      );
    const byNetflow = await client.exchangeFlows.exchanges({ body: { days: 30, sortBy: 'netflow' } });
    for (let i = 1; i < 8; i++)
      expect(sats(byNetflow.exchanges[i - 1]!.netflowBtc) >= sats(byNetflow.exchanges[i]!.netflowBtc)).toBe(true);
    expect([...byNetflow.exchanges].map((e) => e.exchange).sort()).toEqual(
      [...byReserve.exchanges].map((e) => e.exchange).sort(),
    );
    expect(JSON.stringify(byReserve)).not.toMatch(new RegExp(REAL_EXCHANGES.join('|'), 'i'));
  });

  it('signal (0.02 USD): five weighted factors read from the flows, with built-in reasoning', async () => {
    const before = balances();
    const response = await client.exchangeFlows.signal.withResponse({ body: { lookbackDays: 7 } });
    expect(response.payment).toMatchObject({ amountUsd: '0.02', amount: '20000' });
    expect(balances()).toEqual([before[0] - 20_000n, before[1] + 20_000n]);
    const s = response.data;
    expect(s.generator).toEqual({ engine: 'builtin', model: 'builtin-rules-v1' });
    expect([s.lookbackDays, s.generatedAt]).toEqual([7, new Date(NOW).toISOString()]);
    expect(s.factors.map((f) => f.name)).toEqual([
      'netflow',
      'netflow_zscore',
      'reserve_trend',
      'price_momentum',
      'exchange_concentration',
    ]);
    expect(s.factors.map((f) => f.weight)).toEqual([0.3, 0.25, 0.2, 0.15, 0.1]);
    const by = Object.fromEntries(s.factors.map((f) => [f.name, f.value]));
    // the factors are the 7-day flow analysis' figures
    const gross = sats(seven.totals.inflowBtc) + sats(seven.totals.outflowBtc);
    expect(by.netflow).toBeCloseTo((Number(sats(seven.totals.netflowBtc)) / Number(gross)) * 100, 5);
    expect(by.netflow_zscore).toBe(seven.netflowZScore);
    expect(by.reserve_trend).toBe(seven.reserveChangePercent);
    expect(by.exchange_concentration).toBe(seven.breakdown[0]!.shareOfFlowPercent);
    const prices = seven.days.map((d) => Number(d.inflowUsd) / Number(d.inflowBtc));
    expect(by.price_momentum).toBeCloseTo(((prices[6]! - prices[0]!) / prices[0]!) * 100, 3);
    // the signal is the rule over these factors
    const recomputed = combineSignal(
      signalFactors({
        netflowPercent: by.netflow!,
        netflowZScore: by.netflow_zscore!,
        reserveChangePercent: by.reserve_trend!,
        priceChangePercent: by.price_momentum!,
        topVenueSharePercent: by.exchange_concentration!,
      }),
    );
    expect([s.signal, s.confidence]).toEqual([recomputed.signal, recomputed.confidence]);
    expect(s.reasoning).toContain('Over the last 7 days');
    expect(s.reasoning).toContain(`: ${s.signal}, confidence`);

    // different lookbacks give different readings of the same market
    const month = await client.exchangeFlows.signal({ body: { lookbackDays: 30 } });
    expect(month.factors.find((f) => f.name === 'reserve_trend')!.value).not.toBe(by.reserve_trend);
  });

  it('without payment a paid route answers 402 with the quote and charges nothing', async () => {
    const before = balances();
    const unpaid = createClient({ baseUrls: { 'exchange-flows': service.url }, maxRetries: 0 });
    for (const [call, amount] of [
      [() => unpaid.exchangeFlows.flows({ body: {} }), '10000'],
      [() => unpaid.exchangeFlows.exchanges({ body: {} }), '10000'],
      [() => unpaid.exchangeFlows.signal({ body: {} }), '20000'],
    ] as const) {
      const error = await call().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PaymentRequiredError);
      expect((error as PaymentRequiredError).status).toBe(402);
      expect(JSON.stringify((error as PaymentRequiredError).details)).toContain(`"amount":"${amount}"`);
    }
    expect(balances()).toEqual(before);
  });

  it('every route’s contract example succeeds against the default deployment', async () => {
    const api = client.exchangeFlows as unknown as Record<
      string,
      (args?: unknown) => Promise<{ source: { mode: string } }>
    >;
    for (const { key, route } of listRoutes(exchangeFlows.router)) {
      const example = (route.metadata as RouteMeta).example ?? {};
      const answer = await api[key]!(Object.keys(example).length ? example : undefined);
      expect(answer.source.mode).toBe('simulated');
    }
  });

  it('refusals and bad input: 400 naming the field, nothing charged', async () => {
    const before = balances();
    const cases: [() => Promise<unknown>, string][] = [
      [() => client.exchangeFlows.flows({ body: { days: 0 } }), 'body.days'],
      [() => client.exchangeFlows.flows({ body: { days: 91 } }), 'body.days'],
      [() => client.exchangeFlows.flows({ body: { days: 1.5 } }), 'body.days'],
      [() => client.exchangeFlows.flows({ body: { days: '7' as never } }), 'body.days'],
      [() => client.exchangeFlows.flows({ body: { exchanges: [] } }), 'body.exchanges'],
      [() => client.exchangeFlows.flows({ body: { exchanges: ['mtgox' as never] } }), 'body.exchanges.0'],
      // a real exchange id: the simulated model has no such venue
      [() => client.exchangeFlows.flows({ body: { exchanges: ['binance'] } }), 'body.exchanges'],
      [() => client.exchangeFlows.flows({ body: { exchanges: ['venue-a', 'venue-a'] } }), 'body.exchanges'],
      [() => client.exchangeFlows.flows({ body: { days: 7, venue: 'a' } as never }), 'body.venue'],
      [() => client.exchangeFlows.exchanges({ body: { sortBy: 'price' as never } }), 'body.sortBy'],
      [() => client.exchangeFlows.exchanges({ body: { days: -1 } }), 'body.days'],
      [() => client.exchangeFlows.signal({ body: { lookbackDays: 91 } }), 'body.lookbackDays'],
      [() => client.exchangeFlows.signal({ body: { days: 7 } as never }), 'body.days'],
    ];
    for (const [call, field] of cases) {
      const error = await failure(call());
      expect(error).toBeInstanceOf(BadRequestError);
      expect(error.code).toBe('invalid_request');
      expect((error as BadRequestError).fields.map((f) => f.field)).toContain(field);
    }
    expect(balances()).toEqual(before);
  });

  it('health: the model provider is ok', async () => {
    const health = (await (await fetch(`${service.url}/health`)).json()) as DataServiceHealth;
    expect(health).toMatchObject({
      status: 'ok',
      service: 'exchange-flows',
      database: 'ok',
      upstream: { mode: 'simulated', providers: [{ name: 'exchange-flow-model', status: 'ok' }] },
    });
  });
});

// ---- the live adapters against a local replay of the providers -----------------------------------------------

/**
 * Coin Metrics /timeseries/asset-metrics rows as the API sends them (values as strings); 200 illustrative days through
 * 2024-11-29.
 */
const CM_ROWS = Array.from({ length: 200 }, (_, i) => {
  const date = new Date(Date.parse('2024-05-14T00:00:00.000Z') + i * 86_400_000).toISOString().slice(0, 10);
  const inflow = 30_000 + ((i * 7919) % 9000) + (i % 7) * 0.12345678;
  const outflow = 31_000 + ((i * 104_729) % 9500) + (i % 5) * 0.87654321;
  return {
    asset: 'btc',
    time: `${date}T00:00:00.000000000Z`,
    FlowInExNtv: inflow.toFixed(8),
    FlowOutExNtv: outflow.toFixed(8),
    SplyExNtv: (2_600_000 - i * 850.5).toFixed(8),
    PriceUSD: (58_000 + i * 187.25 + (i % 3) * 0.0000000125).toFixed(10),
  };
});
// the community tier's rows carry more decimals than 8 on some days: rounded half up to the satoshi
CM_ROWS[199]!.FlowInExNtv = '33333.123456785';

/** CoinGecko /coins/bitcoin (market_data excerpt) and /global, as documented (research §6). */
const COIN = {
  id: 'bitcoin',
  symbol: 'btc',
  market_data: {
    current_price: { usd: 96_512.34 },
    market_cap: { usd: 1_910_123_456_789 },
    total_volume: { usd: 41_234_567_890.5 },
    high_24h: { usd: 97_800 },
    low_24h: { usd: 94_950.5 },
    price_change_24h: -1234.56789,
    price_change_percentage_24h: -1.26331,
    circulating_supply: 19_790_518.0,
    max_supply: 21_000_000,
    last_updated: '2024-11-30T11:58:03.512Z',
  },
};
const GLOBAL = {
  data: {
    active_cryptocurrencies: 15_000,
    market_cap_percentage: { btc: 56.9123, eth: 12.1 },
    updated_at: 1_732_967_880,
  },
};

interface Replay {
  url: string;
  requests: string[];
  failing: Set<'coinmetrics' | 'coingecko' | 'llm'>;
  close(): Promise<void>;
}

async function startReplay(): Promise<Replay> {
  const state = { url: '', requests: [] as string[], failing: new Set<'coinmetrics' | 'coingecko' | 'llm'>() };
  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const handle = (req: IncomingMessage, res: ServerResponse, text: string) => {
    const url = new URL(req.url!, state.url);
    state.requests.push(url.pathname);
    if (url.pathname === '/v4/timeseries/asset-metrics') {
      if (state.failing.has('coinmetrics'))
        return send(res, 503, { error: { type: 'unavailable', message: 'Service unavailable' } });
      const metrics = url.searchParams.get('metrics')!.split(',');
      const start = url.searchParams.get('start_time')!;
      const end = url.searchParams.get('end_time')!;
      const rows = CM_ROWS.filter((r) => r.time.slice(0, 10) >= start && r.time.slice(0, 10) <= end).map((r) => ({
        asset: r.asset,
        time: r.time,
        ...Object.fromEntries(metrics.map((m) => [m, (r as Record<string, string>)[m]])),
      }));
      // pages of 120 rows, the next reached through next_page_url
      const offset = Number(url.searchParams.get('next_page_token') ?? '0');
      const next =
        offset + 120 < rows.length
          ? {
              next_page_token: String(offset + 120),
              next_page_url: `${state.url}/v4/timeseries/asset-metrics?${url.searchParams}&next_page_token=${offset + 120}`,
            }
          : {};
      return send(res, 200, { data: rows.slice(offset, offset + 120), ...next });
    }
    if (url.pathname === '/api/v3/coins/bitcoin' || url.pathname === '/api/v3/global') {
      if (state.failing.has('coingecko'))
        return send(res, 429, { status: { error_code: 429, error_message: "You've exceeded the Rate Limit." } });
      return send(res, 200, url.pathname.endsWith('global') ? GLOBAL : COIN);
    }
    if (url.pathname === '/v1/chat/completions') {
      if (state.failing.has('llm')) return send(res, 500, { error: { message: 'overloaded' } });
      const request = JSON.parse(text) as { model: string; messages: { content: string }[] };
      const input = JSON.parse(request.messages[1]!.content) as { signal: string; factors: { name: string }[] };
      const content = JSON.stringify({
        reasoning: `LLM: ${input.signal} from ${input.factors.map((f) => f.name).join(', ')}.`,
      });
      return send(res, 200, {
        id: 'chatcmpl-1',
        object: 'chat.completion',
        created: 1,
        model: request.model,
        choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
      });
    }
    send(res, 404, { error: 'not found' });
  };
  const local = await listenLocal((req, res) => {
    let text = '';
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => handle(req, res, text));
  });
  state.url = local.url;
  return Object.assign(state, {
    close: local.close,
  });
}

describe('MARKET_DATA=live: Coin Metrics and CoinGecko (replayed), paid on the local ledger', () => {
  let economy: Economy;
  let replay: Replay;
  let service: RunningService;
  let client: AgentEconomyClient;
  let clock = Date.parse('2024-11-30T12:00:00.000Z');
  const balances = () =>
    [
      economy.ledger.tokenBalance(economy.buyer.address),
      economy.ledger.tokenBalance(service.context.wallet.address),
    ] as const;
  const live = (): ExchangeFlowsOptions => ({
    market: 'live',
    coinMetricsUrl: `${replay.url}/v4`,
    coinGeckoUrl: `${replay.url}/api/v3`,
    now: () => clock,
  });

  beforeAll(async () => {
    economy = await startEconomy();
    replay = await startReplay();
    service = await economy.startPaidService((c) => createExchangeFlowsApp(c, live()), {
      id: 'exchange-flows',
      reasoner: openAiReasoner({ baseUrl: `${replay.url}/v1`, model: 'test-model', apiKey: 'sk-test' }),
    });
    client = createClient({
      baseUrls: { 'exchange-flows': service.url },
      wallet: await walletFromSecretKey(economy.buyer.secretKey),
      payments: { rpcUrl: economy.rpcUrl },
      maxRetries: 0,
    });
  }, 120_000);
  afterAll(async () => {
    await economy?.close();
    await replay?.close();
  });

  it('the adapters map the documented responses', () => {
    const days = coinMetricsFlowDays([
      CM_ROWS[199],
      CM_ROWS[0],
      { asset: 'btc', time: '2024-01-01T00:00:00.000000000Z', PriceUSD: '1' },
    ]);
    expect(days.map((d) => d.date)).toEqual(['2024-05-14', '2024-11-29']); // sorted; a row without flows is no day
    expect(days[1]!.inflowSats).toBe(3_333_312_345_679n);
    expect(() => coinMetricsFlowDays([{ FlowInExNtv: '1' }])).toThrow(/without a time/);
    const { SplyExNtv: _reserve, ...withoutReserve } = CM_ROWS[0]!;
    expect(coinMetricsFlowDays([withoutReserve])[0]!.reserveSats).toBeNull(); // a day without a reserve keeps its flows
    const s = coinGeckoSummary(COIN, GLOBAL);
    expect(s).toEqual({
      asset: 'BTC',
      priceUsd: '96512.34',
      change24hUsd: '-1234.56789',
      change24hPercent: -1.26331,
      high24hUsd: '97800',
      low24hUsd: '94950.5',
      marketCapUsd: '1910123456789',
      volume24hUsd: '41234567890.5',
      dominancePercent: 56.9123,
      circulatingSupplyBtc: '19790518',
      lastUpdated: '2024-11-30T11:58:03.512Z',
    });
    expect(() => coinGeckoSummary({ market_data: { ...COIN.market_data, current_price: {} } }, GLOBAL)).toThrow(
      /current_price/,
    );
    expect(() => coinGeckoSummary(COIN, { data: {} })).toThrow(/market_cap_percentage/);
  });

  it('summary: CoinGecko’s figures, provider named, read once a minute', async () => {
    replay.requests = [];
    const s = await client.exchangeFlows.summary();
    expect(s).toMatchObject({
      priceUsd: '96512.34',
      change24hUsd: '-1234.56789',
      dominancePercent: 56.9123,
      marketCapUsd: '1910123456789',
      circulatingSupplyBtc: '19790518',
    });
    expect(s.source).toEqual({ mode: 'live', providers: ['coingecko'], asOf: new Date(clock).toISOString() });
    await client.exchangeFlows.summary();
    expect(replay.requests.sort()).toEqual(['/api/v3/coins/bitcoin', '/api/v3/global']);
  });

  it('flows: Coin Metrics’ all-exchange flows exactly, through its latest day; per-exchange breakdown empty with the note', async () => {
    replay.requests = [];
    const before = balances();
    const f = await client.exchangeFlows.flows({ body: { days: 7 } });
    expect(balances()).toEqual([before[0] - 10_000n, before[1] + 10_000n]);
    // the latest full day is 2024-11-29 (the clock is on 2024-11-30): the last 7 replayed rows
    const rows = CM_ROWS.slice(-7);
    expect([f.startDate, f.endDate]).toEqual(['2024-11-23', '2024-11-29']);
    expect(f.days.map((d) => d.date)).toEqual(rows.map((r) => r.time.slice(0, 10)));
    const trim = (x: string) => btcText(sats(x));
    expect(f.days.slice(0, 6).map((d) => d.inflowBtc)).toEqual(rows.slice(0, 6).map((r) => trim(r.FlowInExNtv)));
    expect(f.days[6]!.inflowBtc).toBe('33333.12345679'); // rounded half up
    expect(f.days.map((d) => d.outflowBtc)).toEqual(rows.map((r) => trim(r.FlowOutExNtv)));
    expect(f.days.map((d) => d.reserveBtc)).toEqual(rows.map((r) => trim(r.SplyExNtv)));
    // USD at Coin Metrics' PriceUSD of the day, exact
    expect(f.days.map((d) => d.outflowUsd)).toEqual(rows.map((r) => mulDec(trim(r.FlowOutExNtv), r.PriceUSD)));
    const net = f.days.map((d) => sats(d.netflowBtc));
    expect(sats(f.totals.netflowBtc)).toBe(net.reduce((a, b) => a + b, 0n));
    // z against the 90 rows before the period
    const history = CM_ROWS.slice(-97, -7).map((r) => Number(sats(r.FlowInExNtv) - sats(r.FlowOutExNtv)) / 1e8);
    expect(f.netflowZScore).toBe(
      netflowZScore(
        net.map((n) => Number(n) / 1e8),
        history,
      ),
    );
    // reserve change: the last reserve against the day before the period
    expect(f.reserveChangeBtc).toBe(btcText(sats(rows[6]!.SplyExNtv) - sats(CM_ROWS[192]!.SplyExNtv)));
    expect(f.breakdown).toEqual([]);
    expect(f.source).toMatchObject({ mode: 'live', providers: ['coinmetrics'], asOf: new Date(clock).toISOString() });
    expect(f.source.note).toMatch(/Per-exchange flows, reserves and volumes are null or empty/);
    // two pages of 120 rows from one read of the longest window
    expect(replay.requests).toEqual(['/v4/timeseries/asset-metrics', '/v4/timeseries/asset-metrics']);

    // an exchange filter needs per-exchange data: refused before payment
    const refused = await failure(client.exchangeFlows.flows({ body: { days: 7, exchanges: ['binance'] } }));
    expect([refused.status, (refused as BadRequestError).fields[0]!.field]).toEqual([400, 'body.exchanges']);
    expect(balances()).toEqual([before[0] - 10_000n, before[1] + 10_000n]);
  });

  it('exchanges: no per-exchange list; totals are Coin Metrics’ all-exchange reserve and CoinGecko’s BTC volume', async () => {
    const e = await client.exchangeFlows.exchanges({ body: { days: 30, sortBy: 'reserve' } });
    expect(e.exchanges).toEqual([]);
    expect([e.startDate, e.endDate]).toEqual(['2024-10-31', '2024-11-29']);
    expect(e.totalReserveBtc).toBe(btcText(sats(CM_ROWS[199]!.SplyExNtv)));
    expect(e.totalVolume24hUsd).toBe('41234567890.5');
    expect(e.source).toMatchObject({ mode: 'live', providers: ['coinmetrics', 'coingecko'] });
    expect(e.source.note).toMatch(/no free provider publishes them/);
  });

  it('signal: four factors weighed (no per-exchange data), reasoning written by the LLM', async () => {
    const s = await client.exchangeFlows.signal({ body: { lookbackDays: 30 } });
    expect(s.generator).toEqual({ engine: 'llm', model: 'test-model' });
    expect(s.reasoning).toBe(
      `LLM: ${s.signal} from netflow, netflow_zscore, reserve_trend, price_momentum, exchange_concentration.`,
    );
    const concentration = s.factors.find((f) => f.name === 'exchange_concentration')!;
    expect([concentration.weight, concentration.reading]).toEqual([0, 'neutral']);
    expect(s.factors.map((f) => f.weight)).toEqual([0.333333, 0.277778, 0.222222, 0.166667, 0]);
    // reserves fall 850.5 BTC a day in the replay: a reserve drop of 30 × 850.5 over the reserve 30 days before
    const reserve = s.factors.find((f) => f.name === 'reserve_trend')!;
    expect(reserve.value).toBeCloseTo(((-30 * 850.5) / Number(CM_ROWS[169]!.SplyExNtv)) * 100, 5);
    expect(reserve.reading).toBe('bullish');
    const momentum = s.factors.find((f) => f.name === 'price_momentum')!;
    expect(momentum.value).toBeCloseTo(
      ((Number(CM_ROWS[199]!.PriceUSD) - Number(CM_ROWS[170]!.PriceUSD)) / Number(CM_ROWS[170]!.PriceUSD)) * 100,
      5,
    );
    expect(s.source.note).toMatch(/Per-exchange/);
  });

  it('a failing provider is 502 upstream_unavailable with Retry-After, nothing charged; health degraded, then ok', async () => {
    const before = balances();
    clock += 11 * 60_000; // past the 10-minute reuse of Coin Metrics' read
    replay.failing.add('coinmetrics');
    for (const call of [
      () => client.exchangeFlows.flows({ body: { days: 7 } }),
      () => client.exchangeFlows.signal({ body: {} }),
      () => client.exchangeFlows.exchanges({ body: {} }),
    ]) {
      const error = await failure(call());
      expect([error.status, error.code, error.headers['retry-after']]).toEqual([502, 'upstream_unavailable', '5']);
    }
    let health = (await (await fetch(`${service.url}/health`)).json()) as DataServiceHealth;
    expect(health.status).toBe('degraded');
    expect(health.upstream.providers.find((p) => p.name === 'coinmetrics')!.status).toBe('failing');
    replay.failing.clear();
    replay.failing.add('coingecko');
    clock += 2 * 60_000; // past the 1-minute reuse of CoinGecko's answer (the exchanges call above read it)
    const summary = await failure(client.exchangeFlows.summary());
    expect([summary.status, summary.code]).toEqual([502, 'upstream_unavailable']);
    const exchanges = await failure(client.exchangeFlows.exchanges({ body: {} }));
    expect(exchanges.status).toBe(502);
    // the LLM failing is the reasoner's own 502, also before payment
    replay.failing.clear();
    replay.failing.add('llm');
    const llm = await failure(client.exchangeFlows.signal({ body: { lookbackDays: 14 } }));
    expect([llm.status, llm.code]).toEqual([502, 'llm_unavailable']);
    expect(balances()).toEqual(before);
    replay.failing.clear();
    await client.exchangeFlows.summary();
    await client.exchangeFlows.flows({ body: { days: 1 } });
    health = (await (await fetch(`${service.url}/health`)).json()) as DataServiceHealth;
    expect(health).toMatchObject({ status: 'ok', upstream: { mode: 'live' } });
    expect(balances()).toEqual([before[0] - 10_000n, before[1] + 10_000n]);
  });
});
