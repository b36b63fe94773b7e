import { notFound } from '../../runtime/errors';

// Tokens the index knows by their Solana mint: a caller may name them by mint or by ticker. Assets known only by their
// ticker (BTC, ETH, a token listed on an exchange but not on Solana) carry a null mint.

export interface ResolvedToken {
  symbol: string;
  name: string | null;
  mint: string | null;
}

const KNOWN: ResolvedToken[] = [
  { symbol: 'SOL', name: 'Solana', mint: 'So11111111111111111111111111111111111111112' },
  { symbol: 'BONK', name: 'Bonk', mint: 'DezXAZ8z7PnrnRJjz3wXBoRgixCa6xjnB7YaB1pPB263' },
  { symbol: 'WIF', name: 'dogwifhat', mint: 'EKpQGSJtjMFqKZ9KQanSqYXRcF8fBopzLHYxdM65zcjm' },
  { symbol: 'JUP', name: 'Jupiter', mint: 'JUPyiwrYJFskUPiHa7hkeR8VUtAeFoSYbKedZNsDvCN' },
  { symbol: 'PYTH', name: 'Pyth Network', mint: 'HZ1JovNiVvGrGNiiYvEozEVgZ58xaU3RKwX8eACQBCt3' },
  { symbol: 'JTO', name: 'Jito', mint: 'jtojtomepa8beP8AuQc6eXt6FriJwfFMwQx2v2KPTCL' },
  { symbol: 'RAY', name: 'Raydium', mint: '4k3Dyjzvzp8eMZWUXbBCjEvwSkkk59S5iCNLY3QrkX6R' },
  { symbol: 'RENDER', name: 'Render', mint: 'rndrizKT3MK1iimdxRdWabcF7Zg7AR5T4nud4EkHBof' },
  { symbol: 'POPCAT', name: 'Popcat', mint: '7GCihgDB8fe6KNjn2MYtkzZcRjQy3t9GHdC8uHYmW2hr' },
  { symbol: 'TRUMP', name: 'OFFICIAL TRUMP', mint: '6p6xgHyF7AeE6TZkSmFsko444wqoP15icUSqi2jfGiPN' },
  { symbol: 'BTC', name: 'Bitcoin', mint: null },
  { symbol: 'ETH', name: 'Ethereum', mint: null },
];
const BY_MINT = new Map(KNOWN.filter((t) => t.mint).map((t) => [t.mint!, t]));
const BY_SYMBOL = new Map(KNOWN.map((t) => [t.symbol, t]));

const isTicker = (ref: string) => /^[A-Za-z0-9]{1,12}$/.test(ref);

/**
 * A caller's token reference as a symbol with its identity: a known mint maps to its ticker; a ticker is upper-cased
 * and
 * `listed` decides whether the deployment's market has it. 404 token_not_found otherwise, naming the reference.
 */
export function resolveToken(ref: string, listed: (symbol: string) => boolean): ResolvedToken {
  const trimmed = ref.trim();
  const known = BY_MINT.get(trimmed) ?? (isTicker(trimmed) ? BY_SYMBOL.get(trimmed.toUpperCase()) : undefined);
  const token = known ?? (isTicker(trimmed) ? { symbol: trimmed.toUpperCase(), name: null, mint: null } : undefined);
  if (!token || !listed(token.symbol)) {
    throw notFound('token_not_found', `No market found for the token ${trimmed}`, { token: trimmed });
  }
  return { ...token };
}
