import { buildUniverse, DEFAULT_ASSET_COUNT, PERP_EXCHANGES, type AssetProfile, type PerpExchange } from './assets';
import {
  brownianAmplitudes,
  gaussian,
  geometricScales,
  hashString,
  ScaleNoise,
  stationaryAmplitudes,
  subKey,
  uniform,
} from './random';
import type { PerpQuote } from './types';

const MINUTE = 60_000;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Interest component of funding per 8 h (Binance-style 0.01 %): the level funding reverts to. */
export const BASELINE_FUNDING_8H = 0.0001;
/** Funding history kept for z-scores: 30 days of 8-hour settlements. */
export const HISTORY_POINTS = 90;

// Price: scales 5 min × 4^k up to ~7.5 months (Brownian below, reverting to the anchor beyond).
const PRICE_SCALES = geometricScales(5 * MINUTE, 9);
const PRICE_AMPLITUDES = brownianAmplitudes(PRICE_SCALES);
const REGIME_SCALES = [1 * DAY, 4 * DAY, 16 * DAY];
const FAST_SCALES = [30 * MINUTE, 2 * HOUR, 8 * HOUR];
const VENUE_SCALES = [1 * HOUR, 4 * HOUR];
const OI_SCALES = [6 * HOUR, 1 * DAY, 4 * DAY, 16 * DAY];

/** Venue conventions: share of an asset's open interest, instrument naming, settlement currency. */
const VENUE_WEIGHT: Record<PerpExchange, number> = {
  binance: 0.3,
  bybit: 0.17,
  okx: 0.12,
  bitget: 0.12,
  gate: 0.08,
  mexc: 0.06,
  hyperliquid: 0.1,
  dydx: 0.02,
  deribit: 0.03,
};

function instrumentOf(exchange: PerpExchange, asset: string): { symbol: string; quote: string } {
  switch (exchange) {
    case 'binance':
    case 'bybit':
    case 'bitget':
      return { symbol: `${asset}USDT`, quote: 'USDT' };
    case 'okx':
      return { symbol: `${asset}-USDT-SWAP`, quote: 'USDT' };
    case 'gate':
    case 'mexc':
      return { symbol: `${asset}_USDT`, quote: 'USDT' };
    case 'hyperliquid':
      return { symbol: asset, quote: 'USDC' };
    case 'dydx':
      return { symbol: `${asset}-USD`, quote: 'USD' };
    case 'deribit':
      return asset === 'BTC' || asset === 'ETH'
        ? { symbol: `${asset}-PERPETUAL`, quote: 'USD' }
        : { symbol: `${asset}_USDC-PERPETUAL`, quote: 'USDC' };
  }
}

/** One asset's random processes, built once. */
interface AssetRuntime {
  profile: AssetProfile;
  own: ScaleNoise;
  regime: ScaleNoise;
  fast: ScaleNoise;
  oi: ScaleNoise;
  volume: ScaleNoise;
  crowd: ScaleNoise;
  venues: Map<PerpExchange, VenueRuntime>;
}
interface VenueRuntime {
  exchange: PerpExchange;
  symbol: string;
  quote: string;
  intervalHours: number;
  offset8h: number;
  share: number;
  funding: ScaleNoise;
  index: ScaleNoise;
  premium: ScaleNoise;
}

/** The asset-level state at one instant, shared by its venues. */
interface AssetState {
  price: number;
  price24hAgo: number;
  /** Funding per 8 h before the venue's own part and the cap. */
  funding8h: number;
  regime: number;
  openInterestUsd: number;
  volume24hUsd: number;
  longShortRatio: number;
}

export interface MarketModelOptions {
  seed?: string;
  /** Assets in the universe (the core list, then generated tickers); default 640. */
  assetCount?: number;
}

/**
 * The embedded market: a seeded, deterministic simulation of spot prices and of perpetual contracts on nine
 * venues. Every value is a pure function of (seed, asset, venue, time): log prices load on BTC, ETH and SOL
 * factors plus the asset's own process; funding is a baseline plus momentum, a slow heavy-tailed crowding regime
 * and fast noise, all mean-reverting; open interest grows with price and with crowding. Nothing is replayed:
 * any replica computes the same market for the same instant.
 */
