/** A token balance as getTransaction reports it in `meta.preTokenBalances` / `meta.postTokenBalances`. */
export interface UiTokenBalance {
  owner?: string;
  mint: string;
  uiTokenAmount: { amount: string };
}

export interface TransactionMeta {
  err?: unknown;
  preTokenBalances?: UiTokenBalance[] | null;
  postTokenBalances?: UiTokenBalance[] | null;
}

/**
 * How much of `mint` each owner gained (positive) or lost (negative) in a transaction, summed over all of the owner's
 * token accounts it touched: the chain's own account of who paid whom, whatever instructions moved the tokens.
 */
export function tokenBalanceChanges(meta: TransactionMeta, mint: string): Map<string, bigint> {
  const delta = new Map<string, bigint>();
  const add = (list: UiTokenBalance[] | null | undefined, sign: bigint) => {
    for (const balance of list ?? []) {
      if (balance.mint !== mint || !balance.owner) continue;
      delta.set(balance.owner, (delta.get(balance.owner) ?? 0n) + sign * BigInt(balance.uiTokenAmount.amount));
    }
  };
  add(meta.preTokenBalances, -1n);
  add(meta.postTokenBalances, 1n);
  return delta;
}
