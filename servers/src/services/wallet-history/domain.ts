import {
  WALLET_ACTIVITY_TIERS,
  atomicToUsd,
  usdToAtomic,
  type PaymentMeta,
  type ProtocolCategory,
  type WalletActivityTier,
  type WalletCategoryShare,
  type WalletProtocolActivity,
  type WalletProtocolHistory,
  type WalletTierDefinition,
  type WalletUnknownProgram,
} from '@agent-economy/contracts';
import { PROGRAM_LABELS, USD_STABLECOINS, type ProtocolLabel } from './programs';

// Plain functions over plain data: the activity tier of a transaction count, and the breakdown of a
// wallet's transactions by the protocols they invoke.

/** How long a quote's estimate, and so its tier, holds (the contract's `validUntil`). */
export const QUOTE_VALIDITY_MS = 10 * 60 * 1000;
/** Unknown programs listed at most. */
export const MAX_UNKNOWN_PROGRAMS = 20;

/** The tier of a wallet with `count` transactions: light < 100 <= moderate < 1,000 <= heavy < 10,000 <= whale. */
export function tierFor(count: number): WalletActivityTier {
  if (!Number.isInteger(count) || count < 0)
    throw new RangeError(`a transaction count is a non-negative integer, not ${count}`);
  const tier = WALLET_ACTIVITY_TIERS.find(
    (t) => count >= t.minTransactions && (t.maxTransactions === null || count <= t.maxTransactions),
  );
  return tier!.id;
}

/**
 * What a deployment charges for a tier, as the paywall would price it: the contract's tier prices, or the
 * deployment's override of the route (free, one fixed price, its own tiers, or an adaptive range the tier
 * price is clamped into).
 */
export function tierPriceUsd(payment: PaymentMeta, tier: WalletActivityTier): string {
  const contractUsd = WALLET_ACTIVITY_TIERS.find((t) => t.id === tier)!.usd;
  switch (payment.kind) {
    case 'free':
      return '0';
    case 'fixed':
      return atomicToUsd(usdToAtomic(payment.usd));
    case 'tiered':
      return atomicToUsd(usdToAtomic(payment.tiers.find((t) => t.id === tier)?.usd ?? contractUsd));
    case 'adaptive': {
      const [min, max, usd] = [usdToAtomic(payment.minUsd), usdToAtomic(payment.maxUsd), usdToAtomic(contractUsd)];
      return atomicToUsd(usd < min ? min : usd > max ? max : usd);
    }
  }
}

/** Every tier with its thresholds and this deployment's price. */
export function tierTable(payment: PaymentMeta): WalletTierDefinition[] {
  return WALLET_ACTIVITY_TIERS.map((t) => ({ ...t, usd: tierPriceUsd(payment, t.id) }));
}

/**
 * The tier a paid call was charged at, from the amount it paid (the tiers' prices differ, so the amount
 * names the tier); the estimate's tier when nothing was paid or the amount matches no tier.
 */
export function chargedTier(
  payment: PaymentMeta,
  estimated: WalletActivityTier,
  paidAtomic: bigint | undefined,
): WalletActivityTier {
  if (paidAtomic === undefined) return estimated;
  if (usdToAtomic(tierPriceUsd(payment, estimated)) === paidAtomic) return estimated;
  return WALLET_ACTIVITY_TIERS.find((t) => usdToAtomic(tierPriceUsd(payment, t.id)) === paidAtomic)?.id ?? estimated;
}

/** `since` as a Date, or an explanation of why it is not a real instant (the schema checks only its shape). */
export function parseSince(since: string | undefined): Date | undefined | { error: string } {
  if (since === undefined) return undefined;
  const date = new Date(since);
  if (Number.isNaN(date.getTime()) || date.toISOString() !== since) return { error: 'is not a real date and time' };
  return date;
}

/** One transaction of the wallet, reduced to what the analysis needs. */
export interface WalletTransaction {
  signature: string;
  /** Unix seconds of its block. */
  blockTime: number;
  failed: boolean;
  /** The network fee, lamports, when the wallet paid it (it was the fee payer); else 0. */
  feePaid: bigint;
  /** Every program it invoked, top level and through CPI, each once. */
  programs: string[];
  /** The wallet's SOL balance change, lamports, not counting the fee it paid. */
  lamportChange: bigint;
  /** Changes of the wallet's own token balances by mint (non-zero only). */
  tokenChanges: { mint: string; decimals: number; change: bigint }[];
}

export type ProtocolBreakdown = Omit<
  WalletProtocolHistory,
  'wallet' | 'network' | 'tier' | 'chargedUsd' | 'truncated' | 'source'
>;

const iso = (unixSeconds: number) => new Date(unixSeconds * 1000).toISOString();
const utcDay = (unixSeconds: number) => Math.floor(unixSeconds / 86_400);
const share = (part: number, whole: number) => (whole === 0 ? 0 : Math.round((part / whole) * 10_000) / 100);
const abs = (n: bigint) => (n < 0n ? -n : n);

/**
 * The value a transaction moved for the wallet, as far as it can be priced: USD stablecoins count at 1 USD
 * (in micro-dollars); SOL and every other token have no price source here, so they only mark the
 * transaction as having moved unpriced value.
 */
