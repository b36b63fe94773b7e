import type { Signature } from '@solana/kit';
import type { SolanaSource } from '../../upstream/solana';

/** What the chain says about a transaction a report cites. */
export interface TransferCheck {
  /** True when the transaction is confirmed, succeeded, and moved the stablecoin from one party to the other. */
  transfer: boolean;
  /** Atomic units the receiving party gained, when it is a transfer. */
  amount: bigint | null;
  reason: string;
}

interface UiTokenBalance {
  owner?: string;
  mint: string;
  uiTokenAmount: { amount: string };
}

/**
 * Reads `signature` from the chain and decides whether it moved `mint` between `a` and `b` (either way):
 * one party's token balance fell and the other's rose. A chain that does not answer is a 502 (from `source`).
 */
export async function checkTransfer(source: SolanaSource, signature: string, a: string, b: string, mint: string): Promise<TransferCheck> {
  const tx = await source.read((rpc) =>
    rpc.getTransaction(signature as Signature, { encoding: 'json', maxSupportedTransactionVersion: 0, commitment: 'confirmed' }).send(),
  );
  if (!tx) return { transfer: false, amount: null, reason: 'the transaction is not confirmed on the chain' };
  const meta = tx.meta as unknown as { err: unknown; preTokenBalances?: UiTokenBalance[] | null; postTokenBalances?: UiTokenBalance[] | null } | null;
  if (!meta) return { transfer: false, amount: null, reason: 'the chain has no status for the transaction' };
  if (meta.err) return { transfer: false, amount: null, reason: 'the transaction failed' };
  const delta = new Map<string, bigint>();
  const add = (list: UiTokenBalance[] | null | undefined, sign: bigint) => {
    for (const balance of list ?? []) {
      if (balance.mint !== mint || !balance.owner) continue;
      delta.set(balance.owner, (delta.get(balance.owner) ?? 0n) + sign * BigInt(balance.uiTokenAmount.amount));
    }
  };
  add(meta.preTokenBalances, -1n);
  add(meta.postTokenBalances, 1n);
  const da = delta.get(a) ?? 0n;
  const db = delta.get(b) ?? 0n;
  if ((da < 0n && db > 0n) || (db < 0n && da > 0n)) return { transfer: true, amount: da > 0n ? da : db, reason: 'a confirmed stablecoin transfer between the two parties' };
  return { transfer: false, amount: null, reason: 'the transaction moved no stablecoin between the reporter and the subject' };
}
