import type {
  ConvictionDimensions,
  ConvictionReading,
  ConvictionToken,
  QuickDimensionScores,
  ReadingStrength,
} from '@agent-economy/contracts';
import { z } from 'zod';
import type { AiTask } from '../../ai';
import { round } from '../../upstream/decimal';
import type { HourBar, SpotBook } from '../../upstream/market/book';
import {
  depthWithin,
  gini,
  imbalance,
  levelsWithin,
  logReturns,
  midAndSpread,
  pearson,
  priceImpact,
  standardDeviation,
  type BookLevel,
} from '../../upstream/measures';
import { unprocessable } from '../../runtime/errors';
import { MAJORS, type Major, type MarketRead } from './sources';

// The five dimensions, the composite and the confidence, as pure functions of a market read (books, hourly bars).

export const WEIGHTS = {
  liquidity: 0.25,
  bidConcentration: 0.2,
  volumeAsymmetry: 0.15,
  correlation: 0.15,
  firmness: 0.25,
} as const;
/** The quick score's weights: correlation left out, the other four divided by their sum 0.85. */
export const QUICK_WEIGHTS = {
  liquidity: round(0.25 / 0.85),
  bidConcentration: round(0.2 / 0.85),
  volumeAsymmetry: round(0.15 / 0.85),
  firmness: round(0.25 / 0.85),
} as const;
export const DEPTH_BAND = 0.02;
/** The market order walked through the book for the firmness dimension, USD. */
export const FIRMNESS_NOTIONAL_USD = 50_000;
/** Hourly returns for correlation: 7 days. */
export const CORRELATION_HOURS = 168;
/** Hours of trading behind volume, taker imbalance and volatility. */
export const WINDOW_HOURS = 24;
/**
 * Coverage at which confidence is full: book levels (both sides, every venue), trades in the window, aligned returns.
 */
export const COVERAGE_TARGETS = { bookLevels: 100, trades: 1000, returns: CORRELATION_HOURS } as const;
/** Fewer trades than this in the window, or a book without both sides, is too little to score. */
export const MIN_TRADES = 10;
export const READING = { firmAtOrAbove: 50, marginalWithin: 10, strongBeyond: 25 } as const;

const clamp01 = (x: number) => Math.max(0, Math.min(1, x));
const score = (x: number) => round(100 * clamp01(x), 1);

/** USD as a decimal string, to the cent. */
export function usd(x: number): string {
  const text = Math.max(0, x)
    .toFixed(2)
    .replace(/\.?0+$/, '');
  return text === '' ? '0' : text;
}

export function readingOf(composite: number): { reading: ConvictionReading; readingStrength: ReadingStrength } {
  const distance = Math.abs(composite - READING.firmAtOrAbove);
  return {
    reading: composite >= READING.firmAtOrAbove ? 'firm' : 'thin',
    readingStrength:
      distance < READING.marginalWithin ? 'marginal' : distance <= READING.strongBeyond ? 'clear' : 'strong',
  };
}

/** The venues' books taken together: depth summed over venues (each against its own mid), levels pooled. */
export interface ConsolidatedBook {
  mid: number;
  spreadBps: number;
  bidDepthUsd: number;
  askDepthUsd: number;
  /** Bid level notionals within the band, every venue. */
  bidNotionals: number[];
  bids: BookLevel[];
  asks: BookLevel[];
  levels: number;
  venues: string[];
}

export function consolidate(books: readonly SpotBook[]): ConsolidatedBook | null {
  const usable = books.flatMap((b) => {
    const top = midAndSpread(b.bids, b.asks);
    return top && top.spreadBps >= 0
      ? [
          {
            book: b,
            ...top,
            bidDepth: depthWithin('bid', b.bids, top.mid, DEPTH_BAND),
            askDepth: depthWithin('ask', b.asks, top.mid, DEPTH_BAND),
          },
        ]
      : [];
  });
  if (usable.length === 0) return null;
  const weightOf = (u: (typeof usable)[number]) => u.bidDepth + u.askDepth || 1;
  const totalWeight = usable.reduce((a, u) => a + weightOf(u), 0);
  return {
    // Mid weighted by each venue's depth; the spread is the tightest venue's: the best price a taker can get.
    mid: usable.reduce((a, u) => a + u.mid * weightOf(u), 0) / totalWeight,
    spreadBps: Math.min(...usable.map((u) => u.spreadBps)),
    bidDepthUsd: usable.reduce((a, u) => a + u.bidDepth, 0),
    askDepthUsd: usable.reduce((a, u) => a + u.askDepth, 0),
    bidNotionals: usable.flatMap((u) =>
      levelsWithin('bid', u.book.bids, u.mid, DEPTH_BAND).map((l) => l.price * l.quantity),
    ),
    bids: usable.flatMap((u) => u.book.bids),
    asks: usable.flatMap((u) => u.book.asks),
    levels: usable.reduce((a, u) => a + u.book.bids.length + u.book.asks.length, 0),
    venues: usable.map((u) => u.book.venue),
  };
}

