import {
  SIMULATED_FLOW_VENUES,
  type BtcPriceSummary,
  type DataSource,
  type FlowExchange,
} from '@agent-economy/contracts';
import { round } from '../../upstream/decimal';
import { sharedMarketModel, type MarketModel } from '../../upstream/market';
import {
  gaussian,
  geometricScales,
  hashString,
  ScaleNoise,
  stationaryAmplitudes,
  subKey,
  uniform,
} from '../../upstream/market/random';
import { UpstreamTracker } from '../../upstream/tracker';
import { addDays, decimalText, satsOf, usdText, type FlowDay } from './domain';
import { tracedFetch } from '../../http/tracing';

const MS_PER_DAY = 86_400_000;

/** One exchange's days (the dates of the aggregate) and its BTC spot volume over the last 24 hours. */
export interface VenueSeries {
  exchange: FlowExchange;
  name: string;
  days: FlowDay[];
  volume24hUsd: string;
}

/** What a flow read returns: aggregate days oldest first through the latest full day the source has. */
export interface FlowRead {
  days: FlowDay[];
  /** Per-exchange series; null when the source has no per-exchange data (then `note` says why). */
  venues: VenueSeries[] | null;
  /** BTC volume of all markets over 24 hours, when the read asked for it and the source has it. */
  volume24hUsd: string | null;
  /** The current BTC price, when the read asked for it. */
  priceUsd: string | null;
  providers: string[];
  /** When the data was read from its provider (a reused answer keeps its time), ms. */
  asOf: number;
  note?: string;
}

export type Summary = Omit<BtcPriceSummary, 'source'>;

/** Where the flows and the price summary come from: the seeded model, or Coin Metrics and CoinGecko. */
export interface FlowSource {
  readonly mode: DataSource['mode'];
  readonly tracker: UpstreamTracker;
  /**
   * `count` days ending at the latest full UTC day at `nowMs` (the source's latest when it lags), with the market now
   * if `market`.
   */
  flows(nowMs: number, count: number, options?: { market?: boolean }): Promise<FlowRead>;
  summary(nowMs: number): Promise<{ summary: Summary; providers: string[]; asOf: number }>;
}

// ---- the simulated source ----------------------------------------------------------------------------------

export const FLOW_MODEL_PROVIDER = 'exchange-flow-model';

interface VenueProfile {
  exchange: FlowExchange;
  name: string;
  baseReserveBtc: number;
  /** Typical daily two-way activity (deposits matched by withdrawals), BTC. */
  activityBtc: number;
  volumeWeight: number;
  own: ScaleNoise;
  activityKey: number;
  /** How strongly the venue takes part in market-wide withdrawal or deposit waves. */
  waveExposure: number;
}

/** Block subsidy schedule: the supply after `height` blocks (50 BTC halving every 210 000 blocks), satoshis. */
export function supplyAtHeight(height: number): bigint {
  let supply = 0n;
  let subsidy = 50n * 100_000_000n;
  let remaining = BigInt(Math.max(0, Math.floor(height)) + 1);
  while (remaining > 0n && subsidy > 0n) {
    const era = remaining < 210_000n ? remaining : 210_000n;
    supply += era * subsidy;
    remaining -= era;
    subsidy /= 2n;
  }
  return supply;
}
/** Height at an instant on a 10-minute schedule through the fourth halving (block 840 000, 2024-04-20 00:09:27 UTC). */
const heightAt = (timeMs: number) => 840_000 + Math.floor((timeMs - Date.parse('2024-04-20T00:09:27.000Z')) / 600_000);

/**
 * The seeded exchange-flow model: eight simulated venues (venue-a … venue-h, never real exchanges), each with a
 * reserve that wanders around its base on a mean-reverting multi-scale process (a factor shared by all venues and
 * its own) and moves with occasional market-wide withdrawal or deposit waves, and a daily two-way activity. Netflow is
 * the day's reserve change, inflow = activity + max(net, 0),
 * outflow = activity + max(−net, 0): flows and reserves agree to the satoshi. Prices, volumes and the market come
 * from the shared market model, so every market data service of a deployment sees one BTC price. Pure functions
 * of (seed, day): every replica computes the same flows.
 */
