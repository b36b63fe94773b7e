import type {
  BtcCyclePhase,
  BtcDailyMetrics,
  BtcMetricSignal,
  BtcMetricStats,
  BtcRangeSummary,
  BtcUsdStats,
  BtcZone,
} from '@agent-economy/contracts';

// Bitcoin on-chain valuation metrics as plain functions (research/domain.md §1). Ratios are float64; USD
// amounts leave as decimal strings.

const DAY_MS = 86_400_000;

/** MVRV = market cap / realized cap. */
export function mvrv(marketCapUsd: number, realizedCapUsd: number): number {
  if (!(realizedCapUsd > 0)) throw new RangeError('realized cap must be positive');
  return marketCapUsd / realizedCapUsd;
}

/** NUPL = (MC − RC) / MC, the same as 1 − 1/MVRV. */
export function nupl(marketCapUsd: number, realizedCapUsd: number): number {
  if (!(marketCapUsd > 0)) throw new RangeError('market cap must be positive');
  return (marketCapUsd - realizedCapUsd) / marketCapUsd;
}

/** Realized cap of a UTXO set: Σ value × price when the output was created (its cost basis). */
export function realizedCap(utxos: readonly { valueBtc: number; createdPriceUsd: number }[]): number {
  return utxos.reduce((sum, u) => sum + u.valueBtc * u.createdPriceUsd, 0);
}

/** Population standard deviation. */
export function populationStdDev(values: readonly number[]): number {
  if (values.length === 0) throw new RangeError('no values');
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  return Math.sqrt(values.reduce((a, v) => a + (v - mean) ** 2, 0) / values.length);
}

/**
 * MVRV Z-Score of each day: (MC − RC) / σ(MC), σ the population standard deviation of the market cap from the
 * first day of the series through that day (expanding window, Glassnode's "cumulatively from the first data
 * point"). null on a day whose window has no spread (the first day): the ratio is undefined there.
 */
export function mvrvZScores(marketCaps: readonly number[], realizedCaps: readonly number[]): (number | null)[] {
  // Welford's running mean and sum of squared deviations: one pass, numerically stable.
  let mean = 0;
  let m2 = 0;
  return marketCaps.map((mc, i) => {
    const n = i + 1;
    const delta = mc - mean;
    mean += delta / n;
    m2 += delta * (mc - mean);
    const sigma = Math.sqrt(m2 / n);
    return sigma > 0 ? (mc - realizedCaps[i]!) / sigma : null;
  });
}

/** One spent output: how much, what it was worth when created and when spent, and how long it lived. */
export interface SpentOutput {
  valueBtc: number;
  createdPriceUsd: number;
  spentPriceUsd: number;
  lifespanSeconds: number;
}

/** SOPR = Σ value × spend price / Σ value × creation price, over the outputs spent in the window. */
export function sopr(outputs: readonly SpentOutput[]): number | null {
  const spent = outputs.reduce((s, o) => s + o.valueBtc * o.spentPriceUsd, 0);
  const created = outputs.reduce((s, o) => s + o.valueBtc * o.createdPriceUsd, 0);
  return created > 0 ? spent / created : null;
}

/** aSOPR: SOPR without the outputs that lived less than 1 hour (change and self-shuffling noise). */
export function adjustedSopr(outputs: readonly SpentOutput[]): number | null {
  return sopr(outputs.filter((o) => o.lifespanSeconds >= 3600));
}

/** Ratio of two aggregates (Σ value at spend / Σ value at creation); null when nothing was spent. */
export function ratioOf(spentValueUsd: number, createdValueUsd: number): number | null {
  return createdValueUsd > 0 ? spentValueUsd / createdValueUsd : null;
}

// ---- dates -------------------------------------------------------------------------------------------------

export const dayOf = (date: Date): string => date.toISOString().slice(0, 10);
export const addDays = (day: string, days: number): string =>
  dayOf(new Date(Date.parse(`${day}T00:00:00.000Z`) + days * DAY_MS));
export const daysBetween = (from: string, to: string): number =>
  Math.round((Date.parse(to) - Date.parse(from)) / DAY_MS);

// ---- the daily series ---------------------------------------------------------------------------------------

/** One day of market data in the form every source delivers it. */
export interface MarketDay {
  date: string;
  /** The upstream's own decimal text where it has one (kept verbatim), else formatted from `priceUsd`. */
  priceText?: string;
  priceUsd: number;
  supplyBtc: number;
  marketCapUsd: number;
  realizedCapUsd: number;
}

