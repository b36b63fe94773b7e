import type { BookLevel } from '../measures';
import type { MarketModel } from './model';
import { gaussian, hashString, ScaleNoise, stationaryAmplitudes, subKey, uniform } from './random';

// Spot microstructure of the seeded market: limit order books and hourly trade bars, built on the market model's
// prices and volumes. Every value is a pure function of (seed, symbol, venue, instant), so replicas agree.

const MINUTE = 60_000;
export const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** One venue's order book at an instant: bids best first, asks best first (prices in USD, quantities in base units). */
export interface SpotBook {
  venue: string;
  bids: BookLevel[];
  asks: BookLevel[];
}

/**
 * One hour of trading, as an exchange's 1-hour kline reports it: taker buys are the aggressive buyers' quote volume.
 */
export interface HourBar {
  openTime: number;
  close: number;
  quoteVolumeUsd: number;
  takerBuyQuoteVolumeUsd: number;
  trades: number;
}

/** The simulated venues: named neutrally, never after a real exchange. */
export const SIMULATED_VENUES = ['simulated-book-a', 'simulated-book-b'] as const;
/** Levels per side of a simulated book. */
export const SIMULATED_BOOK_LEVELS = 60;

/** An asset's fixed microstructure parameters, drawn once from the seed. */
interface AssetBookProfile {
  /** ±2 % depth per side as a share of 24-hour volume (median). */
  depthRatio: number;
  /** σ of the log-normal level sizes: higher means a few walls hold most of the book. */
  sizeSigma: number;
  /** Chance that a level is a wall (an order several times the usual size). */
  wallChance: number;
  /** Median trade size, USD. */
  tradeUsd: number;
  /** Share of the asset's liquidity on each simulated venue. */
  venueShares: number[];
  /** Slow taker-side imbalance parameter (buyers minus sellers pressure), a stationary process in time. */
  flow: ScaleNoise;
  /** Book skew (bid against ask depth), a stationary process in time. */
  skew: ScaleNoise;
}

/**
 * Order books and trade bars of the seeded market: a book per symbol, venue and minute, levels spread out to 3 %
 * either side of a mid that follows the model's random-walk price, level sizes log-normal with occasional walls,
 * scaled to a depth proportional to the asset's volume; hourly bars whose volume follows the model and whose taker
 * side leans with a slow imbalance parameter and with the hour's return.
 */
export class SimulatedSpotMarket {
  private readonly profiles = new Map<string, AssetBookProfile>();

  constructor(readonly model: MarketModel) {}

  has(symbol: string): boolean {
    return this.model.asset(symbol) !== undefined;
  }

  private profile(symbol: string): AssetBookProfile {
    let p = this.profiles.get(symbol);
    if (p) return p;
    const key = hashString(`${this.model.seed}:spot:${symbol}`);
    const u = (n: number) => uniform(key, n);
    const first = 0.5 + 0.3 * u(6);
    p = {
      depthRatio: 0.01 * Math.exp(0.7 * gaussian(key, 1)),
      sizeSigma: 0.35 + 1.1 * u(2),
      wallChance: 0.01 + 0.08 * u(3),
      tradeUsd: 250 * Math.exp(0.6 * gaussian(key, 4)),
      venueShares: [first, 1 - first],
      flow: new ScaleNoise(subKey(key, 7), [6 * HOUR, DAY, 4 * DAY], stationaryAmplitudes([6 * HOUR, DAY, 4 * DAY])),
      skew: new ScaleNoise(subKey(key, 8), [10 * MINUTE, HOUR], stationaryAmplitudes([10 * MINUTE, HOUR])),
    };
    this.profiles.set(symbol, p);
    return p;
  }

  /** Every simulated venue's book for the minute containing `timeMs`. */
  books(symbol: string, timeMs: number): SpotBook[] {
    const minute = Math.floor(timeMs / MINUTE) * MINUTE;
    return SIMULATED_VENUES.map((venue, v) => this.book(symbol, venue, v, minute));
  }