export class FlowModel {
  private readonly venues: VenueProfile[];
  private readonly common: ScaleNoise;
  private readonly dominance: ScaleNoise;
  private readonly waveKey: number;
  private readonly dayCache = new Map<number, { reserves: bigint[]; activity: bigint[] }>();

  constructor(
    readonly seed: string,
    readonly market: MarketModel = sharedMarketModel(seed),
  ) {
    const key = hashString(`exchange-flows:${seed}`);
    const scales = geometricScales(2 * MS_PER_DAY, 5);
    this.common = new ScaleNoise(subKey(key, 1), scales, stationaryAmplitudes(scales));
    this.dominance = new ScaleNoise(subKey(key, 2), scales, stationaryAmplitudes(scales));
    this.waveKey = subKey(key, 3);
    this.venues = SIMULATED_FLOW_VENUES.map((exchange, i) => {
      const k = subKey(key, 100 + i);
      const baseReserveBtc = (650_000 / (i + 1) ** 0.9) * (0.8 + 0.4 * uniform(k, 1));
      return {
        exchange,
        name: `Venue ${exchange.slice(-1).toUpperCase()}`,
        baseReserveBtc,
        activityBtc: baseReserveBtc * 0.012 * (0.7 + 0.6 * uniform(k, 2)),
        volumeWeight: (1 / (i + 1)) * (0.6 + 0.8 * uniform(k, 3)),
        own: new ScaleNoise(subKey(k, 4), scales, stationaryAmplitudes(scales)),
        activityKey: subKey(k, 5),
        waveExposure: 0.6 + 0.8 * uniform(k, 6),
      };
    });
  }

  /**
   * Market-wide waves at the end of day `index`, as a log-reserve offset: in about 30 % of 16-day blocks a wave of 3
   * to 10 days moves reserves by 2 % to 6 % (withdrawals or deposits, e.g. after a shock), then fades linearly over
   * 60 days. Sustained flows like these are what the netflow z-score and the sentiment rule pick out.
   */
  private waveAt(index: number): number {
    let offset = 0;
    const block = Math.floor(index / 16);
    for (let b = block - 6; b <= block; b++) {
      if (uniform(this.waveKey, b * 8) >= 0.3) continue;
      const start = b * 16 + Math.floor(uniform(this.waveKey, b * 8 + 1) * 16);
      const length = 3 + Math.floor(uniform(this.waveKey, b * 8 + 2) * 8);
      const amplitude =
        (uniform(this.waveKey, b * 8 + 3) < 0.5 ? -1 : 1) * (0.02 + 0.04 * uniform(this.waveKey, b * 8 + 4));
      const k = index - start + 1;
      if (k <= 0) continue;
      offset += k <= length ? (amplitude * k) / length : amplitude * Math.max(0, 1 - (k - length) / 60);
    }
    return offset;
  }

  /**
   * Every venue's reserve at the end of day `index` (days since the epoch) and its two-way activity that day, satoshis.
   */
  private day(index: number) {
    let hit = this.dayCache.get(index);
    if (!hit) {
      const t = (index + 1) * MS_PER_DAY;
      const c = this.common.at(t);
      const wave = this.waveAt(index);
      hit = {
        reserves: this.venues.map((v) =>
          BigInt(
            Math.round(
              v.baseReserveBtc * Math.exp(0.015 * (0.7 * c + 0.7 * v.own.at(t)) + wave * v.waveExposure) * 1e8,
            ),
          ),
        ),
        activity: this.venues.map((v) =>
          BigInt(Math.round(v.activityBtc * Math.exp(0.35 * gaussian(v.activityKey, index)) * 1e8)),
        ),
      };
      if (this.dayCache.size > 5000) this.dayCache.clear();
      this.dayCache.set(index, hit);
    }
    return hit;
  }

