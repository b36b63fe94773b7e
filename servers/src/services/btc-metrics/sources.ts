import type { DataSource } from '@agent-economy/contracts';
import { UpstreamTracker } from '../../upstream/tracker';
import type { MarketDay, SpentDay } from './domain';
import { EMBEDDED_PROVIDER, embeddedModel } from './model';
import { tracedFetch } from '../../http/tracing';

/** What a read returns: the market series from the first day of data, and SOPR/aSOPR where a source has them. */
export interface SeriesRead {
  /** Oldest first, from the source's first day of data through `end` (the Z-Score needs the whole history). */
  market: MarketDay[];
  spent: Map<string, SpentDay>;
  /** The providers that answered. */
  providers: string[];
  /** False when an optional provider failed: the answer is served but not cached. */
  complete: boolean;
}

/** Where the service's daily data comes from: the embedded model, or the public upstreams (research §1.2). */
export interface MetricsSource {
  readonly mode: DataSource['mode'];
  readonly tracker: UpstreamTracker;
  /**
   * The series through `end` (null: through the latest day), with SOPR/aSOPR from `spent.from` (null: the
   * source's first day) through `end`; `spent` null reads none.
   */
  read(end: string | null, spent: { from: string | null } | null): Promise<SeriesRead>;
}

/** The embedded, seeded market model (servers/src/services/btc-metrics/model.ts). */
export function embeddedSource(): MetricsSource {
  const tracker = new UpstreamTracker('simulated', [EMBEDDED_PROVIDER]);
  return {
    mode: 'simulated',
    tracker,
    read: (end) =>
      tracker.call(EMBEDDED_PROVIDER, async () => {
        const model = embeddedModel();
        const market = end === null ? model.market : model.market.filter((d) => d.date <= end);
        return { market, spent: model.spent, providers: [EMBEDDED_PROVIDER], complete: true };
      }),
  };
}

/** Runs upstream requests with at most `max` in flight; the rest wait their turn in order. */
export function requestLimiter(max: number) {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async <T>(task: () => Promise<T>): Promise<T> => {
    if (active >= max) await new Promise<void>((resolve) => waiting.push(resolve));
    active += 1;
    try {
      return await task();
    } finally {
      active -= 1;
      waiting.shift()?.();
    }
  };
}

export const COIN_METRICS = 'coinmetrics';
export const BGEOMETRICS = 'bgeometrics';
export const COIN_METRICS_URL = 'https://community-api.coinmetrics.io/v4';
export const BGEOMETRICS_URL = 'https://bitcoin-data.com';
/** The first day of the bitcoin chain: "from the first day of data" starts here or later. */
const GENESIS = '2009-01-03';
const TIMEOUT_MS = 20_000;
const MAX_PAGES = 20;

export interface LiveOptions {
  /** Coin Metrics Community API v4 base (price, market cap, MVRV, supply). */
  coinMetricsUrl?: string;
  /** BGeometrics (bitcoin-data.com) base, for SOPR; null to read no SOPR. */
  bgeometricsUrl?: string | null;
  /** Upstream requests one at a time (the second deployment), else as many as a read needs at once. */
  sequential: boolean;
}

async function getJson(url: string): Promise<unknown> {
  const response = await tracedFetch(
    `GET ${new URL(url).host}`,
    url,
    { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(TIMEOUT_MS) },
    { propagate: false },
  );
  if (!response.ok) throw new Error(`HTTP ${response.status} from ${new URL(url).origin}`);
  return await response.json();
}

/** A decimal the upstream sent as a string (or number); undefined when absent, null or not a finite number. */
function decimal(value: unknown): number | undefined {
  if (typeof value !== 'string' && typeof value !== 'number') return undefined;
  const n = Number(value);
  return Number.isFinite(n) ? n : undefined;
}

/**
 * Coin Metrics rows into market days. Realized cap is not on the community tier (403): it is MC / CapMVRVCur,
 * the definition Coin Metrics documents for CapMVRVCur. Rows missing a value are days without data.
 */
export function coinMetricsDays(rows: readonly unknown[]): MarketDay[] {
  const days: MarketDay[] = [];
  for (const row of rows) {
    if (!row || typeof row !== 'object') throw new Error('Coin Metrics sent a row that is not an object');
    const r = row as Record<string, unknown>;
    const date = typeof r.time === 'string' ? r.time.slice(0, 10) : '';
    if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) throw new Error('Coin Metrics sent a row without a time');
    const price = decimal(r.PriceUSD);
    const marketCap = decimal(r.CapMrktCurUSD);
    const ratio = decimal(r.CapMVRVCur);
    const supply = decimal(r.SplyCur);
    if (price === undefined || marketCap === undefined || ratio === undefined || supply === undefined) continue;
    if (!(price > 0 && marketCap > 0 && ratio > 0 && supply > 0)) continue;
    days.push({
      date,
      priceText: String(r.PriceUSD),
      priceUsd: price,
      supplyBtc: supply,
      marketCapUsd: marketCap,
      realizedCapUsd: marketCap / ratio,
    });
  }
  return days.sort((a, b) => (a.date < b.date ? -1 : a.date > b.date ? 1 : 0));
}