export class MarketModel {
  readonly seed: string;
  readonly assets: readonly AssetProfile[];
  private readonly runtimes = new Map<string, AssetRuntime>();
  private readonly factors: { btc: ScaleNoise; eth: ScaleNoise; sol: ScaleNoise };
  private readonly factorCache = new Map<number, { btc: number; eth: number; sol: number }>();
  /** The last two settlement histories (the current one and, around a settlement, the previous one). */
  private readonly historyCache: {
    at: number;
    history: Map<string, { fundingRate8h: number[]; openInterestUsd: number[] }>;
  }[] = [];

  constructor(options: MarketModelOptions = {}) {
    this.seed = options.seed ?? 'agent-economy';
    this.assets = buildUniverse(this.seed, options.assetCount ?? DEFAULT_ASSET_COUNT);
    const key = hashString(`factors:${this.seed}`);
    this.factors = {
      btc: new ScaleNoise(subKey(key, 1), PRICE_SCALES, PRICE_AMPLITUDES),
      eth: new ScaleNoise(subKey(key, 2), PRICE_SCALES, PRICE_AMPLITUDES),
      sol: new ScaleNoise(subKey(key, 3), PRICE_SCALES, PRICE_AMPLITUDES),
    };
  }

  asset(symbol: string): AssetProfile | undefined {
    return this.runtime(symbol)?.profile;
  }

  /** Spot price in USD of an asset at an instant (ms since the epoch). */
  spotPrice(symbol: string, timeMs: number): number {
    const rt = this.require(symbol);
    return this.priceOf(rt, timeMs);
  }

  /** Spot prices at each of the given instants. */
  spotSeries(symbol: string, timesMs: readonly number[]): number[] {
    const rt = this.require(symbol);
    return timesMs.map((t) => this.priceOf(rt, t));
  }

  /** Spot (all venues) traded volume over the 24 hours before an instant, USD. */
  spotVolume24hUsd(symbol: string, timeMs: number): number {
    const rt = this.require(symbol);
    return this.stateOf(rt, timeMs).volume24hUsd * 0.8;
  }

  /**
   * Every perpetual contract at an instant, with its 24-hour-ago figures; `history` adds the last 30 days of
   * settlements.
   */
  perpetuals(timeMs: number, options: { history?: boolean; exchanges?: readonly PerpExchange[] } = {}): PerpQuote[] {
    const history = options.history ? this.settlementHistory(timeMs) : undefined;
    return this.assets.flatMap((profile) =>
      this.contractsOf(this.runtime(profile.symbol)!, timeMs, options.exchanges, history),
    );
  }

  /** One asset's perpetual contracts at an instant (no history): cheap enough for long series. */
  assetPerpetuals(symbol: string, timeMs: number, exchanges?: readonly PerpExchange[]): PerpQuote[] {
    return this.contractsOf(this.require(symbol), timeMs, exchanges);
  }

  private contractsOf(
    rt: AssetRuntime,
    timeMs: number,
    exchanges: readonly PerpExchange[] = PERP_EXCHANGES,
    history?: Map<string, { fundingRate8h: number[]; openInterestUsd: number[] }>,
  ): PerpQuote[] {
    const now = this.stateOf(rt, timeMs);
    const before = this.stateOf(rt, timeMs - DAY);
    const rows: PerpQuote[] = [];
    for (const venue of rt.venues.values()) {
      if (!exchanges.includes(venue.exchange)) continue;
      const quote = this.quoteOf(rt, venue, now, timeMs);
      const past = this.quoteOf(rt, venue, before, timeMs - DAY);
      rows.push({
        ...quote,
        openInterestUsd24hAgo: past.openInterestUsd,
        priceChange24hPercent: ((now.price - now.price24hAgo) / now.price24hAgo) * 100,
        longShortRatio: venue.exchange === 'binance' ? now.longShortRatio : null,
        history: history?.get(`${venue.exchange}:${rt.profile.symbol}`) ?? null,
      });
    }
    return rows;
  }

