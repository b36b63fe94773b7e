import type {
  AgentDensity,
  AlphaCrowding,
  CapitalFlow,
  CapitalSignal,
  CollisionOverlap,
  IntelPeriod,
  IntelTarget,
  MarketEventKind,
  MetaShift,
  ReactionEvent,
  ResponseTime,
  StrategyCollision,
  StrategyKind,
} from '@agent-economy/contracts';
import { STABLECOIN_DECIMALS } from '@agent-economy/contracts';
import { fromScaled, round, toScaled, uiAmount } from '../../upstream/decimal';
import { coefficientOfVariation, hhi, jensenShannon, pearson, percentile, vpin } from '../../upstream/measures';
import type { ChainTransaction, FlowEvent, MintSample } from './chain';

// The six analyses, pure functions over the transfers read from the chain (chain.ts). Every formula is the one the
// contract and the README state; a figure this chain cannot give is 0 or null and the answer's note says why.

export const STRATEGIES: readonly StrategyKind[] = [
  'arbitrage',
  'market-making',
  'momentum',
  'mean-reversion',
  'sniping',
  'liquidation',
  'copy-trading',
];
/** Fewer flow events than this in the window is 422 insufficient_activity. */
export const MIN_EVENTS = 10;
/** A wallet is periodic when the coefficient of variation of its inter-trade intervals (slots) is below this… */
export const PERIODIC_CV = 0.2;
/** …over at least this many intervals. */
export const MIN_INTERVALS = 3;
/** Slots after an event within which a trade counts as a reaction to it. */
export const REACTION_HORIZON_SLOTS = 150;
/** A "large swap": a transfer of at least this share of the supply. */
export const LARGE_SHARE = 0.01;
/** Jensen-Shannon divergence at or above which the strategy landscape changed regime. */
export const REGIME_THRESHOLD = 0.1;
const Z90 = 1.6448536269514722;

export const WINDOW_SECONDS: Record<string, number> = { '1h': 3600, '24h': 86_400, '7d': 604_800, '30d': 2_592_000 };
export const TIMEFRAME_SECONDS: Record<string, number> = { '1m': 60, '5m': 300, '15m': 900, '1h': 3600, '4h': 14_400 };

export function periodOf(window: string, now: Date): IntelPeriod {
  return {
    window,
    from: new Date(now.getTime() - WINDOW_SECONDS[window]! * 1000).toISOString(),
    to: now.toISOString(),
  };
}

const median = (values: readonly number[]) => percentile(values, 50);

// -------------------------------------------------------------------------------------------------
// Wallet profiles: timing, pattern and strategy signals of every trader in the sample

export interface WalletProfile {
  wallet: string;
  events: FlowEvent[];
  bought: number;
  sold: number;
  /** Slots between the successive transactions in which the wallet sent. */
  intervals: number[];
  cv: number | null;
  periodic: boolean;
  /** Transfers the wallet sent in a slot where another wallet's transfer came before. */
  sameSlotReactions: number;
  reactive: boolean;
  shapes: Set<string>;
  transactions: number;
  programmatic: boolean;
  /** Periodic or reactive: a wallet whose timing a person does not produce. */
  agent: boolean;
  strategy: StrategyKind | null;
}

export interface Landscape {
  events: FlowEvent[];
  profiles: Map<string, WalletProfile>;
  totalVolume: number;
  sameSlotEvents: number;
  /** Slot of the mint's launch (a mint with no sender) when it falls within the sample. */
  launchSlot: number | null;
  transactions: ChainTransaction[];
}

