import type {
  ComputeBudgetInstruction,
  CongestionLevel,
  FeeHistory,
  FeePercentiles,
  FeeTotals,
  FeeWindow,
  NetworkStatus,
  Urgency,
} from '@agent-economy/contracts';

// The gas optimizer's arithmetic, as plain functions over plain data (research/domain.md §2).
// Fee rates are micro-lamports per compute unit (µL/CU); fee totals are lamports, computed in bigint.

export const COMPUTE_BUDGET_PROGRAM = 'ComputeBudget111111111111111111111111111111';
export const MAX_COMPUTE_UNITS = 1_400_000;
export const LAMPORTS_PER_SIGNATURE = 5_000n;
/** What a compute-budget instruction itself consumes when it runs (builtin cost on Agave). */
export const COMPUTE_BUDGET_INSTRUCTION_UNITS = 150;
/** The slot time a cluster aims for. */
export const TARGET_SLOT_MS = 400;
export const FORECAST_WINDOW_MINUTES = 15;
export const HISTORY_DAYS = 7;

export const URGENCY_PERCENTILE: Record<Urgency, 25 | 50 | 75 | 95> = { low: 25, normal: 50, high: 75, urgent: 95 };
/** How long each urgency may wait for a cheaper window. */
export const URGENCY_WAIT_SECONDS: Record<Urgency, number> = {
  urgent: 0,
  high: 5 * 60,
  normal: 30 * 60,
  low: 2 * 60 * 60,
};

const round = (value: number, places: number) => {
  const factor = 10 ** places;
  return Math.round(value * factor) / factor;
};
const clamp01 = (value: number) => (value < 0 ? 0 : value > 1 ? 1 : value);

/** One slot's prioritization fee, as getRecentPrioritizationFees reports it. */
export interface SlotFee {
  slot: number;
  fee: number;
}

/** One 60-second performance sample, as getRecentPerformanceSamples reports it. */
export interface PerformanceSample {
  slot: number;
  numTransactions: number;
  numNonVoteTransactions: number;
  numSlots: number;
  samplePeriodSecs: number;
}

// ---------------------------------------------------------------------------------------------------
// Percentiles

/**
 * Nearest-rank percentile of ascending values: the value at rank ceil(p/100 × n) (1-based); p0 is the
 * minimum. 0 for no values (a node with no recent blocks has seen no fees).
 */
export function nearestRank(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1]!;
}

export function feePercentiles(values: readonly number[]): FeePercentiles {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    p0: nearestRank(sorted, 0),
    p25: nearestRank(sorted, 25),
    p50: nearestRank(sorted, 50),
    p75: nearestRank(sorted, 75),
    p95: nearestRank(sorted, 95),
    p100: nearestRank(sorted, 100),
  };
}

/** The higher of the global and the local fee market, level by level: a transaction must clear both. */
export function combinePercentiles(global: FeePercentiles, local: FeePercentiles | null): FeePercentiles {
  if (!local) return { ...global };
  return {
    p0: Math.max(global.p0, local.p0),
    p25: Math.max(global.p25, local.p25),
    p50: Math.max(global.p50, local.p50),
    p75: Math.max(global.p75, local.p75),
    p95: Math.max(global.p95, local.p95),
    p100: Math.max(global.p100, local.p100),
  };
}

export function priceForUrgency(percentiles: FeePercentiles, urgency: Urgency): number {
  return percentiles[`p${URGENCY_PERCENTILE[urgency]}`];
}

// ---------------------------------------------------------------------------------------------------
// Fees

/** Priority fee in lamports: ceil(limit × price / 1,000,000), charged on the requested limit. */
export function priorityFeeLamports(computeUnitLimit: number, computeUnitPrice: number): bigint {
  return (BigInt(computeUnitLimit) * BigInt(computeUnitPrice) + 999_999n) / 1_000_000n;
}

