import { STABLECOIN_DECIMALS } from '@agent-economy/contracts';
import { address, signature as asSignature } from '@solana/kit';
import type { SolanaSource } from '../../upstream/solana';

// Reads a mint's transfers from the chain: its signatures (getSignaturesForAddress on the mint: a TransferChecked
// names it, so do x402 payments and SPL transfers made by wallets) back to the window's start, and each transaction
// (getTransaction). Every transfer becomes a trade-like flow event: buyer = receiver, seller = sender.

const PAGE = 1000;
const PARALLEL_READS = 8;
/** At most this many transactions are read per analysis; the answer says when the window held more. */
export const MAX_TRANSACTIONS = 3000;

/** Jito's tip accounts: a transaction that pays one of them paid a Jito tip. */
const JITO_TIP_ACCOUNTS = new Set([
  '96gYZGLnJYVFmbjzopPSU6QiEV5fGqZNyN9nmNhvrZU5',
  'HFqU5x63VTqvQss8hp11i4wVV8bD44PvwucfZ2bU7gRe',
  'Cw8CFyM9FkoMi7K7Crf6HNQqf4uEMzpKw6QNghXLvLkY',
  'ADaUMid9yfUytqMBgopwjb2DTLSokTSzL1zt6iGPaS49',
  'DfXygSm4jCyNCybVYYK6DwvWqjKee8pbDmJGcLWNDXjh',
  'ADuUkR4vqLUMWXxW9gh6D6L8pMSawimctcNZ5pGwDcEt',
  'DttWaMuVvTiduZRnguLF7jNxTgiMBZ1hyAumKUiL2KRL',
  '3AVi9Tg9Uo68tJfuvoKvqKNWKkC5wPdSSdeBnizKZ6jT',
]);

/** One transfer of the mint inside a transaction. `order` sorts events in chain order (slot, then position). */
export interface FlowEvent {
  signature: string;
  slot: number;
  blockTime: number;
  order: number;
  buyer: string;
  seller: string;
  /** Base units moved. */
  amount: bigint;
  /** Whole tokens (amount / 10^decimals), for statistics. */
  size: number;
  /** Stablecoin base units the buyer paid the seller in the same transaction (the amount itself for the stablecoin). */
  paid: bigint | null;
  /** paid per whole token, in USD: the trade's price when it had a stablecoin leg. */
  price: number | null;
}

/** A transaction as the timing and pattern signals see it. */
export interface ChainTransaction {
  signature: string;
  slot: number;
  blockTime: number;
  /** Top-level program ids in order, joined by ">": the transaction's program-call shape. */
  shape: string;
  jitoTip: boolean;
  /** Per owner, per mint: balance change in base units (decimals beside). */
  changes: Map<string, Map<string, { change: bigint; decimals: number }>>;
}

export interface MintSample {
  events: FlowEvent[];
  transactions: ChainTransaction[];
  /** True when the window held more than MAX_TRANSACTIONS transactions: the newest were read. */
  truncated: boolean;
}

interface RpcTokenBalance {
  accountIndex: bigint | number;
  mint: string;
  owner?: string;
  uiTokenAmount: { amount: string; decimals: bigint | number };
}
interface RpcTransaction {
  slot: bigint | number;
  blockTime: bigint | number | null;
  meta: {
    err: unknown;
    preTokenBalances?: readonly RpcTokenBalance[] | null;
    postTokenBalances?: readonly RpcTokenBalance[] | null;
    loadedAddresses?: { writable: readonly string[]; readonly: readonly string[] } | null;
  } | null;
  transaction: {
    message: { accountKeys: readonly string[]; instructions: readonly { programIdIndex: bigint | number }[] };
  };
}

/**
 * Per owner and mint, post − pre of their token accounts in one transaction (an account opened or closed counts from
 * 0).
 */
export function balanceChanges(tx: RpcTransaction): ChainTransaction['changes'] {
  const accounts = new Map<number, { owner: string; mint: string; decimals: number; pre: bigint; post: bigint }>();
  const take = (list: readonly RpcTokenBalance[] | null | undefined, side: 'pre' | 'post') => {
    for (const b of list ?? []) {
      if (!b.owner) continue;
      const at = Number(b.accountIndex);
      const entry = accounts.get(at) ?? {
        owner: b.owner,
        mint: b.mint,
        decimals: Number(b.uiTokenAmount.decimals),
        pre: 0n,
        post: 0n,
      };
      entry[side] = BigInt(b.uiTokenAmount.amount);
      accounts.set(at, entry);
    }
  };
  take(tx.meta?.preTokenBalances, 'pre');
  take(tx.meta?.postTokenBalances, 'post');
  const out: ChainTransaction['changes'] = new Map();
  for (const { owner, mint, decimals, pre, post } of accounts.values()) {
    if (post === pre) continue;
    const byMint = out.get(owner) ?? new Map();
    const entry = byMint.get(mint) ?? { change: 0n, decimals };
    entry.change += post - pre;
    byMint.set(mint, entry);
    out.set(owner, byMint);
  }
  return out;
}

/**
 * The transfers of `mint` in one transaction: senders' outflows matched to receivers' inflows, largest first (a
 * mint or burn has no counterparty and is no trade). A buyer who paid the seller in `stablecoin` in the same
 * transaction gives the event a price.
 */
