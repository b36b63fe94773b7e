import { hashString, subKey, uniform } from './random';

/** The derivatives venues the market model and the live adapters cover. */
export const PERP_EXCHANGES = [
  'binance',
  'bybit',
  'okx',
  'bitget',
  'gate',
  'mexc',
  'hyperliquid',
  'dydx',
  'deribit',
] as const;
export type PerpExchange = (typeof PERP_EXCHANGES)[number];

/**
 * The names the simulated market answers with. The model draws each venue's parameters (listings, weights,
 * funding intervals) from a profile, but what it answers is no venue's data, so it never carries a real venue's name.
 */
export const SIMULATED_VENUES = [
  'venue-a',
  'venue-b',
  'venue-c',
  'venue-d',
  'venue-e',
  'venue-f',
  'venue-g',
  'venue-h',
  'venue-i',
] as const;
export type SimulatedVenue = (typeof SIMULATED_VENUES)[number];
/** A venue as a source names it: a real exchange (live data) or a simulated venue. */
export type PerpVenue = PerpExchange | SimulatedVenue;
/** Every venue id, real then simulated: the canonical order of answers. */
export const ALL_VENUES: readonly PerpVenue[] = [...PERP_EXCHANGES, ...SIMULATED_VENUES];

/** The simulated venue the model's `exchange` profile answers as. */
export const simulatedVenueOf = (exchange: PerpExchange): SimulatedVenue =>
  SIMULATED_VENUES[PERP_EXCHANGES.indexOf(exchange)]!;

/** One simulated asset: fixed parameters drawn once from the seed. */
export interface AssetProfile {
  symbol: string;
  /** True for the hand-listed real tickers; false for the generated long tail. */
  core: boolean;
  /** Median spot price in USD the price process reverts to. */
  anchorPriceUsd: number;
  /** Annualised volatility of log price. */
  volatility: number;
  /** Loadings on the BTC, ETH and SOL factors and on the asset's own process (their squares sum to 1). */
  betas: { btc: number; eth: number; sol: number; own: number };
  /** Median open interest over every venue, USD. */
  anchorOpenInterestUsd: number;
  /** 24-hour volume as a multiple of open interest (median). */
  turnover: number;
  /** Scale of the slow, heavy-tailed funding regime per 8 h (crowded longs or shorts). */
  regimeScale: number;
  /** Scale of fast funding noise per 8 h. */
  noiseScale: number;
  /** Largest funding rate magnitude per 8 h the venues allow. */
  fundingCap8h: number;
  exchanges: PerpExchange[];
}

// [ticker, price USD, annual volatility, open interest USD, Solana ecosystem]
const CORE: [string, number, number, number, boolean][] = [
  ['BTC', 95000, 0.55, 30e9, false],
  ['ETH', 3400, 0.7, 15e9, false],
  ['SOL', 180, 0.9, 5e9, true],
  ['XRP', 2.2, 0.9, 3e9, false],
  ['BNB', 650, 0.6, 1e9, false],
  ['DOGE', 0.35, 1.0, 2e9, false],
  ['ADA', 0.9, 0.95, 8e8, false],
  ['AVAX', 38, 1.0, 6e8, false],
  ['LINK', 22, 1.0, 6e8, false],
  ['DOT', 7, 1.0, 4e8, false],
  ['TON', 5.5, 0.9, 3e8, false],
  ['TRX', 0.25, 0.6, 2e8, false],
  ['LTC', 100, 0.85, 4e8, false],
  ['BCH', 450, 0.9, 3e8, false],
  ['NEAR', 5.5, 1.05, 3e8, false],
  ['APT', 9, 1.1, 2.5e8, false],
  ['ARB', 0.8, 1.1, 3e8, false],
  ['OP', 2, 1.1, 2.5e8, false],
  ['SUI', 4, 1.2, 8e8, false],
  ['SEI', 0.45, 1.2, 1.5e8, false],
  ['TIA', 6, 1.2, 2e8, false],
  ['INJ', 25, 1.15, 2e8, false],
  ['WIF', 2.5, 1.5, 4e8, true],
  ['BONK', 0.00003, 1.5, 2e8, true],
  ['PEPE', 0.00002, 1.4, 6e8, false],
  ['SHIB', 0.000022, 1.1, 2e8, false],
  ['FLOKI', 0.00018, 1.4, 1e8, false],
  ['JUP', 1.0, 1.2, 1.5e8, true],
  ['PYTH', 0.4, 1.2, 1e8, true],
  ['JTO', 3, 1.2, 8e7, true],
  ['RENDER', 7, 1.2, 1.5e8, true],
  ['FET', 1.4, 1.3, 2e8, false],
  ['ATOM', 7, 1.0, 1.5e8, false],
  ['FIL', 5, 1.1, 1.5e8, false],
  ['ETC', 27, 0.95, 1.5e8, false],
  ['XLM', 0.4, 0.95, 2e8, false],
  ['HBAR', 0.28, 1.0, 2e8, false],
  ['ICP', 10, 1.1, 1e8, false],
  ['AAVE', 300, 1.1, 3e8, false],
  ['UNI', 13, 1.1, 2.5e8, false],
  ['MKR', 1600, 1.0, 8e7, false],
  ['LDO', 1.8, 1.2, 1e8, false],
  ['CRV', 0.9, 1.3, 1.5e8, false],
  ['ENA', 0.9, 1.4, 4e8, false],
  ['ONDO', 1.5, 1.3, 2.5e8, false],
  ['TAO', 450, 1.3, 2e8, false],
  ['WLD', 2.2, 1.4, 2e8, false],
  ['STX', 1.8, 1.2, 8e7, false],
  ['IMX', 1.4, 1.2, 7e7, false],
  ['RUNE', 5, 1.3, 1e8, false],
  ['GALA', 0.04, 1.3, 6e7, false],
  ['SAND', 0.6, 1.2, 7e7, false],
  ['MANA', 0.55, 1.2, 5e7, false],
  ['AXS', 7, 1.2, 5e7, false],
  ['APE', 1.3, 1.3, 6e7, false],
  ['DYDX', 1.6, 1.3, 5e7, false],
  ['GMX', 25, 1.2, 3e7, false],
  ['ORDI', 40, 1.5, 1.5e8, false],
  ['NOT', 0.007, 1.5, 6e7, false],
  ['TRUMP', 12, 1.8, 4e8, true],
  ['HYPE', 25, 1.3, 5e8, false],
  ['POPCAT', 1, 1.7, 8e7, true],
  ['RAY', 5, 1.4, 8e7, true],
  ['KAS', 0.13, 1.2, 8e7, false],
];
/** Deribit lists perpetuals on a handful of majors only (inverse BTC/ETH, USDC-margined linear for the rest). */
const DERIBIT = new Set([
  'BTC',
  'ETH',
  'SOL',
  'XRP',
  'DOGE',
  'ADA',
  'AVAX',
  'LINK',
  'DOT',
  'LTC',
  'BCH',
  'TRX',
  'UNI',
  'NEAR',
]);
/** Chance that a venue lists a generated (long-tail) asset: the broad-listing venues list almost everything. */
const LISTING: Record<PerpExchange, number> = {
  binance: 0.5,
  bybit: 0.7,
  okx: 0.4,
  bitget: 0.8,
  gate: 0.95,
  mexc: 0.95,
  hyperliquid: 0.35,
  dydx: 0.15,
  deribit: 0,
};

