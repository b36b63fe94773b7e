import type {
  DataSource,
  TokenHolders,
  TokenMarket,
  TokenOverview,
  TokenSecurityReport,
  tokens,
} from '@agent-economy/contracts';
import type { RouterImplementation } from '../../runtime/app';
import { sharedReads } from '../../upstream/shared-reads';
import { multiplyDecimals, sumDecimals, uiAmount } from '../../upstream/decimal';
import type { DexPair, MarketSource } from '../../upstream/dexscreener';
import type { SolanaSource } from '../../upstream/solana';
import { countHolders, readLargestHolders, readMint, type MintFacts } from '../../upstream/token-chain';
import { compareTokens, holderDistribution, riskScore, riskWarnings, type CompareInput } from './domain';
import { firstListed, marketFromPairs } from './market';

export interface TokensDeps {
  chain: SolanaSource;
  /** The market provider (MARKET_DATA=live), or null: market fields are then null and the answer says why. */
  market: MarketSource | null;
  localChain: boolean;
  now: () => Date;
}

export const NO_MARKET_NOTE =
  'Market fields (price, volume, liquidity, pairs) are null: this deployment reads no market provider. Set MARKET_DATA=live to read DexScreener.';

/** One token's reads, shared by the parts of an answer (and by the preflight that checked the mint exists). */
export function tokenReader(deps: TokensDeps) {
  // A preflight and the handler after it read the same mint within a moment: they share the read.
  const once = sharedReads();
  const mintOf = (mint: string) => once(`mint:${mint}`, () => readMint(deps.chain, mint));
  const pairsOf = (mint: string): Promise<DexPair[] | null> =>
    deps.market ? once(`pairs:${mint}`, () => deps.market!.pairs(mint)) : Promise.resolve(null);

  function source(withMarket: boolean, marketFields: boolean): DataSource {
    const asOf = deps.now().toISOString();
    if (withMarket) return { mode: 'live', providers: [deps.chain.provider, deps.market!.provider], asOf };
    return { mode: 'chain', providers: [deps.chain.provider], asOf, ...(marketFields ? { note: NO_MARKET_NOTE } : {}) };
  }

  async function holders(mint: string, whaleThresholdPercent: number): Promise<TokenHolders> {
    const [facts, pairs] = await Promise.all([mintOf(mint), pairsOf(mint)]);
    return holdersOf(facts, pairs, whaleThresholdPercent);
  }

  async function holdersOf(
    facts: MintFacts,
    pairs: DexPair[] | null,
    whaleThresholdPercent: number,
  ): Promise<TokenHolders> {
    const pools = new Set((pairs ?? []).map((p) => p.pairAddress));
    const [accounts, totalHolders] = await Promise.all([
      readLargestHolders(deps.chain, facts, pools),
      countHolders(deps.chain, facts, deps.localChain),
    ]);
    return {
      mint: facts.mint,
      decimals: facts.decimals,
      supply: facts.supply.toString(),
      uiSupply: uiAmount(facts.supply, facts.decimals),
      totalHolders,
      whaleThresholdPercent,
      ...holderDistribution(accounts, facts.supply, facts.decimals, whaleThresholdPercent),
      source: source(false, false),
    };
  }

  async function overview(mint: string): Promise<TokenOverview> {
    const [facts, pairs] = await Promise.all([mintOf(mint), pairsOf(mint)]);
    const reference = pairs?.[0];
    const market = pairs ? marketFromPairs(mint, facts.metadata?.symbol ?? null, pairs) : null;
    const uiSupply = uiAmount(facts.supply, facts.decimals);
    const price = market?.priceUsd ?? null;
    return {
      mint,
      name: facts.metadata?.name || reference?.baseToken.name || null,
      symbol: facts.metadata?.symbol || reference?.baseToken.symbol || null,
      decimals: facts.decimals,
      tokenProgram: facts.tokenProgram,
      imageUrl: reference?.info?.imageUrl ?? null,
      priceUsd: price,
      priceChange24hPercent: market?.priceChangePercent.h24 ?? null,
      volume24hUsd: market ? (market.volumeUsd.h24 ?? '0') : null,
      // Every unit of an SPL mint's supply circulates unless burned; without a lock registry, circulating = total.
      marketCapUsd: price ? multiplyDecimals(price, uiSupply) : null,
      fdvUsd: price ? multiplyDecimals(price, uiSupply) : null,
      liquidityUsd: market ? market.liquidityUsd : null,
      supply: facts.supply.toString(),
      uiSupply,
      pairCount: pairs?.length ?? 0,
      createdAt: pairs ? firstListed(pairs) : null,
      source: source(pairs !== null, true),
    };
  }

  async function security(mint: string): Promise<TokenSecurityReport> {
    const [facts, pairs] = await Promise.all([mintOf(mint), pairsOf(mint)]);
    const holding = await holdersOf(facts, pairs, 1);
    const liquidityUsd = pairs ? sumDecimals(pairs.map((p) => (p.liquidity?.usd ?? 0).toString())) : null;
    const warnings = riskWarnings({
      mintAuthority: facts.mintAuthority,
      freezeAuthority: facts.freezeAuthority,
      metadataMutable: facts.metadata ? facts.metadata.mutable : null,
      permanentDelegate: facts.permanentDelegate,
      transferHookProgram: facts.transferHookProgram,
      transferFeePercent: facts.transferFeePercent,
      top1Percent: holding.concentration.top1Percent,
      top10Percent: holding.concentration.top10Percent,
      market: pairs ? { liquidityUsd: liquidityUsd!, pairCount: pairs.length, createdAt: firstListed(pairs) } : null,
      now: deps.now(),
    });
    return {
      mint,
      ...riskScore(warnings),
      tokenProgram: facts.tokenProgram,
      mintAuthority: facts.mintAuthority,
      freezeAuthority: facts.freezeAuthority,
      updateAuthority: facts.metadata?.updateAuthority ?? null,
      metadataMutable: facts.metadata?.mutable ?? false,
      token2022Extensions: facts.extensions,
      transferFeePercent: facts.transferFeePercent,
      // LP locks and provider counts need a pool indexer (RugCheck and the like); none is read, so they are unknown.
      lpLockedPercent: null,
      liquidityUsd,
      lpProviderCount: null,
      top10HolderPercent: holding.concentration.top10Percent,
      warnings,
      source: source(pairs !== null, true),
    };
  }

  async function market(mint: string): Promise<TokenMarket> {
    const [facts, pairs] = await Promise.all([mintOf(mint), pairsOf(mint)]);
    if (pairs) return { ...marketFromPairs(mint, facts.metadata?.symbol ?? null, pairs), source: source(true, true) };
    return {
      mint,
      symbol: facts.metadata?.symbol ?? null,
      priceUsd: null,
      referencePair: null,
      priceChangePercent: { m5: null, h1: null, h6: null, h24: null },
      volumeUsd: { m5: null, h1: null, h6: null, h24: null },
      buys24h: null,
      sells24h: null,
      liquidityUsd: null,
      pairs: [],
      source: source(false, true),
    };
  }

  return { mintOf, pairsOf, source, holders, overview, security, market, hasMarket: deps.market !== null };
}

