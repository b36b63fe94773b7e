import { createHash, randomBytes } from 'node:crypto';
import {
  atomicToUsd,
  base58Encode,
  type Challenge,
  type ChallengeStatus,
  type ConnectedWallet,
  type Wager,
  type WagerFlip,
  type WagerTransfer,
} from '@agent-economy/contracts';

// The wager service's rules as plain functions over plain data: amounts, the house cut, the coin flip's inputs,
// and the on-chain check of a stake transfer.

export interface WagerLimitsAtomic {
  min: bigint;
  max: bigint;
  /** HOUSE_CUT_PERCENT in basis points (5 % = 500), so that the cut is exact integer arithmetic. */
  houseCutBps: number;
  challengeTtlSeconds: number;
}

export const newChallengeId = () => `chl_${base58Encode(randomBytes(16))}`;
export const newWagerId = () => `wgr_${base58Encode(randomBytes(16))}`;

export const bpsToPercent = (bps: number) => bps / 100;

/** The house cut of a pot: pot × bps / 10 000, rounded down to the atomic unit (the player keeps the remainder). */
export function houseCutOf(pot: bigint, bps: number): bigint {
  return (pot * BigInt(bps)) / 10_000n;
}

export function splitPot(stake: bigint, bps: number): { pot: bigint; houseCut: bigint; payout: bigint } {
  const pot = stake * 2n;
  const houseCut = houseCutOf(pot, bps);
  return { pot, houseCut, payout: pot - houseCut };
}

/** A fresh secret seed (32 bytes, hex) and its commitment, SHA-256 of the seed's bytes. */
export function newSeed(): { seed: string; seedHash: string } {
  const seed = randomBytes(32).toString('hex');
  return { seed, seedHash: seedHashOf(seed) };
}

export const seedHashOf = (seed: string) => createHash('sha256').update(Buffer.from(seed, 'hex')).digest('hex');

/** The flip's clientSeed: fixed by the committed seed and both stakes before the chain is harvested. */
export function clientSeedOf(
  seed: string,
  challengeId: string,
  challengerStake: string,
  opponentStake: string,
): string {
  return createHash('sha256')
    .update(`${seed}:${challengeId}:${challengerStake}:${opponentStake}`, 'utf8')
    .digest('hex');
}

export const winnerOf = (outcome: 'heads' | 'tails'): 'challenger' | 'opponent' =>
  outcome === 'heads' ? 'challenger' : 'opponent';

// ---------------------------------------------------------------------------------------------------
// The stake check: a confirmed transaction as getTransaction(jsonParsed) returns it

interface ParsedInstruction {
  programId?: string;
  program?: string;
  parsed?: { type?: string; info?: Record<string, unknown> };
}

export interface ParsedTransactionView {
  blockTime?: number | bigint | null;
  meta?: { err?: unknown; innerInstructions?: { instructions?: ParsedInstruction[] }[] | null } | null;
  transaction?: { message?: { instructions?: ParsedInstruction[] } };
}

export interface StakeExpectation {
  /** The player's wallet: the transfer's authority, owner of its source account. */
  player: string;
  /** The player's and the vault's token accounts of the stablecoin, by token program. */
  sourceAccounts: ReadonlySet<string>;
  vaultAccounts: ReadonlySet<string>;
  mint: string;
  amount: bigint;
}

const TOKEN_TRANSFERS = new Set(['transfer', 'transferChecked']);

/**
 * Why a transaction does not pay a stake, or null when it does: it succeeded, and its token transfers into the vault
 * are TransferChecked of the stablecoin from the player's token account with the player as authority, summing to
 * exactly the stake (one signature funds one stake: anything more would be lost in the vault).
 */
export function stakeProblem(tx: ParsedTransactionView | null, expected: StakeExpectation): string | null {
  if (!tx) return 'no confirmed transaction has this signature';
  if (!tx.meta) return 'the transaction has no status';
  if (tx.meta.err !== null && tx.meta.err !== undefined) return 'the transaction failed on chain';
  const all = [
    ...(tx.transaction?.message?.instructions ?? []),
    ...(tx.meta.innerInstructions ?? []).flatMap((group) => group.instructions ?? []),
  ];
  let total = 0n;
  let seen = 0;
  for (const ix of all) {
    const type = ix.parsed?.type;
    const info = ix.parsed?.info;
    if (!type || !info || !TOKEN_TRANSFERS.has(type) || !String(ix.program ?? '').startsWith('spl-token')) continue;
    if (!expected.vaultAccounts.has(String(info.destination))) continue;
    seen += 1;
    if (type !== 'transferChecked') return 'the transfer to the vault is not a TransferChecked';
    if (info.mint !== expected.mint) return `the transfer is not of the stablecoin ${expected.mint}`;
    if (info.authority !== expected.player) return 'the transfer was not signed by your connected wallet';
    if (!expected.sourceAccounts.has(String(info.source))) return 'the transfer does not come from your token account';
    const amount = (info.tokenAmount as { amount?: unknown } | undefined)?.amount;
    if (typeof amount !== 'string' || !/^\d+$/.test(amount)) return 'the transfer has no amount';
    total += BigInt(amount);
  }
  if (seen === 0) return 'the transaction transfers nothing to the vault';
  if (total !== expected.amount)
    return `the transaction pays the vault ${atomicToUsd(total)} USD, not the stake of ${atomicToUsd(expected.amount)} USD`;
  return null;
}

