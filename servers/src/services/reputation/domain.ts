import type {
  ReputationOutcome,
  ReputationProfile,
  ReputationRankedAgent,
  ReputationReport,
  ReputationRole,
  ReputationRoleStats,
  ReputationStats,
  ReputationTier,
} from '@agent-economy/contracts';

// Reputation as plain functions over plain report data. The formulas are the contract's:
//   points  = outcome points, averaged with (rating - 1) × 25 when rated
//   weight  = 1 from a trusted service; amount / (amount + 100 000) when verified by a cited transfer of `amount`
//             atomic units (what was at stake: 0.1 USD weighs 0.5); 0 unverified (kept and shown, weighing nothing);
//             halved every 180 days of age
//   score   = (50 × 5 + Σ weight × points) / (5 + Σ weight)     (Bayesian average, prior 50 with weight 5)
//   confidence = Σ weight / (Σ weight + 5)

export const PRIOR_SCORE = 50;
export const PRIOR_WEIGHT = 5;
/** A trusted service's report: it carried the trade out, so the report is the trade's record, whatever its size. */
export const TRUSTED_WEIGHT = 1;
/**
 * A report a cited transfer verifies weighs amount / (amount + HALF_WEIGHT_ATOMIC): half at 0.1 USD, 0.91 at 1 USD,
 * 0.00001 at one atomic unit. The transfer proves only that the two wallets exchanged that much, and fresh wallets
 * sending dust cost next to nothing, so the weight follows what was at stake.
 */
export const HALF_WEIGHT_ATOMIC = 100_000n;
/** A transfer-verified report is a trade (in trade counts, tiers, volumes) only when it moved at least 0.01 USD. */
export const MIN_TRADE_ATOMIC = 10_000n;
/**
 * A report from a wallet that shows no trade with the subject (no trusted reporter, no cited transfer between the two)
 * weighs nothing: anyone can file one for 0.001 USD, and from fresh wallets without limit, so it must not move a score.
 */
export const UNVERIFIED_WEIGHT = 0;
export const HALF_LIFE_DAYS = 180;
const DAY_MS = 86_400_000;

export const OUTCOME_POINTS: Record<ReputationOutcome, number> = {
  completed: 100,
  auto_released: 80,
  dispute_won: 90,
  dispute_split: 50,
  dispute_lost: 0,
  expired: 0,
};
export const OUTCOMES = Object.keys(OUTCOME_POINTS) as ReputationOutcome[];
export const TIERS: ReputationTier[] = ['unrated', 'new', 'bronze', 'silver', 'gold', 'platinum'];

/**
 * A stored report, as the domain reads it: the contract's report with money as bigint and time as Date (toReport
 * writes them back as an atomic-unit string and an ISO time). The store keeps it as one row of the same shape.
 */
export interface StoredReport extends Omit<ReputationReport, 'amount' | 'createdAt'> {
  amount: bigint | null;
  createdAt: Date;
}

/** The part of a report the score is computed from. */
export type Scored = Pick<StoredReport, 'weight' | 'points' | 'createdAt'>;

export const round = (value: number, places = 2) => {
  const f = 10 ** places;
  return Math.round(value * f) / f;
};

export function reportPoints(outcome: ReputationOutcome, rating?: number | null): number {
  const base = OUTCOME_POINTS[outcome];
  return rating == null ? base : (base + (rating - 1) * 25) / 2;
}

const WEIGHT_SCALE = 10n ** 18n;

/** amount / (amount + HALF_WEIGHT_ATOMIC), divided in bigint (amounts may exceed 2^53) before becoming a number. */
export function transferWeight(amount: bigint): number {
  if (amount <= 0n) return UNVERIFIED_WEIGHT;
  return Number((amount * WEIGHT_SCALE) / (amount + HALF_WEIGHT_ATOMIC)) / Number(WEIGHT_SCALE);
}

/**
 * A report's weight before decay, from its evidence: a trusted reporter's 1, a cited transfer's by the amount the chain
 * shows it moved, nothing for a report without either. Stored with the report, so a score never re-reads the chain.
 */