  private book(symbol: string, venue: string, v: number, minute: number): SpotBook {
    const p = this.profile(symbol);
    const key = hashString(`${this.model.seed}:book:${symbol}:${venue}`);
    const index = minute / MINUTE;
    const draw = (n: number) => gaussian(subKey(key, n), index);
    const volume = this.model.spotVolume24hUsd(symbol, minute) * p.venueShares[v]!;
    // Each venue quotes around the model's price with a tiny basis of its own.
    const mid = this.model.spotPrice(symbol, minute) * (1 + 0.0003 * draw(1));
    // Deep markets quote tighter: about 0.3 bps at 10 billion USD a day, 30 bps at 1 million.
    const spreadBps = Math.max(0.2, 10 ** (4.5 - 0.5 * Math.log10(Math.max(volume, 1))) * Math.exp(0.3 * draw(2)));
    const target = volume * p.depthRatio * Math.exp(0.15 * draw(3));
    const skew = 0.35 * p.skew.at(minute) + 0.1 * draw(4);
    const side = (s: 'bid' | 'ask'): BookLevel[] => {
      const sign = s === 'bid' ? -1 : 1;
      const sideKey = subKey(key, s === 'bid' ? 10 : 11);
      const half = spreadBps / 20_000;
      const levels: { price: number; notional: number }[] = [];
      for (let k = 0; k < SIMULATED_BOOK_LEVELS; k++) {
        // Level k sits between the touch and 3 % away, denser near the touch.
        const distance = half + 0.03 * (k / (SIMULATED_BOOK_LEVELS - 1)) ** 1.4;
        const n = index * SIMULATED_BOOK_LEVELS + k;
        const wall = uniform(subKey(sideKey, 1), n) < p.wallChance ? 4 + 12 * uniform(subKey(sideKey, 2), n) : 1;
        levels.push({
          price: mid * (1 + sign * distance),
          notional: Math.exp(p.sizeSigma * gaussian(sideKey, n)) * wall,
        });
      }
      const within = levels.filter((l) => Math.abs(l.price / mid - 1) <= 0.02).reduce((a, l) => a + l.notional, 0);
      const scale = (target * Math.exp(s === 'bid' ? skew : -skew)) / within;
      return levels.map((l) => ({ price: l.price, quantity: (l.notional * scale) / l.price }));
    };
    return { venue, bids: side('bid'), asks: side('ask') };
  }

  /** The `count` complete hourly bars before the hour containing `timeMs`, oldest first. */
  bars(symbol: string, timeMs: number, count: number): HourBar[] {
    const p = this.profile(symbol);
    const key = hashString(`${this.model.seed}:tape:${symbol}`);
    const end = Math.floor(timeMs / HOUR) * HOUR;
    const times = Array.from({ length: count + 1 }, (_, i) => end - (count - i) * HOUR);
    const closes = this.model.spotSeries(symbol, times);
    const hourlySigma = this.model.asset(symbol)!.volatility / Math.sqrt(365.25 * 24) || 1e-6;
    const bars: HourBar[] = [];
    for (let i = 1; i <= count; i++) {
      const openTime = times[i - 1]!;
      const hour = openTime / HOUR;
      const r = Math.log(closes[i]! / closes[i - 1]!);
      const volume =
        (this.model.spotVolume24hUsd(symbol, openTime) / 24) *
        Math.exp(0.35 * gaussian(subKey(key, 1), hour)) *
        (1 + Math.min(3, Math.abs(r) / hourlySigma) * 0.3);
      // Takers lean with the slow imbalance parameter and with the hour's move (buyers lift offers in a rally).
      const lean =
        0.45 * p.flow.at(openTime) + 0.25 * Math.tanh(r / hourlySigma) + 0.1 * gaussian(subKey(key, 2), hour);
      const buyShare = Math.min(0.98, Math.max(0.02, 0.5 + 0.5 * Math.tanh(lean)));
      const trades = Math.max(0, Math.round((volume / p.tradeUsd) * Math.exp(0.1 * gaussian(subKey(key, 3), hour))));
      bars.push({
        openTime,
        close: closes[i]!,
        quoteVolumeUsd: volume,
        takerBuyQuoteVolumeUsd: volume * buyShare,
        trades,
      });
    }
    return bars;
  }
}
