import { address, isOffCurveAddress } from '@solana/kit';
import type { WalletKind } from '@agent-economy/contracts';
import { SYSTEM_PROGRAM, TOKEN_2022_PROGRAM, TOKEN_PROGRAM } from '../../solana/programs';
import type { SolanaSource } from '../../upstream/solana';

// Reads of the chain the paid endpoints share: signatures of an address paged back, transactions with their balance
// changes, what kind of account an address is. Responses are read loosely (the RPC answers numbers as bigints).

/** Programs and authorities known by name: an address among them is labelled, never guessed. */
export const KNOWN_PROGRAMS: Record<string, string> = {
  [SYSTEM_PROGRAM]: 'System Program',
  [TOKEN_PROGRAM]: 'SPL Token Program',
  [TOKEN_2022_PROGRAM]: 'Token-2022 Program',
  ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL: 'Associated Token Account Program',
  metaqbxxUerdq28cj1RbAWkYQm3ybzjb6a8bt518x1s: 'Metaplex Token Metadata',
  MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr: 'Memo Program',
  ComputeBudget111111111111111111111111111111: 'Compute Budget Program',
  Stake11111111111111111111111111111111111111: 'Stake Program',
  Vote111111111111111111111111111111111111111: 'Vote Program',
  '675kPX9MHTjS2zt1qfr1NYHuzeLXfQM9H24wFSUt1Mp8': 'Raydium AMM v4',
  CPMMoo8L3F4NbTegBCKVNunggL7H1ZpdTHKxQB5qKP1C: 'Raydium CPMM',
  whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc: 'Orca Whirlpools',
  JUP6LkbZbjS1jKKwapdHNy74zcZ3tLUZoi5QNyVTaV4: 'Jupiter Aggregator v6',
  LBUZKhRxPF3XUpBCjp4YzTKgLccjZhTSDM9YuVaPwxo: 'Meteora DLMM',
  '6EF8rrecthR5Dkzon8Nwu78hRvfCKubJ14M5uBEwF6P': 'Pump.fun',
};
/** Swap programs: a token balance change in a transaction invoking one is a buy or a sell, not a transfer. */
export const SWAP_PROGRAMS = new Set([
  '675kPX9MHTjS2zt1qfr1NYHuzeLXfQM9H24wFSUt1Mp8',
  'CPMMoo8L3F4NbTegBCKVNunggL7H1ZpdTHKxQB5qKP1C',
  'whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc',
  'JUP6LkbZbjS1jKKwapdHNy74zcZ3tLUZoi5QNyVTaV4',
  'LBUZKhRxPF3XUpBCjp4YzTKgLccjZhTSDM9YuVaPwxo',
  '6EF8rrecthR5Dkzon8Nwu78hRvfCKubJ14M5uBEwF6P',
]);
/** AMM pool authorities (their token accounts are pool vaults). */
export const POOL_AUTHORITIES: Record<string, string> = {
  '5Q544fKrFoe6tsEbD7S8EmxGTJYAKtTVhAW5Q5pge4j1': 'Raydium AMM v4 authority',
  GpMZbSM2GgvTKHJirzeGfMFoaZ8UR2X7F4v8vHTvxFbL: 'Raydium CPMM authority',
};

export interface SignatureInfo {
  signature: string;
  slot: bigint;
  blockTime: number | null;
  failed: boolean;
}

export interface TokenChange {
  owner: string | null;
  mint: string;
  decimals: number;
  /** post − pre, in base units. */
  delta: bigint;
}

export interface TxFacts {
  signature: string;
  slot: bigint;
  blockTime: number | null;
  failed: boolean;
  accountKeys: string[];
  /** post − pre lamports per account key. */
  lamportDeltas: bigint[];
  tokenChanges: TokenChange[];
}

// JSON-RPC answers read field by field, each checked where it is used.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Loose = any;

/** One page of signatures (newest first). */
export async function signaturesPage(
  chain: SolanaSource,
  of: string,
  limit: number,
  before?: string,
): Promise<SignatureInfo[]> {
  const page = (await chain.read((rpc) =>
    rpc.getSignaturesForAddress(address(of), { limit, ...(before ? { before: before as never } : {}) }).send(),
  )) as Loose[];
  return page.map((s) => ({
    signature: String(s.signature),
    slot: BigInt(s.slot),
    blockTime: s.blockTime === null || s.blockTime === undefined ? null : Number(s.blockTime),
    failed: s.err !== null && s.err !== undefined,
  }));
}