export function baseWeight(evidence: { trusted: boolean; chainAmount: bigint | null }): number {
  if (evidence.trusted) return TRUSTED_WEIGHT;
  if (evidence.chainAmount != null) return transferWeight(evidence.chainAmount);
  return UNVERIFIED_WEIGHT;
}

/**
 * Whether a report is evidence of a trade: verified, and either from a trusted service (weight 1) or citing a transfer
 * of at least MIN_TRADE_ATOMIC (its amount is then the chain's). A transfer-verified report of less still weighs its
 * little in the score, but is no trade: dust from fresh wallets must not earn a tier or a trade count.
 */
export function isTrade(report: Pick<StoredReport, 'verified' | 'weight' | 'amount'>): boolean {
  if (!report.verified) return false;
  return report.weight >= TRUSTED_WEIGHT || (report.amount != null && report.amount >= MIN_TRADE_ATOMIC);
}

/** A report's weight at `now`: its base weight halved for every 180 days of age. */
export function decayedWeight(report: Pick<Scored, 'weight' | 'createdAt'>, now: Date): number {
  const ageDays = Math.max(0, now.getTime() - report.createdAt.getTime()) / DAY_MS;
  return report.weight * 0.5 ** (ageDays / HALF_LIFE_DAYS);
}

/** Score (unrounded) and total decayed weight of a set of reports at `now`. */
export function scoreOf(reports: readonly Scored[], now: Date): { score: number; totalWeight: number } {
  let weight = 0;
  let weighted = 0;
  for (const r of reports) {
    const w = decayedWeight(r, now);
    weight += w;
    weighted += w * r.points;
  }
  return { score: (PRIOR_SCORE * PRIOR_WEIGHT + weighted) / (PRIOR_WEIGHT + weight), totalWeight: weight };
}

/**
 * The tier from verified trades and reports only (unverified ones are shown but earn nothing; transfer-verified ones of
 * less than MIN_TRADE_ATOMIC are reports, not trades).
 */
export function tierOf(score: number, trades: number, reports: number): ReputationTier {
  if (reports === 0) return 'unrated';
  if (trades < 5) return 'new';
  if (score < 60) return 'bronze';
  if (score < 75) return 'silver';
  if (score < 90 || trades < 20) return 'gold';
  return 'platinum';
}

/**
 * The trades behind a set of reports, from those that are trades (isTrade: an unverified report is no evidence of a
 * trade, and a transfer of dust no trade worth counting). Several such reports may describe one trade: identified by
 * the transaction they cite, else by the escrow id (a report verified by a transfer always cites it, so only a trusted
 * service's report is keyed by escrow id), else each report is a trade of its own. The trade's first report decides
 * its outcome and amount; a later one only supplies an amount the first lacks, so no report can re-outcome or
 * re-amount a trade already on record.
 */
export function tradesOf(reports: readonly StoredReport[]): StoredReport[] {
  const byKey = new Map<string, StoredReport>();
  const oldestFirst = reports
    .filter(isTrade)
    .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  for (const r of oldestFirst) {
    const key = r.signature
      ? `s:${r.signature}:${r.subjectRole}`
      : r.escrowId
        ? `e:${r.escrowId}:${r.subjectRole}`
        : `r:${r.id}`;
    const held = byKey.get(key);
    if (!held) byKey.set(key, r);
    else if (held.amount == null && r.amount != null) byKey.set(key, { ...held, amount: r.amount });
  }
  return [...byKey.values()];
}

const COMPLETED: ReadonlySet<ReputationOutcome> = new Set(['completed', 'auto_released']);
const DISPUTED: ReadonlySet<ReputationOutcome> = new Set(['dispute_won', 'dispute_split', 'dispute_lost']);

interface Summary {
  score: number;
  confidence: number;
  /** Verified trades (isTrade) and verified reports: the only ones any figure counts. */
  trades: number;
  reports: number;
  completed: number;
  disputes: number;
  disputesLost: number;
  expired: number;
  completionRate: number | null;
  disputeRate: number | null;
  averageRating: number | null;
  ratingCount: number;
  volume: bigint;
  lastTradeAt: Date | null;
}

