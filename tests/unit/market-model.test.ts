import { describe, expect, it } from 'vitest';
import { BASELINE_FUNDING_8H, HISTORY_POINTS, MarketModel, PERP_EXCHANGES } from '../../servers/src/upstream/market';
import { gaussian, uniform } from '../../servers/src/upstream/market/random';

// The embedded market model: a pure function of (seed, asset, venue, time), with sane statistics.

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const T = Date.parse('2026-11-22T09:00:00.000Z');
const model = new MarketModel();

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const std = (xs: number[]) => {
  const m = mean(xs);
  return Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / xs.length);
};
const correlation = (a: number[], b: number[]) => {
  const [ma, mb] = [mean(a), mean(b)];
  let num = 0;
  let da = 0;
  let db = 0;
  a.forEach((x, i) => {
    num += (x - ma) * (b[i]! - mb);
    da += (x - ma) ** 2;
    db += (b[i]! - mb) ** 2;
  });
  return num / Math.sqrt(da * db);
};
const logReturns = (prices: number[]) => prices.slice(1).map((p, i) => Math.log(p / prices[i]!));
const autocorrelation = (xs: number[], lag: number) => correlation(xs.slice(0, -lag), xs.slice(lag));
const times = (from: number, step: number, n: number) => Array.from({ length: n }, (_, i) => from + i * step);

describe('determinism', () => {
  it('gives the same market for the same seed and time, across instances and call orders', () => {
    const other = new MarketModel();
    // The other instance is first asked about other instants: no hidden state may leak into the answer.
    other.perpetuals(T - 7 * DAY);
    other.spotPrice('SOL', T + 3 * HOUR);
    expect(other.perpetuals(T)).toEqual(model.perpetuals(T));
    expect(other.settlementHistory(T)).toEqual(model.settlementHistory(T));
    expect(other.spotSeries('ETH', times(T, HOUR, 24))).toEqual(model.spotSeries('ETH', times(T, HOUR, 24)));
    expect(other.assets).toEqual(model.assets);
  });

  it('gives another market for another seed', () => {
    const other = new MarketModel({ seed: 'another-seed' });
    expect(other.spotPrice('BTC', T)).not.toBe(model.spotPrice('BTC', T));
    expect(other.assets.slice(64).map((a) => a.symbol)).not.toEqual(model.assets.slice(64).map((a) => a.symbol));
  });

  it('draws counter-based randomness: uniform in (0, 1), standard normals', () => {
    const u = times(0, 1, 20_000).map((i) => uniform(42, i));
    expect(Math.min(...u)).toBeGreaterThan(0);
    expect(Math.max(...u)).toBeLessThan(1);
    expect(mean(u)).toBeCloseTo(0.5, 1);
    const g = times(-10_000, 1, 20_000).map((i) => gaussian(42, i));
    expect(Math.abs(mean(g))).toBeLessThan(0.03);
    expect(std(g)).toBeGreaterThan(0.97);
    expect(std(g)).toBeLessThan(1.03);
    expect(uniform(42, 7)).toBe(uniform(42, 7));
  });
});

describe('the universe', () => {
  it('lists 600+ assets on 9 exchanges, unique tickers, the core real tickers first', () => {
    expect(model.assets.length).toBe(640);
    expect(new Set(model.assets.map((a) => a.symbol)).size).toBe(640);
    expect(model.assets.slice(0, 3).map((a) => a.symbol)).toEqual(['BTC', 'ETH', 'SOL']);
    for (const a of model.assets) expect(a.symbol).toMatch(/^[A-Z0-9]{1,20}$/);
    const rows = model.perpetuals(T);
    expect(new Set(rows.map((r) => r.exchange))).toEqual(new Set(PERP_EXCHANGES));
    expect(rows.length).toBeGreaterThan(2000);
    expect(model.asset('BTC')!.exchanges).toEqual([...PERP_EXCHANGES]);
    // Venue conventions: hourly funding on Hyperliquid and dYdX, Deribit's inverse BTC perpetual.
    const btc = rows.filter((r) => r.asset === 'BTC');
    expect(btc.find((r) => r.exchange === 'hyperliquid')!.fundingIntervalHours).toBe(1);
    expect(btc.find((r) => r.exchange === 'deribit')).toMatchObject({
      symbol: 'BTC-PERPETUAL',
      quote: 'USD',
      nextFundingTime: null,
    });
    expect(btc.find((r) => r.exchange === 'okx')).toMatchObject({
      symbol: 'BTC-USDT-SWAP',
      nextFundingTime: Date.parse('2026-11-22T16:00:00.000Z'),
    });
  });
});

