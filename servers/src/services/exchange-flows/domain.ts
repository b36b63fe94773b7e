import type { DailyFlow, FlowDirection, FlowSignalFactor, FlowSignalValue } from '@agent-economy/contracts';
import { fromScaled, round, toScaled } from '../../upstream/decimal';

// Pure flow arithmetic (research/domain.md §6). BTC amounts are integer satoshis (bigint) and go out as exact
// decimal strings with at most 8 decimals; USD values are satoshis × the day's price, exact, never through a float.

export const SATS_PER_BTC = 100_000_000n;
const MS_PER_DAY = 86_400_000;

/** One UTC day of flows: onto and off exchanges, and what they held at the end of it (null when unknown). */
export interface FlowDay {
  date: string;
  inflowSats: bigint;
  outflowSats: bigint;
  reserveSats: bigint | null;
  /** The day's BTC price in USD, a decimal string. */
  priceUsd: string;
}

/** Satoshis as a BTC decimal string, sign kept, trailing zeros trimmed ("-1.5", "0.00000001"). */
export function btcText(sats: bigint): string {
  const abs = sats < 0n ? -sats : sats;
  const fraction = (abs % SATS_PER_BTC).toString().padStart(8, '0').replace(/0+$/, '');
  const text = fraction ? `${abs / SATS_PER_BTC}.${fraction}` : (abs / SATS_PER_BTC).toString();
  return sats < 0n && text !== '0' ? `-${text}` : text;
}

/**
 * A BTC decimal (string or number as a provider sends it) as satoshis, rounded half up at the 8th decimal; null if not
 * a decimal.
 */
export function satsOf(value: string | number): bigint | null {
  const text = typeof value === 'number' ? value.toString() : value.trim();
  const negative = text.startsWith('-');
  const scaled = toScaled(negative ? text.slice(1) : text);
  if (scaled === null) return null;
  const sats = (scaled + 5_000_000_000n) / 10_000_000_000n;
  return negative ? -sats : sats;
}

/** `sats` valued at a USD price (decimal string), exact: a USD decimal string, sign kept. */
export function usdText(sats: bigint, priceUsd: string): string {
  const price = toScaled(priceUsd) ?? 0n;
  const abs = sats < 0n ? -sats : sats;
  const text = fromScaled((abs * price) / SATS_PER_BTC);
  return sats < 0n && text !== '0' ? `-${text}` : text;
}

/** A USD figure a provider sent as a number, as a decimal string without exponent (negative kept). */
export function decimalText(value: number, maxDecimals = 12): string {
  if (!Number.isFinite(value)) throw new Error(`not a finite number: ${value}`);
  let text = Math.abs(value).toString();
  if (/e/i.test(text))
    text = Math.abs(value)
      .toFixed(maxDecimals)
      .replace(/\.?0+$/, '');
  return value < 0 && Number(text) !== 0 ? `-${text}` : text;
}

/**
 * Net direction: inflow when netflow > 1 % of the gross flow (inflow + outflow), outflow when < −1 %, else balanced.
 */
export function directionOf(inflowSats: bigint, outflowSats: bigint): FlowDirection {
  const net = inflowSats - outflowSats;
  const gross = inflowSats + outflowSats;
  // net > gross / 100, in integers: 100·net > gross
  if (100n * net > gross) return 'inflow';
  if (100n * net < -gross) return 'outflow';
  return 'balanced';
}

/** Population standard deviation; 0 for fewer than two values. */
export function populationStdDev(values: readonly number[]): number {
  if (values.length < 2) return 0;
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  return Math.sqrt(values.reduce((a, v) => a + (v - mean) ** 2, 0) / values.length);
}

/**
 * The z-score of the period's mean daily netflow against the daily netflows of the history before it:
 * (mean(period) − mean(history)) / σ(history), σ the population standard deviation. Null with fewer than 2 days
 * of history or no spread in it.
 */
export function netflowZScore(period: readonly number[], history: readonly number[]): number | null {
  if (period.length === 0 || history.length < 2) return null;
  const sigma = populationStdDev(history);
  if (!(sigma > 0)) return null;
  const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  return round((mean(period) - mean(history)) / sigma, 6);
}

/** Sentiment: outflow with z ≤ −1 bullish (accumulation), inflow with z ≥ 1 bearish (sell pressure), else neutral. */
export function sentimentOf(direction: FlowDirection, z: number | null): FlowSignalValue {
  if (z === null) return 'neutral';
  if (direction === 'outflow' && z <= -1) return 'bullish';
  if (direction === 'inflow' && z >= 1) return 'bearish';
  return 'neutral';
}

export const addDays = (date: string, days: number) =>
  new Date(Date.parse(`${date}T00:00:00.000Z`) + days * MS_PER_DAY).toISOString().slice(0, 10);
/** The latest full UTC day at an instant: the day before the instant's day. */
export const latestFullDay = (nowMs: number) =>
  new Date(Math.floor(nowMs / MS_PER_DAY) * MS_PER_DAY - MS_PER_DAY).toISOString().slice(0, 10);