  /** The BTC close of a day (the model's price at the end of it), cents. */
  private closeOf(index: number): string {
    return this.market.spotPrice('BTC', (index + 1) * MS_PER_DAY).toFixed(2);
  }

  /** `count` days through `end`, per venue and in aggregate. */
  flows(end: string, count: number, nowMs: number): { days: FlowDay[]; venues: VenueSeries[] } {
    const last = Date.parse(`${end}T00:00:00.000Z`) / MS_PER_DAY;
    const perVenue: FlowDay[][] = this.venues.map(() => []);
    const days: FlowDay[] = [];
    for (let index = last - count + 1; index <= last; index++) {
      const today = this.day(index);
      const before = this.day(index - 1);
      const date = new Date(index * MS_PER_DAY).toISOString().slice(0, 10);
      const priceUsd = this.closeOf(index);
      let inflow = 0n;
      let outflow = 0n;
      let reserve = 0n;
      this.venues.forEach((_, v) => {
        const net = today.reserves[v]! - before.reserves[v]!;
        const a = today.activity[v]!;
        const day: FlowDay = {
          date,
          inflowSats: a + (net > 0n ? net : 0n),
          outflowSats: a + (net < 0n ? -net : 0n),
          reserveSats: today.reserves[v]!,
          priceUsd,
        };
        perVenue[v]!.push(day);
        inflow += day.inflowSats;
        outflow += day.outflowSats;
        reserve += day.reserveSats!;
      });
      days.push({ date, inflowSats: inflow, outflowSats: outflow, reserveSats: reserve, priceUsd });
    }
    const volume = this.market.spotVolume24hUsd('BTC', nowMs);
    const weights = this.venues.reduce((s, v) => s + v.volumeWeight, 0);
    // Not every BTC market is one of the eight venues: they carry 70 % of the model's spot volume.
    const venues = this.venues.map((v, i) => ({
      exchange: v.exchange,
      name: v.name,
      days: perVenue[i]!,
      volume24hUsd: ((0.7 * volume * v.volumeWeight) / weights).toFixed(2),
    }));
    return { days, venues };
  }

  /**
   * The market at an instant: price now and 24 h ago, the 24-hour high and low (5-minute samples), volume, supply,
   * dominance.
   */
  summary(nowMs: number): Summary {
    const t = Math.floor(nowMs / 60_000) * 60_000;
    const price = this.market.spotPrice('BTC', t);
    const before = this.market.spotPrice('BTC', t - MS_PER_DAY);
    const samples = Array.from({ length: 289 }, (_, i) => this.market.spotPrice('BTC', t - MS_PER_DAY + i * 300_000));
    const priceText = price.toFixed(2);
    const supply = supplyAtHeight(heightAt(t));
    const change = Number(priceText) - Number(before.toFixed(2));
    return {
      asset: 'BTC',
      priceUsd: priceText,
      change24hUsd: change.toFixed(2),
      change24hPercent: round(((price - before) / before) * 100, 4),
      high24hUsd: Math.max(...samples).toFixed(2),
      low24hUsd: Math.min(...samples).toFixed(2),
      marketCapUsd: usdText(supply, priceText),
      volume24hUsd: this.market.spotVolume24hUsd('BTC', t).toFixed(2),
      dominancePercent: round(Math.min(75, Math.max(35, 56 + 6 * this.dominance.at(t))), 4),
      circulatingSupplyBtc: decimalText(Number(supply) / 1e8, 8),
      lastUpdated: new Date(t).toISOString(),
    };
  }
}

const models = new Map<string, FlowModel>();