/** Hourly log returns keyed by the later bar's open time. */
function returnsByHour(bars: readonly HourBar[]): Map<number, number> {
  const r = logReturns(bars.map((b) => b.close));
  return new Map(r.map((x, i) => [bars[i + 1]!.openTime, x]));
}

/** Pearson ρ of two bar series' hourly log returns on the hours both have, and how many. */
export function alignedCorrelation(
  a: readonly HourBar[],
  b: readonly HourBar[],
): { rho: number | null; count: number } {
  const ra = returnsByHour(a);
  const rb = returnsByHour(b);
  const xs: number[] = [];
  const ys: number[] = [];
  for (const [t, x] of ra) {
    const y = rb.get(t);
    if (y !== undefined) {
      xs.push(x);
      ys.push(y);
    }
  }
  return { rho: pearson(xs, ys), count: xs.length };
}

export interface Analysis {
  dimensions: ConvictionDimensions;
  quick: QuickDimensionScores;
  coverage: { bookLevels: number; tradesSampled: number; returnsCount: number; venues: string[] };
}

/** The four dimensions that need no return series, and the pieces the fifth and the coverage need. */
export function analyze(token: ConvictionToken, read: MarketRead): Analysis {
  const book = consolidate(read.books);
  if (!book || book.bidDepthUsd === 0 || book.askDepthUsd === 0) {
    throw unprocessable(
      'insufficient_market_data',
      `No order book with both sides within ±2 % of mid for ${token.symbol}`,
      { token: token.symbol },
    );
  }
  const window = read.bars.slice(-WINDOW_HOURS);
  const trades = window.reduce((a, b) => a + b.trades, 0);
  if (trades < MIN_TRADES || window.length < 2) {
    throw unprocessable(
      'insufficient_market_data',
      `Too few trades to score ${token.symbol}: ${trades} in the last ${window.length} hours, at least ${MIN_TRADES} needed`,
      {
        token: token.symbol,
        trades,
      },
    );
  }

  // Liquidity: ±2 % depth on a log scale ($1k → 0, $100M → 1), spread (1 bp → 1, 1,000 bps → 0), depth against volume
  // (5 % → 1).
  const depth = book.bidDepthUsd + book.askDepthUsd;
  const volume24h = window.reduce((a, b) => a + b.quoteVolumeUsd, 0);
  const ratio = volume24h > 0 ? depth / volume24h : 0;
  const depthScore = clamp01((Math.log10(Math.max(depth, 1)) - 3) / 5);
  const spreadScore = clamp01(1 - Math.log10(Math.max(book.spreadBps, 1)) / 3);
  const ratioScore = clamp01(ratio / 0.05);
  const liquidity = {
    score: score(0.5 * depthScore + 0.3 * spreadScore + 0.2 * ratioScore),
    weight: WEIGHTS.liquidity,
    bidDepthUsd: usd(book.bidDepthUsd),
    askDepthUsd: usd(book.askDepthUsd),
    spreadBps: round(book.spreadBps, 2),
    volume24hUsd: usd(volume24h),
    depthToVolumeRatio: round(ratio),
    venues: book.venues.length,
  };

  // Bid concentration: Gini of the bid levels' notionals within 2 % of mid.
  const g = gini(book.bidNotionals);
  const bidTotal = book.bidNotionals.reduce((a, b) => a + b, 0);
  const bidConcentration = {
    score: score(1 - g),
    weight: WEIGHTS.bidConcentration,
    gini: g,
    levels: book.bidNotionals.length,
    largestLevelShare: bidTotal > 0 ? round(Math.max(...book.bidNotionals) / bidTotal) : 0,
  };

  // Volume asymmetry: taker buy against taker sell quote volume over the window.
  const buy = window.reduce((a, b) => a + b.takerBuyQuoteVolumeUsd, 0);
  const sell = Math.max(0, volume24h - buy);
  const flow = imbalance(buy, sell);
  const volumeAsymmetry = {
    score: score(1 - Math.abs(flow)),
    weight: WEIGHTS.volumeAsymmetry,
    imbalance: flow,
    buyVolumeUsd: usd(buy),
    sellVolumeUsd: usd(sell),
    windowHours: window.length,
  };

  // Firmness: price impact of a fixed notional both ways (2 % → 0, scaled by the share the book can fill), book
  // balance, volatility (5 %/h → 0).
  const buyImpact = priceImpact('buy', book.asks, book.mid, FIRMNESS_NOTIONAL_USD);
  const sellImpact = priceImpact('sell', book.bids, book.mid, FIRMNESS_NOTIONAL_USD);
  const impactScore = (i: typeof buyImpact) => i.filledFraction * clamp01(1 - i.impactPercent / 2);
  const bookImbalance = imbalance(book.bidDepthUsd, book.askDepthUsd);
  const volatility = standardDeviation(logReturns(read.bars.slice(-(WINDOW_HOURS + 1)).map((b) => b.close))) * 100;
  const firmness = {
    score: score(
      0.6 * ((impactScore(buyImpact) + impactScore(sellImpact)) / 2) +
        0.2 * (1 - Math.abs(bookImbalance)) +
        0.2 * clamp01(1 - volatility / 5),
    ),
    weight: WEIGHTS.firmness,
    notionalUsd: usd(FIRMNESS_NOTIONAL_USD),
    priceImpactBuyPercent: round(buyImpact.impactPercent, 4),
    priceImpactSellPercent: round(sellImpact.impactPercent, 4),
    bookImbalance,
    volatilityPercent: round(volatility, 4),
  };

  // Correlation: Pearson ρ of hourly log returns with each major (the token's own is null); 100 × mean of max(0, ρ).
  const correlations: Record<Major, number | null> = { SOL: null, BTC: null, ETH: null };
  let returnsCount = 0;
  if (read.majors) {
    const counts: number[] = [];
    for (const m of MAJORS) {
      const bars = read.majors[m];
      if (m === token.symbol || !bars) continue;
      const { rho, count } = alignedCorrelation(read.bars, bars);
      correlations[m] = rho;
      counts.push(count);
    }
    returnsCount = counts.length ? Math.min(...counts) : Math.max(0, read.bars.length - 1);
  }
  const present = MAJORS.map((m) => correlations[m]).filter((r): r is number => r !== null);
  const correlation = {
    score: present.length ? score(present.reduce((a, r) => a + Math.max(0, r), 0) / present.length) : 0,
    weight: WEIGHTS.correlation,
    withNative: correlations.SOL,
    withBtc: correlations.BTC,
    withEth: correlations.ETH,
    interval: '1h' as const,
    returnsCount,
  };

  return {
    dimensions: { liquidity, bidConcentration, volumeAsymmetry, correlation, firmness },
    quick: {
      liquidity: liquidity.score,
      bidConcentration: bidConcentration.score,
      volumeAsymmetry: volumeAsymmetry.score,
      firmness: firmness.score,
    },
    coverage: { bookLevels: book.levels, tradesSampled: trades, returnsCount, venues: book.venues },
  };
}

