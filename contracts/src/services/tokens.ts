import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { defineService } from '../core/service';
import { named } from '../core/names';
import { ErrorEnvelope, paymentErrors, standardErrors } from '../core/errors';
import { fixed, type RouteMeta } from '../core/payment';
import { SolanaAddress, Timestamp, USDC_DEVNET } from '../core/chain';
import { DataSource } from './shared';

const c = initContract();

// USD market values (prices, volumes, capitalisations, liquidity) travel as decimal strings of any precision (token
// prices can be tiny); token quantities as integer strings of base units plus decimal strings of whole tokens.
// Ratios, percents and scores are numbers.

export type TokenProgram = 'spl-token' | 'token-2022';
export type TokenRiskLevel = 'low' | 'medium' | 'high' | 'critical';
export type TokenWarningLevel = 'danger' | 'warn' | 'info';
export type TokenWarningCode =
  | 'mint_authority_enabled'
  | 'freeze_authority_enabled'
  | 'mutable_metadata'
  | 'lp_unlocked'
  | 'low_liquidity'
  | 'few_lp_providers'
  | 'single_holder_concentration'
  | 'top10_concentration'
  | 'transfer_fee'
  | 'permanent_delegate'
  | 'transfer_hook'
  | 'new_token'
  | 'no_market';
export type TokenRankCriterion = 'liquidity' | 'volume' | 'marketCap' | 'momentum' | 'safety' | 'distribution';

export interface TokenOverview {
  mint: string;
  name: string | null;
  symbol: string | null;
  decimals: number;
  tokenProgram: TokenProgram;
  imageUrl: string | null;
  priceUsd: string | null;
  priceChange24hPercent: number | null;
  volume24hUsd: string | null;
  marketCapUsd: string | null;
  fdvUsd: string | null;
  liquidityUsd: string | null;
  supply: string;
  uiSupply: string;
  pairCount: number;
  createdAt: string | null;
  source: DataSource;
}
export interface TokenWarning {
  code: TokenWarningCode;
  level: TokenWarningLevel;
  title: string;
  description: string;
  scoreImpact: number;
}
export interface TokenSecurityReport {
  mint: string;
  riskScore: number;
  riskLevel: TokenRiskLevel;
  tokenProgram: TokenProgram;
  mintAuthority: string | null;
  freezeAuthority: string | null;
  updateAuthority: string | null;
  metadataMutable: boolean;
  token2022Extensions: string[];
  transferFeePercent: number | null;
  lpLockedPercent: number | null;
  liquidityUsd: string | null;
  lpProviderCount: number | null;
  top10HolderPercent: number;
  warnings: TokenWarning[];
  source: DataSource;
}
export interface TokenHolder {
  rank: number;
  owner: string | null;
  tokenAccount: string;
  amount: string;
  uiAmount: string;
  percent: number;
  whale: boolean;
}
export interface TokenExcludedAccount {
  tokenAccount: string;
  owner: string | null;
  reason: 'amm_vault' | 'burn' | 'program';
  percent: number;
}
export interface TokenHolders {
  mint: string;
  decimals: number;
  supply: string;
  uiSupply: string;
  totalHolders: number | null;
  whaleThresholdPercent: number;
  topHolders: TokenHolder[];
  excluded: TokenExcludedAccount[];
  concentration: {
    top1Percent: number;
    top10Percent: number;
    top20Percent: number;
    gini: number;
    hhi: number;
  };
  whales: { count: number; totalPercent: number };
  source: DataSource;
}
export interface TokenPriceChanges {
  m5: number | null;
  h1: number | null;
  h6: number | null;
  h24: number | null;
}
export interface TokenVolumes {
  m5: string | null;
  h1: string | null;
  h6: string | null;
  h24: string | null;
}
export interface TokenPair {
  dex: string;
  pairAddress: string;
  baseSymbol: string;
  quoteSymbol: string;
  quoteMint: string;
  priceUsd: string | null;
  priceNative: string | null;
  liquidityUsd: string;
  volume24hUsd: string;
  priceChange24hPercent: number | null;
  buys24h: number;
  sells24h: number;
  createdAt: string | null;
  url: string | null;
}
export interface TokenMarket {
  mint: string;
  symbol: string | null;
  priceUsd: string | null;
  referencePair: string | null;
  priceChangePercent: TokenPriceChanges;
  volumeUsd: TokenVolumes;
  buys24h: number | null;
  sells24h: number | null;
  liquidityUsd: string | null;
  pairs: TokenPair[];
  source: DataSource;
}
export interface TokenFullAnalysis {
  mint: string;
  overview: TokenOverview;
  security: TokenSecurityReport;
  holders: TokenHolders;
  market: TokenMarket;
  source: DataSource;
}
export interface TokenRanks {
  liquidity: number;
  volume: number;
  marketCap: number;
  momentum: number;
  safety: number;
  distribution: number;
}
export interface ComparedToken {
  mint: string;
  symbol: string | null;
  name: string | null;
  priceUsd: string | null;
  marketCapUsd: string | null;
  volume24hUsd: string | null;
  liquidityUsd: string | null;
  priceChange24hPercent: number | null;
  riskScore: number;
  top10HolderPercent: number;
  ranks: TokenRanks;
  compositeScore: number;
  overallRank: number;
}
export interface TokenComparison {
  tokens: ComparedToken[];
  leaders: Record<TokenRankCriterion, string>;
  weights: Record<TokenRankCriterion, number>;
  source: DataSource;
}
export interface TokenCompareRequest {
  mints: string[];
}