/** The simulated source over the seeded model (MARKET_DATA=simulated, the default). */
export function simulatedFlowSource(seed = 'agent-economy'): FlowSource {
  let model = models.get(seed);
  if (!model) models.set(seed, (model = new FlowModel(seed)));
  const m = model;
  const tracker = new UpstreamTracker('simulated', [FLOW_MODEL_PROVIDER]);
  let lastSummary: { minute: number; summary: Summary } | undefined;
  return {
    mode: 'simulated',
    tracker,
    flows: (nowMs, count) =>
      tracker.call(FLOW_MODEL_PROVIDER, async () => {
        const { days, venues } = m.flows(latestDay(nowMs), count, nowMs);
        return {
          days,
          venues,
          volume24hUsd: m.market.spotVolume24hUsd('BTC', nowMs).toFixed(2),
          priceUsd: m.market.spotPrice('BTC', nowMs).toFixed(2),
          providers: [FLOW_MODEL_PROVIDER],
          asOf: nowMs,
        };
      }),
    // The summary is the market at the current minute: computed once a minute, whoever asks (the route is free).
    summary: (nowMs) =>
      tracker.call(FLOW_MODEL_PROVIDER, async () => {
        const minute = Math.floor(nowMs / 60_000) * 60_000;
        if (lastSummary?.minute !== minute) lastSummary = { minute, summary: m.summary(minute) };
        return { summary: lastSummary.summary, providers: [FLOW_MODEL_PROVIDER], asOf: minute };
      }),
  };
}

const latestDay = (nowMs: number) => addDays(new Date(nowMs).toISOString().slice(0, 10), -1);

// ---- the live source -----------------------------------------------------------------------------------------

export const COIN_METRICS = 'coinmetrics';
export const COINGECKO = 'coingecko';
export const COIN_METRICS_URL = 'https://community-api.coinmetrics.io/v4';
export const COINGECKO_URL = 'https://api.coingecko.com/api/v3';
export const PER_EXCHANGE_NOTE =
  'Per-exchange flows, reserves and volumes are null or empty: no free provider publishes them (Coin Metrics community serves only the all-exchange aggregate FlowInExNtv, FlowOutExNtv, SplyExNtv).';
const TIMEOUT_MS = 20_000;
const MAX_PAGES = 10;
/** The longest read a route makes: 90 days and the 90 before them. */
export const MAX_READ_DAYS = 180;
/**
 * How long a provider's answer is reused: Coin Metrics' daily rows change once a day, CoinGecko caches ~1 min itself.
 */
const COIN_METRICS_TTL_MS = 10 * 60_000;
const COINGECKO_TTL_MS = 60_000;

async function getJson(url: string, headers: Record<string, string> = {}): Promise<unknown> {
  const response = await tracedFetch(
    `GET ${new URL(url).host}`,
    url,
    { headers: { accept: 'application/json', ...headers }, signal: AbortSignal.timeout(TIMEOUT_MS) },
    { propagate: false },
  );
  if (!response.ok) throw new Error(`HTTP ${response.status} from ${new URL(url).origin}`);
  return await response.json();
}

const isDecimal = (v: unknown): v is string | number =>
  (typeof v === 'string' && /^\d+(\.\d+)?$/.test(v.trim())) || (typeof v === 'number' && Number.isFinite(v) && v >= 0);

/** Coin Metrics rows (strings) into flow days; rows without flows or price are days without data. */
export function coinMetricsFlowDays(rows: readonly unknown[]): FlowDay[] {
  const days: FlowDay[] = [];
  for (const row of rows) {
    if (!row || typeof row !== 'object') throw new Error('Coin Metrics sent a row that is not an object');
    const r = row as Record<string, unknown>;
    const date = typeof r.time === 'string' ? r.time.slice(0, 10) : '';
    if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) throw new Error('Coin Metrics sent a row without a time');
    if (!isDecimal(r.FlowInExNtv) || !isDecimal(r.FlowOutExNtv) || !isDecimal(r.PriceUSD) || !(Number(r.PriceUSD) > 0))
      continue;
    days.push({
      date,
      inflowSats: satsOf(r.FlowInExNtv)!,
      outflowSats: satsOf(r.FlowOutExNtv)!,
      reserveSats: isDecimal(r.SplyExNtv) ? satsOf(r.SplyExNtv) : null,
      // The provider's decimal, verbatim.
      priceUsd: typeof r.PriceUSD === 'string' ? r.PriceUSD.trim() : decimalText(r.PriceUSD),
    });
  }
  return days.sort((a, b) => (a.date < b.date ? -1 : a.date > b.date ? 1 : 0));
}

