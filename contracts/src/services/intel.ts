import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { defineService } from '../core/service';
import { named } from '../core/names';
import { ErrorEnvelope, paymentErrors, standardErrors } from '../core/errors';
import { fixed, type RouteMeta } from '../core/payment';
import { SolanaAddress, SolanaSignature, Timestamp } from '../core/chain';
import { DataSource } from './shared';

const c = initContract();

// Interfaces first, then schemas annotated with them: keeps the emitted declarations small.

/** Strategy families the classifier assigns agent wallets to. */
export type StrategyKind =
  'arbitrage' | 'market-making' | 'momentum' | 'mean-reversion' | 'sniping' | 'liquidation' | 'copy-trading';
export type IntelWindow = '1h' | '24h' | '7d';
export type FlowWindow = '24h' | '7d' | '30d';

/** What an analysis looked at: a token's markets, a strategy family, or that strategy within a token's markets. */
export interface IntelTarget {
  mint: string | null;
  symbol: string | null;
  strategy: StrategyKind | null;
}
export interface IntelPeriod {
  window: string;
  from: string;
  to: string;
}
export interface AgentDensity {
  target: IntelTarget;
  period: IntelPeriod;
  agentCountEstimate: number;
  /** 90 % interval of the estimate. */
  range: { low: number; high: number };
  uniqueTraders: number;
  agentShareOfTraders: number;
  agentShareOfVolume: number;
  densityLevel: 'sparse' | 'moderate' | 'dense' | 'saturated';
  signals: {
    timing: { periodicWallets: number; medianInterTradeSeconds: number | null; sameSlotTradeShare: number };
    patterns: { programmaticWallets: number; repeatedInstructionShapes: number };
    mev: { sandwiches: number; backruns: number; jitoTipShare: number };
  };
  byStrategy: { strategy: StrategyKind; agents: number; volumeShare: number }[];
  sampledTransactions: number;
  source: DataSource;
}
export interface CollisionOverlap {
  wallet: string;
  correlation: number;
  sharedEntries: number;
  sharedExits: number;
}
export interface StrategyCollision {
  target: IntelTarget;
  period: IntelPeriod;
  timeframe: string;
  collisionProbability: number;
  riskLevel: 'low' | 'medium' | 'high' | 'critical';
  components: {
    entryExitCorrelation: number;
    momentumCrowding: number;
    meanReversionCollision: number;
  };
  overlappingAgents: number;
  topOverlaps: CollisionOverlap[];
  mitigations: string[];
  sampledTransactions: number;
  source: DataSource;
}
export interface AlphaCrowding {
  target: IntelTarget;
  period: IntelPeriod;
  crowdingScore: number;
  level: 'uncrowded' | 'moderate' | 'crowded' | 'saturated';
  components: {
    volumeConcentration: { score: number; hhi: number; normalizedHhi: number; topTraderShare: number };
    uniqueTraderDensity: { score: number; uniqueTraders: number; tradesPerTrader: number };
    spreadCompression: { score: number; spreadBps: number; baselineSpreadBps: number; compressionPercent: number };
    orderFlowToxicity: { score: number; vpin: number; buckets: number; bucketVolumeUsd: string };
  };
  weights: {
    volumeConcentration: number;
    uniqueTraderDensity: number;
    spreadCompression: number;
    orderFlowToxicity: number;
  };
  sampledTrades: number;
  source: DataSource;
}
export type MarketEventKind = 'price-move' | 'large-swap' | 'liquidity-change' | 'new-pool';
export interface ReactionEvent {
  signature: string;
  slot: number;
  kind: MarketEventKind;
  at: string;
  firstReactionSlot: number | null;
  reactionDelaySlots: number | null;
  responders: number;
}
export interface ResponseTime {
  target: IntelTarget;
  period: IntelPeriod;
  eventKind: MarketEventKind | 'any';
  eventsAnalyzed: number;
  reactionSlots: { fastest: number; p25: number; median: number; p75: number; p95: number } | null;
  medianReactionMs: number | null;
  slotTimeMs: number | null;
  sameSlotShare: number;
  medianRespondersPerEvent: number;
  fastestAgents: { wallet: string; reactions: number; medianSlots: number; medianMs: number | null }[];
  events: ReactionEvent[];
  source: DataSource;
}
export type CapitalSignal = 'rotation' | 'accumulation' | 'distribution' | 'neutral';
export interface CapitalFlow {
  scope: { mint: string | null; symbol: string | null; walletsTracked: number };
  period: IntelPeriod;
  signal: CapitalSignal;
  signalStrength: number;
  inflowUsd: string;
  outflowUsd: string;
  netFlowUsd: string;
  wallets: { wallet: string; inflowUsd: string; outflowUsd: string; netFlowUsd: string; signal: CapitalSignal }[];
  rotations: {
    fromMint: string;
    fromSymbol: string;
    toMint: string;
    toSymbol: string;
    volumeUsd: string;
    wallets: number;
  }[];
  source: DataSource;
}
export interface StrategyShare {
  strategy: StrategyKind;
  previousShare: number;
  currentShare: number;
  changePoints: number;
}
export interface MetaShift {
  scope: { mint: string | null; symbol: string | null };
  period: IntelPeriod;
  regimeChange: boolean;
  changePoint: string | null;
  confidence: number;
  divergence: number;
  threshold: number;
  previousRegime: { dominantStrategy: StrategyKind; dominantShare: number };
  currentRegime: { dominantStrategy: StrategyKind; dominantShare: number };
  strategies: StrategyShare[];
  agentWalletsClassified: number;
  source: DataSource;
}