/** Every signature of an address, newest first, paged back to the oldest or until `maxPages` pages of 1,000. */
export async function allSignatures(
  chain: SolanaSource,
  of: string,
  maxPages: number,
): Promise<{ signatures: SignatureInfo[]; complete: boolean }> {
  const signatures: SignatureInfo[] = [];
  for (let page = 0; page < maxPages; page++) {
    const batch = await signaturesPage(chain, of, 1000, signatures.at(-1)?.signature);
    signatures.push(...batch);
    if (batch.length < 1000) return { signatures, complete: true };
  }
  return { signatures, complete: false };
}

/** A transaction's balance changes (json encoding; static and loaded keys in order); null when the node has none. */
export async function readTransaction(chain: SolanaSource, signature: string): Promise<TxFacts | null> {
  const tx = (await chain.read((rpc) =>
    rpc
      .getTransaction(signature as never, {
        encoding: 'json',
        maxSupportedTransactionVersion: 0,
        commitment: 'confirmed',
      })
      .send(),
  )) as Loose;
  if (!tx || !tx.meta) return null;
  const keys: string[] = [
    ...tx.transaction.message.accountKeys.map(String),
    ...(tx.meta.loadedAddresses?.writable ?? []).map(String),
    ...(tx.meta.loadedAddresses?.readonly ?? []).map(String),
  ];
  const pre: Loose[] = tx.meta.preBalances ?? [];
  const post: Loose[] = tx.meta.postBalances ?? [];
  const lamportDeltas = keys.map((_, i) => BigInt(post[i] ?? 0) - BigInt(pre[i] ?? 0));
  // Token balances by account index: an account absent before (created) or after (closed) counts as zero.
  const balances = new Map<
    number,
    { owner: string | null; mint: string; decimals: number; pre: bigint; post: bigint }
  >();
  for (const [side, list] of [
    ['pre', tx.meta.preTokenBalances ?? []],
    ['post', tx.meta.postTokenBalances ?? []],
  ] as const) {
    for (const b of list as Loose[]) {
      const index = Number(b.accountIndex);
      const entry = balances.get(index) ?? {
        owner: b.owner ? String(b.owner) : null,
        mint: String(b.mint),
        decimals: Number(b.uiTokenAmount.decimals),
        pre: 0n,
        post: 0n,
      };
      entry[side] = BigInt(b.uiTokenAmount.amount);
      balances.set(index, entry);
    }
  }
  const tokenChanges = [...balances.values()]
    .filter((b) => b.post !== b.pre)
    .map((b) => ({ owner: b.owner, mint: b.mint, decimals: b.decimals, delta: b.post - b.pre }));
  return {
    signature,
    slot: BigInt(tx.slot),
    blockTime: tx.blockTime === null || tx.blockTime === undefined ? null : Number(tx.blockTime),
    failed: tx.meta.err !== null && tx.meta.err !== undefined,
    accountKeys: keys,
    lamportDeltas,
    tokenChanges,
  };
}

/**
 * What an address is, from the chain: an executable account is a program; an address off the Ed25519 curve has no
 * private key, so it is an account a program controls (protocol); an on-curve address is a wallet. Known programs
 * and pool authorities carry their name.
 */
export async function identify(chain: SolanaSource, of: string): Promise<{ kind: WalletKind; label: string | null }> {
  if (KNOWN_PROGRAMS[of]) return { kind: 'program', label: KNOWN_PROGRAMS[of]! };
  if (POOL_AUTHORITIES[of]) return { kind: 'protocol', label: POOL_AUTHORITIES[of]! };
  const { value } = (await chain.read((rpc) =>
    rpc.getAccountInfo(address(of), { encoding: 'base64', dataSlice: { offset: 0, length: 0 } }).send(),
  )) as Loose;
  if (value?.executable) return { kind: 'program', label: null };
  if (isOffCurveAddress(address(of))) return { kind: 'protocol', label: null };
  return { kind: 'wallet', label: null };
}

/** Runs `work` over `items` with at most `width` at a time, keeping order. */
export async function mapLimited<T, R>(
  items: readonly T[],
  width: number,
  work: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await work(items[i]!, i);
      }
    }),
  );
  return results;
}
