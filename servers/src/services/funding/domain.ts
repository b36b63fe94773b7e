import { createHash } from 'node:crypto';
import type {
  FundingAssetView,
  FundingContractRow,
  FundingExchange,
  FundingExchangeStats,
  FundingOverview,
  FundingSentimentLabel,
  FundingSortKey,
  SqueezeCandidate,
  SqueezeComponents,
  SqueezeDirection,
} from '@agent-economy/contracts';
import { z } from 'zod';
import type { AiTask } from '../../ai';
import { HttpError } from '../../runtime/errors';
import { ALL_VENUES, type PerpQuote, type PerpSnapshot } from '../../upstream/market';

// Pure functions over plain data: the formulas of research/domain.md §3 and the contract's descriptions.

/** What "very positive" and "very negative" funding mean (contract: |APR| ≥ 30 % or |z| ≥ 2). */
export const SQUEEZE_THRESHOLDS = { annualizedFundingRate: 0.3, fundingZScore: 2 } as const;
/** The interest baseline of funding per 8 h (0.01 %): sentiment reads 0 there. */
export const BASELINE_8H = 0.0001;

/** A rate per the venue's interval, normalised to 8 hours so venues compare. */
export const per8h = (rate: number, intervalHours: number) => (rate / intervalHours) * 8;
/** Simple APR: rate × (24 / intervalHours) × 365. */
export const annualize = (rate: number, intervalHours: number) => rate * (24 / intervalHours) * 365;
/** Perpetual basis (mark − index) / index; null without an index. */
export const basisOf = (mark: number, index: number | null) =>
  index === null || index <= 0 ? null : (mark - index) / index;

const clamp = (lo: number, hi: number, x: number) => Math.min(hi, Math.max(lo, x));
const round = (x: number, digits: number) => Math.round(x * 10 ** digits) / 10 ** digits;
/** Rates keep 12 significant digits: enough for any venue's precision, without float noise in the last places. */
const rate = (x: number) => Number(x.toPrecision(12));

/** Weighted mean; null when the weights sum to zero. */
export function weightedMean(values: readonly number[], weights: readonly number[]): number | null {
  let num = 0;
  let den = 0;
  values.forEach((v, i) => {
    num += v * weights[i]!;
    den += weights[i]!;
  });
  return den > 0 ? num / den : null;
}

/** (x − mean) / population standard deviation of the history; null with under 2 points or no variation. */
export function zScore(current: number, history: readonly number[]): number | null {
  if (history.length < 2) return null;
  const mean = history.reduce((a, b) => a + b, 0) / history.length;
  const variance = history.reduce((a, b) => a + (b - mean) ** 2, 0) / history.length;
  const sd = Math.sqrt(variance);
  return sd > 0 ? (current - mean) / sd : null;
}

export interface SqueezeInputs {
  fundingRate8h: number;
  fundingZScore: number | null;
  openInterestChange24hPercent: number | null;
  premium: number | null;
  longShortRatio: number | null;
}

export interface SqueezeAssessment {
  score: number;
  direction: SqueezeDirection | 'none';
  components: SqueezeComponents;
}

/**
 * The squeeze risk score (0 to 100) and its components, as the contract states them:
 * funding 40 × min(1, |z| / 3) (or 40 × min(1, |APR| / 1) without history), open-interest build-up
 * 25 × min(1, max(0, ΔOI %) / 20), premium 15 × min(1, |premium| / 0.005), and long/short extremeness on the
 * crowded side: 20 × clamp((L/S − 1) / 1) for crowded longs (L/S 2 scores full), 20 × clamp((1 − L/S) / 0.3) for
 * crowded shorts (L/S 0.7 scores full). Direction: long_squeeze when funding is positive and very (APR ≥ 30 % or
 * z ≥ 2), short_squeeze when negative and very (APR ≤ −30 % or z ≤ −2), else none.
 */
