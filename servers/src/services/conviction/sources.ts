import { notFound } from '../../runtime/errors';
import { midAndSpread, type BookLevel } from '../../upstream/measures';
import { MARKET_MODEL_PROVIDER, sharedMarketModel } from '../../upstream/market';
import { SimulatedSpotMarket, type HourBar, type SpotBook } from '../../upstream/market/book';
import { UpstreamTracker } from '../../upstream/tracker';

const HOUR = 3_600_000;
import { resolveToken, type ResolvedToken } from './tokens';
import { tracedFetch } from '../../http/tracing';

// Where the conviction index reads its market: the seeded spot market (simulated) or exchanges' public spot APIs
// (live: Binance depth and 1-hour klines, OKX depth; research/domain.md §4). Both yield the same plain data, so the
// five dimensions are computed by one code path.

export const MAJORS = ['SOL', 'BTC', 'ETH'] as const;
export type Major = (typeof MAJORS)[number];

export interface MarketRead {
  /** One book per venue that answered with one. */
  books: SpotBook[];
  /** The token's complete hourly bars, oldest first. */
  bars: HourBar[];
  /** The majors' hourly bars (full analysis only); null for a major whose read failed. */
  majors: Record<Major, HourBar[] | null> | null;
  sourcesQueried: number;
  sourcesAnswered: number;
  providers: string[];
  asOf: Date;
  /** Why some figures are missing, when some are. */
  notes: string[];
}

export interface ConvictionSource {
  readonly mode: 'simulated' | 'live';
  readonly tracker: UpstreamTracker;
  resolve(ref: string): ResolvedToken;
  /** The token's books and `hours` hourly bars; with `majors`, the majors' bars too. */
  read(token: ResolvedToken, options: { hours: number; majors: boolean }): Promise<MarketRead>;
}

/** The seeded market read at the current minute: two simulated venues, hourly bars, the majors from the same model. */
export function simulatedSource(seed: string | undefined, now: () => number): ConvictionSource {
  const market = new SimulatedSpotMarket(sharedMarketModel(seed));
  const tracker = new UpstreamTracker('simulated', [MARKET_MODEL_PROVIDER]);
  return {
    mode: 'simulated',
    tracker,
    resolve: (ref) => resolveToken(ref, (symbol) => market.has(symbol)),
    read: (token, { hours, majors }) =>
      tracker.call(MARKET_MODEL_PROVIDER, async () => {
        const at = Math.floor(now() / 60_000) * 60_000;
        const books = market.books(token.symbol, at);
        const bars = market.bars(token.symbol, at, hours);
        const majorBars = majors
          ? (Object.fromEntries(MAJORS.map((m) => [m, market.bars(m, at, hours)])) as Record<Major, HourBar[]>)
          : null;
        const queried = books.length + 1 + (majors ? MAJORS.length : 0);
        return {
          books,
          bars,
          majors: majorBars,
          sourcesQueried: queried,
          sourcesAnswered: queried,
          providers: [MARKET_MODEL_PROVIDER],
          asOf: new Date(at),
          notes: [],
        };
      }),
  };
}

export const LIVE_PROVIDERS = { binance: 'binance', okx: 'okx', coingecko: 'coingecko' } as const;
export const DEFAULT_PROVIDER_URLS = {
  binance: 'https://api.binance.com',
  okx: 'https://www.okx.com',
  coingecko: 'https://api.coingecko.com',
};
const COINGECKO_IDS: Record<Major, string> = { SOL: 'solana', BTC: 'bitcoin', ETH: 'ethereum' };

export interface LiveConvictionOptions {
  /** Base URLs where they differ from the public ones (tests point them at replay servers). */
  binanceUrl?: string;
  okxUrl?: string;
  coingeckoUrl?: string;
  timeoutMs?: number;
  /** How long one read of a token is reused, ms (default 15 000): a preflight and its handler share it. */
  cacheMs?: number;
}

/** A finite positive number from a provider's string or number field, else null. */
function num(value: unknown): number | null {
  const n = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : NaN;
  return Number.isFinite(n) ? n : null;
}

function levels(rows: unknown, what: string): BookLevel[] {
  if (!Array.isArray(rows)) throw new Error(`unexpected response shape: ${what} is not a list`);
  return rows.flatMap((r) => {
    const price = Array.isArray(r) ? num(r[0]) : null;
    const quantity = Array.isArray(r) ? num(r[1]) : null;
    return price !== null && quantity !== null && price > 0 && quantity > 0 ? [{ price, quantity }] : [];
  });
}

class ProviderAnswer extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    super(`HTTP ${status}`);
  }
}

async function getJson(url: string, timeoutMs: number): Promise<unknown> {
  const response = await tracedFetch(
    `GET ${new URL(url).host}`,
    url,
    { signal: AbortSignal.timeout(timeoutMs), headers: { accept: 'application/json' } },
    { propagate: false },
  );
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    throw new Error(`HTTP ${response.status} with a body that is not JSON from ${new URL(url).pathname}`);
  }
  // Binance answers 400 {code: -1121, msg: "Invalid symbol."} for a pair it does not list: an answer, not a failure.
  if (response.status === 400) throw new ProviderAnswer(400, body);
  if (!response.ok) throw new Error(`HTTP ${response.status} from ${new URL(url).pathname}`);
  return body;
}

