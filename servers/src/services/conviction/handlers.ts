import {
  conviction,
  listRoutes,
  type ConvictionResult,
  type DataSource,
  type PaymentMeta,
} from '@agent-economy/contracts';
import type { Kysely } from 'kysely';
import type { Reasoner } from '../../ai';
import type { RouterImplementation } from '../../runtime/app';
import { healthReply } from '../../runtime/health';
import { HttpError } from '../../runtime/errors';
import {
  analyze,
  composite,
  confidence,
  CORRELATION_HOURS,
  COVERAGE_TARGETS,
  FIRMNESS_NOTIONAL_USD,
  QUICK_WEIGHTS,
  quickComposite,
  READING,
  readingOf,
  summaryTask,
  WEIGHTS,
  WINDOW_HOURS,
} from './domain';
import type { ConvictionSource, MarketRead } from './sources';
import type { ResolvedToken } from './tokens';
import type { SharedDb } from '../../db';

export interface ConvictionDeps {
  source: ConvictionSource;
  reasoner: Reasoner;
  db: SharedDb;
  prices?: Record<string, PaymentMeta>;
  /** The service's clock (the one its market is read at): analyzedAt. */
  now: () => number;
}

const COMPARE_LIMITS = { compareMinTokens: 2, compareMaxTokens: 5 } as const;

/** The token references of a request, resolved; 404 names the first unknown one, 400 two references to one token. */
export function resolveAll(source: ConvictionSource, refs: readonly string[]): ResolvedToken[] {
  const tokens = refs.map((ref) => source.resolve(ref));
  const seen = new Map<string, string>();
  refs.forEach((ref, i) => {
    const other = seen.get(tokens[i]!.symbol);
    if (other !== undefined) {
      throw new HttpError(
        400,
        'invalid_request',
        `body.tokens: ${other} and ${ref} name the same token ${tokens[i]!.symbol}`,
        {
          fields: [{ field: 'body.tokens', message: `${other} and ${ref} name the same token` }],
        },
      );
    }
    seen.set(tokens[i]!.symbol, ref);
  });
  return tokens;
}

/** A full read (with the majors) or a quick one (the last day only). */
export const readFull = (source: ConvictionSource, token: ResolvedToken) =>
  source.read(token, { hours: CORRELATION_HOURS + 1, majors: true });
export const readQuick = (source: ConvictionSource, token: ResolvedToken) =>
  source.read(token, { hours: WINDOW_HOURS + 1, majors: false });

function sourceOf(source: ConvictionSource, reads: readonly MarketRead[]): DataSource {
  const providers = [...new Set(reads.flatMap((r) => r.providers))];
  const asOf = new Date(Math.min(...reads.map((r) => r.asOf.getTime())));
  const notes = [...new Set(reads.flatMap((r) => r.notes))];
  return { ...source.tracker.source(providers, asOf), ...(notes.length ? { note: notes.join('; ') } : {}) };
}

/** Everything of a full result but the summary. */
function scored(source: ConvictionSource, token: ResolvedToken, read: MarketRead, analyzedAt: string) {
  const analysis = analyze(token, read);
  const compositeScore = composite(analysis.dimensions);
  return {
    token,
    compositeScore,
    ...readingOf(compositeScore),
    confidenceScore: confidence(read, analysis.coverage, true),
    dimensions: analysis.dimensions,
    coverage: {
      sourcesQueried: read.sourcesQueried,
      sourcesAnswered: read.sourcesAnswered,
      venues: analysis.coverage.venues,
      bookLevels: analysis.coverage.bookLevels,
      tradesSampled: analysis.coverage.tradesSampled,
      returnsCount: analysis.coverage.returnsCount,
    },
    analyzedAt,
    source: sourceOf(source, [read]),
  };
}

/** A route's price as the info route lists it: the fixed price, "0" when free, the lowest of a range or tiers. */
function priceOf(meta: PaymentMeta): string {
  switch (meta.kind) {
    case 'free':
      return '0';
    case 'fixed':
      return meta.usd;
    case 'adaptive':
      return meta.minUsd;
    case 'tiered':
      return [...meta.tiers].map((t) => t.usd).sort((a, b) => Number(a) - Number(b))[0] ?? '0';
  }
}