const num = (v: unknown, what: string): number => {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new Error(`CoinGecko sent no ${what}`);
  return v;
};
const positive = (v: unknown, what: string): string => {
  const n = num(v, what);
  if (n < 0) throw new Error(`CoinGecko sent a negative ${what}`);
  return decimalText(n);
};

/** CoinGecko `/coins/bitcoin` (market_data) and `/global` (market_cap_percentage.btc) into the summary. */
export function coinGeckoSummary(coin: unknown, global: unknown): Summary {
  type Quote = { usd?: unknown } | undefined;
  const md = (
    coin as {
      market_data?: Record<string, unknown> & {
        last_updated?: unknown;
        current_price?: Quote;
        high_24h?: Quote;
        low_24h?: Quote;
        market_cap?: Quote;
        total_volume?: Quote;
      };
    } | null
  )?.market_data;
  if (!md || typeof md !== 'object') throw new Error('CoinGecko sent no market_data');
  const dominance = (global as { data?: { market_cap_percentage?: { btc?: unknown } } } | null)?.data
    ?.market_cap_percentage?.btc;
  const updated = typeof md.last_updated === 'string' ? Date.parse(md.last_updated) : NaN;
  if (!Number.isFinite(updated)) throw new Error('CoinGecko sent no last_updated');
  const supply = num(md.circulating_supply, 'circulating_supply');
  const optional = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? decimalText(v) : null);
  return {
    asset: 'BTC',
    priceUsd: positive(md.current_price?.usd, 'current_price.usd'),
    change24hUsd: decimalText(num(md.price_change_24h, 'price_change_24h')),
    change24hPercent: round(num(md.price_change_percentage_24h, 'price_change_percentage_24h'), 6),
    high24hUsd: optional(md.high_24h?.usd),
    low24hUsd: optional(md.low_24h?.usd),
    marketCapUsd: positive(md.market_cap?.usd, 'market_cap.usd'),
    volume24hUsd: positive(md.total_volume?.usd, 'total_volume.usd'),
    dominancePercent: round(Math.min(100, Math.max(0, num(dominance, 'market_cap_percentage.btc'))), 6),
    circulatingSupplyBtc: decimalText(Math.max(0, Math.round(supply * 1e8) / 1e8), 8),
    lastUpdated: new Date(updated).toISOString(),
  };
}

export interface LiveFlowOptions {
  /** Coin Metrics Community API v4 base. */
  coinMetricsUrl?: string;
  /** CoinGecko API v3 base. */
  coinGeckoUrl?: string;
  /** CoinGecko demo key (header x-cg-demo-api-key), when there is one. */
  coinGeckoApiKey?: string;
}

/** A small time-to-live cache of provider answers; failures are not kept, concurrent misses share one read. */
function ttlCache() {
  const entries = new Map<string, { at: number; value: Promise<unknown> }>();
  return <T>(key: string, ttlMs: number, nowMs: number, load: () => Promise<T>): Promise<{ value: T; at: number }> => {
    const hit = entries.get(key);
    if (hit && nowMs - hit.at < ttlMs && nowMs >= hit.at) return hit.value as Promise<{ value: T; at: number }>;
    const value = load().then((v) => ({ value: v, at: nowMs }));
    entries.set(key, { at: nowMs, value });
    if (entries.size > 200) entries.delete(entries.keys().next().value!);
    value.catch(() => entries.get(key)?.value === value && entries.delete(key));
    return value;
  };
}

/**
 * The public providers: Coin Metrics Community (daily all-exchange FlowInExNtv, FlowOutExNtv, SplyExNtv and
 * PriceUSD) and CoinGecko (the price summary, BTC volume and dominance). Per-exchange data is not free anywhere:
 * reads carry no venues and say so in `note`.
 */
