import type { PerpExchange } from './assets';
import type { PerpQuote } from './types';
import { tracedFetch } from '../../http/tracing';

// Live adapters: each reads one venue's public, keyless endpoints (research/domain.md §3.1) and maps that venue's
// documented response shape into PerpQuote. Numbers arrive as strings; a row that does not parse is left out,
// a response whose shape is wrong is the venue failing.

export const DEFAULT_VENUE_URLS: Record<PerpExchange, string> = {
  binance: 'https://fapi.binance.com',
  bybit: 'https://api.bybit.com',
  okx: 'https://www.okx.com',
  bitget: 'https://api.bitget.com',
  gate: 'https://api.gateio.ws',
  mexc: 'https://contract.mexc.com',
  hyperliquid: 'https://api.hyperliquid.xyz',
  dydx: 'https://indexer.dydx.trade',
  deribit: 'https://www.deribit.com',
};

export interface VenueOptions {
  baseUrl: string;
  timeoutMs: number;
  /**
   * Binance has no bulk open-interest endpoint: OI is read per symbol for this many contracts, largest volume first.
   */
  binanceOpenInterestSymbols: number;
  now: () => number;
}

export type VenueAdapter = (options: VenueOptions) => Promise<PerpQuote[]>;

const HOUR = 3_600_000;

async function getJson(url: string, timeoutMs: number, init: RequestInit = {}): Promise<unknown> {
  const response = await tracedFetch(
    `GET ${new URL(url).host}`,
    url,
    {
      ...init,
      signal: AbortSignal.timeout(timeoutMs),
      headers: { accept: 'application/json', ...(init.headers ?? {}) },
    },
    { propagate: false },
  );
  if (!response.ok) throw new Error(`HTTP ${response.status} from ${new URL(url).pathname}`);
  try {
    return await response.json();
  } catch {
    throw new Error(`a body that is not JSON from ${new URL(url).pathname}`);
  }
}

/** A finite number from a provider's string or number field, else null. */
function num(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value !== 'string' || value.trim() === '') return null;
  const n = Number(value);
  return Number.isFinite(n) ? n : null;
}

function arrayOf(value: unknown, what: string): Record<string, unknown>[] {
  if (!Array.isArray(value)) throw new Error(`unexpected response shape: ${what} is not a list`);
  return value.filter((v): v is Record<string, unknown> => typeof v === 'object' && v !== null);
}

function field(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
}

/**
 * The base asset of a venue's base-currency code, with the contract multiplier some venues put in the name
 * (Binance "1000PEPE", Hyperliquid "kPEPE"): prices are divided by it so every venue quotes one unit.
 */
export function baseAsset(code: string): { asset: string; multiplier: number } {
  const m = /^(1000000|1000)([A-Z][A-Z0-9]*)$/.exec(code);
  if (m) return { asset: m[2]!, multiplier: Number(m[1]) };
  const k = /^k([A-Z][A-Z0-9]*)$/.exec(code);
  if (k) return { asset: k[1]!, multiplier: 1000 };
  return { asset: code.toUpperCase(), multiplier: 1 };
}

const nextHour = (now: number) => (Math.floor(now / HOUR) + 1) * HOUR;

function row(
  exchange: PerpExchange,
  symbol: string,
  code: string,
  quote: string,
  values: {
    mark: number | null;
    index: number | null;
    rate: number | null;
    intervalHours: number;
    next: number | null;
    oiUsd: number | null;
    volumeUsd: number | null;
    changePercent?: number | null;
  },
): PerpQuote | null {
  const { asset, multiplier } = baseAsset(code);
  if (values.mark === null || values.mark <= 0 || values.rate === null || values.oiUsd === null || values.oiUsd < 0)
    return null;
  if (!/^[A-Z0-9]{1,20}$/.test(asset)) return null;
  return {
    exchange,
    symbol,
    asset,
    quote,
    markPrice: values.mark / multiplier,
    indexPrice: values.index !== null && values.index > 0 ? values.index / multiplier : null,
    fundingRate: values.rate,
    fundingIntervalHours: values.intervalHours,
    nextFundingTime: values.next,
    openInterestUsd: values.oiUsd,
    volume24hUsd: Math.max(0, values.volumeUsd ?? 0),
    priceChange24hPercent: values.changePercent ?? null,
  };
}