const Percent = z.number().min(0).max(100);
const NO_MARKET =
  'null when the deployment reads no market provider (MARKET_DATA=live reads DexScreener): `source.note` says so; ' +
  'never a made-up figure';
const TokenProgramSchema = named(
  'TokenProgram',
  z.enum(['spl-token', 'token-2022']).describe('the owning token program'),
);
const RawAmount = z.string().regex(/^\d{1,40}$/, 'must be an integer string of base units');
const UsdValue = z.string().regex(/^(0|[1-9]\d*)(\.\d+)?$/, 'must be a non-negative decimal string');
const Usd = (what: string) => UsdValue.describe(`${what}, USD as a decimal string`);
const UiAmount = z
  .string()
  .regex(/^(0|[1-9]\d*)(\.\d+)?$/)
  .describe('whole tokens as a decimal string');

const TokenOverviewSchema: z.ZodType<TokenOverview> = named(
  'TokenOverview',
  z.object({
    mint: SolanaAddress,
    name: z.string().nullable().describe('from the token metadata; null when the mint has none'),
    symbol: z.string().nullable(),
    decimals: z.number().int().min(0).max(255),
    tokenProgram: TokenProgramSchema,
    imageUrl: z.string().nullable(),
    priceUsd: Usd('price on the pair with the most liquidity')
      .nullable()
      .describe('USD price from the most liquid pair (decimal string); null when no market prices it'),
    priceChange24hPercent: z.number().nullable().describe('price change over 24 hours, percent'),
    volume24hUsd: Usd('traded volume over 24 hours across all pairs').nullable().describe(NO_MARKET),
    marketCapUsd: Usd('price × circulating supply')
      .nullable()
      .describe('price × circulating supply, USD decimal string; null without a price'),
    fdvUsd: Usd('fully diluted valuation')
      .nullable()
      .describe('fully diluted valuation: price × total supply, USD decimal string; null without a price'),
    liquidityUsd: Usd('pooled liquidity across all pairs').nullable().describe(NO_MARKET),
    supply: RawAmount.describe('total supply in base units (getTokenSupply amount)'),
    uiSupply: UiAmount.describe('total supply in whole tokens (supply / 10^decimals), decimal string'),
    pairCount: z.number().int().min(0).describe('trading pairs found for the token'),
    createdAt: Timestamp.nullable().describe('creation of the oldest pair, when known'),
    source: DataSource,
  }),
);
const TokenWarningSchema: z.ZodType<TokenWarning> = named(
  'TokenWarning',
  z.object({
    code: z.enum([
      'mint_authority_enabled',
      'freeze_authority_enabled',
      'mutable_metadata',
      'lp_unlocked',
      'low_liquidity',
      'few_lp_providers',
      'single_holder_concentration',
      'top10_concentration',
      'transfer_fee',
      'permanent_delegate',
      'transfer_hook',
      'new_token',
      'no_market',
    ]),
    level: z.enum(['danger', 'warn', 'info']),
    title: z.string(),
    description: z.string(),
    scoreImpact: z.number().min(0).max(100).describe('points this warning adds to riskScore'),
  }),
);
const TokenSecuritySchema: z.ZodType<TokenSecurityReport> = named(
  'TokenSecurityReport',
  z.object({
    mint: SolanaAddress,
    riskScore: z
      .number()
      .min(0)
      .max(100)
      .describe(
        '0 (no risk found) to 100 (almost certainly unsafe): the sum of the warnings’ scoreImpact, capped at 100',
      ),
    riskLevel: z.enum(['low', 'medium', 'high', 'critical']).describe('low < 25 ≤ medium < 50 ≤ high < 75 ≤ critical'),
    tokenProgram: TokenProgramSchema,
    mintAuthority: SolanaAddress.nullable().describe('who can mint more; null = renounced'),
    freezeAuthority: SolanaAddress.nullable().describe('who can freeze accounts; null = renounced'),
    updateAuthority: SolanaAddress.nullable().describe('who can change the metadata; null when immutable or absent'),
    metadataMutable: z.boolean(),
    token2022Extensions: z
      .array(z.string())
      .describe('Token-2022 extensions enabled on the mint, e.g. "transferFeeConfig"; empty for spl-token'),
    transferFeePercent: z
      .number()
      .min(0)
      .max(100)
      .nullable()
      .describe('Token-2022 transfer fee, percent; null when none'),
    lpLockedPercent: Percent.nullable().describe(
      'share of the main pool’s LP tokens locked or burned; null when unknown',
    ),
    liquidityUsd: Usd('pooled liquidity across all pairs').nullable().describe(NO_MARKET),
    lpProviderCount: z.number().int().min(0).nullable(),
    top10HolderPercent: Percent.describe(
      'share of supply held by the 10 largest holders, AMM vaults and burn addresses excluded',
    ),
    warnings: z.array(TokenWarningSchema).describe('most severe first'),
    source: DataSource,
  }),
);
const TokenHoldersSchema: z.ZodType<TokenHolders> = named(
  'TokenHolders',
  z.object({
    mint: SolanaAddress,
    decimals: z.number().int().min(0).max(255),
    supply: RawAmount.describe('total supply in base units'),
    uiSupply: UiAmount,
    totalHolders: z
      .number()
      .int()
      .min(0)
      .nullable()
      .describe('accounts with a non-zero balance, when a provider counts them'),
    whaleThresholdPercent: z
      .number()
      .describe('the share of supply at which a holder counts as a whale (the request’s value)'),
    topHolders: z
      .array(
        z.object({
          rank: z.number().int().min(1),
          owner: SolanaAddress.nullable().describe('wallet owning the token account; null when it cannot be resolved'),
          tokenAccount: SolanaAddress,
          amount: RawAmount.describe('balance in base units'),
          uiAmount: UiAmount.describe('balance in whole tokens, decimal string'),
          percent: Percent.describe('share of total supply'),
          whale: z.boolean().describe('percent ≥ whaleThresholdPercent'),
        }),
      )
      .describe('largest holders (up to 20), largest first'),
    excluded: z
      .array(
        z.object({
          tokenAccount: SolanaAddress,
          owner: SolanaAddress.nullable(),
          reason: z.enum(['amm_vault', 'burn', 'program']),
          percent: Percent,
        }),
      )
      .describe(
        'large accounts left out of the concentration figures: AMM pool vaults, burn addresses, program accounts',
      ),
    concentration: z.object({
      top1Percent: Percent,
      top10Percent: Percent,
      top20Percent: Percent,
      gini: z.number().min(0).max(1).describe('Gini coefficient of the top holders’ balances'),
      hhi: z
        .number()
        .min(0)
        .max(1)
        .describe('Herfindahl-Hirschman index of the top holders’ shares of supply (0 to 1)'),
    }),
    whales: z.object({
      count: z.number().int().min(0),
      totalPercent: Percent.describe('share of supply the whales hold together'),
    }),
    source: DataSource,
  }),
);
const PriceChanges: z.ZodType<TokenPriceChanges> = named(
  'TokenPriceChanges',
  z.object({
    m5: z.number().nullable(),
    h1: z.number().nullable(),
    h6: z.number().nullable(),
    h24: z.number().nullable(),
  }),
);
const Volumes: z.ZodType<TokenVolumes> = named(
  'TokenVolumes',
  z.object({
    m5: UsdValue.nullable(),
    h1: UsdValue.nullable(),
    h6: UsdValue.nullable(),
    h24: UsdValue.nullable(),
  }),
);
const TokenMarketSchema: z.ZodType<TokenMarket> = named(
  'TokenMarket',
  z.object({
    mint: SolanaAddress,
    symbol: z.string().nullable(),
    priceUsd: Usd('price on the reference pair').nullable(),
    referencePair: z
      .string()
      .nullable()
      .describe('address of the pair with the most USD liquidity, the price reference'),
    priceChangePercent: PriceChanges.describe('price change over 5 minutes, 1, 6 and 24 hours, percent'),
    volumeUsd: Volumes.describe(
      'traded volume over 5 minutes, 1, 6 and 24 hours across all pairs, USD decimal strings',
    ),
    buys24h: z.number().int().min(0).nullable(),
    sells24h: z.number().int().min(0).nullable(),
    liquidityUsd: Usd('pooled liquidity across all pairs').nullable().describe(NO_MARKET),
    pairs: z
      .array(
        z.object({
          dex: z.string().describe('DEX id, e.g. "raydium", "orca", "meteora"'),
          pairAddress: z.string(),
          baseSymbol: z.string(),
          quoteSymbol: z.string(),
          quoteMint: SolanaAddress,
          priceUsd: Usd('price of the base token on this pair').nullable(),
          priceNative: UiAmount.nullable().describe('price in the quote token, decimal string'),
          liquidityUsd: Usd('pooled liquidity of the pair'),
          volume24hUsd: Usd('traded volume of the pair over 24 hours'),
          priceChange24hPercent: z.number().nullable(),
          buys24h: z.number().int().min(0),
          sells24h: z.number().int().min(0),
          createdAt: Timestamp.nullable(),
          url: z.string().nullable(),
        }),
      )
      .describe('trading pairs, most liquid first (at most 30)'),
    source: DataSource,
  }),
);
const TokenFullSchema: z.ZodType<TokenFullAnalysis> = named(
  'TokenFullAnalysis',
  z.object({
    mint: SolanaAddress,
    overview: TokenOverviewSchema,
    security: TokenSecuritySchema,
    holders: TokenHoldersSchema,
    market: TokenMarketSchema,
    source: DataSource.describe('every provider read for the four parts'),
  }),
);
const criterionRecord = <T extends z.ZodTypeAny>(value: T) =>
  z.object({ liquidity: value, volume: value, marketCap: value, momentum: value, safety: value, distribution: value });
