import { WALLET_HISTORY_MAX_TRANSACTIONS } from '@agent-economy/contracts';
import type { SolanaSource } from '../../upstream/solana';
import type { WalletTransaction } from './domain';
import type { WalletHistoryStore } from './store';

// Reads a wallet's history from the chain: its signatures (getSignaturesForAddress, newest first, 1,000 a
// page) and each transaction (getTransaction, in JSON-RPC batches of a hundred, a few in flight). Every read
// goes through the source's tracker, so a chain that does not answer is 502 upstream_unavailable and counts
// against the health route. A finalized transaction never changes: its analysis is kept in memory
// (ANALYSED_KEPT, newest use kept) and in the database (shared by replicas, kept across restarts), so asking
// again about a wallet reads only what is new from the chain.

/** getSignaturesForAddress returns at most this many signatures a call. */
const PAGE = 1000;
/** Analyses of finalized transactions kept in memory, per (wallet, signature): about 300 bytes each. */
const ANALYSED_KEPT = 50_000;

export interface SignatureEntry {
  signature: string;
  slot: bigint;
  blockTime: number | null;
  /** Only a finalized transaction's analysis is kept: a confirmed one could still be rolled back on a cluster. */
  finalized?: boolean;
}

export interface SignatureList {
  /** The newest signatures within `since`, at most `limit`. */
  entries: SignatureEntry[];
  /** True when the wallet has more history within `since` than `limit`. */
  truncated: boolean;
}

/** The parts of a getTransaction result (json encoding) the analysis reads. */
interface RpcTransaction {
  blockTime: bigint | number | null;
  meta: {
    err: unknown;
    fee: bigint | number;
    preBalances: readonly (bigint | number)[];
    postBalances: readonly (bigint | number)[];
    preTokenBalances?: readonly RpcTokenBalance[] | null;
    postTokenBalances?: readonly RpcTokenBalance[] | null;
    innerInstructions?: readonly { instructions: readonly { programIdIndex: bigint | number }[] }[] | null;
    loadedAddresses?: { writable: readonly string[]; readonly: readonly string[] } | null;
  } | null;
  transaction: {
    message: { accountKeys: readonly string[]; instructions: readonly { programIdIndex: bigint | number }[] };
  };
}

interface RpcTokenBalance {
  accountIndex: bigint | number;
  mint: string;
  owner?: string;
  uiTokenAmount: { amount: string; decimals: bigint | number };
}

/** A getTransaction result as the analysis sees the wallet's part in it. */
export function toWalletTransaction(
  wallet: string,
  signature: string,
  blockTime: number,
  tx: RpcTransaction,
): WalletTransaction {
  const { message } = tx.transaction;
  const meta = tx.meta;
  const keys = [
    ...message.accountKeys,
    ...(meta?.loadedAddresses?.writable ?? []),
    ...(meta?.loadedAddresses?.readonly ?? []),
  ];
  const programs = new Set<string>();
  for (const ix of message.instructions) programs.add(keys[Number(ix.programIdIndex)] ?? '');
  for (const group of meta?.innerInstructions ?? [])
    for (const ix of group.instructions) programs.add(keys[Number(ix.programIdIndex)] ?? '');
  programs.delete('');

  const index = keys.indexOf(wallet);
  const payer = index === 0;
  const fee = BigInt(meta?.fee ?? 0);
  let lamportChange = 0n;
  if (meta && index >= 0 && meta.preBalances[index] !== undefined && meta.postBalances[index] !== undefined) {
    lamportChange = BigInt(meta.postBalances[index]!) - BigInt(meta.preBalances[index]!) + (payer ? fee : 0n);
  }

  // The wallet's token accounts, by account index: post minus pre (an account opened or closed counts from 0).
  const balances = new Map<number, { mint: string; decimals: number; pre: bigint; post: bigint }>();
  const take = (list: readonly RpcTokenBalance[] | null | undefined, side: 'pre' | 'post') => {
    for (const b of list ?? []) {
      if (b.owner !== wallet) continue;
      const at = Number(b.accountIndex);
      const entry = balances.get(at) ?? { mint: b.mint, decimals: Number(b.uiTokenAmount.decimals), pre: 0n, post: 0n };
      entry[side] = BigInt(b.uiTokenAmount.amount);
      balances.set(at, entry);
    }
  };
  take(meta?.preTokenBalances, 'pre');
  take(meta?.postTokenBalances, 'post');
  const byMint = new Map<string, { mint: string; decimals: number; change: bigint }>();
  for (const { mint, decimals, pre, post } of balances.values()) {
    const entry = byMint.get(mint) ?? { mint, decimals, change: 0n };
    entry.change += post - pre;
    byMint.set(mint, entry);
  }

  return {
    signature,
    blockTime,
    failed: meta ? meta.err !== null && meta.err !== undefined : false,
    feePaid: payer ? fee : 0n,
    programs: [...programs],
    lamportChange,
    tokenChanges: [...byMint.values()].filter((c) => c.change !== 0n),
  };
}

/** getSignaturesForAddress's items, as JSON. */
interface RpcSignature {
  signature: string;
  slot: number;
  blockTime: number | null;
  confirmationStatus: string | null;
}