/** BGeometrics SOPR rows (`{ d, unixTs, sopr }`, values as strings), as a JSON array or a Spring page's `content`. */
export function bgeometricsSopr(body: unknown): Map<string, SpentDay> {
  const rows = Array.isArray(body)
    ? body
    : body && typeof body === 'object' && Array.isArray((body as { content?: unknown }).content)
      ? (body as { content: unknown[] }).content
      : null;
  if (!rows) throw new Error('BGeometrics sent neither a list of rows nor a page of them');
  const spent = new Map<string, SpentDay>();
  for (const row of rows) {
    const r = (row ?? {}) as Record<string, unknown>;
    const date = typeof r.d === 'string' ? r.d.slice(0, 10) : '';
    const value = decimal(r.sopr);
    if (/^\d{4}-\d{2}-\d{2}$/.test(date) && value !== undefined && value > 0)
      spent.set(date, { sopr: value, asopr: null });
  }
  return spent;
}

/**
 * The public upstreams: Coin Metrics Community API (required) and BGeometrics' SOPR (optional: when it fails, the
 * days carry no SOPR, the answer is not cached and health shows it failing). No free source publishes aSOPR.
 */
export function liveSource(options: LiveOptions): MetricsSource {
  const coinMetricsUrl = (options.coinMetricsUrl ?? COIN_METRICS_URL).replace(/\/+$/, '');
  const bgeometricsUrl =
    options.bgeometricsUrl === undefined ? BGEOMETRICS_URL : (options.bgeometricsUrl?.replace(/\/+$/, '') ?? null);
  const tracker = new UpstreamTracker('live', bgeometricsUrl ? [COIN_METRICS, BGEOMETRICS] : [COIN_METRICS]);
  const limit = requestLimiter(options.sequential ? 1 : Number.POSITIVE_INFINITY);

  const readCoinMetrics = (end: string | null) =>
    tracker.call(COIN_METRICS, async () => {
      const query = new URLSearchParams({
        assets: 'btc',
        metrics: 'PriceUSD,CapMrktCurUSD,CapMVRVCur,SplyCur',
        frequency: '1d',
        start_time: GENESIS,
        page_size: '10000',
        paging_from: 'start',
      });
      if (end) query.set('end_time', end);
      const origin = new URL(coinMetricsUrl).origin;
      let url: string | undefined = `${coinMetricsUrl}/timeseries/asset-metrics?${query}`;
      const rows: unknown[] = [];
      // Pages follow `next_page_url` unchanged until it is absent (Coin Metrics' paging convention).
      for (let page = 0; url; page++) {
        if (page === MAX_PAGES) throw new Error(`Coin Metrics paged more than ${MAX_PAGES} times`);
        const body = (await limit(() => getJson(url!))) as { data?: unknown; next_page_url?: unknown };
        if (!Array.isArray(body?.data)) throw new Error('Coin Metrics sent no data array');
        rows.push(...body.data);
        const next: unknown = body.next_page_url;
        if (typeof next !== 'string' || next === '') url = undefined;
        else if (new URL(next).origin !== origin) throw new Error('Coin Metrics pointed the next page at another host');
        else url = next;
      }
      return coinMetricsDays(rows);
    });

  const readSopr = async (from: string | null, end: string | null): Promise<Map<string, SpentDay> | null> => {
    const query = new URLSearchParams();
    if (from) query.set('startday', from);
    if (end) query.set('endday', end);
    const suffix = query.toString() ? `?${query}` : '';
    try {
      return await tracker.call(BGEOMETRICS, async () =>
        bgeometricsSopr(await limit(() => getJson(`${bgeometricsUrl}/v1/sopr${suffix}`))),
      );
    } catch {
      // Recorded as failing by the tracker (health shows it); the days go out without SOPR.
      return null;
    }
  };

  return {
    mode: 'live',
    tracker,
    async read(end, wanted) {
      // The second deployment's limiter lets one request out at a time; the first sends both at once.
      const sopr = bgeometricsUrl && wanted;
      const [market, spent] = await Promise.all([
        readCoinMetrics(end),
        sopr ? readSopr(wanted.from, end) : Promise.resolve(new Map<string, SpentDay>()),
      ]);
      const providers = [COIN_METRICS, ...(sopr && spent ? [BGEOMETRICS] : [])];
      return { market, spent: spent ?? new Map(), providers, complete: spent !== null };
    },
  };
}