/**
 * Binance 1-hour klines as bars: [openTime, open, high, low, close, volume, closeTime, quoteVolume, trades,
 * takerBuyBase, takerBuyQuote, ignore].
 */
function klineBars(body: unknown, now: number): HourBar[] {
  if (!Array.isArray(body)) throw new Error('unexpected response shape: klines is not a list');
  return body.flatMap((k) => {
    if (!Array.isArray(k)) return [];
    const [openTime, close, closeTime, quote, trades, takerQuote] = [
      num(k[0]),
      num(k[4]),
      num(k[6]),
      num(k[7]),
      num(k[8]),
      num(k[10]),
    ];
    if (openTime === null || close === null || close <= 0 || quote === null || takerQuote === null || trades === null)
      return [];
    // The last kline is the hour still trading: only complete hours are used.
    if (closeTime !== null && closeTime >= now) return [];
    return [{ openTime, close, quoteVolumeUsd: quote, takerBuyQuoteVolumeUsd: Math.min(takerQuote, quote), trades }];
  });
}

/**
 * CoinGecko's hourly market chart ({prices: [[ms, price]]}, hourly for 2 to 90 days) as bars: each price is taken as
 * the close of the hour it is nearest to, so its returns align with Binance's klines (close = open time + 1 h).
 */
function chartBars(body: unknown, now: number): HourBar[] {
  const prices = (body as { prices?: unknown } | null)?.prices;
  if (!Array.isArray(prices)) throw new Error('unexpected response shape: prices is not a list');
  const byHour = new Map<number, number>();
  for (const p of prices) {
    const [ms, price] = Array.isArray(p) ? [num(p[0]), num(p[1])] : [null, null];
    if (ms === null || price === null || price <= 0 || ms > now) continue;
    byHour.set(Math.round(ms / HOUR) * HOUR, price);
  }
  return [...byHour.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([closeAt, close]) => ({
      openTime: closeAt - HOUR,
      close,
      quoteVolumeUsd: 0,
      takerBuyQuoteVolumeUsd: 0,
      trades: 0,
    }));
}

/**
 * The live source: Binance spot (GET /api/v3/depth for the book, GET /api/v3/klines 1h for volume, taker side and
 * returns, of the token and of SOL, BTC and ETH) and OKX spot (GET /api/v5/market/books) as a second book. Prices are
 * in USDT, taken as USD. Binance's book and the token's klines are required (a failure is 502 upstream_unavailable);
 * OKX and the majors are not: a major Binance does not answer for is read from CoinGecko's hourly market chart, and
 * when that fails too its correlation is null and the answer says why.
 */