// ---------------------------------------------------------------------------------------------------
// Stored records and their wire forms

export interface StoredUser {
  address: string;
  username: string;
  connected: boolean;
  connectedAt: Date;
}

export interface StoredChallenge {
  id: string;
  status: ChallengeStatus;
  challenger: string;
  challengerName: string;
  opponent: string;
  opponentName: string;
  amount: bigint;
  message: string | null;
  seed: string;
  seedHash: string;
  stakeTx: string;
  refundTx: string | null;
  wagerId: string | null;
  createdAt: Date;
  expiresAt: Date;
  respondedAt: Date | null;
}

export interface StoredFlip {
  clientSeed: string;
  outcome: 'heads' | 'tails';
  derivation: WagerFlip['derivation'];
  proof: WagerFlip['proof'];
  fee: bigint;
  feeTx: string | null;
}

export interface StoredWager {
  id: string;
  challengeId: string;
  status: 'active' | 'settled' | 'void';
  challenger: string;
  challengerName: string;
  opponent: string;
  opponentName: string;
  amount: bigint;
  houseCutBps: number;
  houseCut: bigint;
  payout: bigint;
  seed: string;
  seedHash: string;
  challengerStakeTx: string;
  opponentStakeTx: string;
  flip: StoredFlip | null;
  payoutTx: string | null;
  createdAt: Date;
  settledAt: Date | null;
  /** When it became void (no flip within WAGER_VOID_HOURS); null otherwise. */
  voidedAt: Date | null;
  /** A void wager's refund of each player's stake; null until sent. */
  challengerRefundTx: string | null;
  opponentRefundTx: string | null;
}

export interface StoredTransfer {
  kind: 'stake' | 'refund' | 'payout';
  from: string;
  to: string;
  amount: bigint;
  tx: string;
  confirmedAt: Date;
}

export const toChallenge = (c: StoredChallenge): Challenge => ({
  challengeId: c.id,
  status: c.status,
  challenger: { username: c.challengerName, address: c.challenger },
  opponent: { username: c.opponentName, address: c.opponent },
  amountUsd: atomicToUsd(c.amount),
  message: c.message,
  seedHash: c.seedHash,
  stakeTxSignature: c.stakeTx,
  refundTxSignature: c.refundTx,
  wagerId: c.wagerId,
  createdAt: c.createdAt.toISOString(),
  expiresAt: c.expiresAt.toISOString(),
  respondedAt: c.respondedAt?.toISOString() ?? null,
});

export const toTransfer = (t: StoredTransfer): WagerTransfer => ({
  kind: t.kind,
  from: t.from,
  to: t.to,
  amountUsd: atomicToUsd(t.amount),
  txSignature: t.tx,
  confirmedAt: t.confirmedAt.toISOString(),
});

export function toWager(w: StoredWager, transfers: StoredTransfer[], chain: { network: string; vault: string }): Wager {
  return {
    wagerId: w.id,
    challengeId: w.challengeId,
    status: w.status,
    network: chain.network,
    vaultAddress: chain.vault,
    challenger: { username: w.challengerName, address: w.challenger },
    opponent: { username: w.opponentName, address: w.opponent },
    amountUsd: atomicToUsd(w.amount),
    potUsd: atomicToUsd(w.amount * 2n),
    houseCutPercent: bpsToPercent(w.houseCutBps),
    houseCutUsd: atomicToUsd(w.houseCut),
    payoutUsd: atomicToUsd(w.payout),
    winner: w.flip ? winnerOf(w.flip.outcome) : null,
    seedHash: w.seedHash,
    // The seed stays secret until the flip that it feeds is drawn.
    seed: w.flip ? w.seed : null,
    flip: w.flip
      ? {
          clientSeed: w.flip.clientSeed,
          outcome: w.flip.outcome,
          derivation: w.flip.derivation,
          proof: w.flip.proof,
          feeUsd: atomicToUsd(w.flip.fee),
          feeTxSignature: w.flip.feeTx,
        }
      : null,
    transfers: transfers.map(toTransfer),
    createdAt: w.createdAt.toISOString(),
    settledAt: w.settledAt?.toISOString() ?? null,
    // Only a void wager carries these: active and settled ones keep their shape.
    ...(w.status === 'void'
      ? {
          voidedAt: w.voidedAt?.toISOString() ?? null,
          refundTxSignatures: { challenger: w.challengerRefundTx, opponent: w.opponentRefundTx },
        }
      : {}),
  };
}

/** Whether a wager is due to be voided at `now`: still without a flip longer than `voidAfterMs` after acceptance. */
export const voidDue = (w: StoredWager, now: Date, voidAfterMs: number): boolean =>
  w.status === 'active' && !w.flip && now.getTime() - w.createdAt.getTime() > voidAfterMs;

export interface RecordFacts {
  wagers: number;
  wins: number;
  wagered: bigint;
  won: bigint;
}

export function toConnectedWallet(
  user: StoredUser,
  network: string,
  balance: bigint | null,
  record: RecordFacts,
): ConnectedWallet {
  return {
    username: user.username,
    address: user.address,
    network,
    connectedAt: user.connectedAt.toISOString(),
    balanceUsd: balance === null ? null : atomicToUsd(balance),
    record: {
      wagers: record.wagers,
      wins: record.wins,
      losses: record.wagers - record.wins,
      wageredUsd: atomicToUsd(record.wagered),
      wonUsd: atomicToUsd(record.won),
    },
  };
}