/**
 * Everything the profile and the rankings show about one set of reports (all of an agent's, or one role's), from its
 * verified reports alone: an unverified one may be shown in a history, labelled, but it changes no figure.
 */
export function summarize(all: readonly StoredReport[], now: Date): Summary {
  const reports = all.filter((r) => r.verified);
  const { score, totalWeight } = scoreOf(reports, now);
  const trades = tradesOf(reports);
  // Ratings and the last trade's time come from trades alone: dust from fresh wallets would pull the average anywhere.
  const ratings = reports.filter((r) => isTrade(r) && r.rating != null).map((r) => r.rating!);
  const count = (set: ReadonlySet<ReputationOutcome>) => trades.filter((t) => set.has(t.outcome)).length;
  const completed = count(COMPLETED);
  const disputes = count(DISPUTED);
  const times = reports.filter(isTrade).map((r) => r.createdAt.getTime());
  return {
    score: round(score),
    confidence: round(totalWeight / (totalWeight + PRIOR_WEIGHT), 4),
    trades: trades.length,
    reports: reports.length,
    completed,
    disputes,
    disputesLost: trades.filter((t) => t.outcome === 'dispute_lost').length,
    expired: trades.filter((t) => t.outcome === 'expired').length,
    completionRate: trades.length ? round(completed / trades.length, 4) : null,
    disputeRate: trades.length ? round(disputes / trades.length, 4) : null,
    averageRating: ratings.length ? round(ratings.reduce((a, b) => a + b, 0) / ratings.length) : null,
    ratingCount: ratings.length,
    volume: trades.reduce((sum, t) => sum + (t.amount ?? 0n), 0n),
    lastTradeAt: times.length ? new Date(Math.max(...times)) : null,
  };
}

function roleStats(reports: readonly StoredReport[], role: ReputationRole, now: Date): ReputationRoleStats {
  const s = summarize(
    reports.filter((r) => r.subjectRole === role),
    now,
  );
  return {
    score: s.reports ? s.score : null,
    trades: s.trades,
    completed: s.completed,
    disputes: s.disputes,
    disputesLost: s.disputesLost,
    expired: s.expired,
    completionRate: s.completionRate,
    disputeRate: s.disputeRate,
    volume: s.volume.toString(),
  };
}

export function toReport(r: StoredReport): ReputationReport {
  return {
    ...r,
    amount: r.amount == null ? null : r.amount.toString(),
    points: round(r.points),
    scoreBefore: round(r.scoreBefore),
    scoreAfter: round(r.scoreAfter),
    createdAt: r.createdAt.toISOString(),
  };
}

/**
 * An agent's profile from the reports about it (its figures from the verified ones only); `history` is the page of
 * reports to show, verified or not, each labelled. `seenAt` is the agent's first appearance (verified reports about
 * it, reports it filed or was rated in as a counterparty).
 */
export function buildProfile(
  agentId: string,
  reports: readonly StoredReport[],
  history: { items: StoredReport[]; nextCursor: string | null },
  now: Date,
  seenAt: Date | null = null,
): ReputationProfile {
  const s = summarize(reports, now);
  return {
    agentId,
    score: s.score,
    tier: tierOf(s.score, s.trades, s.reports),
    confidence: s.confidence,
    // Both are verified trades: an unverified report is no trade, however many of them there are.
    tradeCount: s.trades,
    verifiedTradeCount: s.trades,
    averageRating: s.averageRating,
    ratingCount: s.ratingCount,
    volume: s.volume.toString(),
    asSeller: roleStats(reports, 'seller', now),
    asBuyer: roleStats(reports, 'buyer', now),
    firstSeenAt: seenAt ? seenAt.toISOString() : null,
    lastTradeAt: s.lastTradeAt ? s.lastTradeAt.toISOString() : null,
    history: { items: history.items.map(toReport), nextCursor: history.nextCursor },
  };
}

