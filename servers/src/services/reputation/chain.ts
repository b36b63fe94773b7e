import type { Signature } from '@solana/kit';
import { tokenBalanceChanges, type TransactionMeta } from '../../solana/token-balances';
import type { SolanaSource } from '../../upstream/solana';

/** What the chain says about a transaction a report cites. */
export interface TransferCheck {
  /** True when the transaction is confirmed, succeeded, and moved the stablecoin from one party to the other. */
  transfer: boolean;
  /** Atomic units the receiving party gained, when it is a transfer. */
  amount: bigint | null;
  /** Which party received the funds, when it is a transfer: who sold, as far as the chain can tell. */
  payee: string | null;
  reason: string;
}

/**
 * Reads `signature` from the chain and decides whether it moved `mint` between `a` and `b` (either way):
 * one party's token balance fell and the other's rose. A chain that does not answer is a 502 (from `source`).
 */
export async function checkTransfer(
  source: SolanaSource,
  signature: string,
  a: string,
  b: string,
  mint: string,
): Promise<TransferCheck> {
  const none = (reason: string): TransferCheck => ({ transfer: false, amount: null, payee: null, reason });
  const tx = await source.read((rpc) =>
    rpc
      .getTransaction(signature as Signature, {
        encoding: 'json',
        maxSupportedTransactionVersion: 0,
        commitment: 'confirmed',
      })
      .send(),
  );
  if (!tx) return none('the transaction is not confirmed on the chain');
  const meta = tx.meta as unknown as TransactionMeta | null;
  if (!meta) return none('the chain has no status for the transaction');
  if (meta.err) return none('the transaction failed');
  const delta = tokenBalanceChanges(meta, mint);
  const da = delta.get(a) ?? 0n;
  const db = delta.get(b) ?? 0n;
  if ((da < 0n && db > 0n) || (db < 0n && da > 0n))
    return {
      transfer: true,
      amount: da > 0n ? da : db,
      payee: da > 0n ? a : b,
      reason: 'a confirmed stablecoin transfer between the two parties',
    };
  return none('the transaction moved no stablecoin between the reporter and the subject');
}
