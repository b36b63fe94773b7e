import { toScaled } from './decimal';
import type { UpstreamTracker } from './tracker';
import { tracedFetch } from '../http/tracing';

// Trading pairs from DexScreener's keyless API (research/domain.md §5): GET /token-pairs/v1/solana/{mint} answers an
// array of pairs. Read only with MARKET_DATA=live; offline the service says it has no market data (nulls, and the
// answer's source names no market provider) instead of inventing prices for real or local mints.

export const DEXSCREENER = 'dexscreener';
export const DEXSCREENER_URL = 'https://api.dexscreener.com';

/** DexScreener's rolling windows: 5 minutes, 1, 6 and 24 hours. */
export interface PairWindow<T> {
  m5?: T;
  h1?: T;
  h6?: T;
  h24?: T;
}
/** A pair as DexScreener publishes it (the fields read here). */
export interface DexPair {
  chainId?: string;
  dexId: string;
  url?: string;
  pairAddress: string;
  baseToken: { address: string; name?: string; symbol: string };
  quoteToken: { address: string; name?: string; symbol: string };
  priceNative?: string;
  priceUsd?: string;
  txns?: PairWindow<{ buys?: number; sells?: number }>;
  volume?: PairWindow<number>;
  priceChange?: PairWindow<number>;
  liquidity?: { usd?: number };
  fdv?: number;
  marketCap?: number;
  pairCreatedAt?: number;
  info?: { imageUrl?: string };
}

export interface MarketSource {
  readonly provider: string;
  /** The token's pairs on Solana where it is the base token, most liquid first. */
  pairs(mint: string): Promise<DexPair[]>;
}

const liquidityOf = (pair: DexPair) => toScaled(pair.liquidity?.usd ?? 0) ?? 0n;

export function dexScreenerSource(
  tracker: UpstreamTracker,
  options: { baseUrl?: string; timeoutMs?: number; cacheMs?: number; now?: () => number } = {},
): MarketSource {
  const base = (options.baseUrl ?? DEXSCREENER_URL).replace(/\/+$/, '');
  const now = options.now ?? Date.now;
  const cache = new Map<string, { at: number; pairs: DexPair[] }>();
  return {
    provider: DEXSCREENER,
    async pairs(mint) {
      const hit = cache.get(mint);
      if (hit && now() - hit.at < (options.cacheMs ?? 30_000)) return hit.pairs;
      const pairs = await tracker.call(DEXSCREENER, async () => {
        const response = await tracedFetch(
          'GET dexscreener token-pairs',
          `${base}/token-pairs/v1/solana/${mint}`,
          { signal: AbortSignal.timeout(options.timeoutMs ?? 8_000), headers: { accept: 'application/json' } },
          { propagate: false },
        );
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        const body = (await response.json()) as unknown;
        if (!Array.isArray(body)) throw new Error('the answer is not an array of pairs');
        return body as DexPair[];
      });
      // The endpoint lists pairs where the token is base or quote; only base pairs price it directly.
      const own = pairs
        .filter(
          (p) =>
            p &&
            typeof p.pairAddress === 'string' &&
            p.baseToken?.address === mint &&
            (p.chainId ?? 'solana') === 'solana',
        )
        .sort((a, b) => (liquidityOf(b) > liquidityOf(a) ? 1 : liquidityOf(b) < liquidityOf(a) ? -1 : 0));
      cache.set(mint, { at: now(), pairs: own });
      if (cache.size > 1_000) cache.delete(cache.keys().next().value!);
      return own;
    },
  };
}