/** Where finalized transactions' analyses are kept beyond this process (the service's database). */
export type KeptAnalyses = Pick<WalletHistoryStore, 'keptAnalyses' | 'keepAnalyses'>;

export function historyReader(
  chain: SolanaSource,
  kept?: KeptAnalyses,
  /** A kept analysis that could not be written (the answer is not failed for it: it is read from the chain again). */
  onKeepError: (error: unknown) => void = () => undefined,
) {
  let network: string | undefined;
  const analysed = new Map<string, WalletTransaction | null>();
  const keep = (key: string, value: WalletTransaction | null) => {
    analysed.delete(key);
    analysed.set(key, value);
    if (analysed.size > ANALYSED_KEPT) analysed.delete(analysed.keys().next().value!);
  };

  return {
    /** The CAIP-2 id of the chain read, from its genesis hash (read once: it never changes). */
    async network(): Promise<string> {
      network ??= `solana:${(await chain.read((rpc) => rpc.getGenesisHash().send())).slice(0, 32)}`;
      return network;
    },

    /**
     * The wallet's newest signatures at or after `since`, at most `limit`: pages back from the newest
     * until a page comes back short, the limit is passed, or the pages reach before `since`.
     */
    async signatures(
      wallet: string,
      since: Date | undefined,
      limit = WALLET_HISTORY_MAX_TRANSACTIONS,
    ): Promise<SignatureList> {
      const sinceSeconds = since ? Math.ceil(since.getTime() / 1000) : undefined;
      const entries: SignatureEntry[] = [];
      let before: string | undefined;
      for (;;) {
        const page = await chain.call<RpcSignature[]>('getSignaturesForAddress', [
          wallet,
          { limit: PAGE, commitment: 'confirmed', ...(before ? { before } : {}) },
        ]);
        let reachedSince = false;
        for (const item of page) {
          const blockTime = item.blockTime === null ? null : Number(item.blockTime);
          // Without a block time a signature is from the ledger's early days: older than any `since`.
          if (sinceSeconds !== undefined && (blockTime === null || blockTime < sinceSeconds)) {
            reachedSince = true;
            break;
          }
          entries.push({
            signature: item.signature,
            slot: BigInt(item.slot),
            blockTime,
            finalized: item.confirmationStatus === 'finalized',
          });
          if (entries.length > limit) return { entries: entries.slice(0, limit), truncated: true };
        }
        if (reachedSince || page.length < PAGE) return { entries, truncated: false };
        before = page[page.length - 1]!.signature;
      }
    },

    /**
     * Each signature's transaction, reduced to the wallet's part in it. A transaction the node no longer
     * holds, or whose block has no time, cannot be analysed and is left out.
     */
    async transactions(wallet: string, entries: readonly SignatureEntry[]): Promise<WalletTransaction[]> {
      const keyOf = (entry: SignatureEntry) => `${wallet}:${entry.signature}`;
      // Every analysis this answer uses, gathered here: keeping new ones may push kept ones out of memory.
      const found = new Map<string, WalletTransaction | null>();
      let missing: SignatureEntry[] = [];
      for (const entry of entries) {
        const key = keyOf(entry);
        // Kept values are analyses or null, never undefined.
        const hit = analysed.get(key);
        if (hit !== undefined) {
          found.set(key, hit);
          keep(key, hit);
        } else missing.push(entry);
      }
      // Finalized ones another replica, or this process before a restart, read already.
      const finalized = missing.filter((entry) => entry.finalized);
      if (kept && finalized.length > 0) {
        const stored = await kept.keptAnalyses(
          wallet,
          finalized.map((entry) => entry.signature),
        );
        for (const [signature, analysis] of stored) {
          found.set(`${wallet}:${signature}`, analysis);
          keep(`${wallet}:${signature}`, analysis);
        }
        if (stored.size > 0) missing = missing.filter((entry) => !stored.has(entry.signature));
      }
      const read = await chain.batch<RpcTransaction>(
        'getTransaction',
        missing.map((entry) => [
          entry.signature,
          { encoding: 'json', maxSupportedTransactionVersion: 0, commitment: 'confirmed' },
        ]),
      );
      const newlyKept: { signature: string; analysis: WalletTransaction | null }[] = [];
      missing.forEach((entry, i) => {
        const tx = read[i] ?? null;
        const blockTime = tx?.blockTime ?? entry.blockTime;
        const analysis =
          tx && blockTime !== null ? toWalletTransaction(wallet, entry.signature, Number(blockTime), tx) : null;
        found.set(keyOf(entry), analysis);
        if (tx && entry.finalized) {
          keep(keyOf(entry), analysis);
          newlyKept.push({ signature: entry.signature, analysis });
        }
      });
      // Written after the answer (they only spare later reads), after this turn of the event loop: an embedded
      // database (PGlite) runs its queries on this thread, and the answer goes out first.
      if (kept && newlyKept.length > 0)
        void new Promise<void>((resolve) => setImmediate(resolve))
          .then(() => kept.keepAnalyses(wallet, newlyKept))
          .catch(onKeepError);
      return entries.map((entry) => found.get(keyOf(entry))).filter((t): t is WalletTransaction => !!t);
    },
  };
}

export type HistoryReader = ReturnType<typeof historyReader>;