const CONSONANTS = 'BCDFGHJKLMNPRSTVXZ';
const VOWELS = 'AEIOUY';

export const DEFAULT_ASSET_COUNT = 640;

/**
 * The simulated universe: the core real tickers, then a generated long tail up to `count` assets, every
 * parameter drawn from the seed so that every replica with the same seed lists the same market.
 */
export function buildUniverse(seed: string, count = DEFAULT_ASSET_COUNT): AssetProfile[] {
  const root = hashString(`market-model:${seed}`);
  const assets: AssetProfile[] = [];
  const taken = new Set<string>();
  const majors = new Set(['BTC', 'ETH']);
  CORE.forEach(([symbol, price, volatility, oi, solana], i) => {
    const key = hashString(`${seed}:asset:${symbol}`);
    const u = (n: number) => uniform(key, n);
    const betas =
      symbol === 'BTC'
        ? { btc: 1, eth: 0, sol: 0, own: 0 }
        : symbol === 'ETH'
          ? normalise(0.8, 0.6, 0, 0)
          : symbol === 'SOL'
            ? normalise(0.7, 0.15, 0.7, 0)
            : normalise(
                0.55 + 0.25 * u(1),
                0.15 + 0.2 * u(2),
                solana ? 0.35 + 0.3 * u(3) : 0.1 * u(3),
                0.45 + 0.3 * u(4),
              );
    assets.push({
      symbol,
      core: true,
      anchorPriceUsd: price,
      volatility,
      betas,
      anchorOpenInterestUsd: oi,
      turnover: 1.2 + 1.3 * u(5),
      regimeScale: majors.has(symbol) ? 0.00004 : 0.00007,
      noiseScale: majors.has(symbol) ? 0.00002 : 0.00003,
      fundingCap8h: majors.has(symbol) ? 0.003 : 0.0075,
      exchanges: PERP_EXCHANGES.filter((ex) =>
        ex === 'deribit' ? DERIBIT.has(symbol) : ex === 'dydx' ? i < 40 : true,
      ),
    });
    taken.add(symbol);
  });
  for (let n = 0; assets.length < count; n++) {
    const key = subKey(root, n);
    const u = (k: number) => uniform(key, k);
    const symbol = tickerOf(key);
    if (taken.has(symbol)) continue;
    taken.add(symbol);
    const solana = u(10) < 0.3;
    let exchanges = PERP_EXCHANGES.filter((ex, i) => u(20 + i) < LISTING[ex]);
    if (exchanges.length === 0) exchanges = ['gate'];
    assets.push({
      symbol,
      core: false,
      anchorPriceUsd: 10 ** (-5 + 6.7 * u(11)),
      volatility: 1.2 + u(12),
      betas: normalise(0.35 + 0.4 * u(13), 0.35 * u(14), solana ? 0.5 * u(15) : 0.15 * u(15), 0.6 + 0.4 * u(16)),
      anchorOpenInterestUsd: 10 ** (5.7 + 2.1 * u(17)),
      turnover: 1.5 + 3 * u(18),
      regimeScale: 0.00008,
      noiseScale: 0.00005,
      fundingCap8h: 0.0075,
      exchanges,
    });
  }
  return assets;
}

function normalise(btc: number, eth: number, sol: number, own: number) {
  const norm = Math.sqrt(btc * btc + eth * eth + sol * sol + own * own);
  return { btc: btc / norm, eth: eth / norm, sol: sol / norm, own: own / norm };
}

/** A pronounceable 3 to 5 letter ticker (consonant-vowel pattern) from a key. */
function tickerOf(key: number): string {
  const length = 3 + Math.floor(uniform(key, 100) * 3);
  let text = '';
  for (let i = 0; i < length; i++) {
    const pool = i % 2 === 0 ? CONSONANTS : VOWELS;
    text += pool[Math.floor(uniform(key, 101 + i) * pool.length)];
  }
  return text;
}