  /**
   * Funding per 8 h and open interest of every contract at the last 90 settlement times (00:00, 08:00, 16:00 UTC)
   * up to the instant, oldest first. Settled values never change, so this is cached per settlement.
   */
  settlementHistory(timeMs: number): Map<string, { fundingRate8h: number[]; openInterestUsd: number[] }> {
    const last = Math.floor(timeMs / (8 * HOUR)) * 8 * HOUR;
    const hit = this.historyCache.find((h) => h.at === last);
    if (hit) return hit.history;
    const times = Array.from({ length: HISTORY_POINTS }, (_, k) => last - (HISTORY_POINTS - 1 - k) * 8 * HOUR);
    const history = new Map<string, { fundingRate8h: number[]; openInterestUsd: number[] }>();
    for (const profile of this.assets) {
      const rt = this.runtime(profile.symbol)!;
      // Settlements are 8 h apart, so the price 24 h before settlement k is the price at settlement k − 3.
      const prices = Array.from({ length: HISTORY_POINTS + 3 }, (_, i) =>
        this.priceOf(rt, last - (HISTORY_POINTS + 2 - i) * 8 * HOUR),
      );
      const states = times.map((t, k) => this.stateOf(rt, t, prices[k + 3]!, prices[k]!));
      for (const venue of rt.venues.values()) {
        const funding = new Array<number>(HISTORY_POINTS);
        const oi = new Array<number>(HISTORY_POINTS);
        for (let k = 0; k < HISTORY_POINTS; k++) {
          funding[k] = this.funding8hOf(rt, venue, states[k]!, times[k]!);
          oi[k] = states[k]!.openInterestUsd * venue.share;
        }
        history.set(`${venue.exchange}:${profile.symbol}`, { fundingRate8h: funding, openInterestUsd: oi });
      }
    }
    this.historyCache.unshift({ at: last, history });
    this.historyCache.length = Math.min(this.historyCache.length, 2);
    return history;
  }

  private require(symbol: string): AssetRuntime {
    const rt = this.runtime(symbol);
    if (!rt) throw new Error(`The market model has no asset ${symbol}`);
    return rt;
  }

  private runtime(symbol: string): AssetRuntime | undefined {
    const cached = this.runtimes.get(symbol);
    if (cached) return cached;
    const profile = this.assets.find((a) => a.symbol === symbol);
    if (!profile) return undefined;
    const key = hashString(`${this.seed}:process:${symbol}`);
    const venues = new Map<PerpExchange, VenueRuntime>();
    const weights = profile.exchanges.map(
      (ex) => VENUE_WEIGHT[ex] * Math.exp(0.5 * gaussian(subKey(key, 50), PERP_EXCHANGES.indexOf(ex))),
    );
    const total = weights.reduce((a, b) => a + b, 0);
    profile.exchanges.forEach((exchange, i) => {
      const vkey = subKey(key, 100 + PERP_EXCHANGES.indexOf(exchange));
      const draw = uniform(vkey, 0);
      const fast = exchange === 'hyperliquid' || exchange === 'dydx' ? 2 : 1;
      venues.set(exchange, {
        exchange,
        ...instrumentOf(exchange, symbol),
        intervalHours: intervalOf(exchange, profile.core, draw),
        offset8h: 0.00002 * gaussian(vkey, 1),
        share: weights[i]! / total,
        funding: new ScaleNoise(
          subKey(vkey, 2),
          VENUE_SCALES,
          stationaryAmplitudes(VENUE_SCALES).map((a) => a * 0.00002 * fast),
        ),
        index: new ScaleNoise(subKey(vkey, 3), [HOUR], [0.0001]),
        premium: new ScaleNoise(
          subKey(vkey, 4),
          VENUE_SCALES,
          stationaryAmplitudes(VENUE_SCALES).map((a) => a * 0.0003),
        ),
      });
    });
    const rt: AssetRuntime = {
      profile,
      own: new ScaleNoise(subKey(key, 1), PRICE_SCALES, PRICE_AMPLITUDES),
      regime: new ScaleNoise(subKey(key, 2), REGIME_SCALES, stationaryAmplitudes(REGIME_SCALES)),
      fast: new ScaleNoise(subKey(key, 3), FAST_SCALES, stationaryAmplitudes(FAST_SCALES)),
      oi: new ScaleNoise(subKey(key, 4), OI_SCALES, stationaryAmplitudes(OI_SCALES)),
      volume: new ScaleNoise(subKey(key, 5), [DAY], stationaryAmplitudes([DAY])),
      crowd: new ScaleNoise(subKey(key, 6), [4 * HOUR], stationaryAmplitudes([4 * HOUR])),
      venues,
    };
    this.runtimes.set(symbol, rt);
    return rt;
  }