export function dailyFlow(day: FlowDay): DailyFlow {
  const net = day.inflowSats - day.outflowSats;
  return {
    date: day.date,
    inflowBtc: btcText(day.inflowSats),
    outflowBtc: btcText(day.outflowSats),
    netflowBtc: btcText(net),
    inflowUsd: usdText(day.inflowSats, day.priceUsd),
    outflowUsd: usdText(day.outflowSats, day.priceUsd),
    netflowUsd: usdText(net, day.priceUsd),
    reserveBtc: day.reserveSats === null ? null : btcText(day.reserveSats),
  };
}

/** Sums of a period's days: BTC in satoshis, USD each day at its own price (exact, scaled by 10^18). */
export function periodTotals(days: readonly FlowDay[]) {
  let inflow = 0n;
  let outflow = 0n;
  let inflowUsd = 0n;
  let outflowUsd = 0n;
  for (const d of days) {
    const price = toScaled(d.priceUsd) ?? 0n;
    inflow += d.inflowSats;
    outflow += d.outflowSats;
    inflowUsd += (d.inflowSats * price) / SATS_PER_BTC;
    outflowUsd += (d.outflowSats * price) / SATS_PER_BTC;
  }
  const signed = (x: bigint) => (x < 0n ? `-${fromScaled(-x)}` : fromScaled(x));
  return {
    inflowSats: inflow,
    outflowSats: outflow,
    text: {
      inflowBtc: btcText(inflow),
      outflowBtc: btcText(outflow),
      netflowBtc: btcText(inflow - outflow),
      inflowUsd: fromScaled(inflowUsd),
      outflowUsd: fromScaled(outflowUsd),
      netflowUsd: signed(inflowUsd - outflowUsd),
    },
  };
}

/**
 * Reserve change over a period: its last reserve against the reserve before it (the day before, else its first day).
 */
export function reserveChange(
  period: readonly FlowDay[],
  before: FlowDay | undefined,
): { sats: bigint; percent: number } | null {
  const last = period[period.length - 1]?.reserveSats ?? null;
  const base = before?.reserveSats ?? period[0]?.reserveSats ?? null;
  if (last === null || base === null || base <= 0n) return null;
  const sats = last - base;
  return { sats, percent: round((Number(sats) / Number(base)) * 100, 6) };
}

/** `part` / `whole` in percent (0 for an empty whole), from exact integers. */
export function shareOf(part: bigint, whole: bigint): number {
  if (whole <= 0n) return 0;
  return Number((part * 100_000_000n) / whole) / 1_000_000;
}

// ---- the signal ------------------------------------------------------------------------------------------

export interface SignalInputs {
  /** Period netflow as a percent of its gross flow (negative: outflow). */
  netflowPercent: number;
  netflowZScore: number | null;
  /** Exchange reserve change over the period, percent; null when the source has no reserve. */
  reserveChangePercent: number | null;
  /** Price change from the period's first to its last day, percent. */
  priceChangePercent: number;
  /** The largest venue's share of the period's gross flow, percent; null without per-exchange data. */
  topVenueSharePercent: number | null;
}

/** Base weights (sum 1); a factor without data gets weight 0 and the others are scaled back up to sum 1. */
export const FACTOR_WEIGHTS: Record<FlowSignalFactor['name'], number> = {
  netflow: 0.3,
  netflow_zscore: 0.25,
  reserve_trend: 0.2,
  price_momentum: 0.15,
  exchange_concentration: 0.1,
};

const clamp = (x: number) => Math.max(-1, Math.min(1, x));
const readingOf = (graded: number, threshold: number): FlowSignalValue =>
  graded >= threshold ? 'bullish' : graded <= -threshold ? 'bearish' : 'neutral';

export interface ScoredFactor extends FlowSignalFactor {
  /** −1 (bearish) to 1 (bullish): the factor's value on a common scale. */
  graded: number;
  available: boolean;
}

/**
 * Each factor graded from −1 (bearish) to +1 (bullish) and read against its threshold:
 * - netflow: −net/gross ÷ 10 % (saturates at 10 %); reads outside ±1 % (the direction rule);
 * - netflow_zscore: −z ÷ 2; reads at |z| ≥ 1 (the sentiment rule);
 * - reserve_trend: −reserve change ÷ 2 %; reads at a change of 0.5 % or more;
 * - price_momentum: price change ÷ 10 %; reads at a change of 2 % or more;
 * - exchange_concentration: the netflow grade × (1 − the top venue's share): a broad-based flow confirms the
 *   netflow, one venue's move (often an internal wallet reshuffle) does not; reads at 0.1.
 */