export function assessSqueeze(input: SqueezeInputs): SqueezeAssessment {
  const apr = input.fundingRate8h * 3 * 365;
  const z = input.fundingZScore;
  const { annualizedFundingRate: aprT, fundingZScore: zT } = SQUEEZE_THRESHOLDS;
  const direction: SqueezeDirection | 'none' =
    input.fundingRate8h > 0 && (apr >= aprT || (z !== null && z >= zT))
      ? 'long_squeeze'
      : input.fundingRate8h < 0 && (apr <= -aprT || (z !== null && z <= -zT))
        ? 'short_squeeze'
        : 'none';
  // The crowded side follows the sign of funding even below the thresholds (positive: longs pay, so longs crowd).
  const longsCrowded = input.fundingRate8h >= 0;
  const ls = input.longShortRatio;
  const components: SqueezeComponents = {
    funding: round(z !== null ? 40 * Math.min(1, Math.abs(z) / 3) : 40 * Math.min(1, Math.abs(apr) / 1), 2),
    openInterest: round(
      input.openInterestChange24hPercent === null
        ? 0
        : 25 * Math.min(1, Math.max(0, input.openInterestChange24hPercent) / 20),
      2,
    ),
    premium: round(input.premium === null ? 0 : 15 * Math.min(1, Math.abs(input.premium) / 0.005), 2),
    longShort: round(
      ls === null ? 0 : longsCrowded ? 20 * clamp(0, 1, (ls - 1) / 1) : 20 * clamp(0, 1, (1 - ls) / 0.3),
      2,
    ),
  };
  const score = round(
    clamp(0, 100, components.funding + components.openInterest + components.premium + components.longShort),
    2,
  );
  return { score, direction, components };
}

/** Sentiment from OI-weighted funding: clamp(−100, 100, (w − 0.0001) / 0.0004 × 100) and its label. */
export function sentimentOf(weightedFundingRate8h: number): { score: number; label: FundingSentimentLabel } {
  const score = round(clamp(-100, 100, ((weightedFundingRate8h - BASELINE_8H) / 0.0004) * 100), 2);
  const label: FundingSentimentLabel =
    score <= -50
      ? 'strongly_bearish'
      : score < -15
        ? 'bearish'
        : score <= 15
          ? 'neutral'
          : score < 50
            ? 'bullish'
            : 'strongly_bullish';
  return { score, label };
}

/**
 * A USD figure as a plain decimal string (never exponent notation): prices to ~8 significant digits, totals to cents.
 */
export function usd(value: number, kind: 'price' | 'total' = 'total'): string {
  if (!Number.isFinite(value) || value <= 0) return '0';
  const decimals = kind === 'total' ? 2 : clamp(2, 15, Math.ceil(-Math.log10(value)) + 7);
  const text = value.toFixed(decimals);
  return text.includes('.') ? text.replace(/\.?0+$/, '') || '0' : text;
}

// ---------------------------------------------------------------------------------------------------------------
// Selection

export interface Selection {
  exchanges?: readonly FundingExchange[];
  assets?: readonly string[];
  minOpenInterestUsd?: string;
}

/** The contracts of venues that answered, kept by the filters. */
export function select(snapshot: PerpSnapshot, selection: Selection): PerpQuote[] {
  const exchanges = selection.exchanges ? new Set<string>(selection.exchanges) : undefined;
  const assets = selection.assets ? new Set(selection.assets) : undefined;
  const min = Number(selection.minOpenInterestUsd ?? '0');
  return snapshot.venues
    .filter((v) => v.status === 'ok' && (!exchanges || exchanges.has(v.exchange)))
    .flatMap((v) => v.contracts)
    .filter((c) => (!assets || assets.has(c.asset)) && c.openInterestUsd >= min);
}

/** Venues selected that answered, in the canonical order. */
export function venuesScanned(snapshot: PerpSnapshot, exchanges?: readonly FundingExchange[]): FundingExchange[] {
  const wanted = exchanges ? new Set<string>(exchanges) : undefined;
  return snapshot.venues.filter((v) => v.status === 'ok' && (!wanted || wanted.has(v.exchange))).map((v) => v.exchange);
}

// ---------------------------------------------------------------------------------------------------------------
// Per asset

export interface AssetAggregate {
  asset: string;
  rows: PerpQuote[];
  weightedFundingRate8h: number;
  fundingZScore: number | null;
  openInterestUsd: number;
  volume24hUsd: number;
  openInterestChange24hPercent: number | null;
  priceChange24hPercent: number | null;
  premium: number | null;
  longShortRatio: number | null;
  squeeze: SqueezeAssessment;
}

