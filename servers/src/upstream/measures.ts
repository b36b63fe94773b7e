import { round } from './decimal';

// Concentration measures of market microstructure (research/domain.md §4), shared by the token and market services.

/**
 * Gini coefficient: G = 2·Σ i·x₍ᵢ₎ / (n·Σx) − (n+1)/n over the values sorted ascending (i = 1..n). 0 when every
 * value is equal; (n−1)/n when one holds everything. 0 for no values or a zero total.
 */
export function gini(values: readonly number[]): number {
  const n = values.length;
  const total = values.reduce((a, b) => a + b, 0);
  if (n === 0 || total <= 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const weighted = sorted.reduce((sum, x, i) => sum + (i + 1) * x, 0);
  return round(Math.max(0, (2 * weighted) / (n * total) - (n + 1) / n));
}

/** Herfindahl-Hirschman index: Σ sᵢ² over shares given as fractions (0 to 1). */
export function hhi(shares: readonly number[]): number {
  return round(shares.reduce((sum, s) => sum + s * s, 0));
}

// Order-book and return measures (research/domain.md §4), shared by the conviction index and the intel stack.

/** One price level of an order book: price and quantity in base units. */
export interface BookLevel {
  price: number;
  quantity: number;
}

/** Best bid and ask, their mid and the spread in basis points: (ask − bid) / mid × 10⁴. Null when a side is empty. */
export function midAndSpread(
  bids: readonly BookLevel[],
  asks: readonly BookLevel[],
): { bestBid: number; bestAsk: number; mid: number; spreadBps: number } | null {
  if (bids.length === 0 || asks.length === 0) return null;
  const bestBid = Math.max(...bids.map((l) => l.price));
  const bestAsk = Math.min(...asks.map((l) => l.price));
  const mid = (bestBid + bestAsk) / 2;
  return { bestBid, bestAsk, mid, spreadBps: round(((bestAsk - bestBid) / mid) * 10_000, 4) };
}

/** The levels within `band` of mid (bids at or above mid × (1 − band), asks at or below mid × (1 + band)). */
export function levelsWithin(side: 'bid' | 'ask', levels: readonly BookLevel[], mid: number, band = 0.02): BookLevel[] {
  return levels.filter((l) => (side === 'bid' ? l.price >= mid * (1 - band) : l.price <= mid * (1 + band)));
}

/** Quote notional Σ price × quantity of one side within `band` of mid: the "±2 % depth". */
export function depthWithin(side: 'bid' | 'ask', levels: readonly BookLevel[], mid: number, band = 0.02): number {
  return levelsWithin(side, levels, mid, band).reduce((sum, l) => sum + l.price * l.quantity, 0);
}

/**
 * (bid − ask) / (bid + ask) ∈ [−1, 1]; 0 when both are 0. Book imbalance from depths, flow imbalance from taker
 * volumes.
 */
export function imbalance(bid: number, ask: number): number {
  const total = bid + ask;
  return total > 0 ? round((bid - ask) / total) : 0;
}

/** r_t = ln(P_t / P_{t−1}) over consecutive positive prices. */
export function logReturns(prices: readonly number[]): number[] {
  const out: number[] = [];
  for (let i = 1; i < prices.length; i++) out.push(Math.log(prices[i]! / prices[i - 1]!));
  return out;
}

/**
 * Pearson ρ = Σ(a−ā)(b−b̄) / √(Σ(a−ā)²·Σ(b−b̄)²) over paired values; null for fewer than 2 pairs or a constant series.
 */
export function pearson(a: readonly number[], b: readonly number[]): number | null {
  const n = Math.min(a.length, b.length);
  if (n < 2) return null;
  let ma = 0;
  let mb = 0;
  for (let i = 0; i < n; i++) {
    ma += a[i]!;
    mb += b[i]!;
  }
  ma /= n;
  mb /= n;
  let sab = 0;
  let saa = 0;
  let sbb = 0;
  for (let i = 0; i < n; i++) {
    const da = a[i]! - ma;
    const db = b[i]! - mb;
    sab += da * db;
    saa += da * da;
    sbb += db * db;
  }
  if (saa === 0 || sbb === 0) return null;
  return round(Math.max(-1, Math.min(1, sab / Math.sqrt(saa * sbb))));
}

/** Population standard deviation; 0 for fewer than 2 values. */
export function standardDeviation(values: readonly number[]): number {
  if (values.length < 2) return 0;
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  return Math.sqrt(values.reduce((sum, x) => sum + (x - mean) ** 2, 0) / values.length);
}

/**
 * Walks one side of the book with a market order of `notional` quote units (a buy walks the asks, best first; a sell
 * the bids). Returns the average fill price, the impact |average − mid| / mid in percent, and the share of the
 * notional the book could fill (below 1 when the book runs out).
 */
export function priceImpact(
  side: 'buy' | 'sell',
  levels: readonly BookLevel[],
  mid: number,
  notional: number,
): { averagePrice: number | null; impactPercent: number; filledFraction: number } {
  const sorted = [...levels].sort((a, b) => (side === 'buy' ? a.price - b.price : b.price - a.price));
  let remaining = notional;
  let quote = 0;
  let base = 0;
  for (const level of sorted) {
    if (remaining <= 0) break;
    const take = Math.min(remaining, level.price * level.quantity);
    quote += take;
    base += take / level.price;
    remaining -= take;
  }
  if (base === 0) return { averagePrice: null, impactPercent: 0, filledFraction: 0 };
  const averagePrice = quote / base;
  return {
    averagePrice,
    impactPercent: round((Math.abs(averagePrice - mid) / mid) * 100, 4),
    filledFraction: round(quote / notional),
  };
}

// Timing and flow-toxicity measures (research/domain.md §4), used by the intel stack.

/** Coefficient of variation σ/μ (population σ); null for fewer than 2 values or a non-positive mean. */
export function coefficientOfVariation(values: readonly number[]): number | null {
  if (values.length < 2) return null;
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  if (mean <= 0) return null;
  return round(standardDeviation(values) / mean);
}

/** Standard normal CDF Φ(x), from erf by Abramowitz & Stegun 7.1.26 (absolute error below 1.5 × 10⁻⁷). */
export function normalCdf(x: number): number {
  const z = Math.abs(x) / Math.SQRT2;
  const t = 1 / (1 + 0.3275911 * z);
  const poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  const erf = 1 - poly * Math.exp(-z * z);
  return x >= 0 ? (1 + erf) / 2 : (1 - erf) / 2;
}

/**
 * VPIN (Easley, López de Prado & O'Hara 2012) over equal-volume buckets: each bucket of volume V with price change
 * ΔP is bulk-volume classified, V_buy = V·Φ(ΔP/σ_ΔP), V_sell = V − V_buy (σ the population stdev of the ΔP), and
 * VPIN = Σ|V_sell − V_buy| / (n·V) over the last n buckets. Null for no buckets or constant prices (σ = 0).
 */
export function vpin(priceChanges: readonly number[], bucketVolume: number, lastBuckets = 50): number | null {
  const changes = priceChanges.slice(-lastBuckets);
  const sigma = standardDeviation(changes);
  if (changes.length === 0 || sigma === 0 || bucketVolume <= 0) return null;
  const imbalance = changes.reduce((sum, dp) => {
    const buy = bucketVolume * normalCdf(dp / sigma);
    return sum + Math.abs(bucketVolume - 2 * buy);
  }, 0);
  return round(Math.min(1, imbalance / (changes.length * bucketVolume)));
}

/** Jensen-Shannon divergence in bits (base 2, so within [0, 1]) of two distributions given as non-negative weights. */
export function jensenShannon(p: readonly number[], q: readonly number[]): number {
  const norm = (v: readonly number[]) => {
    const total = v.reduce((a, b) => a + b, 0);
    return v.map((x) => (total > 0 ? x / total : 0));
  };
  const a = norm(p);
  const b = norm(q);
  const kl = (x: number[], m: number[]) =>
    x.reduce((sum, xi, i) => (xi > 0 ? sum + xi * Math.log2(xi / m[i]!) : sum), 0);
  const m = a.map((ai, i) => (ai + (b[i] ?? 0)) / 2);
  return round(Math.max(0, Math.min(1, (kl(a, m) + kl(b, m)) / 2)));
}

/** The p-th percentile (0 to 100) by linear interpolation between closest ranks; null for no values. */
export function percentile(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return round(sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (rank - lo));
}