/** SOPR and aSOPR of a day, where a source has them. */
export interface SpentDay {
  sopr: number | null;
  asopr: number | null;
}

const USD = /^(0|[1-9]\d*)(\.\d+)?$/;

/** A non-negative USD amount as a decimal string with cents. */
export function usd(value: number, decimals = 2): string {
  if (!Number.isFinite(value) || value < 0) throw new RangeError(`not a USD amount: ${value}`);
  return value.toFixed(decimals);
}

/**
 * The metric set of every day of a market series (oldest first, the series starting at the first day of data)
 * that has one: the first day is left out, since its Z-Score window has no spread.
 */
export function dailyMetrics(market: readonly MarketDay[], spent: ReadonlyMap<string, SpentDay>): BtcDailyMetrics[] {
  const z = mvrvZScores(
    market.map((d) => d.marketCapUsd),
    market.map((d) => d.realizedCapUsd),
  );
  const days: BtcDailyMetrics[] = [];
  market.forEach((d, i) => {
    const zScore = z[i];
    if (zScore === null || zScore === undefined) return;
    const s = spent.get(d.date);
    days.push({
      date: d.date,
      priceUsd: d.priceText && USD.test(d.priceText) ? d.priceText : usd(d.priceUsd),
      marketCapUsd: usd(d.marketCapUsd),
      realizedCapUsd: usd(d.realizedCapUsd),
      realizedPriceUsd: usd(d.realizedCapUsd / d.supplyBtc),
      mvrv: mvrv(d.marketCapUsd, d.realizedCapUsd),
      mvrvZScore: zScore,
      sopr: s?.sopr ?? null,
      asopr: s?.asopr ?? null,
      nupl: nupl(d.marketCapUsd, d.realizedCapUsd),
    });
  });
  return days;
}

// ---- summary statistics (second deployment) -----------------------------------------------------------------