export function signalFactors(inputs: SignalInputs): ScoredFactor[] {
  const netflowGraded = clamp(-inputs.netflowPercent / 10);
  const rows: { name: FlowSignalFactor['name']; value: number | null; graded: number; threshold: number }[] = [
    { name: 'netflow', value: inputs.netflowPercent, graded: netflowGraded, threshold: 0.1 },
    {
      name: 'netflow_zscore',
      value: inputs.netflowZScore,
      graded: clamp(-(inputs.netflowZScore ?? 0) / 2),
      threshold: 0.5,
    },
    {
      name: 'reserve_trend',
      value: inputs.reserveChangePercent,
      graded: clamp(-(inputs.reserveChangePercent ?? 0) / 2),
      threshold: 0.25,
    },
    {
      name: 'price_momentum',
      value: inputs.priceChangePercent,
      graded: clamp(inputs.priceChangePercent / 10),
      threshold: 0.2,
    },
    {
      name: 'exchange_concentration',
      value: inputs.topVenueSharePercent,
      graded: inputs.topVenueSharePercent === null ? 0 : netflowGraded * (1 - inputs.topVenueSharePercent / 100),
      threshold: 0.1,
    },
  ];
  const available = rows.filter((r) => r.value !== null);
  const total = available.reduce((s, r) => s + FACTOR_WEIGHTS[r.name], 0);
  let assigned = 0;
  return rows.map((r) => {
    const has = r.value !== null;
    let weight = 0;
    if (has) {
      // The last available factor takes the remainder, so the weights sum to exactly 1.
      weight =
        r === available[available.length - 1] ? round(1 - assigned, 6) : round(FACTOR_WEIGHTS[r.name] / total, 6);
      assigned += weight;
    }
    return {
      name: r.name,
      value: round(r.value ?? 0, 6),
      reading: has ? readingOf(r.graded, r.threshold) : 'neutral',
      weight,
      graded: round(r.graded, 6),
      available: has,
    };
  });
}

/**
 * The signal: S = Σ weight × graded; bullish when S ≥ 0.15, bearish when S ≤ −0.15, else neutral. Confidence:
 * |S| scaled so that 0.15 is 0.5 and 1 is 1 for a directional signal; for neutral, the weight of the factors that
 * read neutral (how consistently they agree on no direction) scaled by how close S is to 0.
 */
export function combineSignal(factors: readonly ScoredFactor[]): {
  signal: FlowSignalValue;
  confidence: number;
  score: number;
} {
  const score = round(
    factors.reduce((s, f) => s + f.weight * f.graded, 0),
    6,
  );
  if (Math.abs(score) >= 0.15) {
    const confidence = 0.5 + (0.5 * (Math.min(1, Math.abs(score)) - 0.15)) / 0.85;
    return { signal: score > 0 ? 'bullish' : 'bearish', confidence: round(confidence, 4), score };
  }
  const neutralWeight = factors.filter((f) => f.reading === 'neutral').reduce((s, f) => s + f.weight, 0);
  return { signal: 'neutral', confidence: round(Math.min(1, neutralWeight) * (1 - Math.abs(score) / 0.15), 4), score };
}

const LABELS: Record<FlowSignalFactor['name'], string> = {
  netflow: 'net flow',
  netflow_zscore: 'netflow z-score',
  reserve_trend: 'exchange reserve trend',
  price_momentum: 'price momentum',
  exchange_concentration: 'breadth of the flows across exchanges',
};

function describeFactor(f: ScoredFactor): string {
  const v = f.value;
  const sign = (x: number, digits: number) => `${x > 0 ? '+' : ''}${x.toFixed(digits)}`;
  switch (f.name) {
    case 'netflow':
      return `net flow ${sign(v, 2)} % of gross (${v > 1 ? 'coins arriving on exchanges' : v < -1 ? 'coins leaving exchanges' : 'balanced'})`;
    case 'netflow_zscore':
      return `netflow z-score ${sign(v, 2)} against the prior 90 days`;
    case 'reserve_trend':
      return `exchange reserves ${sign(v, 3)} % over the period`;
    case 'price_momentum':
      return `price ${sign(v, 2)} % over the period`;
    case 'exchange_concentration':
      return `the busiest exchange carried ${v.toFixed(1)} % of the gross flow`;
  }
}

/** The built-in reasoning: every factor with its reading and weight, then what they mean together. */
export function builtinReasoning(input: {
  lookbackDays: number;
  signal: FlowSignalValue;
  confidence: number;
  score: number;
  factors: readonly ScoredFactor[];
}): string {
  const used = input.factors.filter((f) => f.available);
  const missing = input.factors.filter((f) => !f.available).map((f) => LABELS[f.name]);
  const parts = used.map((f) => `${describeFactor(f)}: ${f.reading} (weight ${f.weight.toFixed(2)})`);
  const verdict =
    input.signal === 'bullish'
      ? 'On balance coins are leaving exchanges for custody, which reads as accumulation and a shrinking sell-side supply.'
      : input.signal === 'bearish'
        ? 'On balance coins are moving onto exchanges, which reads as distribution and potential sell pressure.'
        : 'The factors do not agree on a direction strongly enough to call one.';
  return (
    `Over the last ${input.lookbackDays} day${input.lookbackDays === 1 ? '' : 's'}: ${parts.join('; ')}. ` +
    `Weighted score ${input.score >= 0 ? '+' : ''}${input.score.toFixed(3)} (bullish from +0.15, bearish from −0.15): ${input.signal}, confidence ${input.confidence.toFixed(2)}. ` +
    verdict +
    (missing.length ? ` Not weighed (no data from this source): ${missing.join(', ')}.` : '')
  );
}