const StrategyKindSchema = named(
  'StrategyKind',
  z.enum(['arbitrage', 'market-making', 'momentum', 'mean-reversion', 'sniping', 'liquidation', 'copy-trading']),
);
const EventKindSchema = named('EventKind', z.enum(['price-move', 'large-swap', 'liquidity-change', 'new-pool']));
const CapitalSignalSchema = named('CapitalSignal', z.enum(['rotation', 'accumulation', 'distribution', 'neutral']));
/** A USD value as a decimal string of any precision. */
const UsdValue = z
  .string()
  .regex(/^(0|[1-9]\d*)(\.\d+)?$/, 'must be a non-negative decimal string')
  .describe('USD as a decimal string');
/** A signed USD value (net flows) as a decimal string. */
const SignedUsd = z
  .string()
  .regex(/^-?(0|[1-9]\d*)(\.\d+)?$/, 'must be a signed decimal string')
  .describe('signed USD as a decimal string: positive = net inflow');
const Unit = z.number().min(0).max(1);
const Score = z.number().min(0).max(100);
const Count = z.number().int().min(0);
const Correlation = z.number().min(-1).max(1);

const TargetSchema: z.ZodType<IntelTarget> = named(
  'IntelTarget',
  z
    .object({ mint: SolanaAddress.nullable(), symbol: z.string().nullable(), strategy: StrategyKindSchema.nullable() })
    .describe('what was analysed: a token’s markets, a strategy family, or the strategy within the token’s markets'),
);
const PeriodSchema: z.ZodType<IntelPeriod> = named(
  'IntelPeriod',
  z.object({ window: z.string(), from: Timestamp, to: Timestamp }).describe('the analysed period'),
);