export function valueMoved(tx: WalletTransaction): {
  tokens: { pricedMicroUsd: bigint; unpriced: boolean };
  sol: boolean;
} {
  let pricedMicroUsd = 0n;
  let unpriced = false;
  for (const { mint, decimals, change } of tx.tokenChanges) {
    if (change === 0n) continue;
    if (USD_STABLECOINS.get(mint) === decimals) pricedMicroUsd += abs(change) * 10n ** BigInt(6 - decimals);
    else unpriced = true;
  }
  return { tokens: { pricedMicroUsd, unpriced }, sol: tx.lamportChange !== 0n };
}

interface Tally {
  label: ProtocolLabel;
  programIds: Set<string>;
  count: number;
  first: number;
  last: number;
  days: Set<number>;
  pricedMicroUsd: bigint;
  priced: boolean;
  unpriced: boolean;
}

/**
 * The USD volume of a protocol: the stablecoins its transactions moved for the wallet; null where they
 * moved only value that cannot be priced (SOL, other tokens) or the protocol moves no value of its own
 * (compute budget, memo, lookup tables) or only SOL (System, staking, account rent).
 */
function volumeOf(t: Tally): string | null {
  if (t.label.moves === 'none' || t.label.moves === 'sol') return null;
  if (t.priced) return atomicToUsd(t.pricedMicroUsd);
  return t.unpriced ? null : '0';
}

/** Breaks transactions down by protocol and category; a transaction invoking several protocols counts for each. */
export function analyse(transactions: readonly WalletTransaction[]): ProtocolBreakdown {
  const tallies = new Map<string, Tally>();
  const unknown = new Map<string, number>();
  const categories = new Map<ProtocolCategory, number>();
  const days = new Set<number>();
  let failed = 0;
  let fees = 0n;
  let first: number | null = null;
  let last: number | null = null;

  for (const tx of transactions) {
    if (tx.failed) failed += 1;
    fees += tx.feePaid;
    days.add(utcDay(tx.blockTime));
    first = first === null || tx.blockTime < first ? tx.blockTime : first;
    last = last === null || tx.blockTime > last ? tx.blockTime : last;
    const moved = valueMoved(tx);
    const seenProtocols = new Set<string>();
    const seenCategories = new Set<ProtocolCategory>();
    for (const program of new Set(tx.programs)) {
      const label = PROGRAM_LABELS.get(program);
      if (!label) {
        unknown.set(program, (unknown.get(program) ?? 0) + 1);
        continue;
      }
      let tally = tallies.get(label.id);
      if (!tally) {
        tally = {
          label,
          programIds: new Set(),
          count: 0,
          first: tx.blockTime,
          last: tx.blockTime,
          days: new Set(),
          pricedMicroUsd: 0n,
          priced: false,
          unpriced: false,
        };
        tallies.set(label.id, tally);
      }
      tally.programIds.add(program);
      seenCategories.add(label.category);
      if (seenProtocols.has(label.id)) continue;
      seenProtocols.add(label.id);
      tally.count += 1;
      tally.first = Math.min(tally.first, tx.blockTime);
      tally.last = Math.max(tally.last, tx.blockTime);
      tally.days.add(utcDay(tx.blockTime));
      tally.pricedMicroUsd += moved.tokens.pricedMicroUsd;
      tally.priced ||= moved.tokens.pricedMicroUsd > 0n;
      // Token programs move tokens only; DeFi programs move either.
      tally.unpriced ||= moved.tokens.unpriced || (label.moves === 'any' && moved.sol);
    }
    for (const category of seenCategories) categories.set(category, (categories.get(category) ?? 0) + 1);
  }

  const total = transactions.length;
  const protocols = [...tallies.values()]
    .map((t): WalletProtocolActivity => ({
      protocol: t.label.id,
      name: t.label.name,
      category: t.label.category,
      programIds: [...t.programIds].sort(),
      transactionCount: t.count,
      sharePercent: share(t.count, total),
      firstInteractionAt: iso(t.first),
      lastInteractionAt: iso(t.last),
      activeDays: t.days.size,
      volumeUsd: volumeOf(t),
    }))
    .sort((a, b) => b.transactionCount - a.transactionCount || a.protocol.localeCompare(b.protocol));
  return {
    transactionCount: total,
    failedTransactionCount: failed,
    firstActivityAt: first === null ? null : iso(first),
    lastActivityAt: last === null ? null : iso(last),
    activeDays: days.size,
    feesPaidLamports: fees.toString(),
    protocols,
    categories: [...categories.entries()]
      .map(([category, count]) => ({ category, transactionCount: count, sharePercent: share(count, total) }))
      .sort((a, b) => b.transactionCount - a.transactionCount || a.category.localeCompare(b.category)),
    unknownPrograms: [...unknown.entries()]
      .map(([programId, transactionCount]) => ({ programId, transactionCount }))
      .sort((a, b) => b.transactionCount - a.transactionCount || a.programId.localeCompare(b.programId))
      .slice(0, MAX_UNKNOWN_PROGRAMS),
  };
}