  private factorsAt(timeMs: number) {
    let f = this.factorCache.get(timeMs);
    if (!f) {
      if (this.factorCache.size > 4096) this.factorCache.clear();
      f = { btc: this.factors.btc.at(timeMs), eth: this.factors.eth.at(timeMs), sol: this.factors.sol.at(timeMs) };
      this.factorCache.set(timeMs, f);
    }
    return f;
  }

  private priceOf(rt: AssetRuntime, timeMs: number): number {
    const { btc, eth, sol, own } = rt.profile.betas;
    const f = this.factorsAt(timeMs);
    const shock = btc * f.btc + eth * f.eth + sol * f.sol + (own ? own * rt.own.at(timeMs) : 0);
    return rt.profile.anchorPriceUsd * Math.exp(rt.profile.volatility * shock);
  }

  private stateOf(
    rt: AssetRuntime,
    timeMs: number,
    price = this.priceOf(rt, timeMs),
    price24hAgo = this.priceOf(rt, timeMs - DAY),
  ): AssetState {
    const p = rt.profile;
    const momentum = Math.log(price / price24hAgo);
    const g = rt.regime.at(timeMs);
    // Squaring a unit normal keeps its sign and fattens the tail: most assets sit near the baseline, a few get crowded.
    const regime = p.regimeScale * Math.sign(g) * g * g;
    const funding8h = BASELINE_FUNDING_8H + 0.001 * momentum + regime + p.noiseScale * rt.fast.at(timeMs);
    const crowding = Math.abs(regime) / p.regimeScale;
    const openInterestUsd =
      p.anchorOpenInterestUsd *
      (price / p.anchorPriceUsd) ** 0.7 *
      Math.exp(0.3 * rt.oi.at(timeMs)) *
      (1 + 0.1 * Math.min(crowding, 10));
    const volume24hUsd = openInterestUsd * p.turnover * Math.exp(0.25 * rt.volume.at(timeMs) + 2 * Math.abs(momentum));
    const tilt = Math.tanh((regime + 0.001 * momentum) / (3 * p.regimeScale));
    const longShortRatio = Math.exp(0.05 + 0.8 * tilt + 0.05 * rt.crowd.at(timeMs));
    return { price, price24hAgo, funding8h, regime, openInterestUsd, volume24hUsd, longShortRatio };
  }

  /** A venue's funding per 8 h: the asset's, the venue's own offset and noise, within the asset's cap. */
  private funding8hOf(rt: AssetRuntime, venue: VenueRuntime, state: AssetState, timeMs: number): number {
    const cap = rt.profile.fundingCap8h;
    return Math.max(-cap, Math.min(cap, state.funding8h + venue.offset8h + venue.funding.at(timeMs)));
  }

  private quoteOf(rt: AssetRuntime, venue: VenueRuntime, state: AssetState, timeMs: number): PerpQuote {
    const f8 = this.funding8hOf(rt, venue, state, timeMs);
    const index = state.price * (1 + venue.index.at(timeMs));
    const premium = Math.max(-0.02, Math.min(0.02, f8 - BASELINE_FUNDING_8H + venue.premium.at(timeMs)));
    const intervalMs = venue.intervalHours * HOUR;
    return {
      exchange: venue.exchange,
      symbol: venue.symbol,
      asset: rt.profile.symbol,
      quote: venue.quote,
      markPrice: index * (1 + premium),
      indexPrice: index,
      fundingRate: (f8 * venue.intervalHours) / 8,
      fundingIntervalHours: venue.intervalHours,
      // Deribit funds continuously: there is no next payment time.
      nextFundingTime: venue.exchange === 'deribit' ? null : (Math.floor(timeMs / intervalMs) + 1) * intervalMs,
      openInterestUsd: state.openInterestUsd * venue.share,
      volume24hUsd: state.volume24hUsd * venue.share,
    };
  }
}

/**
 * Funding interval conventions: hourly on Hyperliquid and dYdX, 8 h elsewhere with 4 h (and some 1 h) long-tail
 * contracts.
 */
function intervalOf(exchange: PerpExchange, core: boolean, draw: number): number {
  if (exchange === 'hyperliquid' || exchange === 'dydx') return 1;
  if (exchange === 'deribit' || exchange === 'okx' || core) return 8;
  if (exchange === 'bybit' && draw < 0.05) return 1;
  return draw < 0.25 ? 4 : 8;
}
