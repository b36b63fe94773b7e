import type { TrendWindow } from '@agent-economy/contracts';
import { fromScaled, sumDecimals, toScaled } from '../../upstream/decimal';
import type { DexPair } from '../../upstream/dexscreener';
import type { UpstreamTracker } from '../../upstream/tracker';
import { tracedFetch } from '../../http/tracing';

// Live market data (MARKET_DATA=live): the market of a token from its DexScreener pairs, and the two trending lists
// of DexScreener's keyless API (research/domain.md §5): GET /token-boosts/top/v1 (tokens with the most active
// boosts) and GET /token-profiles/latest/v1 (the latest token profiles), both arrays of { chainId, tokenAddress, … }.

export const BOOSTS = 'dexscreener-boosts';
export const PROFILES = 'dexscreener-profiles';

export const decimal = (value: number | string | undefined | null): string | null => {
  const scaled = toScaled(value ?? null);
  return scaled === null ? null : fromScaled(scaled);
};

/** The market section of a token from its pairs (most liquid first): the most liquid pair is the reference price. */
export function marketOf(pairs: readonly DexPair[]) {
  const primary = pairs[0];
  return {
    priceUsd: decimal(primary?.priceUsd),
    priceChange24hPercent: primary?.priceChange?.h24 ?? null,
    volume24hUsd: sumDecimals(pairs.map((p) => decimal(p.volume?.h24 ?? 0))),
    liquidityUsd: sumDecimals(pairs.map((p) => decimal(p.liquidity?.usd ?? 0))),
    marketCapUsd: decimal(primary?.marketCap),
    fdvUsd: decimal(primary?.fdv),
    pairCount: pairs.length,
    primaryPair: primary
      ? {
          dex: primary.dexId,
          pairAddress: primary.pairAddress,
          quoteSymbol: primary.quoteToken.symbol,
          liquidityUsd: decimal(primary.liquidity?.usd ?? 0) ?? '0',
          createdAt: primary.pairCreatedAt ? new Date(primary.pairCreatedAt).toISOString() : null,
        }
      : null,
  };
}

const WINDOW_KEY: Record<TrendWindow, 'h1' | 'h6' | 'h24'> = { '1h': 'h1', '6h': 'h6', '24h': 'h24' };

/** A trending token's market over the window, from its most liquid pair (volume and trades summed over pairs). */
export function windowMarket(pairs: readonly DexPair[], window: TrendWindow) {
  const key = WINDOW_KEY[window];
  const primary = pairs[0];
  if (!primary) return null;
  return {
    symbol: primary.baseToken.symbol || null,
    name: primary.baseToken.name || null,
    priceUsd: decimal(primary.priceUsd),
    priceChangePercent: primary.priceChange?.[key] ?? null,
    volumeUsd: sumDecimals(pairs.map((p) => decimal(p.volume?.[key] ?? 0))),
    liquidityUsd: sumDecimals(pairs.map((p) => decimal(p.liquidity?.usd ?? 0))),
    marketCapUsd: decimal(primary.marketCap),
    txns: {
      buys: pairs.reduce((s, p) => s + (p.txns?.[key]?.buys ?? 0), 0),
      sells: pairs.reduce((s, p) => s + (p.txns?.[key]?.sells ?? 0), 0),
    },
  };
}

/** Reciprocal-rank fusion: Σ 1/(60 + rank) over the lists holding each token, scaled so the best is 100. */
export function fuseRanks(
  lists: readonly { name: string; mints: readonly string[] }[],
): { mint: string; listedBy: string[]; score: number }[] {
  const fused = new Map<string, { listedBy: string[]; raw: number; first: number }>();
  let order = 0;
  for (const list of lists) {
    list.mints.forEach((mint, i) => {
      const entry = fused.get(mint) ?? { listedBy: [], raw: 0, first: order++ };
      if (entry.listedBy.includes(list.name)) return; // a list naming a token twice counts its best rank
      entry.listedBy.push(list.name);
      entry.raw += 1 / (60 + i + 1);
      fused.set(mint, entry);
    });
  }
  const ranked = [...fused.entries()].sort((a, b) => b[1].raw - a[1].raw || a[1].first - b[1].first);
  const top = ranked[0]?.[1].raw ?? 1;
  return ranked.map(([mint, e]) => ({
    mint,
    listedBy: e.listedBy,
    score: Math.round((e.raw / top) * 100 * 100) / 100,
  }));
}

export interface TrendingLists {
  /** The lists that answered (one may fail; both failing is a 502). */
  lists: { name: string; mints: string[] }[];
}

/** Reads both trending lists (Solana tokens only); 502 upstream_unavailable when both fail. */
export function trendingProviders(
  tracker: UpstreamTracker,
  options: { baseUrl: string; timeoutMs?: number; cacheMs?: number; now?: () => number },
) {
  const base = options.baseUrl.replace(/\/+$/, '');
  const now = options.now ?? Date.now;
  let cached: { at: number; value: TrendingLists } | null = null;
  const list = (name: string, path: string) =>
    tracker.call(name, async () => {
      const response = await tracedFetch(
        `GET dexscreener ${name}`,
        `${base}${path}`,
        { signal: AbortSignal.timeout(options.timeoutMs ?? 8_000), headers: { accept: 'application/json' } },
        { propagate: false },
      );
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const body = (await response.json()) as unknown;
      if (!Array.isArray(body)) throw new Error('the answer is not an array of tokens');
      const mints = body
        .filter(
          (t): t is { chainId: string; tokenAddress: string } =>
            !!t &&
            typeof t === 'object' &&
            (t as { chainId?: unknown }).chainId === 'solana' &&
            typeof (t as { tokenAddress?: unknown }).tokenAddress === 'string',
        )
        .map((t) => t.tokenAddress)
        .filter((m) => /^[1-9A-HJ-NP-Za-km-z]{32,44}$/.test(m));
      return { name, mints };
    });
  return {
    async read(): Promise<TrendingLists> {
      if (cached && now() - cached.at < (options.cacheMs ?? 30_000)) return cached.value;
      const results = await Promise.allSettled([
        list(BOOSTS, '/token-boosts/top/v1'),
        list(PROFILES, '/token-profiles/latest/v1'),
      ]);
      const lists = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      if (!lists.length) throw (results[0] as PromiseRejectedResult).reason;
      const value = { lists };
      cached = { at: now(), value };
      return value;
    },
  };
}