/** Lamports as SOL, a decimal string with at most 9 places and no trailing zeros. */
export function lamportsToSol(lamports: bigint): string {
  const whole = lamports / 1_000_000_000n;
  const fraction = (lamports % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : whole.toString();
}

export function feeTotals(computeUnitPrice: number, computeUnitLimit: number, signatures: number): FeeTotals {
  const priority = priorityFeeLamports(computeUnitLimit, computeUnitPrice);
  const base = BigInt(signatures) * LAMPORTS_PER_SIGNATURE;
  return {
    computeUnitPrice,
    computeUnitLimit,
    priorityFeeLamports: priority.toString(),
    baseFeeLamports: base.toString(),
    totalFeeLamports: (priority + base).toString(),
    totalFeeSol: lamportsToSol(priority + base),
  };
}

/** SetComputeUnitLimit (discriminator 2, u32 LE) and SetComputeUnitPrice (3, u64 LE), ready to prepend. */
export function computeBudgetInstructions(
  computeUnitLimit: number,
  computeUnitPrice: number,
): ComputeBudgetInstruction[] {
  const limit = Buffer.alloc(5);
  limit.writeUInt8(2, 0);
  limit.writeUInt32LE(computeUnitLimit, 1);
  const price = Buffer.alloc(9);
  price.writeUInt8(3, 0);
  price.writeBigUInt64LE(BigInt(computeUnitPrice), 1);
  return [
    {
      name: 'SetComputeUnitLimit',
      programId: COMPUTE_BUDGET_PROGRAM,
      value: computeUnitLimit,
      dataBase64: limit.toString('base64'),
    },
    {
      name: 'SetComputeUnitPrice',
      programId: COMPUTE_BUDGET_PROGRAM,
      value: computeUnitPrice,
      dataBase64: price.toString('base64'),
    },
  ];
}

/** What a transaction's own compute-budget instructions request (the last of each kind, as the runtime reads them). */
export function requestedComputeBudget(instructions: readonly { programId: string; data: Uint8Array }[]): {
  limit: number | null;
  price: number | null;
} {
  let limit: number | null = null;
  let price: number | null = null;
  for (const { programId, data } of instructions) {
    if (programId !== COMPUTE_BUDGET_PROGRAM) continue;
    const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    if (data[0] === 2 && data.length >= 5) limit = view.getUint32(1, true);
    else if (data[0] === 3 && data.length >= 9) price = Number(view.getBigUint64(1, true));
  }
  return { limit, price };
}

/**
 * The limit to request: 10 % above what the simulation consumed, counting the compute-budget
 * instructions the transaction does not have yet (150 CU each once prepended), at most 1,400,000.
 */
export function recommendedComputeUnitLimit(unitsConsumed: number, missingBudgetInstructions: number): number {
  const units = unitsConsumed + missingBudgetInstructions * COMPUTE_BUDGET_INSTRUCTION_UNITS;
  const withMargin = Math.ceil((units * 11) / 10);
  return Math.min(MAX_COMPUTE_UNITS, Math.max(1, withMargin));
}

// ---------------------------------------------------------------------------------------------------
// Network figures and congestion

/** Rates over the samples, unrounded: TPS = transactions / seconds, slot time = seconds / slots (0 without samples). */
export function sampleRates(samples: readonly PerformanceSample[]) {
  const sum = (pick: (s: PerformanceSample) => number) => samples.reduce((total, s) => total + pick(s), 0);
  const transactions = sum((s) => s.numTransactions);
  const nonVoteTransactions = sum((s) => s.numNonVoteTransactions);
  const slots = sum((s) => s.numSlots);
  const periodSeconds = sum((s) => s.samplePeriodSecs);
  return {
    tps: periodSeconds > 0 ? transactions / periodSeconds : 0,
    nonVoteTps: periodSeconds > 0 ? nonVoteTransactions / periodSeconds : 0,
    slotTimeMs: slots > 0 ? (periodSeconds * 1000) / slots : 0,
    sample: { samples: samples.length, periodSeconds, slots, transactions, nonVoteTransactions },
  };
}

export function networkFigures(
  samples: readonly PerformanceSample[],
): Pick<NetworkStatus, 'tps' | 'nonVoteTps' | 'slotTimeMs' | 'sample'> {
  const rates = sampleRates(samples);
  return {
    tps: round(rates.tps, 2),
    nonVoteTps: round(rates.nonVoteTps, 2),
    slotTimeMs: round(rates.slotTimeMs, 2),
    sample: rates.sample,
  };
}

/** Score boundaries: low below 25, moderate below 50, high below 75, extreme from 75. */
export function congestionLevel(score: number): CongestionLevel {
  if (score < 25) return 'low';
  if (score < 50) return 'moderate';
  if (score < 75) return 'high';
  return 'extreme';
}

export interface CongestionInputs {
  /** Non-vote TPS now, over the newest samples. */
  nonVoteTps: number;
  /** The highest per-sample non-vote TPS seen in the past 7 days (the current samples included). */
  maxNonVoteTps7d: number;
  /** Median per-slot fee now. */
  medianFee: number;
  /** p95 of per-slot fees seen in the past 7 days (the current slots included). */
  p95Fee7d: number;
  /** Mean slot time now, ms (0 when there are no samples). */
  slotTimeMs: number;
}

/**
 * score = 100 × (0.4 × tpsLoad + 0.4 × feePressure + 0.2 × slotTimeDrift), each driver in [0, 1]:
 * tpsLoad = non-vote TPS / its 7-day maximum; feePressure = median fee / 7-day p95 fee;
 * slotTimeDrift = (slot time − 400 ms) / 400 ms, so a slot twice as slow as the target counts fully.
 */
export function congestion(inputs: CongestionInputs): NetworkStatus['congestion'] {
  const tpsLoad = inputs.maxNonVoteTps7d > 0 ? clamp01(inputs.nonVoteTps / inputs.maxNonVoteTps7d) : 0;
  const feePressure = inputs.p95Fee7d > 0 ? clamp01(inputs.medianFee / inputs.p95Fee7d) : 0;
  const slotTimeDrift = inputs.slotTimeMs > 0 ? clamp01((inputs.slotTimeMs - TARGET_SLOT_MS) / TARGET_SLOT_MS) : 0;
  const score = round(100 * (0.4 * tpsLoad + 0.4 * feePressure + 0.2 * slotTimeDrift), 2);
  return {
    level: congestionLevel(score),
    score,
    drivers: { tpsLoad: round(tpsLoad, 4), feePressure: round(feePressure, 4), slotTimeDrift: round(slotTimeDrift, 4) },
  };
}

// ---------------------------------------------------------------------------------------------------
// Forecast: the hour-of-day profile of the past 7 days, in 15-minute windows

/** One recorded reading of the network: when, the median per-slot fee, the congestion score. */
export interface Observation {
  observedAt: Date;
  medianFee: number;
  score: number;
}

/** Which of the day's 96 quarter-hours (UTC) a moment falls in. */
export function quarterOfDay(at: Date): number {
  return at.getUTCHours() * 4 + Math.floor(at.getUTCMinutes() / FORECAST_WINDOW_MINUTES);
}

/** How much history a forecast rests on: the readings, the UTC days they span, the oldest. */
export function forecastBasis(observations: readonly Observation[]): {
  observations: number;
  daysCovered: number;
  oldestAt: string | null;
} {
  const times = observations.map((o) => o.observedAt.getTime());
  return {
    observations: observations.length,
    daysCovered: new Set(observations.map((o) => o.observedAt.toISOString().slice(0, 10))).size,
    oldestAt: times.length ? new Date(Math.min(...times)).toISOString() : null,
  };
}

/**
 * Windows of 15 minutes from `now`. The first is now: the live median and congestion, confidence 1.
 * Each later one reads the observations of the past 7 days made in the same quarter-hour of the day:
 * the median of their median fees, the level of their mean score, and confidence = the share of the
 * 7 days that have such an observation. A quarter-hour never observed repeats now with confidence 0.
 */
export function forecastWindows(
  now: Date,
  windows: number,
  observations: readonly Observation[],
  current: { medianFee: number; score: number },
): FeeWindow[] {
  const byQuarter = new Map<number, Observation[]>();
  for (const observation of observations) {
    const quarter = quarterOfDay(observation.observedAt);
    const list = byQuarter.get(quarter) ?? [];
    list.push(observation);
    byQuarter.set(quarter, list);
  }
  const out: FeeWindow[] = [];
  for (let i = 0; i < windows; i++) {
    const startsAt = new Date(now.getTime() + i * FORECAST_WINDOW_MINUTES * 60_000);
    const endsAt = new Date(startsAt.getTime() + FORECAST_WINDOW_MINUTES * 60_000);
    const seen = i === 0 ? [] : (byQuarter.get(quarterOfDay(startsAt)) ?? []);
    if (seen.length === 0) {
      out.push({
        startsAt: startsAt.toISOString(),
        endsAt: endsAt.toISOString(),
        congestionLevel: congestionLevel(current.score),
        expectedComputeUnitPrice: current.medianFee,
        confidence: i === 0 ? 1 : 0,
      });
      continue;
    }
    const medians = seen.map((o) => o.medianFee).sort((a, b) => a - b);
    const meanScore = seen.reduce((total, o) => total + o.score, 0) / seen.length;
    const days = new Set(seen.map((o) => o.observedAt.toISOString().slice(0, 10))).size;
    out.push({
      startsAt: startsAt.toISOString(),
      endsAt: endsAt.toISOString(),
      congestionLevel: congestionLevel(meanScore),
      expectedComputeUnitPrice: nearestRank(medians, 50),
      confidence: round(Math.min(1, days / HISTORY_DAYS), 4),
    });
  }
  return out;
}

export function windowsFor(urgency: Urgency): number {
  return Math.floor(URGENCY_WAIT_SECONDS[urgency] / (FORECAST_WINDOW_MINUTES * 60)) + 1;
}

/**
 * The cheapest window the urgency allows (those starting within its wait), the earliest among equals.
 * The saving compares the total fee (base + priority at the caller's limit) at the window's expected
 * median price against the same at the median now.
 */
export function bestWindow(
  windows: readonly FeeWindow[],
  urgency: Urgency,
  computeUnitLimit: number,
  signatures: number,
): FeeWindow & { waitSeconds: number; savingsPercent: number; reason: string } {
  const windowSeconds = FORECAST_WINDOW_MINUTES * 60;
  const allowed = windows.filter((_, i) => i * windowSeconds <= URGENCY_WAIT_SECONDS[urgency]);
  let best = 0;
  allowed.forEach((w, i) => {
    if (w.expectedComputeUnitPrice < allowed[best]!.expectedComputeUnitPrice) best = i;
  });
  const chosen = allowed[best]!;
  const now = allowed[0]!;
  const totalAt = (price: number) => Number(BigInt(feeTotals(price, computeUnitLimit, signatures).totalFeeLamports));
  const savingsPercent =
    best === 0
      ? 0
      : round(
          (100 * (totalAt(now.expectedComputeUnitPrice) - totalAt(chosen.expectedComputeUnitPrice))) /
            totalAt(now.expectedComputeUnitPrice),
          2,
        );
  const horizon = URGENCY_WAIT_SECONDS[urgency] / 60;
  const reason =
    urgency === 'urgent'
      ? 'Urgent: send now at the p95 fee.'
      : best === 0
        ? `No window within ${horizon} minutes is expected to be cheaper than now (median ${now.expectedComputeUnitPrice} µL/CU): send now.`
        : `The window from ${chosen.startsAt.slice(11, 16)} UTC has been cheaper at this time of day (median ${chosen.expectedComputeUnitPrice} µL/CU against ${now.expectedComputeUnitPrice} now, confidence ${chosen.confidence}): waiting saves ${savingsPercent} % of the fee.`;
  return { ...chosen, waitSeconds: best * windowSeconds, savingsPercent, reason };
}

// ---------------------------------------------------------------------------------------------------
// Fee history

/** Least-squares slope of fee against slot (µL/CU per slot); 0 with fewer than two distinct slots. */
export function leastSquaresSlope(points: readonly SlotFee[]): number {
  const n = points.length;
  if (n < 2) return 0;
  // Slots are large numbers: centre them first so the products stay exact in a double.
  const meanSlot = points.reduce((t, p) => t + p.slot, 0) / n;
  const meanFee = points.reduce((t, p) => t + p.fee, 0) / n;
  let covariance = 0;
  let variance = 0;
  for (const p of points) {
    covariance += (p.slot - meanSlot) * (p.fee - meanFee);
    variance += (p.slot - meanSlot) ** 2;
  }
  return variance > 0 ? covariance / variance : 0;
}

/**
 * The newer half's median against the older half's, percent (the middle block is left out when the
 * count is odd). From a zero median: +100 when fees appeared, 0 when both are zero.
 */
export function changePercent(points: readonly SlotFee[]): number {
  const half = Math.floor(points.length / 2);
  if (half === 0) return 0;
  const median = (list: readonly SlotFee[]) =>
    nearestRank(
      list.map((p) => p.fee).sort((a, b) => a - b),
      50,
    );
  const older = median(points.slice(0, half));
  const newer = median(points.slice(points.length - half));
  if (older === 0) return newer > 0 ? 100 : 0;
  return round(((newer - older) / older) * 100, 2);
}

export function feeHistory(
  perBlock: readonly SlotFee[],
  blocks: number,
  accounts: readonly string[],
  currentSlot: number,
): Omit<FeeHistory, 'source'> {
  const fees = perBlock.map((p) => p.fee);
  const change = changePercent(perBlock);
  return {
    blocks,
    returned: perBlock.length,
    fromSlot: perBlock[0]?.slot ?? currentSlot,
    toSlot: perBlock[perBlock.length - 1]?.slot ?? currentSlot,
    accounts: [...accounts],
    percentiles: feePercentiles(fees),
    mean: fees.length > 0 ? round(fees.reduce((t, f) => t + f, 0) / fees.length, 2) : 0,
    emptySlotShare: fees.length > 0 ? round(fees.filter((f) => f === 0).length / fees.length, 4) : 0,
    trend: {
      direction: change > 10 ? 'rising' : change < -10 ? 'falling' : 'flat',
      slopePerSlot: round(leastSquaresSlope(perBlock), 6),
      changePercent: change,
    },
    perBlock: perBlock.map((p) => ({ slot: p.slot, prioritizationFee: p.fee })),
  };
}