export function composite(dimensions: ConvictionDimensions): number {
  return round(
    (Object.keys(WEIGHTS) as (keyof typeof WEIGHTS)[]).reduce((sum, k) => sum + WEIGHTS[k] * dimensions[k].score, 0),
    1,
  );
}

export function quickComposite(scores: QuickDimensionScores): number {
  // Σ w × s / 0.85 rather than the rounded quick weights, so the two composites agree where they should.
  const keys = Object.keys(QUICK_WEIGHTS) as (keyof typeof QUICK_WEIGHTS)[];
  return round(keys.reduce((sum, k) => sum + WEIGHTS[k] * scores[k], 0) / 0.85, 1);
}

/**
 * Confidence from coverage: the mean of sources answered / queried, book levels / 100, trades / 1,000 and (full
 * analysis) aligned returns / 168, each capped at 1.
 */
export function confidence(read: MarketRead, coverage: Analysis['coverage'], withReturns: boolean): number {
  const parts = [
    read.sourcesQueried > 0 ? read.sourcesAnswered / read.sourcesQueried : 0,
    clamp01(coverage.bookLevels / COVERAGE_TARGETS.bookLevels),
    clamp01(coverage.tradesSampled / COVERAGE_TARGETS.trades),
    ...(withReturns ? [clamp01(coverage.returnsCount / COVERAGE_TARGETS.returns)] : []),
  ];
  return round(parts.reduce((a, b) => a + b, 0) / parts.length, 3);
}