const AgentDensitySchema: z.ZodType<AgentDensity> = named(
  'AgentDensity',
  z.object({
    target: TargetSchema,
    period: PeriodSchema,
    agentCountEstimate: Count,
    range: z.object({ low: Count, high: Count }).describe('90 % interval of the estimate'),
    uniqueTraders: Count,
    agentShareOfTraders: Unit,
    agentShareOfVolume: Unit,
    densityLevel: z
      .enum(['sparse', 'moderate', 'dense', 'saturated'])
      .describe('by agentShareOfVolume: sparse below 0.25, moderate to 0.5, dense to 0.75, saturated above'),
    signals: z.object({
      timing: z.object({
        periodicWallets: Count.describe(
          'wallets whose inter-trade intervals are near-constant (coefficient of variation < 0.2)',
        ),
        medianInterTradeSeconds: z.number().min(0).nullable(),
        sameSlotTradeShare: Unit.describe('share of trades landing in the same slot as the event they follow'),
      }),
      patterns: z.object({
        programmaticWallets: Count.describe('wallets trading only through the same program-call sequence'),
        repeatedInstructionShapes: Count,
      }),
      mev: z.object({
        sandwiches: Count,
        backruns: Count,
        jitoTipShare: Unit.describe('share of trades paying a Jito tip'),
      }),
    }),
    byStrategy: z.array(z.object({ strategy: StrategyKindSchema, agents: Count, volumeShare: Unit })),
    sampledTransactions: Count,
    source: DataSource,
  }),
);
const StrategyCollisionSchema: z.ZodType<StrategyCollision> = named(
  'StrategyCollision',
  z.object({
    target: TargetSchema,
    period: PeriodSchema,
    timeframe: z.string().describe('the bar size the entry/exit series were aligned on'),
    collisionProbability: Unit,
    riskLevel: z
      .enum(['low', 'medium', 'high', 'critical'])
      .describe('low < 0.25 ≤ medium < 0.5 ≤ high < 0.75 ≤ critical'),
    components: z.object({
      entryExitCorrelation: Correlation.describe(
        'Pearson ρ of your strategy’s entry/exit series with the other agents’ flow',
      ),
      momentumCrowding: Unit.describe('share of agent volume trading with the prevailing move'),
      meanReversionCollision: Unit.describe('share of agent volume fading moves at the same bands'),
    }),
    overlappingAgents: Count,
    topOverlaps: z
      .array(z.object({ wallet: SolanaAddress, correlation: Correlation, sharedEntries: Count, sharedExits: Count }))
      .describe('the 10 most correlated agent wallets'),
    mitigations: z.array(z.string()).describe('rule-based suggestions, e.g. shifting entries off the bar boundary'),
    sampledTransactions: Count,
    source: DataSource,
  }),
);
const AlphaCrowdingSchema: z.ZodType<AlphaCrowding> = named(
  'AlphaCrowding',
  z.object({
    target: TargetSchema,
    period: PeriodSchema,
    crowdingScore: z
      .number()
      .int()
      .min(0)
      .max(100)
      .describe('0 (uncrowded) to 100 (saturated): Σ weight × component score'),
    level: z
      .enum(['uncrowded', 'moderate', 'crowded', 'saturated'])
      .describe('below 25, 25 to 49, 50 to 74, 75 and above'),
    components: z.object({
      volumeConcentration: z.object({
        score: Score,
        hhi: Unit.describe('Σ s² of the traders’ volume shares'),
        normalizedHhi: Unit.describe('(HHI − 1/N) / (1 − 1/N)'),
        topTraderShare: Unit,
      }),
      uniqueTraderDensity: z.object({ score: Score, uniqueTraders: Count, tradesPerTrader: z.number().min(0) }),
      spreadCompression: z.object({
        score: Score,
        spreadBps: z
          .number()
          .min(0)
          .describe('(ask − bid) / mid × 10⁴ now; 0 with weight 0 when no quotes are read (source.note)'),
        baselineSpreadBps: z.number().min(0).describe('median spread over the 30 days before the window'),
        compressionPercent: z.number().describe('how much tighter than the baseline, percent'),
      }),
      orderFlowToxicity: z.object({
        score: Score,
        vpin: Unit.describe('volume-synchronised probability of informed trading over the last 50 buckets'),
        buckets: Count,
        bucketVolumeUsd: UsdValue,
      }),
    }),
    weights: z
      .object({
        volumeConcentration: Unit,
        uniqueTraderDensity: Unit,
        spreadCompression: Unit,
        orderFlowToxicity: Unit,
      })
      .describe(
        '0.25 each; they sum to 1. A component the chain read cannot observe (no quotes: spread; no moving price: VPIN) gets weight 0 and the others share its weight, as source.note says',
      ),
    sampledTrades: Count,
    source: DataSource,
  }),
);
const ResponseTimeSchema: z.ZodType<ResponseTime> = named(
  'ResponseTime',
  z.object({
    target: TargetSchema,
    period: PeriodSchema,
    eventKind: z.union([EventKindSchema, z.literal('any')]),
    eventsAnalyzed: Count,
    reactionSlots: z
      .object({ fastest: Count, p25: z.number(), median: z.number(), p75: z.number(), p95: z.number() })
      .nullable()
      .describe('slots from an event to the first agent reaction; null when no event drew a reaction'),
    medianReactionMs: z.number().min(0).nullable().describe('median reaction in slots × slotTimeMs'),
    slotTimeMs: z
      .number()
      .min(0)
      .nullable()
      .describe('mean slot time over the window; null when the chain reported no performance samples'),
    sameSlotShare: Unit.describe('share of reactions landing in the event’s own slot'),
    medianRespondersPerEvent: z.number().min(0),
    fastestAgents: z
      .array(
        z.object({
          wallet: SolanaAddress,
          reactions: Count,
          medianSlots: z.number().min(0),
          medianMs: z.number().min(0).nullable(),
        }),
      )
      .describe('the 10 fastest agent wallets with at least 3 reactions'),
    events: z
      .array(
        z.object({
          signature: SolanaSignature,
          slot: Count,
          kind: EventKindSchema,
          at: Timestamp,
          firstReactionSlot: Count.nullable(),
          reactionDelaySlots: Count.nullable(),
          responders: Count,
        }),
      )
      .describe('the 20 most recent events, newest first'),
    source: DataSource,
  }),
);
const CapitalFlowSchema: z.ZodType<CapitalFlow> = named(
  'CapitalFlow',
  z.object({
    scope: z.object({ mint: SolanaAddress.nullable(), symbol: z.string().nullable(), walletsTracked: Count }),
    period: PeriodSchema,
    signal: CapitalSignalSchema,
    signalStrength: Unit,
    inflowUsd: UsdValue,
    outflowUsd: UsdValue,
    netFlowUsd: SignedUsd,
    wallets: z
      .array(
        z.object({
          wallet: SolanaAddress,
          inflowUsd: UsdValue,
          outflowUsd: UsdValue,
          netFlowUsd: SignedUsd,
          signal: CapitalSignalSchema,
        }),
      )
      .describe('the 25 wallets with the largest gross flow'),
    rotations: z
      .array(
        z.object({
          fromMint: SolanaAddress,
          fromSymbol: z.string(),
          toMint: SolanaAddress,
          toSymbol: z.string(),
          volumeUsd: UsdValue,
          wallets: Count,
        }),
      )
      .describe('the 10 largest token-to-token rotations'),
    source: DataSource,
  }),
);
const MetaShiftSchema: z.ZodType<MetaShift> = named(
  'MetaShift',
  z.object({
    scope: z.object({ mint: SolanaAddress.nullable(), symbol: z.string().nullable() }),
    period: PeriodSchema,
    regimeChange: z.boolean().describe('true when divergence ≥ threshold'),
    changePoint: Timestamp.nullable().describe('the most likely start of the new regime; null without a change'),
    confidence: Unit,
    divergence: Unit.describe(
      'Jensen-Shannon divergence (base 2) of the strategy shares, first half vs second half of the window',
    ),
    threshold: Unit.describe('0.1'),
    previousRegime: z.object({ dominantStrategy: StrategyKindSchema, dominantShare: Unit }),
    currentRegime: z.object({ dominantStrategy: StrategyKindSchema, dominantShare: Unit }),
    strategies: z.array(
      z.object({
        strategy: StrategyKindSchema,
        previousShare: Unit,
        currentShare: Unit,
        changePoints: z.number().describe('currentShare − previousShare in percentage points'),
      }),
    ),
    agentWalletsClassified: Count,
    source: DataSource,
  }),
);