const rate8hOf = (c: PerpQuote) => per8h(c.fundingRate, c.fundingIntervalHours);

/** The long/short account ratio of an asset, from the venue that publishes one. */
const longShortOf = (rows: readonly PerpQuote[]) => rows.find((r) => r.longShortRatio != null)?.longShortRatio ?? null;

/**
 * Long/short account ratios by asset over every venue that answered: positioning of the asset's traders, used
 * whatever venues a request selects (one venue publishes it for all).
 */
export function longShortByAsset(snapshot: PerpSnapshot): Map<string, number> {
  const ratios = new Map<string, number>();
  for (const r of select(snapshot, {}))
    if (r.longShortRatio != null && !ratios.has(r.asset)) ratios.set(r.asset, r.longShortRatio);
  return ratios;
}

/**
 * One asset across its venues: OI-weighted funding per 8 h (plain mean when no venue reports OI), its z-score
 * against the OI-weighted funding of the last 30 days of settlements (when every venue has that history),
 * aggregate ΔOI over 24 h, the 24-hour price change of the largest venue, OI-weighted premium, and the squeeze score.
 */
export function aggregateAsset(
  asset: string,
  rows: PerpQuote[],
  longShortRatio: number | null = longShortOf(rows),
): AssetAggregate {
  const oi = rows.map((r) => r.openInterestUsd);
  const rates = rows.map(rate8hOf);
  const weighted = weightedMean(rates, oi) ?? rates.reduce((a, b) => a + b, 0) / rates.length;
  let fundingZScore: number | null = null;
  const histories = rows.map((r) => r.history);
  const length = histories[0]?.fundingRate8h.length ?? 0;
  if (
    length > 0 &&
    histories.every((h) => h && h.fundingRate8h.length === length && h.openInterestUsd.length === length)
  ) {
    const past = Array.from({ length }, (_, k) => {
      const f = histories.map((h) => h!.fundingRate8h[k]!);
      const w = histories.map((h) => h!.openInterestUsd[k]!);
      return weightedMean(f, w) ?? f.reduce((a, b) => a + b, 0) / f.length;
    });
    fundingZScore = zScore(weighted, past);
  }
  const known = rows.filter((r) => r.openInterestUsd24hAgo != null);
  const before = known.reduce((a, r) => a + r.openInterestUsd24hAgo!, 0);
  const openInterestChange24hPercent =
    known.length > 0 && before > 0
      ? ((known.reduce((a, r) => a + r.openInterestUsd, 0) - before) / before) * 100
      : null;
  const priced = [...rows]
    .filter((r) => r.priceChange24hPercent != null)
    .sort((a, b) => b.openInterestUsd - a.openInterestUsd)[0];
  const indexed = rows.filter((r) => r.indexPrice !== null);
  const premium = indexed.length
    ? (weightedMean(
        indexed.map((r) => basisOf(r.markPrice, r.indexPrice)!),
        indexed.map((r) => r.openInterestUsd),
      ) ?? indexed.reduce((a, r) => a + basisOf(r.markPrice, r.indexPrice)!, 0) / indexed.length)
    : null;
  const inputs: SqueezeInputs = {
    fundingRate8h: weighted,
    fundingZScore,
    openInterestChange24hPercent,
    premium,
    longShortRatio,
  };
  return {
    asset,
    rows,
    weightedFundingRate8h: weighted,
    fundingZScore,
    openInterestUsd: oi.reduce((a, b) => a + b, 0),
    volume24hUsd: rows.reduce((a, r) => a + r.volume24hUsd, 0),
    openInterestChange24hPercent,
    priceChange24hPercent: priced?.priceChange24hPercent ?? null,
    premium,
    longShortRatio,
    squeeze: assessSqueeze(inputs),
  };
}

export function groupByAsset(rows: readonly PerpQuote[]): Map<string, PerpQuote[]> {
  const groups = new Map<string, PerpQuote[]>();
  for (const r of rows) {
    const list = groups.get(r.asset);
    if (list) list.push(r);
    else groups.set(r.asset, [r]);
  }
  return groups;
}