// Handlers only translate between the contract and the domain.
export function convictionHandlers({
  source,
  reasoner,
  db,
  prices,
  now,
}: ConvictionDeps): RouterImplementation<typeof conviction.router> {
  const analyzedAt = () => new Date(now()).toISOString();
  return {
    analyze: async ({ body }) => {
      const token = source.resolve(body.token);
      const read = await readFull(source, token);
      const result = scored(source, token, read, analyzedAt());
      const { output, generator } = await reasoner.run(
        summaryTask({
          token,
          compositeScore: result.compositeScore,
          reading: result.reading,
          readingStrength: result.readingStrength,
          confidenceScore: result.confidenceScore,
          dimensions: result.dimensions,
          mode: source.mode,
        }),
      );
      const response: ConvictionResult = { ...result, summary: output.summary, generator };
      return { status: 200, body: response };
    },

    quickScore: async ({ body }) => {
      const token = source.resolve(body.token);
      const read = await readQuick(source, token);
      const analysis = analyze(token, read);
      const compositeScore = quickComposite(analysis.quick);
      return {
        status: 200,
        body: {
          token,
          compositeScore,
          ...readingOf(compositeScore),
          confidenceScore: confidence(read, analysis.coverage, false),
          dimensionScores: analysis.quick,
          analyzedAt: analyzedAt(),
          source: sourceOf(source, [read]),
        },
      };
    },

    compare: async ({ body }) => {
      const tokens = resolveAll(source, body.tokens);
      const reads = await Promise.all(tokens.map((t) => readFull(source, t)));
      const at = analyzedAt();
      const results = tokens.map((t, i) => ({ order: i, ...scored(source, t, reads[i]!, at) }));
      // Highest composite first; ties by confidence, then request order.
      results.sort(
        (a, b) => b.compositeScore - a.compositeScore || b.confidenceScore - a.confidenceScore || a.order - b.order,
      );
      const ranking = results.map((r, i) => ({
        rank: i + 1,
        token: r.token,
        compositeScore: r.compositeScore,
        reading: r.reading,
        readingStrength: r.readingStrength,
        confidenceScore: r.confidenceScore,
        dimensionScores: {
          liquidity: r.dimensions.liquidity.score,
          bidConcentration: r.dimensions.bidConcentration.score,
          volumeAsymmetry: r.dimensions.volumeAsymmetry.score,
          correlation: r.dimensions.correlation.score,
          firmness: r.dimensions.firmness.score,
        },
      }));
      return {
        status: 200,
        body: {
          ranking,
          firmest: ranking[0]!.token,
          thinnest: ranking[ranking.length - 1]!.token,
          scoreSpread: Math.round((ranking[0]!.compositeScore - ranking[ranking.length - 1]!.compositeScore) * 10) / 10,
          analyzedAt: at,
          source: sourceOf(source, reads),
        },
      };
    },

    info: async () => ({
      status: 200,
      body: {
        service: 'conviction',
        version: '1.0.0',
        description: conviction.description,
        methodology: {
          composite: `Σ weight × dimension score over the five dimensions (weights ${Object.values(WEIGHTS).join(', ')}), one decimal.`,
          reading: `thin below ${READING.firmAtOrAbove}, firm at ${READING.firmAtOrAbove} and above; strength from |composite − 50|: marginal below ${READING.marginalWithin}, clear ${READING.marginalWithin} to ${READING.strongBeyond}, strong above ${READING.strongBeyond}.`,
          confidence: `mean of: sources answered / sources queried, book levels / ${COVERAGE_TARGETS.bookLevels}, trades in the last ${WINDOW_HOURS} hours / ${COVERAGE_TARGETS.trades}, aligned hourly returns / ${COVERAGE_TARGETS.returns} (full analysis only), each capped at 1.`,
          quickScore:
            'the four dimensions other than correlation, weights divided by 0.85; no return series beyond the last day, no summary.',
          comparison: `${COMPARE_LIMITS.compareMinTokens} to ${COMPARE_LIMITS.compareMaxTokens} distinct tokens scored on all five dimensions, ranked by composite, ties by confidence then request order; one unknown token fails the call.`,
        },
        dimensions: [
          {
            id: 'liquidity',
            name: 'Deep liquidity',
            description:
              'How much can trade near the price: order-book depth within ±2 % of mid, the spread, and depth against 24-hour volume, summed over the venues read.',
            formula:
              '100 × (0.5 × clamp((log10(bid + ask depth USD) − 3) / 5) + 0.3 × clamp(1 − log10(max(spread bps, 1)) / 3) + 0.2 × clamp((depth / 24 h volume) / 0.05))',
            weight: WEIGHTS.liquidity,
            quickScoreWeight: QUICK_WEIGHTS.liquidity,
            higherMeans: 'deeper books and tighter spreads: harder to push around',
          },
          {
            id: 'bidConcentration',
            name: 'Bid concentration',
            description: 'Whether bid liquidity is spread over many levels or sits in a few walls that can be pulled.',
            formula:
              '100 × (1 − G), G the Gini coefficient of bid level notionals within 2 % of mid: 2·Σ i·x₍ᵢ₎ / (n·Σx) − (n+1)/n',
            weight: WEIGHTS.bidConcentration,
            quickScoreWeight: QUICK_WEIGHTS.bidConcentration,
            higherMeans: 'bids spread evenly over many levels',
          },
          {
            id: 'volumeAsymmetry',
            name: 'Volume asymmetry',
            description: `Taker buy against taker sell quote volume over the last ${WINDOW_HOURS} hours (hourly bars' taker-buy volume).`,
            formula: '100 × (1 − |imbalance|), imbalance = (taker buy − taker sell) / (taker buy + taker sell)',
            weight: WEIGHTS.volumeAsymmetry,
            quickScoreWeight: QUICK_WEIGHTS.volumeAsymmetry,
            higherMeans: 'two-sided flow rather than one-way pressure',
          },
          {
            id: 'correlation',
            name: 'Cross-market correlation',
            description: `Pearson ρ of hourly log returns over ${CORRELATION_HOURS} hours with SOL (the chain's native asset), BTC and ETH, on timestamp-aligned hours; a major's correlation with itself is null.`,
            formula:
              '100 × mean over the majors measured of max(0, ρ), ρ = Σ(a−ā)(b−b̄) / √(Σ(a−ā)²·Σ(b−b̄)²), r_t = ln(P_t / P_{t−1})',
            weight: WEIGHTS.correlation,
            quickScoreWeight: null,
            higherMeans:
              'the price moves with the broad market rather than on its own (less idiosyncratic, harder to steer)',
          },
          {
            id: 'firmness',
            name: 'Market firmness',
            description: `Price impact of a ${FIRMNESS_NOTIONAL_USD} USD market order walked through the book each way, the book's bid/ask balance, and hourly volatility over ${WINDOW_HOURS} hours.`,
            formula:
              '100 × (0.6 × mean over buy and sell of filled share × clamp(1 − impact % / 2) + 0.2 × (1 − |book imbalance|) + 0.2 × clamp(1 − volatility % / 5))',
            weight: WEIGHTS.firmness,
            quickScoreWeight: QUICK_WEIGHTS.firmness,
            higherMeans: 'orders move the price little and the book is balanced and calm',
          },
        ],
        readingThresholds: { ...READING },
        limits: { ...COMPARE_LIMITS },
        dataSources:
          source.mode === 'live'
            ? [
                'Binance spot GET /api/v3/depth: order book (live)',
                'Binance spot GET /api/v3/klines 1h: volume, taker buy volume, trades, closes of the token (live)',
                'Binance spot GET /api/v3/klines 1h: closes of SOL, BTC and ETH; CoinGecko GET /api/v3/coins/{id}/market_chart hourly prices for a major Binance does not answer for (live)',
                'OKX GET /api/v5/market/books: a second order book (live)',
              ]
            : [
                'simulated-book-a, simulated-book-b: seeded limit order books per minute around the market model price (simulated)',
                'market-model: seeded hourly trade bars with a taker-side imbalance parameter (simulated)',
                'market-model: SOL, BTC and ETH hourly closes from the factor model (simulated)',
              ],
        endpoints: listRoutes(conviction.router).map(({ key, route }) => ({
          method: route.method as 'GET' | 'POST',
          path: route.path,
          priceUsd: priceOf(prices?.[key] ?? (route.metadata as { payment: PaymentMeta }).payment),
          summary: route.summary ?? key,
        })),
      },
    }),

    // Answered by the runtime's one health body (runtime/health.ts).
    health: async ({ res }) => healthReply(res),
  };
}