const TokenComparisonSchema: z.ZodType<TokenComparison> = named(
  'TokenComparison',
  z.object({
    tokens: z
      .array(
        z.object({
          mint: SolanaAddress,
          symbol: z.string().nullable(),
          name: z.string().nullable(),
          priceUsd: Usd('price').nullable(),
          marketCapUsd: Usd('market cap').nullable(),
          volume24hUsd: Usd('traded volume over 24 hours').nullable(),
          liquidityUsd: Usd('pooled liquidity').nullable(),
          priceChange24hPercent: z.number().nullable(),
          riskScore: z.number().min(0).max(100),
          top10HolderPercent: Percent,
          ranks: criterionRecord(z.number().int().min(1).max(5)).describe('rank per criterion, 1 = best'),
          compositeScore: z.number().min(0).max(100).describe('weighted mean of the per-criterion points'),
          overallRank: z.number().int().min(1).max(5),
        }),
      )
      .min(2)
      .max(5)
      .describe('the tokens compared, best overall first'),
    leaders: criterionRecord(SolanaAddress).describe('the best mint per criterion'),
    weights: criterionRecord(z.number().min(0).max(1)).describe(
      'weight of each criterion in compositeScore (they sum to 1)',
    ),
    source: DataSource,
  }),
);

const MintParams = z.object({ mint: SolanaAddress.describe('the token’s mint address') });
const CompareBody: z.ZodType<TokenCompareRequest> = named(
  'TokenCompareRequest',
  z
    .object({
      mints: z
        .array(SolanaAddress)
        .min(2, 'compare at least 2 tokens')
        .max(5, 'compare at most 5 tokens')
        .refine((mints) => new Set(mints).size === mints.length, 'each mint may appear only once')
        .describe('2 to 5 distinct mint addresses'),
    })
    .strict(),
);

