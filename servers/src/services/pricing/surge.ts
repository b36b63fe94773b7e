import type {
  AnalyticsWindow,
  DemandReading,
  DemandTrend,
  DemandZone,
  PricedEndpoint,
  PricePoint,
} from '@agent-economy/contracts';
import { atomicToUsd } from '@agent-economy/contracts';

// The adaptive-pricing model as pure functions over plain data (no clock, no database): the demand reading of an
// endpoint, the surge curve, the zone of a multiplier, the price it gives, and the analytics over settled calls.

export const ENDPOINTS = [
  'token-intel',
  'wallet-scan',
  'trending',
  'whale-watch',
] as const satisfies readonly PricedEndpoint[];
/** The sliding window demand is measured over. */
export const DEMAND_WINDOW_SECONDS = 300;
/** The surge range, in hundredths of the base price. */
export const MIN_HUNDREDTHS = 50;
export const MAX_HUNDREDTHS = 500;

/** One settled paid call: which endpoint, what it paid (atomic units), when. */
export interface Sale {
  endpoint: PricedEndpoint;
  amount: bigint;
  at: Date;
}

/** Calls in the window → the demand reading; the load ratio is the call rate over the baseline rate. */
export function demandReading(
  callsInWindow: number,
  baselineCallsPerMinute: number,
  windowSeconds = DEMAND_WINDOW_SECONDS,
): DemandReading {
  const callsPerMinute = (callsInWindow * 60) / windowSeconds;
  const loadRatio =
    baselineCallsPerMinute > 0 ? callsPerMinute / baselineCallsPerMinute : callsInWindow > 0 ? MAX_HUNDREDTHS / 100 : 0;
  return {
    callsInWindow,
    windowSeconds,
    callsPerMinute: round(callsPerMinute, 4),
    baselineCallsPerMinute,
    loadRatio: round(loadRatio, 4),
  };
}

/**
 * The surge curve: multiplier = clamp(loadRatio, 0.5, 5), rounded half-up to 2 decimals, in hundredths (an integer,
 * so prices are computed exactly). Linear in the load between the bounds: twice the baseline rate doubles the price;
 * no demand gives the 0.5× discount; five times the baseline or more caps at 5×.
 */
export function surgeHundredths(loadRatio: number): number {
  if (!Number.isFinite(loadRatio) || loadRatio <= 0) return MIN_HUNDREDTHS;
  // Rounded on the decimal digits, not the binary float (1.005 is 1.01, not 1.00).
  const hundredths = Math.floor(Number((loadRatio * 100).toFixed(6)) + 0.5);
  return Math.min(MAX_HUNDREDTHS, Math.max(MIN_HUNDREDTHS, hundredths));
}

/** The zone of a multiplier: low < 0.8 ≤ normal < 1.5 ≤ high < 3 ≤ surge. */
export function zoneOf(hundredths: number): DemandZone {
  if (hundredths < 80) return 'low';
  if (hundredths < 150) return 'normal';
  if (hundredths < 300) return 'high';
  return 'surge';
}

export const ZONE_RULES = [
  {
    zone: 'low',
    fromMultiplier: '0.5',
    toMultiplier: '0.8',
    meaning: 'demand below the baseline: prices are discounted',
  },
  {
    zone: 'normal',
    fromMultiplier: '0.8',
    toMultiplier: '1.5',
    meaning: 'demand near the baseline: prices near the base price',
  },
  { zone: 'high', fromMultiplier: '1.5', toMultiplier: '3', meaning: 'demand above the baseline: prices raised' },
  {
    zone: 'surge',
    fromMultiplier: '3',
    toMultiplier: null,
    meaning: 'demand at three times the baseline or more: surge prices, up to 5×',
  },
] as const;

/** A multiplier in hundredths as its decimal string: 50 → "0.5", 125 → "1.25", 300 → "3". */
export function multiplierText(hundredths: number): string {
  const whole = Math.floor(hundredths / 100);
  const fraction = String(hundredths % 100)
    .padStart(2, '0')
    .replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : String(whole);
}

/** base × multiplier in atomic units, rounded half-up (6 decimals). */
export function priceAtomic(baseAtomic: bigint, hundredths: number): bigint {
  return (baseAtomic * BigInt(hundredths) + 50n) / 100n;
}

/** The multiplier a charged price corresponds to: price / base, to the nearest hundredth, within the surge range. */
export function hundredthsOfPrice(baseAtomic: bigint, amount: bigint): number {
  if (baseAtomic <= 0n) return MIN_HUNDREDTHS;
  const hundredths = Number((amount * 100n + baseAtomic / 2n) / baseAtomic);
  return Math.min(MAX_HUNDREDTHS, Math.max(MIN_HUNDREDTHS, hundredths));
}