export function groupBySubject(reports: readonly StoredReport[]): Map<string, StoredReport[]> {
  const groups = new Map<string, StoredReport[]>();
  for (const r of reports) {
    const list = groups.get(r.subject) ?? [];
    list.push(r);
    groups.set(r.subject, list);
  }
  return groups;
}

/**
 * Agents ranked by score in `role` (any: all their reports), then trade count, then volume, then address
 * (so the order is total and pages are stable). Only agents with a verified report and at least `minTrades` verified
 * trades in that role: one only strangers reported on has no reputation to rank.
 */
export function rankAgents(
  reports: readonly StoredReport[],
  role: ReputationRole | 'any',
  minTrades: number,
  now: Date,
): Omit<ReputationRankedAgent, 'rank'>[] {
  const ranked: (Omit<ReputationRankedAgent, 'rank'> & { volumeAtomic: bigint })[] = [];
  for (const [agentId, all] of groupBySubject(reports)) {
    const mine = role === 'any' ? all : all.filter((r) => r.subjectRole === role);
    if (!mine.length) continue;
    const s = summarize(mine, now);
    if (!s.reports || s.trades < minTrades) continue;
    // The tier is the agent's overall one, whatever the ranking role.
    const overall = role === 'any' ? s : summarize(all, now);
    ranked.push({
      agentId,
      score: s.score,
      tier: tierOf(overall.score, overall.trades, overall.reports),
      confidence: s.confidence,
      tradeCount: s.trades,
      completionRate: s.completionRate,
      disputeRate: s.disputeRate,
      averageRating: s.averageRating,
      volume: s.volume.toString(),
      volumeAtomic: s.volume,
      lastTradeAt: s.lastTradeAt ? s.lastTradeAt.toISOString() : null,
    });
  }
  ranked.sort(
    (a, b) =>
      b.score - a.score ||
      b.tradeCount - a.tradeCount ||
      (b.volumeAtomic > a.volumeAtomic ? 1 : b.volumeAtomic < a.volumeAtomic ? -1 : 0) ||
      (a.agentId < b.agentId ? -1 : a.agentId > b.agentId ? 1 : 0),
  );
  return ranked.map(({ volumeAtomic: _, ...agent }) => agent);
}

/**
 * Service-wide statistics. Agents are every wallet the reports name as subject or as the rating
 * counterparty; a counterparty nobody reported on is counted as unrated. The average score is over agents with a
 * verified report: the others hold the prior, which reports about random wallets would otherwise pull it toward.
 */
export function buildStats(
  reports: readonly StoredReport[],
  counterparties: ReadonlySet<string>,
  now: Date,
): ReputationStats {
  const tiers = Object.fromEntries(TIERS.map((t) => [t, 0])) as Record<ReputationTier, number>;
  const outcomes = Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Record<ReputationOutcome, number>;
  const groups = groupBySubject(reports);
  let scoreSum = 0;
  let scored = 0;
  for (const list of groups.values()) {
    const s = summarize(list, now);
    if (s.reports) {
      scoreSum += s.score;
      scored += 1;
    }
    tiers[tierOf(s.score, s.trades, s.reports)] += 1;
  }
  const unrated = [...counterparties].filter((a) => !groups.has(a)).length;
  tiers.unrated += unrated;
  for (const r of reports) outcomes[r.outcome] += 1;
  const dayAgo = now.getTime() - DAY_MS;
  return {
    agents: groups.size + unrated,
    reports: reports.length,
    verifiedReports: reports.filter((r) => r.verified).length,
    averageScore: scored ? round(scoreSum / scored) : null,
    tiers,
    outcomes,
    reportsLast24h: reports.filter((r) => r.createdAt.getTime() > dayAgo).length,
    asOf: now.toISOString(),
  };
}

// Cursors are opaque to callers: base64url of the position the next page starts after.

export function encodeCursor(position: Record<string, string | number>): string {
  return Buffer.from(JSON.stringify(position)).toString('base64url');
}

export function decodeCursor(cursor: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