const binance: VenueAdapter = async ({ baseUrl, timeoutMs, binanceOpenInterestSymbols }) => {
  const [premium, tickers, info] = await Promise.all([
    getJson(`${baseUrl}/fapi/v1/premiumIndex`, timeoutMs),
    getJson(`${baseUrl}/fapi/v1/ticker/24hr`, timeoutMs),
    getJson(`${baseUrl}/fapi/v1/fundingInfo`, timeoutMs),
  ]);
  const ticker = new Map(arrayOf(tickers, 'ticker/24hr').map((t) => [String(t.symbol), t]));
  // fundingInfo lists only the symbols whose interval differs from the default 8 hours.
  const interval = new Map(
    arrayOf(info, 'fundingInfo').map((i) => [String(i.symbol), num(i.fundingIntervalHours) ?? 8]),
  );
  // Perpetuals only: dated contracts carry an underscore (BTCUSDT_250328) and no funding rate.
  const perps = arrayOf(premium, 'premiumIndex').filter(
    (p) => /^[A-Z0-9]+USDT$/.test(String(p.symbol)) && num(p.lastFundingRate) !== null,
  );
  const byVolume = [...perps].sort(
    (a, b) =>
      (num(ticker.get(String(b.symbol))?.quoteVolume) ?? 0) - (num(ticker.get(String(a.symbol))?.quoteVolume) ?? 0),
  );
  const chosen = byVolume.slice(0, binanceOpenInterestSymbols);
  const openInterest = new Map<string, number | null>();
  for (let i = 0; i < chosen.length; i += 10) {
    await Promise.all(
      chosen.slice(i, i + 10).map(async (p) => {
        const symbol = String(p.symbol);
        const body = await getJson(`${baseUrl}/fapi/v1/openInterest?symbol=${encodeURIComponent(symbol)}`, timeoutMs);
        openInterest.set(symbol, num(field(body, 'openInterest')));
      }),
    );
  }
  return chosen.flatMap((p) => {
    const symbol = String(p.symbol);
    const t = ticker.get(symbol);
    const mark = num(p.markPrice);
    const oi = openInterest.get(symbol) ?? null;
    const r = row('binance', symbol, symbol.slice(0, -4), 'USDT', {
      mark,
      index: num(p.indexPrice),
      rate: num(p.lastFundingRate),
      intervalHours: interval.get(symbol) ?? 8,
      next: num(p.nextFundingTime) || null,
      oiUsd: oi !== null && mark !== null ? oi * mark : null,
      volumeUsd: num(t?.quoteVolume),
      changePercent: num(t?.priceChangePercent),
    });
    return r ? [r] : [];
  });
};

function bybitList(body: unknown, what: string): Record<string, unknown>[] {
  if (field(body, 'retCode') !== 0)
    throw new Error(`${what} answered retCode ${String(field(body, 'retCode'))}: ${String(field(body, 'retMsg'))}`);
  return arrayOf(field(field(body, 'result'), 'list'), `${what} result.list`);
}

