import type { TokenMarket, TokenPair } from '@agent-economy/contracts';
import { fromScaled, sumDecimals, toScaled } from '../../upstream/decimal';
import type { DexPair, PairWindow } from '../../upstream/dexscreener';

// The market section of a token from its DexScreener pairs (most liquid first).

const decimal = (value: number | string | undefined | null): string | null => {
  const scaled = toScaled(value ?? null);
  return scaled === null ? null : fromScaled(scaled);
};

const toPair = (p: DexPair): TokenPair => ({
  dex: p.dexId,
  pairAddress: p.pairAddress,
  baseSymbol: p.baseToken.symbol,
  quoteSymbol: p.quoteToken.symbol,
  quoteMint: p.quoteToken.address,
  priceUsd: decimal(p.priceUsd),
  priceNative: decimal(p.priceNative),
  liquidityUsd: decimal(p.liquidity?.usd ?? 0) ?? '0',
  volume24hUsd: decimal(p.volume?.h24 ?? 0) ?? '0',
  priceChange24hPercent: p.priceChange?.h24 ?? null,
  buys24h: p.txns?.h24?.buys ?? 0,
  sells24h: p.txns?.h24?.sells ?? 0,
  createdAt: p.pairCreatedAt ? new Date(p.pairCreatedAt).toISOString() : null,
  url: p.url ?? null,
});

const windowSum = (pairs: readonly DexPair[], key: keyof PairWindow<number>): string | null =>
  pairs.length ? sumDecimals(pairs.map((p) => decimal(p.volume?.[key] ?? 0))) : null;

/** The market section from a token's pairs (most liquid first): the reference pair prices it. */
export function marketFromPairs(
  mint: string,
  symbol: string | null,
  pairs: readonly DexPair[],
): Omit<TokenMarket, 'source'> {
  const reference = pairs[0];
  return {
    mint,
    symbol: symbol ?? reference?.baseToken.symbol ?? null,
    priceUsd: decimal(reference?.priceUsd),
    referencePair: reference?.pairAddress ?? null,
    priceChangePercent: {
      m5: reference?.priceChange?.m5 ?? null,
      h1: reference?.priceChange?.h1 ?? null,
      h6: reference?.priceChange?.h6 ?? null,
      h24: reference?.priceChange?.h24 ?? null,
    },
    volumeUsd: {
      m5: windowSum(pairs, 'm5'),
      h1: windowSum(pairs, 'h1'),
      h6: windowSum(pairs, 'h6'),
      h24: windowSum(pairs, 'h24'),
    },
    buys24h: pairs.reduce((s, p) => s + (p.txns?.h24?.buys ?? 0), 0),
    sells24h: pairs.reduce((s, p) => s + (p.txns?.h24?.sells ?? 0), 0),
    liquidityUsd: sumDecimals(pairs.map((p) => decimal(p.liquidity?.usd ?? 0))),
    pairs: pairs.slice(0, 30).map(toPair),
  };
}

/** The oldest pair's creation, the token's first market. */
export function firstListed(pairs: readonly DexPair[]): string | null {
  const times = pairs.map((p) => p.pairCreatedAt).filter((t): t is number => typeof t === 'number' && t > 0);
  return times.length ? new Date(Math.min(...times)).toISOString() : null;
}