// ---------------------------------------------------------------------------------------------------------------
// Contract rows

/**
 * A contract's row. Its squeeze score uses the contract's own funding (z-score against its own 30-day history when
 * known), its own ΔOI and basis, and the asset's long/short account ratio (published by one venue for the asset).
 */
export function contractRow(c: PerpQuote, assetLongShort: number | null): FundingContractRow {
  const f8 = rate8hOf(c);
  const basis = basisOf(c.markPrice, c.indexPrice);
  const z = c.history ? zScore(f8, c.history.fundingRate8h) : null;
  const oiChange =
    c.openInterestUsd24hAgo != null && c.openInterestUsd24hAgo > 0
      ? ((c.openInterestUsd - c.openInterestUsd24hAgo) / c.openInterestUsd24hAgo) * 100
      : null;
  const squeeze = assessSqueeze({
    fundingRate8h: f8,
    fundingZScore: z,
    openInterestChange24hPercent: oiChange,
    premium: basis,
    longShortRatio: assetLongShort,
  });
  return {
    exchange: c.exchange,
    symbol: c.symbol,
    asset: c.asset,
    quote: c.quote,
    markPrice: usd(c.markPrice, 'price'),
    indexPrice: c.indexPrice === null ? null : usd(c.indexPrice, 'price'),
    fundingRate: rate(c.fundingRate),
    fundingIntervalHours: c.fundingIntervalHours,
    fundingRate8h: rate(f8),
    annualizedFundingRate: rate(annualize(c.fundingRate, c.fundingIntervalHours)),
    nextFundingTime: c.nextFundingTime === null ? null : new Date(c.nextFundingTime).toISOString(),
    openInterestUsd: usd(c.openInterestUsd),
    volume24hUsd: usd(c.volume24hUsd),
    basis: basis === null ? null : rate(basis),
    squeezeRiskScore: squeeze.score,
    squeezeDirection: squeeze.direction,
  };
}

/** Rows of the selected contracts, each with its asset's long/short ratio. */
export function contractRows(rows: readonly PerpQuote[], longShort: ReadonlyMap<string, number>): FundingContractRow[] {
  return rows.map((r) => contractRow(r, longShort.get(r.asset) ?? null));
}

const SORTS: Record<FundingSortKey, (r: FundingContractRow) => number> = {
  absFundingRate: (r) => Math.abs(r.fundingRate8h),
  fundingRate: (r) => r.fundingRate8h,
  openInterest: (r) => Number(r.openInterestUsd),
  volume: (r) => Number(r.volume24hUsd),
  squeezeRisk: (r) => r.squeezeRiskScore,
};