export type TokenReader = ReturnType<typeof tokenReader>;

export function tokensHandlers(reader: TokenReader): RouterImplementation<typeof tokens.router> {
  return {
    overview: async ({ params }) => ({ status: 200, body: await reader.overview(params.mint) }),
    security: async ({ params }) => ({ status: 200, body: await reader.security(params.mint) }),
    holders: async ({ params, query }) => ({
      status: 200,
      body: await reader.holders(params.mint, query.whaleThresholdPercent),
    }),
    market: async ({ params }) => ({ status: 200, body: await reader.market(params.mint) }),
    full: async ({ params }) => {
      const [overview, security, holders, market] = await Promise.all([
        reader.overview(params.mint),
        reader.security(params.mint),
        reader.holders(params.mint, 1),
        reader.market(params.mint),
      ]);
      return { status: 200, body: { mint: params.mint, overview, security, holders, market, source: overview.source } };
    },
    compare: async ({ body }) => {
      const rows = await Promise.all(
        body.mints.map(async (mint): Promise<CompareInput> => {
          const [overview, security] = await Promise.all([reader.overview(mint), reader.security(mint)]);
          return {
            mint,
            symbol: overview.symbol,
            name: overview.name,
            priceUsd: overview.priceUsd,
            marketCapUsd: overview.marketCapUsd,
            volume24hUsd: overview.volume24hUsd,
            liquidityUsd: overview.liquidityUsd,
            priceChange24hPercent: overview.priceChange24hPercent,
            riskScore: security.riskScore,
            top10HolderPercent: security.top10HolderPercent,
          };
        }),
      );
      return { status: 200, body: { ...compareTokens(rows), source: reader.source(reader.hasMarket, true) } };
    },
  };
}