export function flowEvents(tx: ChainTransaction, mint: string, stablecoin: string, orderBase: number): FlowEvent[] {
  const sellers: { owner: string; left: bigint; decimals: number }[] = [];
  const buyers: { owner: string; left: bigint; decimals: number }[] = [];
  for (const [owner, byMint] of tx.changes) {
    const entry = byMint.get(mint);
    if (!entry || entry.change === 0n) continue;
    (entry.change < 0n ? sellers : buyers).push({
      owner,
      left: entry.change < 0n ? -entry.change : entry.change,
      decimals: entry.decimals,
    });
  }
  const bySize = (a: { left: bigint }, b: { left: bigint }) => (a.left === b.left ? 0 : a.left > b.left ? -1 : 1);
  sellers.sort(bySize);
  buyers.sort(bySize);
  const events: FlowEvent[] = [];
  for (const seller of sellers) {
    for (const buyer of buyers) {
      if (seller.left === 0n) break;
      if (buyer.left === 0n || buyer.owner === seller.owner) continue;
      const amount = seller.left < buyer.left ? seller.left : buyer.left;
      seller.left -= amount;
      buyer.left -= amount;
      const size = Number(amount) / 10 ** seller.decimals;
      let paid: bigint | null = null;
      if (mint !== stablecoin) {
        const out = tx.changes.get(buyer.owner)?.get(stablecoin);
        const into = tx.changes.get(seller.owner)?.get(stablecoin);
        if (out && into && out.change < 0n && into.change > 0n)
          paid = into.change < -out.change ? into.change : -out.change;
      } else paid = amount;
      const price = paid !== null && size > 0 ? Number(paid) / 10 ** STABLECOIN_DECIMALS / size : null;
      events.push({
        signature: tx.signature,
        slot: tx.slot,
        blockTime: tx.blockTime,
        order: orderBase + events.length,
        buyer: buyer.owner,
        seller: seller.owner,
        amount,
        size,
        paid,
        price,
      });
    }
  }
  return events;
}

export function toChainTransaction(
  signature: string,
  tx: RpcTransaction,
  fallbackBlockTime: number | null,
): ChainTransaction | null {
  const blockTime = tx.blockTime ?? fallbackBlockTime;
  if (blockTime === null || (tx.meta && tx.meta.err !== null && tx.meta.err !== undefined)) return null;
  const { message } = tx.transaction;
  const keys = [
    ...message.accountKeys,
    ...(tx.meta?.loadedAddresses?.writable ?? []),
    ...(tx.meta?.loadedAddresses?.readonly ?? []),
  ];
  return {
    signature,
    slot: Number(tx.slot),
    blockTime: Number(blockTime),
    shape: message.instructions.map((ix) => keys[Number(ix.programIdIndex)] ?? '?').join('>'),
    jitoTip: keys.some((k) => JITO_TIP_ACCOUNTS.has(k)),
    changes: balanceChanges(tx),
  };
}

/** Reads the mint's transactions with a block time at or after `fromSeconds`, newest first, at most `limit`. */
export async function readMintSample(
  chain: SolanaSource,
  mint: string,
  stablecoin: string,
  fromSeconds: number,
  limit = MAX_TRANSACTIONS,
): Promise<MintSample> {
  const entries: { signature: string; blockTime: number | null; failed: boolean }[] = [];
  let before: string | undefined;
  let truncated = false;
  for (let done = false; !done;) {
    const page = await chain.read((rpc) =>
      rpc
        .getSignaturesForAddress(address(mint), {
          limit: PAGE,
          commitment: 'confirmed',
          ...(before ? { before: asSignature(before) } : {}),
        })
        .send(),
    );
    for (const item of page) {
      const blockTime = item.blockTime === null ? null : Number(item.blockTime);
      if (blockTime === null || blockTime < fromSeconds) {
        done = true;
        break;
      }
      if (entries.length === limit) {
        truncated = true;
        done = true;
        break;
      }
      entries.push({ signature: item.signature, blockTime, failed: item.err !== null });
    }
    if (page.length < PAGE) done = true;
    else before = page[page.length - 1]!.signature;
  }
  const wanted = entries.filter((e) => !e.failed);
  const read: (ChainTransaction | null)[] = new Array(wanted.length).fill(null);
  let next = 0;
  const worker = async () => {
    while (next < wanted.length) {
      const at = next++;
      const entry = wanted[at]!;
      const tx = (await chain.read((rpc) =>
        rpc
          .getTransaction(asSignature(entry.signature), {
            encoding: 'json',
            maxSupportedTransactionVersion: 0,
            commitment: 'confirmed',
          })
          .send(),
      )) as unknown as RpcTransaction | null;
      if (tx) read[at] = toChainTransaction(entry.signature, tx, entry.blockTime);
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL_READS, wanted.length) }, worker));
  // Newest first from the node; chain order (oldest first) for the analyses. Within a slot the node lists newest first.
  const transactions = read.filter((t): t is ChainTransaction => t !== null).reverse();
  const events: FlowEvent[] = [];
  for (const tx of transactions) events.push(...flowEvents(tx, mint, stablecoin, events.length));
  return { events, transactions, truncated };
}

/**
 * Mean slot time (ms) over the last `minutes` of the chain, from its performance samples (one per 60 s); null without
 * samples.
 */
export async function meanSlotTimeMs(chain: SolanaSource, minutes: number): Promise<number | null> {
  const samples = await chain.read((rpc) =>
    rpc.getRecentPerformanceSamples(Math.max(1, Math.min(720, Math.ceil(minutes)))).send(),
  );
  let slots = 0;
  let seconds = 0;
  for (const s of samples) {
    slots += Number(s.numSlots);
    seconds += Number(s.samplePeriodSecs);
  }
  return slots > 0 ? (seconds * 1000) / slots : null;
}