describe('statistical sanity', () => {
  it('keeps prices positive and finite, near their anchors, over five years', () => {
    for (const a of model.assets.filter((_, i) => i % 40 === 0)) {
      const prices = model.spotSeries(a.symbol, times(T - 5 * 365 * DAY, 7 * DAY, 261));
      for (const p of prices) {
        expect(Number.isFinite(p)).toBe(true);
        expect(p).toBeGreaterThan(0);
      }
      // Stationary log price: within e^±(5σ) of the anchor.
      const logs = prices.map((p) => Math.log(p / a.anchorPriceUsd));
      expect(Math.max(...logs.map(Math.abs))).toBeLessThan(5 * a.volatility);
    }
  });

  it('moves prices with their configured volatility, correlated with BTC', () => {
    const hours = times(T - 120 * DAY, HOUR, 120 * 24);
    const btc = logReturns(model.spotSeries('BTC', hours));
    const eth = logReturns(model.spotSeries('ETH', hours));
    const annualised = std(btc) * Math.sqrt(24 * 365.25);
    expect(annualised).toBeGreaterThan(0.55 * 0.8);
    expect(annualised).toBeLessThan(0.55 * 1.2);
    // Realised over configured volatility, averaged over a sample of the universe, on daily returns over a year.
    const days = times(T - 365 * DAY, DAY, 366);
    const ratios = model.assets
      .filter((_, i) => i % 20 === 0)
      .map((a) => (std(logReturns(model.spotSeries(a.symbol, days))) * Math.sqrt(365.25)) / a.volatility);
    expect(mean(ratios)).toBeGreaterThan(0.85);
    expect(mean(ratios)).toBeLessThan(1.15);
    expect(correlation(btc, eth)).toBeGreaterThan(0.5);
    const tail = model.assets[200]!;
    const alt = logReturns(model.spotSeries(tail.symbol, hours));
    expect(correlation(btc, alt)).toBeGreaterThan(0.15);
    expect(correlation(btc, alt)).toBeLessThan(0.95);
  });

  it('makes funding mean-revert around the 0.01 % baseline, bounded by each asset’s cap', () => {
    const sample = model.assets.filter((_, i) => i % 32 === 0);
    const settlements = times(T - 365 * DAY, 8 * HOUR, 3 * 365);
    const means: number[] = [];
    const shortLag: number[] = [];
    const longLag: number[] = [];
    for (const a of sample) {
      const series = settlements.map((t) => {
        const row = model.assetPerpetuals(a.symbol, t, [a.exchanges[0]!])[0]!;
        const f8 = (row.fundingRate / row.fundingIntervalHours) * 8;
        expect(Math.abs(f8)).toBeLessThanOrEqual(a.fundingCap8h + 1e-15);
        return f8;
      });
      means.push(mean(series));
      shortLag.push(autocorrelation(series, 1));
      longLag.push(autocorrelation(series, 3 * 60));
    }
    // Averaged over assets: the long-run mean sits near the baseline, persistence is high over 8 h and gone after 60
    // days.
    expect(Math.abs(mean(means) - BASELINE_FUNDING_8H)).toBeLessThan(0.0001);
    expect(mean(shortLag)).toBeGreaterThan(0.6);
    expect(Math.abs(mean(longLag))).toBeLessThan(0.2);
  });

  it('reports open interest and volume positive, and settlement history equal to the model at those times', () => {
    const rows = model.perpetuals(T, { history: true });
    for (const r of rows) {
      expect(r.openInterestUsd).toBeGreaterThan(0);
      expect(r.volume24hUsd).toBeGreaterThan(0);
      expect(r.markPrice).toBeGreaterThan(0);
      expect(r.history!.fundingRate8h).toHaveLength(HISTORY_POINTS);
    }
    const lastSettlement = Date.parse('2026-11-22T08:00:00.000Z');
    const then = model.perpetuals(lastSettlement - 8 * HOUR);
    const eth = rows.find((r) => r.asset === 'ETH' && r.exchange === 'bybit')!;
    const ethThen = then.find((r) => r.asset === 'ETH' && r.exchange === 'bybit')!;
    expect(eth.history!.fundingRate8h[HISTORY_POINTS - 2]).toBeCloseTo(
      (ethThen.fundingRate / ethThen.fundingIntervalHours) * 8,
      15,
    );
    expect(eth.history!.openInterestUsd[HISTORY_POINTS - 2]).toBeCloseTo(ethThen.openInterestUsd, 3);
  });
});