function median(sorted: readonly number[]): number {
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** count, min, max (first day reaching them), mean, median, population σ, first, last, change; null for no values. */
export function statsOf(points: readonly { date: string; value: number }[]): BtcMetricStats | null {
  if (points.length === 0) return null;
  const values = points.map((p) => p.value);
  let min = points[0]!;
  let max = points[0]!;
  for (const p of points) {
    if (p.value < min.value) min = p;
    if (p.value > max.value) max = p;
  }
  const first = values[0]!;
  const last = values[values.length - 1]!;
  return {
    count: values.length,
    min: min.value,
    minDate: min.date,
    max: max.value,
    maxDate: max.date,
    mean: values.reduce((a, b) => a + b, 0) / values.length,
    median: median([...values].sort((a, b) => a - b)),
    stdDev: populationStdDev(values),
    first,
    last,
    change: last - first,
    changePercent: first === 0 ? null : ((last - first) / Math.abs(first)) * 100,
  };
}

/** The same statistics of the USD price, as decimal strings with cents. */
export function usdStatsOf(points: readonly { date: string; value: number }[]): BtcUsdStats | null {
  const s = statsOf(points);
  if (!s) return null;
  const signed = (v: number) => (v < 0 ? `-${usd(-v)}` : usd(v)).replace(/^-0\.00$/, '0.00');
  return {
    ...s,
    min: usd(s.min),
    max: usd(s.max),
    mean: usd(s.mean),
    median: usd(s.median),
    stdDev: usd(s.stdDev),
    first: usd(s.first),
    last: usd(s.last),
    change: signed(s.change),
  };
}

/** Summary statistics of a non-empty range's days (the values as the days carry them). */
export function rangeSummary(days: readonly BtcDailyMetrics[]): BtcRangeSummary {
  if (days.length === 0) throw new RangeError('no days');
  const series = (pick: (d: BtcDailyMetrics) => number | null) =>
    days.flatMap((d) => {
      const value = pick(d);
      return value === null ? [] : [{ date: d.date, value }];
    });
  return {
    days: days.length,
    priceUsd: usdStatsOf(series((d) => Number(d.priceUsd)))!,
    mvrv: statsOf(series((d) => d.mvrv))!,
    mvrvZScore: statsOf(series((d) => d.mvrvZScore))!,
    sopr: statsOf(series((d) => d.sopr)),
    asopr: statsOf(series((d) => d.asopr)),
    nupl: statsOf(series((d) => d.nupl))!,
  };
}

// ---- interpretation bands (research/domain.md §1.3) ---------------------------------------------------------

export function mvrvZone(value: number): BtcZone {
  return value < 1 ? 'undervalued' : value < 3.5 ? 'neutral' : 'overvalued';
}
export function zScoreZone(value: number): BtcZone {
  return value < 0 ? 'undervalued' : value < 7 ? 'neutral' : 'overvalued';
}
export function nuplZone(value: number): BtcZone {
  return value < 0
    ? 'capitulation'
    : value < 0.25
      ? 'hope_fear'
      : value < 0.5
        ? 'optimism_anxiety'
        : value < 0.75
          ? 'belief_denial'
          : 'euphoria_greed';
}
export function soprZone(value: number): BtcZone {
  return value < 0.99 ? 'loss_realization' : value <= 1.01 ? 'break_even' : 'profit_taking';
}

const READINGS: Record<BtcZone, string> = {
  undervalued: 'historically a cycle-bottom zone: the market valued below (or near) what holders paid',
  neutral: 'inside the historical mid-cycle band',
  overvalued: 'historically a cycle-top zone: the market valued far above what holders paid',
  capitulation: 'the average holder is at a loss; historically near cycle bottoms',
  hope_fear: 'small unrealized profit; typical of early recovery or late bear markets',
  optimism_anxiety: 'moderate unrealized profit; typical of early bull markets',
  belief_denial: 'large unrealized profit; typical of mid-to-late bull markets',
  euphoria_greed: 'very large unrealized profit; historically near cycle tops',
  loss_realization: 'coins moved at a loss on aggregate; sustained readings mark capitulation',
  break_even: 'coins moved near their cost basis; 1.0 acts as support in bull and resistance in bear regimes',
  profit_taking: 'coins moved at a profit on aggregate',
};

/** The zone of each metric the day has a value for, with what the zone has meant historically. */
export function signalsOf(day: BtcDailyMetrics): BtcMetricSignal[] {
  const signals: BtcMetricSignal[] = [];
  const add = (metric: BtcMetricSignal['metric'], value: number | null, zone: (v: number) => BtcZone) => {
    if (value === null) return;
    const z = zone(value);
    signals.push({ metric, value, zone: z, reading: READINGS[z] });
  };
  add('mvrv', day.mvrv, mvrvZone);
  add('mvrvZScore', day.mvrvZScore, zScoreZone);
  add('sopr', day.sopr, soprZone);
  add('asopr', day.asopr, soprZone);
  add('nupl', day.nupl, nuplZone);
  return signals;
}

/** The cycle phase: the NUPL band, raised to euphoria when Z ≥ 7, lowered to capitulation when MVRV < 1. */
export function cyclePhase(day: Pick<BtcDailyMetrics, 'mvrv' | 'mvrvZScore' | 'nupl'>): BtcCyclePhase {
  if (day.mvrv < 1) return 'capitulation';
  if (day.mvrvZScore >= 7) return 'euphoria';
  const n = day.nupl;
  return n < 0 ? 'capitulation' : n < 0.25 ? 'accumulation' : n < 0.5 ? 'optimism' : n < 0.75 ? 'belief' : 'euphoria';
}

const PHASE_TEXT: Record<BtcCyclePhase, string> = {
  capitulation: 'capitulation: the market trades below its aggregate cost basis',
  accumulation: 'accumulation: holders sit on small profits, as in early recoveries',
  optimism: 'optimism: holders sit on moderate profits, as in early bull markets',
  belief: 'belief: holders sit on large profits, as in mid-to-late bull markets',
  euphoria: 'euphoria: valuations stand where past cycle tops formed',
};

const round = (v: number, digits: number) => Number(v.toFixed(digits));

/** The built-in written reading of a day's phase and signals. */
export function cycleSummary(date: string, phase: BtcCyclePhase, signals: readonly BtcMetricSignal[]): string {
  const parts = signals.map((s) => `${s.metric} ${round(s.value, 3)} (${s.zone.replace('_', '/')})`);
  const spend = signals.find((s) => s.metric === 'asopr') ?? signals.find((s) => s.metric === 'sopr');
  const flow = spend
    ? spend.zone === 'profit_taking'
      ? ' Coins spent that day moved at a profit.'
      : spend.zone === 'loss_realization'
        ? ' Coins spent that day moved at a loss.'
        : ' Coins spent that day moved near their cost basis.'
    : '';
  return `On ${date} the metrics point to ${PHASE_TEXT[phase]}. ${parts.join(', ')}.${flow}`;
}