/** Builds every trader's profile and classifies agent wallets into strategy families. */
export function landscape(sample: Pick<MintSample, 'events' | 'transactions'>, mint: string): Landscape {
  const events = [...sample.events].sort((a, b) => a.order - b.order);
  const profiles = new Map<string, WalletProfile>();
  const profile = (wallet: string) => {
    let p = profiles.get(wallet);
    if (!p) {
      p = {
        wallet,
        events: [],
        bought: 0,
        sold: 0,
        intervals: [],
        cv: null,
        periodic: false,
        sameSlotReactions: 0,
        reactive: false,
        shapes: new Set(),
        transactions: 0,
        programmatic: false,
        agent: false,
        strategy: null,
      };
      profiles.set(wallet, p);
    }
    return p;
  };
  let totalVolume = 0;
  let sameSlotEvents = 0;
  const seenInSlot = new Map<number, FlowEvent[]>();
  for (const e of events) {
    totalVolume += e.size;
    profile(e.buyer).events.push(e);
    profile(e.buyer).bought += e.size;
    profile(e.seller).events.push(e);
    profile(e.seller).sold += e.size;
    const slotmates = seenInSlot.get(e.slot) ?? [];
    if (reactsInSlot(e, slotmates)) {
      sameSlotEvents++;
      profile(e.seller).sameSlotReactions++;
    }
    seenInSlot.set(e.slot, [...slotmates, e]);
  }
  let launchSlot: number | null = null;
  for (const tx of sample.transactions) {
    const owners = [...tx.changes].filter(([, byMint]) => (byMint.get(mint)?.change ?? 0n) !== 0n);
    if (owners.length > 0 && launchSlot === null && owners.every(([, byMint]) => byMint.get(mint)!.change > 0n))
      launchSlot = tx.slot;
    for (const [owner] of owners) {
      const p = profiles.get(owner);
      if (!p) continue;
      p.transactions++;
      p.shapes.add(tx.shape);
    }
  }
  for (const p of profiles.values()) {
    // Timing is what the wallet does: the transfers it sends (it signs them), not the ones it receives.
    const slots = [
      ...new Map(p.events.filter((e) => e.seller === p.wallet).map((e) => [e.signature, e.slot])).values(),
    ].sort((a, b) => a - b);
    for (let i = 1; i < slots.length; i++) p.intervals.push(slots[i]! - slots[i - 1]!);
    p.cv = coefficientOfVariation(p.intervals);
    p.periodic = p.intervals.length >= MIN_INTERVALS && p.cv !== null && p.cv < PERIODIC_CV;
    const sent = p.events.filter((e) => e.seller === p.wallet).length;
    p.reactive = p.sameSlotReactions >= 2 && p.sameSlotReactions * 2 >= sent;
    p.programmatic = p.transactions >= 3 && p.shapes.size === 1;
    p.agent = p.periodic || p.reactive;
  }
  for (const p of profiles.values()) if (p.agent) p.strategy = classify(p, events, launchSlot);
  return { events, profiles, totalVolume, sameSlotEvents, launchSlot, transactions: sample.transactions };
}

const side = (e: FlowEvent, wallet: string) => (e.buyer === wallet ? 1 : -1);

/**
 * A same-slot reaction: the sender acts in a slot where another transaction's transfer, not involving it, came first.
 */
const reactsInSlot = (e: FlowEvent, earlierInSlot: readonly FlowEvent[]) =>
  earlierInSlot.some((f) => f.signature !== e.signature && f.seller !== e.seller && f.buyer !== e.seller);

/**
 * The strategy family of an agent wallet, first rule that holds: sniping (first buy within 10 slots of a launch in
 * the window), arbitrage (buys and sells in one slot at least twice), copy-trading (at least 3 and half of its trades
 * follow the same wallet's same-direction trade within 3 slots), market-making (4+ trades on both sides with
 * |bought − sold| / (bought + sold) ≤ 0.2), else momentum or mean-reversion by how often it trades with the last
 * price change (priced trades) or, unpriced, with its own previous direction (≥ 0.5: momentum).
 */
export function classify(p: WalletProfile, events: readonly FlowEvent[], launchSlot: number | null): StrategyKind {
  const firstBuy = p.events.find((e) => e.buyer === p.wallet);
  if (launchSlot !== null && firstBuy && firstBuy.slot - launchSlot <= 10) return 'sniping';
  const bySlot = new Map<number, Set<number>>();
  for (const e of p.events) bySlot.set(e.slot, (bySlot.get(e.slot) ?? new Set()).add(side(e, p.wallet)));
  if ([...bySlot.values()].filter((s) => s.size === 2).length >= 2) return 'arbitrage';
  const leaders = new Map<string, number>();
  for (const e of p.events) {
    const dir = side(e, p.wallet);
    const followed = new Set<string>();
    // Events are in chain order: walk back from this one while within 3 slots.
    for (let at = events.indexOf(e) - 1; at >= 0; at--) {
      const f = events[at]!;
      if (e.slot - f.slot > 3) break;
      if (f.signature === e.signature) continue;
      const leader = dir === 1 ? f.buyer : f.seller;
      if (leader !== p.wallet && f.buyer !== p.wallet && f.seller !== p.wallet) followed.add(leader);
    }
    for (const leader of followed) leaders.set(leader, (leaders.get(leader) ?? 0) + 1);
  }
  const copied = Math.max(0, ...leaders.values());
  if (copied >= 3 && copied * 2 >= p.events.length) return 'copy-trading';
  const gross = p.bought + p.sold;
  if (p.events.length >= 4 && p.bought > 0 && p.sold > 0 && Math.abs(p.bought - p.sold) / gross <= 0.2)
    return 'market-making';
  return trendAgreement(p, events) >= 0.5 ? 'momentum' : 'mean-reversion';
}

/**
 * Share of the wallet's trades in the direction of the last price change before them (or, unpriced, of its own previous
 * trade).
 */