const bybit: VenueAdapter = async ({ baseUrl, timeoutMs }) => {
  const instruments: Record<string, unknown>[] = [];
  let cursor = '';
  for (let page = 0; page < 5; page++) {
    const body = await getJson(
      `${baseUrl}/v5/market/instruments-info?category=linear&limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      timeoutMs,
    );
    instruments.push(...bybitList(body, 'instruments-info'));
    cursor = String(field(field(body, 'result'), 'nextPageCursor') ?? '');
    if (!cursor) break;
  }
  const perps = new Map(
    instruments
      .filter((i) => i.contractType === 'LinearPerpetual' && (i.status === undefined || i.status === 'Trading'))
      .map((i) => [String(i.symbol), i]),
  );
  const tickers = bybitList(await getJson(`${baseUrl}/v5/market/tickers?category=linear`, timeoutMs), 'tickers');
  return tickers.flatMap((t) => {
    const instrument = perps.get(String(t.symbol));
    if (!instrument) return [];
    const change = num(t.price24hPcnt);
    const r = row('bybit', String(t.symbol), String(instrument.baseCoin), String(instrument.quoteCoin ?? 'USDT'), {
      mark: num(t.markPrice),
      index: num(t.indexPrice),
      rate: num(t.fundingRate),
      // fundingInterval is in minutes.
      intervalHours: (num(instrument.fundingInterval) ?? 480) / 60,
      next: num(t.nextFundingTime) || null,
      oiUsd: num(t.openInterestValue),
      volumeUsd: num(t.turnover24h),
      changePercent: change === null ? null : change * 100,
    });
    return r ? [r] : [];
  });
};

function okxData(body: unknown, what: string): Record<string, unknown>[] {
  if (field(body, 'code') !== '0')
    throw new Error(`${what} answered code ${String(field(body, 'code'))}: ${String(field(body, 'msg'))}`);
  return arrayOf(field(body, 'data'), `${what} data`);
}

const okx: VenueAdapter = async ({ baseUrl, timeoutMs }) => {
  const [funding, oi, marks, tickers, indexes] = await Promise.all([
    getJson(`${baseUrl}/api/v5/public/funding-rate?instId=ANY`, timeoutMs).then((b) => okxData(b, 'funding-rate')),
    getJson(`${baseUrl}/api/v5/public/open-interest?instType=SWAP`, timeoutMs).then((b) => okxData(b, 'open-interest')),
    getJson(`${baseUrl}/api/v5/public/mark-price?instType=SWAP`, timeoutMs).then((b) => okxData(b, 'mark-price')),
    getJson(`${baseUrl}/api/v5/market/tickers?instType=SWAP`, timeoutMs).then((b) => okxData(b, 'tickers')),
    getJson(`${baseUrl}/api/v5/market/index-tickers?quoteCcy=USDT`, timeoutMs).then((b) => okxData(b, 'index-tickers')),
  ]);
  const by = (list: Record<string, unknown>[]) => new Map(list.map((x) => [String(x.instId), x]));
  const [oiBy, markBy, tickerBy, indexBy] = [by(oi), by(marks), by(tickers), by(indexes)];
  return funding.flatMap((f) => {
    const instId = String(f.instId);
    const m = /^([A-Z0-9]+)-USDT-SWAP$/.exec(instId);
    if (!m) return [];
    const t = tickerBy.get(instId);
    const last = num(t?.last);
    const open = num(t?.open24h);
    const fundingTime = num(f.fundingTime);
    const nextTime = num(f.nextFundingTime);
    // OKX's fundingTime is the coming settlement; the interval is the gap to the one after it.
    const intervalHours = fundingTime && nextTime && nextTime > fundingTime ? (nextTime - fundingTime) / HOUR : 8;
    const volumeBase = num(t?.volCcy24h);
    const r = row('okx', instId, m[1]!, 'USDT', {
      mark: num(markBy.get(instId)?.markPx),
      index: num(indexBy.get(`${m[1]}-USDT`)?.idxPx),
      rate: num(f.fundingRate),
      intervalHours,
      next: fundingTime,
      oiUsd: num(oiBy.get(instId)?.oiUsd),
      volumeUsd: volumeBase !== null && last !== null ? volumeBase * last : null,
      changePercent: last !== null && open ? ((last - open) / open) * 100 : null,
    });
    return r ? [r] : [];
  });
};

const gate: VenueAdapter = async ({ baseUrl, timeoutMs }) => {
  const [contracts, tickers] = await Promise.all([
    getJson(`${baseUrl}/api/v4/futures/usdt/contracts`, timeoutMs),
    getJson(`${baseUrl}/api/v4/futures/usdt/tickers`, timeoutMs),
  ]);
  const contract = new Map(
    arrayOf(contracts, 'contracts')
      .filter((c) => c.in_delisting !== true)
      .map((c) => [String(c.name), c]),
  );
  return arrayOf(tickers, 'tickers').flatMap((t) => {
    const name = String(t.contract);
    const c = contract.get(name);
    const m = /^([A-Z0-9]+)_USDT$/.exec(name);
    if (!c || !m) return [];
    const mark = num(t.mark_price);
    const size = num(t.total_size);
    const multiplier = num(c.quanto_multiplier);
    const next = num(c.funding_next_apply);
    const r = row('gate', name, m[1]!, 'USDT', {
      mark,
      index: num(t.index_price),
      rate: num(t.funding_rate),
      // funding_interval is in seconds; total_size is in contracts of quanto_multiplier base units each.
      intervalHours: (num(c.funding_interval) ?? 28_800) / 3600,
      next: next ? next * 1000 : null,
      oiUsd: size !== null && multiplier !== null && mark !== null ? size * multiplier * mark : null,
      volumeUsd: num(t.volume_24h_quote),
      changePercent: num(t.change_percentage),
    });
    return r ? [r] : [];
  });
};

const bitget: VenueAdapter = async ({ baseUrl, timeoutMs }) => {
  const body = await getJson(`${baseUrl}/api/v2/mix/market/tickers?productType=USDT-FUTURES`, timeoutMs);
  if (field(body, 'code') !== '00000')
    throw new Error(`tickers answered code ${String(field(body, 'code'))}: ${String(field(body, 'msg'))}`);
  return arrayOf(field(body, 'data'), 'tickers data').flatMap((t) => {
    const symbol = String(t.symbol);
    const m = /^([A-Z0-9]+)USDT$/.exec(symbol);
    if (!m) return [];
    const mark = num(t.markPrice);
    const holding = num(t.holdingAmount);
    const change = num(t.change24h);
    const r = row('bitget', symbol, m[1]!, 'USDT', {
      mark,
      index: num(t.indexPrice),
      rate: num(t.fundingRate),
      // The ticker does not carry the interval: Bitget's default of 8 hours.
      intervalHours: 8,
      next: null,
      // holdingAmount is open interest in base units.
      oiUsd: holding !== null && mark !== null ? holding * mark : null,
      volumeUsd: num(t.usdtVolume) ?? num(t.quoteVolume),
      changePercent: change === null ? null : change * 100,
    });
    return r ? [r] : [];
  });
};

function mexcData(body: unknown, what: string): Record<string, unknown>[] {
  if (field(body, 'success') !== true) throw new Error(`${what} answered code ${String(field(body, 'code'))}`);
  return arrayOf(field(body, 'data'), `${what} data`);
}

const mexc: VenueAdapter = async ({ baseUrl, timeoutMs }) => {
  const [details, tickers] = await Promise.all([
    getJson(`${baseUrl}/api/v1/contract/detail`, timeoutMs).then((b) => mexcData(b, 'contract/detail')),
    getJson(`${baseUrl}/api/v1/contract/ticker`, timeoutMs).then((b) => mexcData(b, 'contract/ticker')),
  ]);
  const detail = new Map(details.map((d) => [String(d.symbol), d]));
  return tickers.flatMap((t) => {
    const symbol = String(t.symbol);
    const m = /^([A-Z0-9]+)_USDT$/.exec(symbol);
    const d = detail.get(symbol);
    if (!m || !d) return [];
    const mark = num(t.fairPrice);
    const hold = num(t.holdVol);
    const size = num(d.contractSize);
    const change = num(t.riseFallRate);
    const r = row('mexc', symbol, m[1]!, 'USDT', {
      mark,
      index: num(t.indexPrice),
      rate: num(t.fundingRate),
      intervalHours: 8,
      next: null,
      // holdVol is in contracts of contractSize base units each.
      oiUsd: hold !== null && size !== null && mark !== null ? hold * size * mark : null,
      volumeUsd: num(t.amount24),
      changePercent: change === null ? null : change * 100,
    });
    return r ? [r] : [];
  });
};

const hyperliquid: VenueAdapter = async ({ baseUrl, timeoutMs, now }) => {
  const body = await getJson(`${baseUrl}/info`, timeoutMs, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'metaAndAssetCtxs' }),
  });
  if (!Array.isArray(body) || body.length < 2)
    throw new Error('unexpected response shape: metaAndAssetCtxs is not [meta, assetCtxs]');
  const universe = arrayOf(field(body[0], 'universe'), 'meta.universe');
  const contexts = arrayOf(body[1], 'assetCtxs');
  // The two lists are index-aligned; funding is hourly, paid on the hour.
  return universe.flatMap((u, i) => {
    const ctx = contexts[i];
    if (!ctx || u.isDelisted === true) return [];
    const mark = num(ctx.markPx);
    const oi = num(ctx.openInterest);
    const prev = num(ctx.prevDayPx);
    const r = row('hyperliquid', String(u.name), String(u.name), 'USDC', {
      mark,
      index: num(ctx.oraclePx),
      rate: num(ctx.funding),
      intervalHours: 1,
      next: nextHour(now()),
      oiUsd: oi !== null && mark !== null ? oi * mark : null,
      volumeUsd: num(ctx.dayNtlVlm),
      changePercent: prev && mark !== null ? ((mark - prev) / prev) * 100 : null,
    });
    return r ? [r] : [];
  });
};

const dydx: VenueAdapter = async ({ baseUrl, timeoutMs, now }) => {
  const body = await getJson(`${baseUrl}/v4/perpetualMarkets`, timeoutMs);
  const markets = field(body, 'markets');
  if (typeof markets !== 'object' || markets === null)
    throw new Error('unexpected response shape: markets is not an object');
  return Object.values(markets as Record<string, Record<string, unknown>>).flatMap((mk) => {
    const ticker = String(mk.ticker);
    const m = /^([A-Z0-9]+)-USD$/.exec(ticker);
    if (!m || (mk.status !== undefined && mk.status !== 'ACTIVE')) return [];
    const oracle = num(mk.oraclePrice);
    const oi = num(mk.openInterest);
    const change = num(mk.priceChange24H);
    // The indexer gives the oracle price only: no separate index, so no basis. nextFundingRate is per hour.
    const r = row('dydx', ticker, m[1]!, 'USD', {
      mark: oracle,
      index: null,
      rate: num(mk.nextFundingRate),
      intervalHours: 1,
      next: nextHour(now()),
      oiUsd: oi !== null && oracle !== null ? oi * oracle : null,
      volumeUsd: num(mk.volume24H),
      changePercent:
        change !== null && oracle !== null && oracle - change > 0 ? (change / (oracle - change)) * 100 : null,
    });
    return r ? [r] : [];
  });
};

const deribit: VenueAdapter = async ({ baseUrl, timeoutMs }) => {
  const summaries = await Promise.all(
    ['BTC', 'ETH', 'USDC'].map(async (currency) => {
      const body = await getJson(
        `${baseUrl}/api/v2/public/get_book_summary_by_currency?currency=${currency}&kind=future`,
        timeoutMs,
      );
      if (field(body, 'error')) throw new Error(`get_book_summary_by_currency answered an error for ${currency}`);
      return arrayOf(field(body, 'result'), 'result');
    }),
  );
  return summaries.flat().flatMap((s) => {
    const name = String(s.instrument_name);
    const inverse = /^([A-Z0-9]+)-PERPETUAL$/.exec(name);
    const linear = /^([A-Z0-9]+)_USDC-PERPETUAL$/.exec(name);
    if (!inverse && !linear) return [];
    const mark = num(s.mark_price);
    const oi = num(s.open_interest);
    // Inverse perpetuals count open interest in USD; USDC-margined linear ones in base units.
    const r = row('deribit', name, (inverse ?? linear)![1]!, inverse ? 'USD' : 'USDC', {
      mark,
      index: num(s.estimated_delivery_price),
      rate: num(s.funding_8h),
      intervalHours: 8,
      next: null,
      oiUsd: oi === null ? null : inverse ? oi : mark !== null ? oi * mark : null,
      volumeUsd: num(s.volume_usd),
      changePercent: num(s.price_change),
    });
    return r ? [r] : [];
  });
};

export const VENUE_ADAPTERS: Record<PerpExchange, VenueAdapter> = {
  binance,
  bybit,
  okx,
  bitget,
  gate,
  mexc,
  hyperliquid,
  dydx,
  deribit,
};