const Mint = SolanaAddress.describe('a token mint: the analysis covers its DEX markets');
const ShortWindow = z.enum(['1h', '24h', '7d']).default('24h').describe('the period analysed, ending now');
const LongWindow = z.enum(['24h', '7d', '30d']).default('7d').describe('the period analysed, ending now');
const targetRule = (body: { mint?: string; strategy?: string }) =>
  body.mint !== undefined || body.strategy !== undefined;
const TARGET_MESSAGE = 'give a mint, a strategy, or both';

const analysisErrors = {
  404: ErrorEnvelope,
  422: ErrorEnvelope,
  502: ErrorEnvelope,
  ...standardErrors,
  ...paymentErrors,
} as const;
const ERRORS_TEXT =
  ' Errors: 404 token_not_found (not a token mint on the chain read), 422 insufficient_activity (fewer than 10 transfers in ' +
  'the window to analyse), 502 upstream_unavailable; none of them is charged.';

const router = c.router({
  agentDensity: {
    method: 'POST',
    path: '/api/agent-density',
    body: z
      .object({ mint: Mint.optional(), strategy: StrategyKindSchema.optional(), window: ShortWindow })
      .strict()
      .refine(targetRule, TARGET_MESSAGE),
    summary: 'How many autonomous agents trade a token or strategy',
    description:
      'Estimates the number of autonomous agents trading a token or strategy from transaction patterns (repeated ' +
      'program-call shapes), timing signatures (periodic wallets, same-slot reactions) and MEV behaviour (sandwiches, ' +
      'backruns, Jito tips), with a 90 % interval and a split by strategy. Design: give `mint`, `strategy` or both. Each ' +
      'transfer of the mint read from the chain is a trade (buyer = receiver, seller = sender); a wallet is an agent when ' +
      'its sends are periodic (coefficient of variation of inter-send slot intervals < 0.2 over ≥ 3 intervals) or react ' +
      'in the slot of another wallet’s transfer (≥ 2, and half its sends); range is the 90 % Wilson interval of the agent ' +
      'share × uniqueTraders; agentShareOfVolume = agent-held sides / (2 × volume).' +
      ERRORS_TEXT,
    responses: { 200: AgentDensitySchema, ...analysisErrors },
    metadata: {
      payment: fixed('0.03'),
      example: { body: { mint: '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU', window: '24h' } },
    } satisfies RouteMeta,
  },
  strategyCollision: {
    method: 'POST',
    path: '/api/strategy-collision',
    body: z
      .object({
        strategy: StrategyKindSchema.describe('your strategy family'),
        mint: Mint.optional(),
        timeframe: z
          .enum(['1m', '5m', '15m', '1h', '4h'])
          .default('15m')
          .describe('the bar size your strategy trades on'),
        wallet: SolanaAddress.optional().describe(
          'your trading wallet: its real entries and exits are compared when given',
        ),
        window: ShortWindow,
      })
      .strict(),
    summary: 'Probability that your strategy overlaps other agents’',
    description:
      'The probability that your strategy collides with other agents’: correlated entry/exit patterns (Pearson ρ of the ' +
      'entry/exit series on the timeframe’s bars), momentum crowding and mean-reversion collisions, the most overlapping ' +
      'agent wallets and rule-based mitigations. Design: collisionProbability = 0.4 × max(0, ρ) + 0.3 × momentumCrowding + ' +
      '0.3 × meanReversionCollision; without `wallet` your series is the strategy family’s canonical signal.' +
      ERRORS_TEXT,
    responses: { 200: StrategyCollisionSchema, ...analysisErrors },
    metadata: {
      payment: fixed('0.05'),
      example: {
        body: { strategy: 'momentum', mint: '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU', timeframe: '5m' },
      },
    } satisfies RouteMeta,
  },
  alphaCrowding: {
    method: 'POST',
    path: '/api/alpha-crowding',
    body: z
      .object({ mint: Mint.optional(), strategy: StrategyKindSchema.optional(), window: ShortWindow })
      .strict()
      .refine(targetRule, TARGET_MESSAGE),
    summary: 'Crowding score from 0 to 100 for a token or strategy',
    description:
      'A crowding score in the range 0 to 100 from four components, each scored 0 to 100 and weighted 0.25: volume ' +
      'concentration (HHI of traders’ volume shares, normalised (HHI − 1/N)/(1 − 1/N)), unique trader density (trades per ' +
      'trader), spread compression (current spread against its 30-day median) and order flow toxicity (VPIN over 50 ' +
      'equal-volume buckets, bulk-volume classified). Design: give `mint`, `strategy` or both.' +
      ERRORS_TEXT,
    responses: { 200: AlphaCrowdingSchema, ...analysisErrors },
    metadata: {
      payment: fixed('0.03'),
      example: { body: { mint: '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU', window: '24h' } },
    } satisfies RouteMeta,
  },
  responseTime: {
    method: 'POST',
    path: '/api/response-time',
    body: z
      .object({
        mint: Mint,
        eventKind: z
          .union([EventKindSchema, z.literal('any')])
          .default('any')
          .describe('the market events to time reactions to'),
        window: z.enum(['1h', '24h']).default('24h').describe('the period analysed, ending now'),
      })
      .strict(),
    summary: 'How fast competing agents react to market events, at block level',
    description:
      'Detects market events on the token’s pools (price moves over 1 %, swaps over 1 % of pool liquidity, liquidity changes, ' +
      'new pools) and measures, in slots, how fast agent wallets trade after each: percentiles of the first reaction, the ' +
      'share reacting in the same slot, responders per event and the fastest agents. Milliseconds are slots × the window’s ' +
      'mean slot time. Design: a window with no event is a 200 with eventsAnalyzed 0 and null reactionSlots.' +
      ERRORS_TEXT,
    responses: { 200: ResponseTimeSchema, ...analysisErrors },
    metadata: {
      payment: fixed('0.03'),
      example: {
        body: { mint: '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU', eventKind: 'large-swap', window: '1h' },
      },
    } satisfies RouteMeta,
  },
  capitalFlow: {
    method: 'POST',
    path: '/api/capital-flow',
    body: z
      .object({
        mint: Mint.optional().describe('only flows into and out of this token'),
        wallets: z
          .array(SolanaAddress)
          .min(1)
          .max(25)
          .optional()
          .describe('only these wallets (1 to 25); all identified agent wallets when absent'),
        window: LongWindow,
      })
      .strict(),
    summary: 'Capital movement of identified agent wallets',
    description:
      'Inflows, outflows and net flow of identified agent wallets, per wallet and in total, the largest token-to-token ' +
      'rotations, and a signal: Design: accumulation when net / gross flow > 0.2, distribution when < −0.2, otherwise ' +
      'rotation when rotated volume exceeds 30 % of gross flow, otherwise neutral; signalStrength is |net / gross| (or the ' +
      'rotated share for rotation). Wallets with no agent activity simply count zero.' +
      ' Errors: 404 token_not_found, 502 upstream_unavailable; neither is charged.',
    responses: { 200: CapitalFlowSchema, 404: ErrorEnvelope, 502: ErrorEnvelope, ...standardErrors, ...paymentErrors },
    metadata: {
      payment: fixed('0.05'),
      example: { body: { mint: '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU', window: '7d' } },
    } satisfies RouteMeta,
  },
  metaShift: {
    method: 'POST',
    path: '/api/meta-shift',
    body: z.object({ mint: Mint.optional().describe('only this token’s markets'), window: LongWindow }).strict(),
    summary: 'Regime changes in the agent strategy landscape',
    description:
      'Classifies agent wallets into strategy families and compares the families’ volume shares in the first and second ' +
      'half of the window. Design: a regime change is detected when the Jensen-Shannon divergence (base 2) of the two share ' +
      'distributions reaches 0.1; changePoint is the split that maximises the divergence; confidence grows with the ' +
      'divergence and the number of classified wallets.' +
      ERRORS_TEXT,
    responses: { 200: MetaShiftSchema, ...analysisErrors },
    metadata: { payment: fixed('0.05'), example: { body: { window: '30d' } } } satisfies RouteMeta,
  },
});

export const intel = defineService({
  id: 'intel',
  title: 'Competitive Intelligence',
  description:
    'Six paid analyses of competing autonomous agents on Solana’s DeFi markets: agent density, strategy collision risk, ' +
    'alpha crowding, response time, capital flow and meta-strategy shift.',
  router,
  dataModes: {
    chain:
      "the deployment's Solana RPC: the local ledger's agent traffic (npm run simulate), or a cluster with SOLANA_RPC_URL; what transfers cannot show is 0 or null, source.note says why",
  },
});