export function liveSource(options: LiveConvictionOptions = {}, clock: () => number = Date.now): ConvictionSource {
  const tracker = new UpstreamTracker('live', [LIVE_PROVIDERS.binance, LIVE_PROVIDERS.okx, LIVE_PROVIDERS.coingecko]);
  const coingecko = (options.coingeckoUrl ?? DEFAULT_PROVIDER_URLS.coingecko).replace(/\/+$/, '');
  const binance = (options.binanceUrl ?? DEFAULT_PROVIDER_URLS.binance).replace(/\/+$/, '');
  const okx = (options.okxUrl ?? DEFAULT_PROVIDER_URLS.okx).replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? 10_000;
  const cacheMs = options.cacheMs ?? 15_000;
  // Each provider call is reused for cacheMs: a preflight and its handler share it, and the majors' klines are shared
  // by every token read meanwhile (fewer calls against the exchanges' rate limits). A failed call is not reused.
  const cache = new Map<string, { at: number; value: Promise<unknown> }>();
  function cached<T>(key: string, call: () => Promise<T>): Promise<T> {
    const hit = cache.get(key);
    if (hit && clock() - hit.at < cacheMs) return hit.value as Promise<T>;
    const value = call();
    cache.set(key, { at: clock(), value });
    value.catch(() => cache.delete(key));
    if (cache.size > 1000) cache.delete(cache.keys().next().value!);
    return value;
  }

  const klines = (symbol: string, hours: number, now: number) =>
    cached(`klines:${symbol}:${hours}`, () =>
      tracker.call(LIVE_PROVIDERS.binance, async () => {
        try {
          return klineBars(
            await getJson(`${binance}/api/v3/klines?symbol=${symbol}USDT&interval=1h&limit=${hours + 1}`, timeoutMs),
            now,
          ).slice(-hours);
        } catch (error) {
          if (error instanceof ProviderAnswer)
            throw notFound(
              'token_not_found',
              `No market found for the token ${symbol}: Binance lists no ${symbol}USDT pair`,
              { token: symbol },
            );
          throw error;
        }
      }),
    );

  const read = async (token: ResolvedToken, hours: number, withMajors: boolean): Promise<MarketRead> => {
    const now = clock();
    const notes: string[] = [];
    const providers = new Set<string>([LIVE_PROVIDERS.binance]);
    const binanceBook = cached(`depth:${token.symbol}`, () =>
      tracker.call(LIVE_PROVIDERS.binance, async () => {
        try {
          const body = await getJson(`${binance}/api/v3/depth?symbol=${token.symbol}USDT&limit=1000`, timeoutMs);
          const b = body as { bids?: unknown; asks?: unknown };
          return {
            venue: LIVE_PROVIDERS.binance,
            bids: levels(b.bids, 'bids'),
            asks: levels(b.asks, 'asks'),
          } as SpotBook;
        } catch (error) {
          if (error instanceof ProviderAnswer)
            throw notFound(
              'token_not_found',
              `No market found for the token ${token.symbol}: Binance lists no ${token.symbol}USDT pair`,
              { token: token.symbol },
            );
          throw error;
        }
      }),
    );
    // OKX is a second book: a pair it does not list (code 51001) is an answer without a book; a failure leaves it out.
    const okxBook = cached(`okx:${token.symbol}`, () =>
      tracker.call(LIVE_PROVIDERS.okx, async () => {
        let body: unknown;
        try {
          body = await getJson(`${okx}/api/v5/market/books?instId=${token.symbol}-USDT&sz=400`, timeoutMs);
        } catch (error) {
          if (error instanceof ProviderAnswer) return null;
          throw error;
        }
        const b = body as { code?: unknown; data?: { bids?: unknown; asks?: unknown }[] };
        if (b.code !== '0') return null;
        const first = Array.isArray(b.data) ? b.data[0] : undefined;
        if (!first) return null;
        return {
          venue: LIVE_PROVIDERS.okx,
          bids: levels(first.bids, 'data[0].bids'),
          asks: levels(first.asks, 'data[0].asks'),
        } as SpotBook;
      }),
    ).then(
      (book) => ({ ok: true as const, book }),
      (error: unknown) => ({ ok: false as const, error }),
    );
    let fallbacks = 0;
    const majorReads = withMajors
      ? MAJORS.map((m) =>
          klines(m, hours, now).catch(() => {
            fallbacks++;
            const days = Math.max(2, Math.ceil((hours + 1) / 24));
            return cached(`chart:${m}:${days}`, () =>
              tracker.call(LIVE_PROVIDERS.coingecko, async () =>
                chartBars(
                  await getJson(
                    `${coingecko}/api/v3/coins/${COINGECKO_IDS[m]}/market_chart?vs_currency=usd&days=${days}`,
                    timeoutMs,
                  ),
                  now,
                ).slice(-hours),
              ),
            ).then(
              (bars) => {
                providers.add(LIVE_PROVIDERS.coingecko);
                notes.push(`Binance did not answer for ${m} klines: its returns are CoinGecko's hourly prices`);
                return bars;
              },
              () => null,
            );
          }),
        )
      : [];
    const [book, bars, second, ...majorBars] = await Promise.all([
      binanceBook,
      klines(token.symbol, hours, now),
      okxBook,
      ...majorReads,
    ]);
    const books = [book];
    let answered = 2;
    if (second.ok) {
      answered++;
      if (second.book) {
        books.push(second.book);
        providers.add(LIVE_PROVIDERS.okx);
      }
    } else {
      notes.push('OKX did not answer: its book is left out of the depth figures');
    }
    // A venue returns a bounded number of levels: on a deep market they may not reach 2 % from mid.
    for (const b of books) {
      const top = midAndSpread(b.bids, b.asks);
      if (top && (b.bids.every((l) => l.price > top.mid * 0.98) || b.asks.every((l) => l.price < top.mid * 1.02))) {
        notes.push(`${b.venue}'s book as returned does not reach 2 % from mid: its depth counts the levels returned`);
      }
    }
    let majors: MarketRead['majors'] = null;
    if (withMajors) {
      majors = Object.fromEntries(MAJORS.map((m, i) => [m, majorBars[i] ?? null])) as Record<Major, HourBar[] | null>;
      const missing = MAJORS.filter((m) => !majors![m]);
      answered += MAJORS.length - missing.length;
      if (missing.length)
        notes.push(
          `Neither Binance nor CoinGecko answered for ${missing.join(', ')}: the correlation with ${missing.join(', ')} is null`,
        );
    }
    return {
      books,
      bars,
      majors,
      sourcesQueried: 3 + (withMajors ? MAJORS.length : 0) + fallbacks,
      sourcesAnswered: answered,
      // In a fixed order, whatever order the calls answered in.
      providers: Object.values(LIVE_PROVIDERS).filter((p) => providers.has(p)),
      asOf: new Date(now),
      notes: notes.sort(),
    };
  };

  return {
    mode: 'live',
    tracker,
    // Every ticker is tried on the exchanges; a mint must be one the index knows (the exchanges list tickers, not
    // mints).
    resolve: (ref) => resolveToken(ref, () => true),
    read: (token, { hours, majors }) => read(token, hours, majors),
  };
}