/** The price state of an endpoint given the calls settled in the demand window ending now. */
export function priceState(baseAtomic: bigint, callsInWindow: number, baselineCallsPerMinute: number) {
  const demand = demandReading(callsInWindow, baselineCallsPerMinute);
  const hundredths = surgeHundredths(demand.loadRatio);
  return { demand, hundredths, zone: zoneOf(hundredths), amount: priceAtomic(baseAtomic, hundredths) };
}

export const WINDOWS: Record<AnalyticsWindow, { seconds: number; bucketSeconds: number }> = {
  '1h': { seconds: 3_600, bucketSeconds: 300 },
  '24h': { seconds: 86_400, bucketSeconds: 3_600 },
  '7d': { seconds: 604_800, bucketSeconds: 21_600 },
};

/** Sales with `at` in (from, to]: a sale settled at this instant counts now, as the demand window counts it. */
const between = (sales: readonly Sale[], from: number, to: number) =>
  sales.filter((s) => s.at.getTime() > from && s.at.getTime() <= to);

/**
 * Analytics of one endpoint over (to − window, to]: a price point per bucket (start, end] (the average price charged in
 * it, or,
 * when nothing sold, the price quoted at the bucket's end from the demand then), revenue statistics, and the trend.
 * `sales` must hold the endpoint's settled calls from (window start − demand window) on.
 */
export function endpointAnalytics(input: {
  sales: readonly Sale[];
  baseAtomic: bigint;
  baselineCallsPerMinute: number;
  window: AnalyticsWindow;
  to: Date;
}): {
  priceHistory: PricePoint[];
  revenue: { calls: number; revenue: bigint; average: bigint; lowest: bigint; highest: bigint };
  demandTrend: DemandTrend;
} {
  const { seconds, bucketSeconds } = WINDOWS[input.window];
  const to = input.to.getTime();
  const from = to - seconds * 1000;
  const priceHistory: PricePoint[] = [];
  const zoneCount: Record<DemandZone, number> = { low: 0, normal: 0, high: 0, surge: 0 };
  for (let start = from; start < to; start += bucketSeconds * 1000) {
    const end = Math.min(start + bucketSeconds * 1000, to);
    const sold = between(input.sales, start, end);
    const revenue = sold.reduce((sum, s) => sum + s.amount, 0n);
    let amount: bigint;
    let hundredths: number;
    if (sold.length) {
      amount = (revenue + BigInt(sold.length) / 2n) / BigInt(sold.length);
      hundredths = hundredthsOfPrice(input.baseAtomic, amount);
    } else {
      const recent = between(input.sales, end - DEMAND_WINDOW_SECONDS * 1000, end).length;
      ({ amount, hundredths } = priceState(input.baseAtomic, recent, input.baselineCallsPerMinute));
    }
    const zone = zoneOf(hundredths);
    zoneCount[zone] += 1;
    priceHistory.push({
      at: new Date(start).toISOString(),
      priceUsd: atomicToUsd(amount),
      surgeMultiplier: multiplierText(hundredths),
      demandZone: zone,
      calls: sold.length,
      revenueUsd: atomicToUsd(revenue),
    });
  }
  const inWindow = between(input.sales, from, to);
  const amounts = inWindow.map((s) => s.amount);
  const revenue = amounts.reduce((a, b) => a + b, 0n);
  const calls = inWindow.length;
  const stats = {
    calls,
    revenue,
    average: calls ? (revenue + BigInt(calls) / 2n) / BigInt(calls) : 0n,
    lowest: calls ? amounts.reduce((a, b) => (b < a ? b : a)) : 0n,
    highest: calls ? amounts.reduce((a, b) => (b > a ? b : a)) : 0n,
  };
  // The trend: the call rate of the window's last quarter against the whole window's.
  const minutes = seconds / 60;
  const averageRate = calls / minutes;
  const lastQuarter = between(input.sales, to - (seconds * 1000) / 4, to).length / (minutes / 4);
  const changePercent = averageRate > 0 ? round((lastQuarter / averageRate - 1) * 100, 2) : 0;
  const now = between(input.sales, to - DEMAND_WINDOW_SECONDS * 1000, to).length;
  const buckets = priceHistory.length;
  return {
    priceHistory,
    revenue: stats,
    demandTrend: {
      direction: changePercent > 10 ? 'rising' : changePercent < -10 ? 'falling' : 'stable',
      changePercent,
      callsPerMinuteNow: round((now * 60) / DEMAND_WINDOW_SECONDS, 4),
      callsPerMinuteAverage: round(averageRate, 4),
      zoneShare: {
        low: round(zoneCount.low / buckets, 6),
        normal: round(zoneCount.normal / buckets, 6),
        high: round(zoneCount.high / buckets, 6),
        surge: round(zoneCount.surge / buckets, 6),
      },
    },
  };
}

export function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