export interface SummaryInput {
  token: ConvictionToken;
  compositeScore: number;
  reading: ConvictionReading;
  readingStrength: ReadingStrength;
  confidenceScore: number;
  dimensions: ConvictionDimensions;
  mode: 'simulated' | 'live';
}

const DIMENSION_NAMES: Record<keyof ConvictionDimensions, string> = {
  liquidity: 'deep liquidity',
  bidConcentration: 'bid concentration',
  volumeAsymmetry: 'volume asymmetry',
  correlation: 'cross-market correlation',
  firmness: 'market firmness',
};

const money = (text: string) => `$${Number(text).toLocaleString('en-US', { maximumFractionDigits: 0 })}`;

/** The built-in summary: the reading, then each dimension's telling figure, strongest and weakest named. */
export function builtinSummary(input: SummaryInput): { summary: string } {
  const d = input.dimensions;
  const ranked = (Object.keys(DIMENSION_NAMES) as (keyof ConvictionDimensions)[]).sort(
    (a, b) => d[b].score - d[a].score,
  );
  const corr = (
    [
      ['SOL', d.correlation.withNative],
      ['BTC', d.correlation.withBtc],
      ['ETH', d.correlation.withEth],
    ] as const
  )
    .filter(([, r]) => r !== null)
    .map(([m, r]) => `${r!.toFixed(2)} with ${m}`);
  const flow = d.volumeAsymmetry.imbalance;
  const sentences = [
    `${input.token.symbol}'s market reads ${input.reading} (${input.compositeScore.toFixed(1)} of 100, ${input.readingStrength}).`,
    `Within 2 % of mid the book holds ${money(d.liquidity.bidDepthUsd)} of bids and ${money(d.liquidity.askDepthUsd)} of asks against ${money(d.liquidity.volume24hUsd)} traded in 24 hours, at a ${d.liquidity.spreadBps} bps spread.`,
    `Bid liquidity has a Gini of ${d.bidConcentration.gini.toFixed(2)}, its largest level ${(d.bidConcentration.largestLevelShare * 100).toFixed(1)} % of bid depth${d.bidConcentration.gini > 0.6 ? ': a few walls carry the bid' : ''}.`,
    `Takers were net ${flow >= 0 ? 'buyers' : 'sellers'} (imbalance ${flow.toFixed(2)}).`,
    corr.length ? `Hourly returns correlate ${corr.join(', ')}.` : 'No hourly return correlation was measured.',
    `A ${money(d.firmness.notionalUsd)} market buy would move the price ${d.firmness.priceImpactBuyPercent} %, a sell ${d.firmness.priceImpactSellPercent} %, with hourly volatility of ${d.firmness.volatilityPercent.toFixed(2)} %.`,
    `Strongest: ${DIMENSION_NAMES[ranked[0]!]}; weakest: ${DIMENSION_NAMES[ranked[ranked.length - 1]!]}. Confidence ${input.confidenceScore.toFixed(2)}${input.mode === 'simulated' ? ', on simulated market data' : ''}.`,
  ];
  return { summary: sentences.join(' ') };
}

export function summaryTask(input: SummaryInput): AiTask<SummaryInput, { summary: string }> {
  return {
    name: 'conviction-summary',
    instructions:
      'You read a token market conviction index. Given the composite score (0 to 100, thin below 50, firm at 50 and above), the ' +
      'five dimension scores and their figures, write a plain-language summary of at most 6 sentences: whether the market is thin or ' +
      'firm, why, and which dimension is weakest. Use only the figures given. Answer JSON {"summary": string}.',
    input,
    output: z.object({ summary: z.string().min(1).max(4000) }),
    builtin: builtinSummary,
  };
}