export function liveFlowSource(options: LiveFlowOptions = {}): FlowSource {
  const coinMetricsUrl = (options.coinMetricsUrl ?? COIN_METRICS_URL).replace(/\/+$/, '');
  const coinGeckoUrl = (options.coinGeckoUrl ?? COINGECKO_URL).replace(/\/+$/, '');
  const geckoHeaders: Record<string, string> = options.coinGeckoApiKey
    ? { 'x-cg-demo-api-key': options.coinGeckoApiKey }
    : {};
  const tracker = new UpstreamTracker('live', [COIN_METRICS, COINGECKO]);
  const cache = ttlCache();

  const readCoinMetrics = (start: string, end: string, nowMs: number) =>
    cache(`cm:${start}:${end}`, COIN_METRICS_TTL_MS, nowMs, () =>
      tracker.call(COIN_METRICS, async () => {
        const query = new URLSearchParams({
          assets: 'btc',
          metrics: 'FlowInExNtv,FlowOutExNtv,SplyExNtv,PriceUSD',
          frequency: '1d',
          start_time: start,
          end_time: end,
          page_size: '10000',
          paging_from: 'start',
        });
        const origin = new URL(coinMetricsUrl).origin;
        let url: string | undefined = `${coinMetricsUrl}/timeseries/asset-metrics?${query}`;
        const rows: unknown[] = [];
        // Pages follow `next_page_url` unchanged until it is absent (Coin Metrics' paging convention, research §1.2).
        for (let page = 0; url; page++) {
          if (page === MAX_PAGES) throw new Error(`Coin Metrics paged more than ${MAX_PAGES} times`);
          const body = (await getJson(url)) as { data?: unknown; next_page_url?: unknown };
          if (!Array.isArray(body?.data)) throw new Error('Coin Metrics sent no data array');
          rows.push(...body.data);
          const next: unknown = body.next_page_url;
          if (typeof next !== 'string' || next === '') url = undefined;
          else if (new URL(next).origin !== origin)
            throw new Error('Coin Metrics pointed the next page at another host');
          else url = next;
        }
        const days = coinMetricsFlowDays(rows);
        if (days.length === 0) throw new Error(`Coin Metrics sent no exchange flows from ${start} to ${end}`);
        return days;
      }),
    );

  const readGecko = (path: string, nowMs: number) =>
    cache(`cg:${path}`, COINGECKO_TTL_MS, nowMs, () => getJson(`${coinGeckoUrl}${path}`, geckoHeaders));
  const COIN_PATH =
    '/coins/bitcoin?localization=false&tickers=false&market_data=true&community_data=false&developer_data=false&sparkline=false';
  const readSummary = (nowMs: number) =>
    tracker.call(COINGECKO, async () => {
      const [coin, global] = await Promise.all([readGecko(COIN_PATH, nowMs), readGecko('/global', nowMs)]);
      return { summary: coinGeckoSummary(coin.value, global.value), asOf: Math.min(coin.at, global.at) };
    });

  return {
    mode: 'live',
    tracker,
    async flows(nowMs, count, { market = false } = {}) {
      const end = latestDay(nowMs);
      // One read serves every request of the day: the longest (90 days and the 90 before), with a few days of
      // slack, since the community tier publishes a day's flows a day or two after it ends.
      if (count > MAX_READ_DAYS) throw new Error(`at most ${MAX_READ_DAYS} days are read`);
      const start = addDays(end, -(MAX_READ_DAYS + 3));
      const [all, summary] = await Promise.all([
        readCoinMetrics(start, end, nowMs),
        market ? readSummary(nowMs) : Promise.resolve(null),
      ]);
      return {
        days: all.value.slice(-count),
        venues: null,
        volume24hUsd: summary?.summary.volume24hUsd ?? null,
        priceUsd: summary?.summary.priceUsd ?? null,
        providers: market ? [COIN_METRICS, COINGECKO] : [COIN_METRICS],
        asOf: Math.min(all.at, summary?.asOf ?? all.at),
        note: PER_EXCHANGE_NOTE,
      };
    },
    summary: async (nowMs) => {
      const { summary, asOf } = await readSummary(nowMs);
      return { summary, providers: [COINGECKO], asOf };
    },
  };
}