/** Largest first; ties by exchange order then symbol, so pages are stable. */
export function sortRows(rows: FundingContractRow[], by: FundingSortKey): FundingContractRow[] {
  const key = SORTS[by];
  return rows.sort(
    (a, b) =>
      key(b) - key(a) ||
      ALL_VENUES.indexOf(a.exchange) - ALL_VENUES.indexOf(b.exchange) ||
      (a.symbol < b.symbol ? -1 : a.symbol > b.symbol ? 1 : 0),
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Scan cursor: the offset, the instant of the first page (the embedded market is re-read at that instant, so pages
// agree) and a digest of the filters (a cursor from other filters is refused).

export interface ScanFilters {
  exchanges?: readonly FundingExchange[];
  assets?: readonly string[];
  minOpenInterestUsd: string;
  sortBy: FundingSortKey;
}

function filterDigest(f: ScanFilters): string {
  const canonical = JSON.stringify([
    f.exchanges ? [...new Set(f.exchanges)].sort() : null,
    f.assets ? [...new Set(f.assets)].sort() : null,
    Number(f.minOpenInterestUsd),
    f.sortBy,
  ]);
  return createHash('sha256').update(canonical).digest('hex').slice(0, 16);
}

export function encodeCursor(offset: number, at: number, filters: ScanFilters): string {
  return Buffer.from(JSON.stringify({ o: offset, t: at, f: filterDigest(filters) })).toString('base64url');
}

const CursorSchema = z
  .object({ o: z.number().int().min(1).max(1_000_000), t: z.number().int().min(0), f: z.string() })
  .strict();

/**
 * How long a cursor stays valid: the embedded market is re-read at the cursor's instant, so a bound keeps that cheap.
 */
export const CURSOR_LIFETIME_MS = 3_600_000;

/**
 * The offset and instant of a cursor; 400 invalid_cursor when it is malformed, expired or was made for other filters.
 */
export function decodeCursor(cursor: string, filters: ScanFilters, now: number): { offset: number; at: number } {
  const invalid = (why: string) =>
    new HttpError(400, 'invalid_cursor', `The cursor ${why}`, { fields: [{ field: 'body.cursor', message: why }] });
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalid('is not a cursor this service issued');
  }
  const result = CursorSchema.safeParse(parsed);
  if (!result.success) throw invalid('is not a cursor this service issued');
  if (result.data.f !== filterDigest(filters))
    throw invalid('was issued for other filters; send the same exchanges, assets, minOpenInterestUsd and sortBy');
  if (result.data.t > now + 60_000 || result.data.t < now - CURSOR_LIFETIME_MS)
    throw invalid('has expired; start again from the first page');
  return { offset: result.data.o, at: result.data.t };
}

// ---------------------------------------------------------------------------------------------------------------
// Asset view and overview

export function assetView(aggregate: AssetAggregate): Omit<FundingAssetView, 'source'> {
  const rows = aggregate.rows.map((r) => contractRow(r, aggregate.longShortRatio));
  const total = aggregate.openInterestUsd;
  const venues = rows
    .map(({ asset: _asset, ...row }, i) => ({
      ...row,
      openInterestSharePercent:
        total > 0 ? round((aggregate.rows[i]!.openInterestUsd / total) * 100, 4) : round(100 / rows.length, 4),
    }))
    .sort(
      (a, b) => b.fundingRate8h - a.fundingRate8h || ALL_VENUES.indexOf(a.exchange) - ALL_VENUES.indexOf(b.exchange),
    );
  const highest = venues[0]!;
  const lowest = venues[venues.length - 1]!;
  return {
    asset: aggregate.asset,
    venues,
    weightedFundingRate8h: rate(aggregate.weightedFundingRate8h),
    weightedAnnualizedFundingRate: rate(aggregate.weightedFundingRate8h * 3 * 365),
    fundingSpread8h: {
      highest: highest.fundingRate8h,
      highestExchange: highest.exchange,
      lowest: lowest.fundingRate8h,
      lowestExchange: lowest.exchange,
    },
    totalOpenInterestUsd: usd(aggregate.openInterestUsd),
    totalVolume24hUsd: usd(aggregate.volume24hUsd),
    squeezeRisk: {
      score: aggregate.squeeze.score,
      direction: aggregate.squeeze.direction,
      components: aggregate.squeeze.components,
      fundingZScore: aggregate.fundingZScore === null ? null : round(aggregate.fundingZScore, 4),
    },
  };
}

export function overview(snapshot: PerpSnapshot): Omit<FundingOverview, 'source'> {
  const all = select(snapshot, {});
  const exchanges: FundingExchangeStats[] = snapshot.venues.map((v) => {
    const contracts = v.status === 'ok' ? v.contracts : [];
    const w = weightedMean(
      contracts.map(rate8hOf),
      contracts.map((c) => c.openInterestUsd),
    );
    return {
      exchange: v.exchange,
      status: v.status,
      perpetualPairs: contracts.length,
      openInterestUsd: usd(contracts.reduce((a, c) => a + c.openInterestUsd, 0)),
      volume24hUsd: usd(contracts.reduce((a, c) => a + c.volume24hUsd, 0)),
      weightedFundingRate8h:
        w === null
          ? contracts.length
            ? rate(contracts.reduce((a, c) => a + rate8hOf(c), 0) / contracts.length)
            : null
          : rate(w),
      positiveFundingPairs: contracts.filter((c) => c.fundingRate > 0).length,
      negativeFundingPairs: contracts.filter((c) => c.fundingRate < 0).length,
    };
  });
  const totalOi = all.reduce((a, c) => a + c.openInterestUsd, 0);
  const weighted =
    weightedMean(
      all.map(rate8hOf),
      all.map((c) => c.openInterestUsd),
    ) ?? 0;
  const longsPaying = all.filter((c) => c.fundingRate > 0).reduce((a, c) => a + c.openInterestUsd, 0);
  return {
    totalOpenInterestUsd: usd(totalOi),
    totalVolume24hUsd: usd(all.reduce((a, c) => a + c.volume24hUsd, 0)),
    perpetualPairs: all.length,
    assets: new Set(all.map((c) => c.asset)).size,
    exchanges,
    sentiment: {
      ...sentimentOf(weighted),
      weightedFundingRate8h: rate(weighted),
      longsPayingOpenInterestPercent: totalOi > 0 ? round((longsPaying / totalOi) * 100, 4) : 0,
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Squeeze candidates and their commentary

export interface SqueezeFilters extends Selection {
  direction: SqueezeDirection | 'both';
  minRiskScore: number;
  limit: number;
}

export interface RankedCandidate {
  rank: number;
  aggregate: AssetAggregate;
  direction: SqueezeDirection;
}

/** Assets whose funding is very positive or very negative, scoring at least minRiskScore, highest score first. */
export function rankCandidates(
  snapshot: PerpSnapshot,
  filters: SqueezeFilters,
): { candidates: RankedCandidate[]; assetsScanned: number } {
  const groups = groupByAsset(select(snapshot, filters));
  const longShort = longShortByAsset(snapshot);
  const ranked = [...groups.entries()]
    .map(([asset, rows]) => aggregateAsset(asset, rows, longShort.get(asset) ?? null))
    .filter(
      (a) =>
        a.squeeze.direction !== 'none' &&
        (filters.direction === 'both' || a.squeeze.direction === filters.direction) &&
        a.squeeze.score >= filters.minRiskScore,
    )
    .sort((a, b) => b.squeeze.score - a.squeeze.score || (a.asset < b.asset ? -1 : 1))
    .slice(0, filters.limit);
  return {
    candidates: ranked.map((aggregate, i) => ({
      rank: i + 1,
      aggregate,
      direction: aggregate.squeeze.direction as SqueezeDirection,
    })),
    assetsScanned: groups.size,
  };
}

/** The facts of one candidate the commentary is written from. */
export type CandidateFacts = Omit<SqueezeCandidate, 'rank' | 'commentary'>;

export function candidateFacts(c: RankedCandidate): CandidateFacts {
  const a = c.aggregate;
  const r4 = (x: number | null) => (x === null ? null : round(x, 4));
  return {
    asset: a.asset,
    direction: c.direction,
    riskScore: a.squeeze.score,
    components: a.squeeze.components,
    weightedFundingRate8h: rate(a.weightedFundingRate8h),
    annualizedFundingRate: rate(a.weightedFundingRate8h * 3 * 365),
    fundingZScore: r4(a.fundingZScore),
    openInterestUsd: usd(a.openInterestUsd),
    openInterestChange24hPercent: r4(a.openInterestChange24hPercent),
    priceChange24hPercent: r4(a.priceChange24hPercent),
    premium: a.premium === null ? null : rate(a.premium),
    longShortRatio: r4(a.longShortRatio),
    exchanges: ALL_VENUES.filter((e) => a.rows.some((r) => r.exchange === e)),
  };
}

const pct = (x: number, digits = 1) => `${(x * 100).toFixed(digits)} %`;
const usdShort = (text: string) => {
  const n = Number(text);
  return n >= 1e9
    ? `$${(n / 1e9).toFixed(2)}B`
    : n >= 1e6
      ? `$${(n / 1e6).toFixed(1)}M`
      : `$${Math.round(n).toLocaleString('en-US')}`;
};

/** The built-in commentary: what is crowded, how strongly each factor says so, and what would trigger the squeeze. */
export function builtinCommentary(f: CandidateFacts): string {
  const longs = f.direction === 'long_squeeze';
  const crowd = longs ? 'Longs are crowded' : 'Shorts are crowded';
  const parts = [
    `${crowd} on ${f.asset}: open-interest-weighted funding is ${pct(f.weightedFundingRate8h, 4)} per 8 h (${pct(f.annualizedFundingRate)} a year) across ${f.exchanges.length} venue${f.exchanges.length === 1 ? '' : 's'}, so ${longs ? 'longs pay shorts' : 'shorts pay longs'}.`,
  ];
  if (f.fundingZScore !== null)
    parts.push(
      `That is ${Math.abs(f.fundingZScore).toFixed(1)} standard deviations ${f.fundingZScore >= 0 ? 'above' : 'below'} its 30-day mean.`,
    );
  if (f.openInterestChange24hPercent !== null)
    parts.push(
      `Open interest ${f.openInterestChange24hPercent >= 0 ? 'rose' : 'fell'} ${Math.abs(f.openInterestChange24hPercent).toFixed(1)} % in 24 h to ${usdShort(f.openInterestUsd)}${f.openInterestChange24hPercent > 0 ? ': leverage is still building' : ''}.`,
    );
  else parts.push(`Open interest stands at ${usdShort(f.openInterestUsd)}.`);
  if (f.premium !== null)
    parts.push(
      `The perpetual trades ${Math.abs(f.premium * 100).toFixed(3)} % ${f.premium >= 0 ? 'above' : 'below'} its index.`,
    );
  if (f.longShortRatio !== null) parts.push(`The long/short account ratio is ${f.longShortRatio.toFixed(2)}.`);
  const strongest = (Object.entries(f.components) as [keyof SqueezeComponents, number][]).sort(
    (a, b) => b[1] - a[1],
  )[0]!;
  parts.push(
    `Risk ${f.riskScore.toFixed(0)}/100, driven most by ${strongest[0] === 'openInterest' ? 'open-interest build-up' : strongest[0] === 'longShort' ? 'the long/short ratio' : strongest[0]}. ` +
      (longs
        ? 'A drop through nearby support would force leveraged longs to sell, and liquidations could cascade.'
        : 'A move up through nearby resistance would force shorts to buy back, and liquidations could cascade.'),
  );
  return parts.join(' ');
}

export function builtinSummary(facts: CandidateFacts[], assetsScanned: number): string {
  if (facts.length === 0)
    return `No asset among ${assetsScanned} scanned has funding extreme enough, with enough risk, to rank as a squeeze candidate.`;
  const longs = facts.filter((f) => f.direction === 'long_squeeze').length;
  const top = facts[0]!;
  return (
    `${facts.length} squeeze candidate${facts.length === 1 ? '' : 's'} among ${assetsScanned} assets: ${longs} with crowded longs (long-squeeze risk), ` +
    `${facts.length - longs} with crowded shorts (short-squeeze risk). Highest risk: ${top.asset} at ${top.riskScore.toFixed(0)}/100 ` +
    `(${top.direction === 'long_squeeze' ? 'long' : 'short'} squeeze, funding ${pct(top.annualizedFundingRate)} a year).`
  );
}

export interface CommentaryOutput {
  summary: string;
  commentary: { asset: string; commentary: string }[];
}

const CommentarySchema: z.ZodType<CommentaryOutput> = z.object({
  summary: z.string().min(1),
  commentary: z.array(z.object({ asset: z.string(), commentary: z.string().min(1) })),
});

export function commentaryTask(input: {
  assetsScanned: number;
  candidates: CandidateFacts[];
}): AiTask<typeof input, CommentaryOutput> {
  return {
    name: 'funding-squeeze-commentary',
    instructions:
      'You are a derivatives analyst. For each perpetual-futures squeeze candidate, write two to four sentences of commentary: ' +
      'why positioning is crowded (funding, its z-score, open-interest build-up, premium, long/short ratio) and what price move ' +
      'would trigger the squeeze. Use only the numbers given. Then write a one-paragraph summary of all candidates. Return one ' +
      'commentary entry per candidate, in the same order, with its asset ticker.',
    input,
    output: CommentarySchema,
    builtin: ({ candidates, assetsScanned }) => ({
      summary: builtinSummary(candidates, assetsScanned),
      commentary: candidates.map((c) => ({ asset: c.asset, commentary: builtinCommentary(c) })),
    }),
  };
}