// Examples name mints every deployment has, the local ledger included: the stablecoin and wrapped SOL.
const USDC = USDC_DEVNET;
const WSOL = 'So11111111111111111111111111111111111111112';

const notFound =
  '404 token_not_found when the address is not a token mint on the chain the deployment reads; ' +
  '502 upstream_unavailable (with Retry-After) when a live provider fails, and nothing is charged.';

const router = c.router({
  overview: {
    method: 'GET',
    path: '/api/overview/:mint',
    pathParams: MintParams,
    summary: 'Token overview: price, volume, market cap',
    description:
      'Name, symbol, decimals and supply of the mint, with its USD price (from the pair with the most liquidity), 24-hour ' +
      'volume and price change, market cap, fully diluted valuation and liquidity across its pairs. Design: fields as ' +
      'listed; USD figures are decimal strings. ' +
      notFound,
    responses: {
      200: TokenOverviewSchema,
      404: ErrorEnvelope,
      502: ErrorEnvelope,
      ...standardErrors,
      ...paymentErrors,
    },
    metadata: { payment: fixed('0.002'), example: { params: { mint: USDC } } } satisfies RouteMeta,
  },
  security: {
    method: 'GET',
    path: '/api/security/:mint',
    pathParams: MintParams,
    summary: 'Security analysis: risk score and warnings',
    description:
      'Checks the mint and its markets: mint and freeze authorities (null = renounced), mutable metadata, Token-2022 ' +
      'extensions (transfer fee, permanent delegate, transfer hook), locked LP share, liquidity, LP provider count and ' +
      'holder concentration. Each finding is a warning with a level and the points it adds; riskScore is their sum ' +
      'capped at 100 (higher = riskier). Design: warning codes as enumerated; levels low < 25 ≤ medium < 50 ≤ high < 75 ≤ critical. ' +
      'Points: mint authority 30, permanent delegate 25, freeze authority 20, one holder ≥ 20 % 20, top 10 ≥ 50 % 15, ' +
      'transfer hook 10, transfer fee 10, liquidity under 10,000 USD 10, no pair 10, mutable metadata 5, first pair under ' +
      '7 days old 5. Authorities, extensions, metadata and holders are read from the chain; market warnings are raised ' +
      'only when a market provider was read. ' +
      notFound,
    responses: {
      200: TokenSecuritySchema,
      404: ErrorEnvelope,
      502: ErrorEnvelope,
      ...standardErrors,
      ...paymentErrors,
    },
    metadata: { payment: fixed('0.01'), example: { params: { mint: WSOL } } } satisfies RouteMeta,
  },
  holders: {
    method: 'GET',
    path: '/api/holders/:mint',
    pathParams: MintParams,
    query: z.object({
      whaleThresholdPercent: z.coerce
        .number()
        .min(0.01)
        .max(50)
        .default(1)
        .describe('share of supply, percent, from which a holder counts as a whale (default 1)'),
    }),
    summary: 'Holder distribution with whale detection',
    description:
      'The largest holders (up to 20 token accounts, mapped to their owning wallets), with each one’s share of supply and a ' +
      'whale flag at `whaleThresholdPercent` of supply or more. AMM pool vaults and burn addresses are listed apart under ' +
      '`excluded` and left out of the concentration figures (top 1/10/20 share, Gini, HHI). Design: fields as listed. ' +
      notFound,
    responses: { 200: TokenHoldersSchema, 404: ErrorEnvelope, 502: ErrorEnvelope, ...standardErrors, ...paymentErrors },
    metadata: {
      payment: fixed('0.01'),
      example: { params: { mint: USDC }, query: { whaleThresholdPercent: 1 } },
    } satisfies RouteMeta,
  },
  market: {
    method: 'GET',
    path: '/api/market/:mint',
    pathParams: MintParams,
    summary: 'Market data: trading pairs, price changes',
    description:
      'Every trading pair of the token (most liquid first, at most 30) with its DEX, price, liquidity, 24-hour volume and ' +
      'buy/sell counts, and the token’s price change and volume over 5 minutes, 1, 6 and 24 hours. Design: fields as listed. ' +
      notFound,
    responses: { 200: TokenMarketSchema, 404: ErrorEnvelope, 502: ErrorEnvelope, ...standardErrors, ...paymentErrors },
    metadata: { payment: fixed('0.003'), example: { params: { mint: WSOL } } } satisfies RouteMeta,
  },
  full: {
    method: 'GET',
    path: '/api/full/:mint',
    pathParams: MintParams,
    summary: 'Overview, security, holders and market combined',
    description:
      'The four analyses of the token in one answer (holders with the default 1 percent whale threshold), for less than ' +
      'buying them separately. ' +
      notFound,
    responses: { 200: TokenFullSchema, 404: ErrorEnvelope, 502: ErrorEnvelope, ...standardErrors, ...paymentErrors },
    metadata: { payment: fixed('0.02'), example: { params: { mint: USDC } } } satisfies RouteMeta,
  },
  compare: {
    method: 'POST',
    path: '/api/compare',
    body: CompareBody,
    summary: 'Compare 2 to 5 tokens with rankings',
    description:
      'Ranks 2 to 5 distinct tokens on six criteria: liquidity, 24-hour volume, market cap, 24-hour momentum (higher is ' +
      'better), safety (lower riskScore is better) and distribution (lower top-10 holder share is better). Design: on each ' +
      'criterion rank r of n earns (n − r) / (n − 1) × 100 points; compositeScore is their weighted mean (safety 0.30, ' +
      'liquidity 0.25, volume 0.15, distribution 0.15, marketCap 0.10, momentum 0.05) and sets overallRank; ties share a ' +
      'rank. Fewer than 2, more than 5 or repeated mints are 400 invalid_request. 404 token_not_found names the unknown ' +
      'mint in `details.mint`; 502 upstream_unavailable when a live provider fails.',
    responses: {
      200: TokenComparisonSchema,
      404: ErrorEnvelope,
      502: ErrorEnvelope,
      ...standardErrors,
      ...paymentErrors,
    },
    metadata: { payment: fixed('0.03'), example: { body: { mints: [USDC, WSOL] } } } satisfies RouteMeta,
  },
});

export const tokens = defineService({
  id: 'tokens',
  title: 'Token Analysis',
  description:
    'Solana token analysis aggregated from several data providers and the chain itself: overview (price, volume, ' +
    'market cap), security scoring with warnings, holder distribution with whale detection, market data by trading ' +
    'pair, everything combined, and side-by-side comparison of 2 to 5 tokens with rankings.',
  router,
  dataModes: {
    chain:
      "the deployment's Solana RPC: the local ledger, or a cluster with SOLANA_RPC_URL; market fields null, source.note says why",
    live: "the chain plus DexScreener's trading pairs, with MARKET_DATA=live",
  },
});