export function trendAgreement(p: WalletProfile, events: readonly FlowEvent[]): number {
  let agree = 0;
  let counted = 0;
  const priced = events.filter((e) => e.price !== null);
  for (let i = 0; i < p.events.length; i++) {
    const e = p.events[i]!;
    const before = priced.filter((f) => f.order < e.order).slice(-2);
    let trend: number | null = null;
    if (before.length === 2 && before[1]!.price !== before[0]!.price)
      trend = Math.sign(before[1]!.price! - before[0]!.price!);
    else if (priced.length === 0 && i > 0) trend = side(p.events[i - 1]!, p.wallet);
    if (trend === null) continue;
    counted++;
    if (side(e, p.wallet) === trend) agree++;
  }
  return counted > 0 ? agree / counted : 0.5;
}

/** The events a target covers: all of the mint's, or those with an agent of `strategy` on a side. */
export function eventsFor(land: Landscape, strategy: StrategyKind | null): FlowEvent[] {
  if (!strategy) return land.events;
  const of = (w: string) => land.profiles.get(w)?.strategy === strategy;
  return land.events.filter((e) => of(e.buyer) || of(e.seller));
}

/** Wilson score interval (90 %) of k successes in n trials, as counts: floor of the low bound, ceiling of the high. */
export function wilsonRange(k: number, n: number): { low: number; high: number } {
  if (n === 0) return { low: 0, high: 0 };
  const p = k / n;
  const z2 = Z90 * Z90;
  const centre = (p + z2 / (2 * n)) / (1 + z2 / n);
  const half = (Z90 * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / (1 + z2 / n);
  return {
    low: Math.max(0, Math.min(k, Math.floor((centre - half) * n + 1e-9))),
    high: Math.min(n, Math.max(k, Math.ceil((centre + half) * n - 1e-9))),
  };
}

/**
 * Sandwiches (X buys, another wallet trades, X sells, consecutively in one slot) and backruns (other wallets' smaller
 * trade right after a trade, same slot).
 */
export function mevCounts(events: readonly FlowEvent[]): { sandwiches: number; backruns: number } {
  const bySlot = new Map<number, FlowEvent[]>();
  for (const e of events) bySlot.set(e.slot, [...(bySlot.get(e.slot) ?? []), e]);
  let sandwiches = 0;
  let backruns = 0;
  for (const list of bySlot.values()) {
    for (let i = 0; i + 2 < list.length; i++) {
      const [a, v, b] = [list[i]!, list[i + 1]!, list[i + 2]!];
      if (a.buyer === b.seller && v.buyer !== a.buyer && v.seller !== a.buyer) sandwiches++;
    }
    for (let i = 0; i + 1 < list.length; i++) {
      const [big, next] = [list[i]!, list[i + 1]!];
      const parties = new Set([big.buyer, big.seller]);
      if (
        next.signature !== big.signature &&
        next.size < big.size &&
        !parties.has(next.buyer) &&
        !parties.has(next.seller)
      )
        backruns++;
    }
  }
  return { sandwiches, backruns };
}

export interface Scope {
  target: IntelTarget;
  period: IntelPeriod;
  /** Seconds per slot × 1000 over the window (the chain's performance samples). */
  slotTimeMs: number | null;
}

// -------------------------------------------------------------------------------------------------
// Agent density

export function agentDensity(land: Landscape, scope: Scope, sampledTransactions: number): Omit<AgentDensity, 'source'> {
  const events = eventsFor(land, scope.target.strategy);
  const traders = new Set(events.flatMap((e) => [e.buyer, e.seller]));
  const agentsOf = (w: string) => {
    const p = land.profiles.get(w)!;
    return p.agent && (!scope.target.strategy || p.strategy === scope.target.strategy);
  };
  const agents = [...traders].filter(agentsOf);
  const volume = events.reduce((s, e) => s + e.size, 0);
  // Each transfer has two sides; a side is agent volume when an agent holds it.
  const agentVolume = events.reduce(
    (s, e) => s + (agentsOf(e.buyer) ? e.size : 0) + (agentsOf(e.seller) ? e.size : 0),
    0,
  );
  const agentShareOfVolume = volume > 0 ? round(agentVolume / (2 * volume)) : 0;
  const intervals = [...traders].flatMap((w) => land.profiles.get(w)!.intervals);
  const medianSlots = median(intervals);
  const seenInSlot = new Map<number, FlowEvent[]>();
  let sameSlot = 0;
  for (const e of events) {
    const slotmates = seenInSlot.get(e.slot) ?? [];
    if (reactsInSlot(e, slotmates)) sameSlot++;
    seenInSlot.set(e.slot, [...slotmates, e]);
  }
  const signatures = new Set(events.map((e) => e.signature));
  const txs = land.transactions.filter((t) => signatures.has(t.signature));
  const shapeCounts = new Map<string, number>();
  for (const t of txs) shapeCounts.set(t.shape, (shapeCounts.get(t.shape) ?? 0) + 1);
  const byStrategy = STRATEGIES.map((strategy) => {
    const of = agents.filter((w) => land.profiles.get(w)!.strategy === strategy);
    const set = new Set(of);
    const v = events.reduce((s, e) => s + (set.has(e.buyer) ? e.size : 0) + (set.has(e.seller) ? e.size : 0), 0);
    return { strategy, agents: of.length, volumeShare: volume > 0 ? round(v / (2 * volume)) : 0 };
  }).filter((s) => s.agents > 0);
  return {
    target: scope.target,
    period: scope.period,
    agentCountEstimate: agents.length,
    range: wilsonRange(agents.length, traders.size),
    uniqueTraders: traders.size,
    agentShareOfTraders: traders.size > 0 ? round(agents.length / traders.size) : 0,
    agentShareOfVolume,
    densityLevel:
      agentShareOfVolume < 0.25
        ? 'sparse'
        : agentShareOfVolume < 0.5
          ? 'moderate'
          : agentShareOfVolume < 0.75
            ? 'dense'
            : 'saturated',
    signals: {
      timing: {
        periodicWallets: [...traders].filter((w) => land.profiles.get(w)!.periodic).length,
        medianInterTradeSeconds:
          medianSlots !== null && scope.slotTimeMs !== null ? round((medianSlots * scope.slotTimeMs) / 1000, 3) : null,
        sameSlotTradeShare: events.length > 0 ? round(sameSlot / events.length) : 0,
      },
      patterns: {
        programmaticWallets: [...traders].filter((w) => land.profiles.get(w)!.programmatic).length,
        repeatedInstructionShapes: [...shapeCounts.values()].filter((n) => n >= 3).length,
      },
      mev: {
        ...mevCounts(events),
        jitoTipShare: txs.length > 0 ? round(txs.filter((t) => t.jitoTip).length / txs.length) : 0,
      },
    },
    byStrategy,
    sampledTransactions,
  };
}

// -------------------------------------------------------------------------------------------------
// Alpha crowding

/** Equal-volume buckets (V = total / 50) of the priced trades, each with its last price change. */
export function volumeBuckets(events: readonly FlowEvent[], count = 50): { volume: number; priceChanges: number[] } {
  const priced = events.filter((e) => e.price !== null);
  const total = priced.reduce((s, e) => s + e.size, 0);
  if (priced.length < 2 || total <= 0) return { volume: 0, priceChanges: [] };
  const volume = total / count;
  const changes: number[] = [];
  let filled = 0;
  let open = priced[0]!.price!;
  let last = open;
  for (const e of priced) {
    filled += e.size;
    last = e.price!;
    while (filled >= volume - 1e-12 && changes.length < count) {
      changes.push(last - open);
      open = last;
      filled -= volume;
    }
  }
  return { volume, priceChanges: changes };
}

export function alphaCrowding(
  land: Landscape,
  scope: Scope,
): { result: Omit<AlphaCrowding, 'source'>; notes: string[] } {
  const events = eventsFor(land, scope.target.strategy);
  const notes: string[] = [];
  const byTrader = new Map<string, number>();
  for (const e of events) {
    byTrader.set(e.buyer, (byTrader.get(e.buyer) ?? 0) + e.size);
    byTrader.set(e.seller, (byTrader.get(e.seller) ?? 0) + e.size);
  }
  const total = [...byTrader.values()].reduce((a, b) => a + b, 0);
  const shares = [...byTrader.values()].map((v) => (total > 0 ? v / total : 0));
  const n = shares.length;
  const h = hhi(shares);
  const normalized = n > 1 ? round(Math.max(0, (h - 1 / n) / (1 - 1 / n))) : 1;
  const concentration = {
    score: round(normalized * 100, 2),
    hhi: h,
    normalizedHhi: normalized,
    topTraderShare: round(Math.max(0, ...shares)),
  };
  const density = {
    score: n > 1 ? round(Math.min(1, Math.log(n) / Math.log(1000)) * 100, 2) : 0,
    uniqueTraders: n,
    tradesPerTrader: n > 0 ? round(events.length / n, 4) : 0,
  };
  const { volume, priceChanges } = volumeBuckets(events);
  const v = vpin(priceChanges, volume);
  const toxicity = {
    score: v === null ? 0 : round(v * 100, 2),
    vpin: v ?? 0,
    buckets: v === null ? 0 : Math.min(50, priceChanges.length),
    // A bucket's volume in USD at the window's volume-weighted price.
    bucketVolumeUsd: v === null ? '0' : decimalOf(volume * vwapOf(events)),
  };
  if (v === null)
    notes.push(
      'order-flow toxicity is 0 with weight 0: VPIN needs a moving price, and no trade in the window paid a varying stablecoin price for this token',
    );
  notes.push(
    'spread compression is 0 with weight 0: the transfers read carry no bid/ask quotes (no order book or AMM pool is read)',
  );
  const weightOf = {
    volumeConcentration: 1,
    uniqueTraderDensity: 1,
    spreadCompression: 0,
    orderFlowToxicity: v === null ? 0 : 1,
  };
  const sum =
    weightOf.volumeConcentration +
    weightOf.uniqueTraderDensity +
    weightOf.spreadCompression +
    weightOf.orderFlowToxicity;
  const weights = {
    volumeConcentration: round(weightOf.volumeConcentration / sum),
    uniqueTraderDensity: round(weightOf.uniqueTraderDensity / sum),
    spreadCompression: 0,
    orderFlowToxicity: round(weightOf.orderFlowToxicity / sum),
  };
  const score = Math.round(
    weights.volumeConcentration * concentration.score +
      weights.uniqueTraderDensity * density.score +
      weights.orderFlowToxicity * toxicity.score,
  );
  const crowdingScore = Math.max(0, Math.min(100, score));
  return {
    result: {
      target: scope.target,
      period: scope.period,
      crowdingScore,
      level:
        crowdingScore < 25
          ? 'uncrowded'
          : crowdingScore < 50
            ? 'moderate'
            : crowdingScore < 75
              ? 'crowded'
              : 'saturated',
      components: {
        volumeConcentration: concentration,
        uniqueTraderDensity: density,
        spreadCompression: { score: 0, spreadBps: 0, baselineSpreadBps: 0, compressionPercent: 0 },
        orderFlowToxicity: toxicity,
      },
      weights,
      sampledTrades: events.length,
    },
    notes,
  };
}

/** Σ price × size / Σ size over the priced trades; 0 without any. */
const vwapOf = (events: readonly FlowEvent[]) => {
  const priced = events.filter((e) => e.price !== null);
  const size = priced.reduce((s, e) => s + e.size, 0);
  return size > 0 ? priced.reduce((s, e) => s + e.price! * e.size, 0) / size : 0;
};

/** A non-negative display figure as a decimal string (at most 6 decimals). */
const decimalOf = (x: number) => fromScaled(toScaled(Math.max(0, round(x, 6))) ?? 0n);

// -------------------------------------------------------------------------------------------------
// Strategy collision

/** Net entries (+size) and exits (−size) per bar of `barSeconds` from `fromSeconds`, over `bars` bars. */
export function barSeries(
  events: readonly FlowEvent[],
  wallet: string,
  fromSeconds: number,
  barSeconds: number,
  bars: number,
): number[] {
  const out = new Array<number>(bars).fill(0);
  for (const e of events) {
    if (e.buyer !== wallet && e.seller !== wallet) continue;
    const at = Math.min(bars - 1, Math.max(0, Math.floor((e.blockTime - fromSeconds) / barSeconds)));
    out[at]! += side(e, wallet) * e.size;
  }
  return out;
}

export function strategyCollision(
  land: Landscape,
  scope: Scope,
  input: { strategy: StrategyKind; timeframe: string; wallet?: string; fromSeconds: number; toSeconds: number },
  sampledTransactions: number,
): Omit<StrategyCollision, 'source'> {
  const barSeconds = TIMEFRAME_SECONDS[input.timeframe]!;
  const bars = Math.max(1, Math.ceil((input.toSeconds - input.fromSeconds) / barSeconds));
  const agents = [...land.profiles.values()].filter((p) => p.agent && p.wallet !== input.wallet);
  const series = new Map(
    agents.map((p) => [p.wallet, barSeries(land.events, p.wallet, input.fromSeconds, barSeconds, bars)]),
  );
  const others = new Array<number>(bars).fill(0);
  for (const s of series.values()) s.forEach((x, i) => (others[i]! += x));
  // Your series: your wallet's real entries and exits, or the family's canonical signal on the agents' flow.
  let mine: number[];
  if (input.wallet) mine = barSeries(land.events, input.wallet, input.fromSeconds, barSeconds, bars);
  else {
    const lagged = [0, ...others.slice(0, -1)].map(Math.sign);
    mine =
      input.strategy === 'mean-reversion'
        ? lagged.map((x) => -x)
        : input.strategy === 'market-making'
          ? others.map((x) => -Math.sign(x))
          : lagged;
  }
  const rho = pearson(mine, others) ?? 0;
  const overlaps: CollisionOverlap[] = agents
    .map((p) => {
      const s = series.get(p.wallet)!;
      return {
        wallet: p.wallet,
        correlation: pearson(mine, s) ?? 0,
        sharedEntries: s.filter((x, i) => x > 0 && mine[i]! > 0).length,
        sharedExits: s.filter((x, i) => x < 0 && mine[i]! < 0).length,
      };
    })
    .sort(
      (a, b) => b.correlation - a.correlation || b.sharedEntries + b.sharedExits - (a.sharedEntries + a.sharedExits),
    );
  let withMove = 0;
  let against = 0;
  let agentVolume = 0;
  for (const p of agents) {
    const share = trendAgreement(p, land.events);
    const v = p.bought + p.sold;
    agentVolume += v;
    withMove += share * v;
    against += (1 - share) * v;
  }
  const momentumCrowding = agentVolume > 0 ? round(withMove / agentVolume) : 0;
  const meanReversionCollision = agentVolume > 0 ? round(against / agentVolume) : 0;
  const same =
    input.strategy === 'momentum' ? momentumCrowding : input.strategy === 'mean-reversion' ? meanReversionCollision : 0;
  const probability = round(
    Math.min(1, 0.4 * Math.max(0, rho) + 0.3 * momentumCrowding + 0.3 * meanReversionCollision),
  );
  const mitigations: string[] = [];
  if (rho >= 0.5)
    mitigations.push(
      `shift entries off the ${input.timeframe} bar boundary: your entries move with other agents’ flow (ρ = ${round(rho, 3)})`,
    );
  if (momentumCrowding >= 0.5)
    mitigations.push('momentum is crowded: enter after the first reaction instead of on the move');
  if (meanReversionCollision >= 0.5) mitigations.push('mean-reversion bands are shared: widen or randomise your bands');
  if (same >= 0.5)
    mitigations.push(`most agent volume already trades ${input.strategy}: size down or use a longer timeframe`);
  if (mitigations.length === 0) mitigations.push('no crowding signal above 0.5: no change needed');
  return {
    target: scope.target,
    period: scope.period,
    timeframe: input.timeframe,
    collisionProbability: probability,
    riskLevel: probability < 0.25 ? 'low' : probability < 0.5 ? 'medium' : probability < 0.75 ? 'high' : 'critical',
    components: { entryExitCorrelation: rho, momentumCrowding, meanReversionCollision },
    overlappingAgents: overlaps.filter((o) => o.correlation >= 0.5).length,
    topOverlaps: overlaps.slice(0, 10),
    mitigations,
    sampledTransactions,
  };
}

// -------------------------------------------------------------------------------------------------
// Response time

export function responseTime(
  land: Landscape,
  scope: Scope,
  input: { eventKind: MarketEventKind | 'any'; supply: bigint },
): Omit<ResponseTime, 'source'> {
  const threshold = Number(input.supply) * LARGE_SHARE;
  const wantLarge = input.eventKind === 'any' || input.eventKind === 'large-swap';
  const marketEvents = wantLarge ? land.events.filter((e) => Number(e.amount) >= threshold && threshold > 0) : [];
  const slotMs = scope.slotTimeMs ?? 0;
  const firsts: number[] = [];
  const responders: number[] = [];
  const byAgent = new Map<string, number[]>();
  const out: ReactionEvent[] = [];
  for (const ev of marketEvents) {
    const reacted = new Map<string, number>();
    for (const e of land.events) {
      if (e.order <= ev.order || e.slot - ev.slot > REACTION_HORIZON_SLOTS) continue;
      for (const w of [e.seller, e.buyer]) {
        if (w === ev.buyer || w === ev.seller || !land.profiles.get(w)?.agent || reacted.has(w)) continue;
        reacted.set(w, e.slot - ev.slot);
      }
    }
    const delays = [...reacted.values()];
    const first = delays.length > 0 ? Math.min(...delays) : null;
    if (first !== null) firsts.push(first);
    responders.push(reacted.size);
    for (const [w, d] of reacted) byAgent.set(w, [...(byAgent.get(w) ?? []), d]);
    out.push({
      signature: ev.signature,
      slot: ev.slot,
      kind: 'large-swap',
      at: new Date(ev.blockTime * 1000).toISOString(),
      firstReactionSlot: first === null ? null : ev.slot + first,
      reactionDelaySlots: first,
      responders: reacted.size,
    });
  }
  const med = median(firsts);
  return {
    target: scope.target,
    period: scope.period,
    eventKind: input.eventKind,
    eventsAnalyzed: marketEvents.length,
    reactionSlots:
      firsts.length === 0
        ? null
        : {
            fastest: Math.min(...firsts),
            p25: percentile(firsts, 25)!,
            median: med!,
            p75: percentile(firsts, 75)!,
            p95: percentile(firsts, 95)!,
          },
    medianReactionMs: med === null || scope.slotTimeMs === null ? null : round(med * slotMs, 3),
    // Unknown without the chain's performance samples: null, never a 0 that reads as measured.
    slotTimeMs: scope.slotTimeMs === null ? null : round(slotMs, 3),
    sameSlotShare: firsts.length > 0 ? round(firsts.filter((d) => d === 0).length / firsts.length) : 0,
    medianRespondersPerEvent: median(responders) ?? 0,
    fastestAgents: [...byAgent]
      .filter(([, d]) => d.length >= 3)
      .map(([wallet, d]) => ({
        wallet,
        reactions: d.length,
        medianSlots: median(d)!,
        medianMs: scope.slotTimeMs === null ? null : round(median(d)! * slotMs, 3),
      }))
      .sort((a, b) => a.medianSlots - b.medianSlots || b.reactions - a.reactions)
      .slice(0, 10),
    events: out.reverse().slice(0, 20),
  };
}

// -------------------------------------------------------------------------------------------------
// Capital flow

/**
 * USD of an event in stablecoin base units: the stablecoin amount, or the token at the window's volume-weighted price.
 */
export function usdAtomic(
  e: FlowEvent,
  vwap: { paid: bigint; amount: bigint } | null,
  isStable: boolean,
): bigint | null {
  if (isStable) return e.amount;
  if (e.paid !== null) return e.paid;
  if (!vwap || vwap.amount === 0n) return null;
  return (e.amount * vwap.paid) / vwap.amount;
}

const usd = (atomic: bigint) => uiAmount(atomic < 0n ? -atomic : atomic, STABLECOIN_DECIMALS);
const signedUsd = (atomic: bigint) => (atomic < 0n ? `-${usd(atomic)}` : usd(atomic));

export function signalOf(
  inflow: bigint,
  outflow: bigint,
  rotated: bigint,
): { signal: CapitalSignal; strength: number } {
  const gross = inflow + outflow;
  if (gross === 0n) return { signal: 'neutral', strength: 0 };
  const ratio = Number(((inflow - outflow) * 1_000_000n) / gross) / 1_000_000;
  if (ratio > 0.2) return { signal: 'accumulation', strength: round(ratio) };
  if (ratio < -0.2) return { signal: 'distribution', strength: round(-ratio) };
  const rotatedShare = Number((rotated * 1_000_000n) / gross) / 1_000_000;
  if (rotatedShare > 0.3) return { signal: 'rotation', strength: round(Math.min(1, rotatedShare)) };
  return { signal: 'neutral', strength: round(Math.abs(ratio)) };
}

export interface Rotation {
  fromMint: string;
  toMint: string;
  volume: bigint;
  wallets: Set<string>;
}

/**
 * Token-to-token rotations inside one transaction: an owner whose one mint fell while another rose, valued by the
 * stablecoin leg.
 */
export function rotations(
  transactions: readonly ChainTransaction[],
  tracked: (w: string) => boolean,
  stablecoin: string,
): { rotations: Rotation[]; byWallet: Map<string, bigint> } {
  const found = new Map<string, Rotation>();
  const byWallet = new Map<string, bigint>();
  for (const tx of transactions) {
    for (const [owner, byMint] of tx.changes) {
      if (!tracked(owner)) continue;
      const stable = byMint.get(stablecoin);
      if (!stable || byMint.size < 2) continue;
      for (const [mint, { change }] of byMint) {
        if (mint === stablecoin || change === 0n || stable.change < 0n === change < 0n) continue;
        const [fromMint, toMint] = change > 0n ? [stablecoin, mint] : [mint, stablecoin];
        const key = `${fromMint}>${toMint}`;
        const r = found.get(key) ?? { fromMint, toMint, volume: 0n, wallets: new Set<string>() };
        const volume = stable.change < 0n ? -stable.change : stable.change;
        r.volume += volume;
        r.wallets.add(owner);
        found.set(key, r);
        byWallet.set(owner, (byWallet.get(owner) ?? 0n) + volume);
      }
    }
  }
  return {
    rotations: [...found.values()].sort((a, b) => (a.volume === b.volume ? 0 : a.volume > b.volume ? -1 : 1)),
    byWallet,
  };
}

export function capitalFlow(
  land: Landscape,
  input: {
    mint: string;
    symbol: string | null;
    wallets?: readonly string[];
    stablecoin: string;
    period: IntelPeriod;
    symbols: Map<string, string>;
  },
): Omit<CapitalFlow, 'source'> & { unpriced: number } {
  const isStable = input.mint === input.stablecoin;
  const given = input.wallets ? new Set(input.wallets) : null;
  const tracked = (w: string) => (given ? given.has(w) : land.profiles.get(w)?.agent === true);
  const priced = land.events.filter((e) => e.paid !== null);
  const vwap =
    priced.length > 0
      ? { paid: priced.reduce((s, e) => s + e.paid!, 0n), amount: priced.reduce((s, e) => s + e.amount, 0n) }
      : null;
  const flows = new Map<string, { inflow: bigint; outflow: bigint }>();
  for (const w of given ?? []) flows.set(w, { inflow: 0n, outflow: 0n });
  let unpriced = 0;
  for (const e of land.events) {
    const value = usdAtomic(e, vwap, isStable);
    if (value === null) {
      unpriced++;
      continue;
    }
    for (const [w, dir] of [
      [e.buyer, 'inflow'],
      [e.seller, 'outflow'],
    ] as const) {
      if (!tracked(w)) continue;
      const f = flows.get(w) ?? { inflow: 0n, outflow: 0n };
      f[dir] += value;
      flows.set(w, f);
    }
  }
  const rotated = rotations(land.transactions, tracked, input.stablecoin);
  let inflow = 0n;
  let outflow = 0n;
  for (const f of flows.values()) {
    inflow += f.inflow;
    outflow += f.outflow;
  }
  const totalRotated = [...rotated.byWallet.values()].reduce((a, b) => a + b, 0n);
  const { signal, strength } = signalOf(inflow, outflow, totalRotated);
  const wallets = [...flows]
    .map(([wallet, f]) => ({ wallet, ...f, gross: f.inflow + f.outflow }))
    .sort((a, b) => (a.gross === b.gross ? a.wallet.localeCompare(b.wallet) : a.gross > b.gross ? -1 : 1))
    .slice(0, 25)
    .map(({ wallet, inflow: i, outflow: o }) => ({
      wallet,
      inflowUsd: usd(i),
      outflowUsd: usd(o),
      netFlowUsd: signedUsd(i - o),
      signal: signalOf(i, o, rotated.byWallet.get(wallet) ?? 0n).signal,
    }));
  return {
    scope: {
      mint: input.mint,
      symbol: input.symbol,
      walletsTracked: given ? given.size : [...land.profiles.values()].filter((p) => p.agent).length,
    },
    period: input.period,
    signal,
    signalStrength: strength,
    inflowUsd: usd(inflow),
    outflowUsd: usd(outflow),
    netFlowUsd: signedUsd(inflow - outflow),
    wallets,
    rotations: rotated.rotations.slice(0, 10).map((r) => ({
      fromMint: r.fromMint,
      fromSymbol: input.symbols.get(r.fromMint) ?? '',
      toMint: r.toMint,
      toSymbol: input.symbols.get(r.toMint) ?? '',
      volumeUsd: usd(r.volume),
      wallets: r.wallets.size,
    })),
    unpriced,
  };
}

// -------------------------------------------------------------------------------------------------
// Meta-shift

/** Volume share of each strategy family among agent trades of `events` (both sides). */
export function strategyShares(land: Landscape, events: readonly FlowEvent[]): number[] {
  const volume = STRATEGIES.map(() => 0);
  for (const e of events) {
    for (const w of [e.buyer, e.seller]) {
      const s = land.profiles.get(w)?.strategy;
      if (s) volume[STRATEGIES.indexOf(s)]! += e.size;
    }
  }
  const total = volume.reduce((a, b) => a + b, 0);
  return volume.map((v) => (total > 0 ? round(v / total) : 0));
}

export function metaShift(
  land: Landscape,
  input: { scope: MetaShift['scope']; period: IntelPeriod },
): Omit<MetaShift, 'source'> & { emptyHalf: boolean } {
  const from = Date.parse(input.period.from) / 1000;
  const to = Date.parse(input.period.to) / 1000;
  const middle = (from + to) / 2;
  const agentEvents = land.events.filter(
    (e) => land.profiles.get(e.buyer)?.strategy || land.profiles.get(e.seller)?.strategy,
  );
  const previous = strategyShares(
    land,
    agentEvents.filter((e) => e.blockTime < middle),
  );
  const current = strategyShares(
    land,
    agentEvents.filter((e) => e.blockTime >= middle),
  );
  // A half with no agent trade has no distribution to compare: no divergence, and the answer says so.
  const emptyHalf = previous.every((x) => x === 0) || current.every((x) => x === 0);
  const divergence = emptyHalf ? 0 : jensenShannon(previous, current);
  // The change point: the split between consecutive agent trades that maximises the divergence of before and after.
  let best = { divergence: -1, at: null as number | null };
  const times = [...new Set(agentEvents.map((e) => e.blockTime))].sort((a, b) => a - b);
  for (const t of times.slice(1)) {
    const d = jensenShannon(
      strategyShares(
        land,
        agentEvents.filter((e) => e.blockTime < t),
      ),
      strategyShares(
        land,
        agentEvents.filter((e) => e.blockTime >= t),
      ),
    );
    if (d > best.divergence) best = { divergence: d, at: t };
  }
  const classified = [...land.profiles.values()].filter((p) => p.strategy).length;
  const dominant = (shares: number[]) => {
    const i = shares.reduce((bi, s, j) => (s > shares[bi]! ? j : bi), 0);
    return { dominantStrategy: STRATEGIES[i]!, dominantShare: shares[i]! };
  };
  const regimeChange = divergence >= REGIME_THRESHOLD;
  return {
    scope: input.scope,
    period: input.period,
    regimeChange,
    changePoint: regimeChange && best.at !== null ? new Date(best.at * 1000).toISOString() : null,
    confidence: round(Math.min(1, divergence / (2 * REGIME_THRESHOLD)) * (classified / (classified + 5))),
    divergence,
    threshold: REGIME_THRESHOLD,
    previousRegime: dominant(previous),
    currentRegime: dominant(current),
    strategies: STRATEGIES.map((strategy, i) => ({
      strategy,
      previousShare: previous[i]!,
      currentShare: current[i]!,
      changePoints: round((current[i]! - previous[i]!) * 100, 4),
    })),
    agentWalletsClassified: classified,
    emptyHalf,
  };
}
