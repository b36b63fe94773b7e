import { address } from '@solana/kit';
import { atomicToUsd } from '@agent-economy/contracts';
import type {
  DataSource,
  PricedEndpoint,
  RiskWarning,
  TokenBalance,
  TrendWindow,
  TrendingToken,
  Whale,
  WhaleMove,
  pricing,
} from '@agent-economy/contracts';
import type { RouterImplementation } from '../../runtime/app';
import type { VerifiedPayment } from '../../runtime/paywall';
import { TOKEN_2022_PROGRAM, TOKEN_PROGRAM } from '../../solana/programs';
import { sharedReads } from '../../upstream/shared-reads';
import { multiplyDecimals, percentOf, sumDecimals, toScaled, uiAmount } from '../../upstream/decimal';
import { DEXSCREENER, type DexPair, type MarketSource } from '../../upstream/dexscreener';
import { gini, hhi } from '../../upstream/measures';
import type { SolanaSource } from '../../upstream/solana';
import {
  countHolders,
  readLargestHolders,
  readMint,
  type HolderAccount,
  type MintFacts,
} from '../../upstream/token-chain';
import {
  KNOWN_PROGRAMS,
  POOL_AUTHORITIES,
  SWAP_PROGRAMS,
  allSignatures,
  identify,
  mapLimited,
  readTransaction,
  signaturesPage,
} from './chain';
import type { PricingEngine } from './engine';
import { decimal, fuseRanks, marketOf, windowMarket, type trendingProviders } from './market';
import type { PricingStore } from './store';
import { ENDPOINTS, WINDOWS, endpointAnalytics, ZONE_RULES } from './surge';

export const WRAPPED_SOL = 'So11111111111111111111111111111111111111112';
export const NO_MARKET_NOTE =
  'Market and USD fields are null: this deployment reads no market provider. Set MARKET_DATA=live to read DexScreener.';
const TREND_WINDOW_SECONDS: Record<TrendWindow, number> = { '1h': 3_600, '6h': 21_600, '24h': 86_400 };

export interface PricingDeps {
  chain: SolanaSource;
  /** DexScreener pairs (MARKET_DATA=live), or null offline. */
  market: MarketSource | null;
  trending: ReturnType<typeof trendingProviders> | null;
  localChain: boolean;
  now: () => Date;
  limits: { signaturePages: number; trendingTransactions: number; movesPerWhale: number };
}

/** The chain and market reads of the paid endpoints; a preflight and the handler after it share each read briefly. */
export function pricingReader(deps: PricingDeps) {
  const once = sharedReads();
  const live = deps.market !== null;
  const mintOf = (mint: string) => once(`mint:${mint}`, () => readMint(deps.chain, mint));
  const pairsOf = (mint: string): Promise<DexPair[] | null> =>
    deps.market ? once(`pairs:${mint}`, () => deps.market!.pairs(mint)) : Promise.resolve(null);
  /** The token's USD price from its most liquid pair (live only). */
  const priceOf = async (mint: string) => {
    const pairs = await pairsOf(mint);
    return pairs?.[0] ? decimal(pairs[0].priceUsd) : null;
  };

  function source(withMarket: boolean, extra?: string): DataSource {
    const asOf = deps.now().toISOString();
    if (withMarket && live)
      return { mode: 'live', providers: [deps.chain.provider, DEXSCREENER], asOf, ...(extra ? { note: extra } : {}) };
    const note = [live ? null : NO_MARKET_NOTE, extra].filter(Boolean).join(' ');
    return { mode: 'chain', providers: [deps.chain.provider], asOf, ...(note ? { note } : {}) };
  }

  /** The largest holders grouped by owning wallet (burn, AMM vaults and program accounts left out), largest first. */
  async function owners(facts: MintFacts, pairs: DexPair[] | null) {
    const pools = new Set((pairs ?? []).map((p) => p.pairAddress));
    const [accounts, total] = await Promise.all([
      readLargestHolders(deps.chain, facts, pools),
      countHolders(deps.chain, facts, deps.localChain),
    ]);
    const byOwner = new Map<string, { owner: string; amount: bigint; tokenAccounts: string[] }>();
    for (const a of accounts.filter((x: HolderAccount) => !x.excluded && x.amount > 0n)) {
      const key = a.owner ?? a.tokenAccount;
      const entry = byOwner.get(key) ?? { owner: key, amount: 0n, tokenAccounts: [] };
      entry.amount += a.amount;
      entry.tokenAccounts.push(a.tokenAccount);
      byOwner.set(key, entry);
    }
    const list = [...byOwner.values()].sort((a, b) =>
      b.amount > a.amount ? 1 : b.amount < a.amount ? -1 : a.owner.localeCompare(b.owner),
    );
    const top = (n: number) => list.slice(0, n).reduce((s, o) => s + o.amount, 0n);
    return { list, total, top };
  }

  async function tokenIntel(mint: string) {
    const [facts, pairs] = await Promise.all([mintOf(mint), pairsOf(mint)]);
    const { list, total, top } = await owners(facts, pairs);
    const top10Percent = percentOf(top(10), facts.supply);
    const largestHolderPercent = percentOf(top(1), facts.supply);
    const market = pairs ? marketOf(pairs) : null;
    const warnings = riskWarnings(facts, {
      top1Percent: largestHolderPercent,
      top10Percent,
      liquidityUsd: market?.liquidityUsd ?? null,
      pairCount: pairs?.length ?? null,
    });
    const score = Math.min(
      100,
      warnings.reduce((s, w) => s + w.points, 0),
    );
    return {
      mint,
      name: facts.metadata?.name || pairs?.[0]?.baseToken.name || null,
      symbol: facts.metadata?.symbol || pairs?.[0]?.baseToken.symbol || null,
      decimals: facts.decimals,
      supply: uiAmount(facts.supply, facts.decimals),
      market,
      holders: { total, top10Percent, largestHolderPercent },
      authorities: {
        mintAuthority: facts.mintAuthority,
        freezeAuthority: facts.freezeAuthority,
        metadataMutable: facts.metadata ? facts.metadata.mutable : null,
      },
      risk: {
        score,
        level: score > 60 ? ('high' as const) : score >= 30 ? ('medium' as const) : ('low' as const),
        warnings: warnings.map(({ points: _, ...w }) => w),
      },
      source: source(true),
    };
  }

  async function walletScan(wallet: string) {
    const [lamports, spl, t22, identity, history, solPrice] = await Promise.all([
      deps.chain.read((rpc) => rpc.getBalance(address(wallet)).send()).then((r) => BigInt(r.value)),
      tokenAccounts(wallet, TOKEN_PROGRAM),
      tokenAccounts(wallet, TOKEN_2022_PROGRAM),
      identify(deps.chain, wallet),
      allSignatures(deps.chain, wallet, deps.limits.signaturePages),
      live ? priceOf(WRAPPED_SOL) : Promise.resolve(null),
    ]);
    const accounts = [...spl, ...t22];
    const byMint = new Map<string, { amount: bigint; decimals: number }>();
    for (const a of accounts.filter((x) => x.amount > 0n)) {
      const entry = byMint.get(a.mint) ?? { amount: 0n, decimals: a.decimals };
      entry.amount += a.amount;
      byMint.set(a.mint, entry);
    }
    // Symbols and prices of the 30 largest holdings (by amount): reading more would cost a call each.
    const held = [...byMint.entries()].sort((a, b) =>
      compareScaled(uiAmount(b[1].amount, b[1].decimals), uiAmount(a[1].amount, a[1].decimals)),
    );
    const tokens: TokenBalance[] = await mapLimited(held, 8, async ([mint, h], i) => {
      const amount = uiAmount(h.amount, h.decimals);
      const [facts, price] =
        i < 30 ? await Promise.all([mintOf(mint).catch(() => null), live ? priceOf(mint) : null]) : [null, null];
      return {
        mint,
        symbol: facts?.metadata?.symbol || null,
        amount,
        decimals: h.decimals,
        valueUsd: price ? multiplyDecimals(price, amount) : null,
      };
    });
    tokens.sort((a, b) => compareScaled(b.valueUsd ?? '0', a.valueUsd ?? '0') || compareScaled(b.amount, a.amount));
    const sol = uiAmount(lamports, 9);
    const solValueUsd = solPrice ? multiplyDecimals(solPrice, sol) : null;
    const { signatures, complete } = history;
    const funding = complete ? await fundingSource(wallet, signatures.slice(-10).reverse()) : null;
    const at = (t: number | null | undefined) =>
      t === null || t === undefined ? null : new Date(t * 1000).toISOString();
    const notes = [
      'domains are null: .sol names are not resolved by this deployment.',
      complete
        ? null
        : `The history scan stopped after ${signatures.length} transactions: first activity and funding source are unknown.`,
    ];
    return {
      address: wallet,
      balances: {
        lamports: lamports.toString(),
        sol,
        solValueUsd,
        tokens: tokens.slice(0, 100),
        tokenAccountCount: accounts.length,
        totalValueUsd: solValueUsd ? sumDecimals([solValueUsd, ...tokens.map((t) => t.valueUsd)]) : null,
      },
      identity: { ...identity, domains: null },
      fundingSource: funding,
      activity: {
        firstSeenAt: complete ? at(signatures.at(-1)?.blockTime) : null,
        lastActiveAt: at(signatures[0]?.blockTime),
        transactionCount: signatures.length,
        transactionCountIsLowerBound: !complete,
      },
      // Live whenever any value came from the market (SOL's, or one holding's when SOL's pair gave no price).
      source: source(solPrice !== null || tokens.some((t) => t.valueUsd !== null), notes.filter(Boolean).join(' ')),
    };
  }

  async function tokenAccounts(owner: string, programId: string) {
    const { value } = (await deps.chain.read((rpc) =>
      rpc.getTokenAccountsByOwner(address(owner), { programId: address(programId) }, { encoding: 'jsonParsed' }).send(),
    )) as unknown as {
      value: {
        account: {
          data: { parsed?: { info?: { mint?: string; tokenAmount?: { amount: string; decimals: number } } } };
        };
      }[];
    };
    return value.flatMap(({ account }) => {
      const info = account.data.parsed?.info;
      if (!info?.mint || !info.tokenAmount) return [];
      return [
        { mint: info.mint, amount: BigInt(info.tokenAmount.amount), decimals: Number(info.tokenAmount.decimals) },
      ];
    });
  }

  /** The first incoming SOL transfer among the oldest transactions: who sent it, how much, when. */
  async function fundingSource(wallet: string, oldestFirst: { signature: string; failed: boolean }[]) {
    for (const s of oldestFirst.filter((x) => !x.failed)) {
      const tx = await readTransaction(deps.chain, s.signature);
      if (!tx || tx.failed) continue;
      const index = tx.accountKeys.indexOf(wallet);
      const received = index >= 0 ? tx.lamportDeltas[index]! : 0n;
      if (received <= 0n) continue;
      // The sender is the account whose balance fell the most in the same transaction.
      let sender = -1;
      tx.lamportDeltas.forEach((d, i) => {
        if (i !== index && d < 0n && (sender < 0 || d < tx.lamportDeltas[sender]!)) sender = i;
      });
      if (sender < 0) continue;
      const from = tx.accountKeys[sender]!;
      const who = await identify(deps.chain, from);
      return {
        address: from,
        kind: who.kind,
        label: who.label,
        signature: s.signature,
        lamports: received.toString(),
        fundedAt: new Date((tx.blockTime ?? 0) * 1000).toISOString(),
      };
    }
    return null;
  }

  async function whaleWatch(mint: string, minPercent: number, limit: number) {
    const [facts, pairs] = await Promise.all([mintOf(mint), pairsOf(mint)]);
    const { list, total, top } = await owners(facts, pairs);
    const price = pairs?.[0] ? decimal(pairs[0].priceUsd) : null;
    const shares = list.map((o) => (facts.supply > 0n ? Number(o.amount) / Number(facts.supply) : 0));
    const concentrationHhi = hhi(shares);
    const chosen = list.filter((o) => percentOf(o.amount, facts.supply) >= minPercent).slice(0, limit);
    const since = deps.now().getTime() / 1000 - 86_400;
    const activity = await mapLimited(chosen, 4, (o) => whaleMoves(o, mint, facts.decimals, since));
    const whales: Whale[] = chosen.map((o, i) => {
      const amount = uiAmount(o.amount, facts.decimals);
      return {
        rank: i + 1,
        owner: o.owner,
        amount,
        percentOfSupply: percentOf(o.amount, facts.supply),
        valueUsd: price ? multiplyDecimals(price, amount) : null,
        label: KNOWN_PROGRAMS[o.owner] ?? POOL_AUTHORITIES[o.owner] ?? null,
        change24h: activity[i]!.change === null ? null : signedUi(activity[i]!.change!, facts.decimals),
      };
    });
    // Newest first by slot (block times have one-second resolution).
    const recentMoves: WhaleMove[] = activity
      .flatMap((a) => a.moves)
      .sort((a, b) =>
        b.slot > a.slot
          ? 1
          : b.slot < a.slot
            ? -1
            : a.signature.localeCompare(b.signature) || a.owner.localeCompare(b.owner),
      )
      .slice(0, 50)
      .map(({ slot: _, ...m }) => ({ ...m, valueUsd: price ? multiplyDecimals(price, m.amount) : null }));
    return {
      mint,
      symbol: facts.metadata?.symbol || pairs?.[0]?.baseToken.symbol || null,
      supply: uiAmount(facts.supply, facts.decimals),
      holderCount: total,
      thresholdPercent: minPercent,
      concentration: {
        top1Percent: percentOf(top(1), facts.supply),
        top10Percent: percentOf(top(10), facts.supply),
        top20Percent: percentOf(top(20), facts.supply),
        gini: gini(list.map((o) => Number(o.amount))),
        hhi: concentrationHhi,
        level:
          concentrationHhi > 0.25
            ? ('high' as const)
            : concentrationHhi >= 0.15
              ? ('moderate' as const)
              : ('low' as const),
      },
      whales,
      recentMoves,
      source: source(price !== null),
    };
  }

  /**
   * A whale's moves of the mint in the last 24 hours, from its token accounts' signatures; change null when truncated.
   */
  async function whaleMoves(
    owner: { owner: string; tokenAccounts: string[] },
    mint: string,
    decimals: number,
    since: number,
  ) {
    const perAccount = deps.limits.movesPerWhale;
    let truncated = false;
    const signatures = new Map<string, number>();
    for (const account of owner.tokenAccounts) {
      const page = await signaturesPage(deps.chain, account, perAccount);
      if (page.length === perAccount && (page.at(-1)!.blockTime ?? 0) >= since) truncated = true;
      for (const s of page)
        if (!s.failed && s.blockTime !== null && s.blockTime >= since) signatures.set(s.signature, s.blockTime);
    }
    const moves: (Omit<WhaleMove, 'valueUsd'> & { slot: bigint })[] = [];
    let change = 0n;
    for (const [signature] of signatures) {
      const tx = await readTransaction(deps.chain, signature);
      if (!tx || tx.failed) continue;
      const delta = tx.tokenChanges
        .filter((c) => c.mint === mint && c.owner === owner.owner)
        .reduce((s, c) => s + c.delta, 0n);
      if (delta === 0n) continue;
      change += delta;
      const swap = tx.accountKeys.some((k) => SWAP_PROGRAMS.has(k));
      moves.push({
        signature,
        slot: tx.slot,
        owner: owner.owner,
        direction: swap ? (delta > 0n ? 'buy' : 'sell') : delta > 0n ? 'transfer-in' : 'transfer-out',
        amount: uiAmount(delta < 0n ? -delta : delta, decimals),
        at: new Date((tx.blockTime ?? 0) * 1000).toISOString(),
      });
    }
    return { moves, change: truncated ? null : change };
  }

  async function trending(window: TrendWindow, limit: number) {
    return live ? trendingLive(window, limit) : trendingOnChain(window, limit);
  }

  async function trendingLive(window: TrendWindow, limit: number) {
    const { lists } = await deps.trending!.read();
    const ranked = fuseRanks(lists).slice(0, limit);
    const rows = await mapLimited(ranked, 6, async (r) => windowMarket((await pairsOf(r.mint)) ?? [], window));
    const tokens: TrendingToken[] = ranked.map((r, i) => {
      const m = rows[i];
      return {
        rank: i + 1,
        mint: r.mint,
        symbol: m?.symbol ?? null,
        name: m?.name ?? null,
        priceUsd: m?.priceUsd ?? null,
        priceChangePercent: m?.priceChangePercent ?? null,
        volumeUsd: m?.volumeUsd ?? null,
        liquidityUsd: m?.liquidityUsd ?? null,
        marketCapUsd: m?.marketCapUsd ?? null,
        txns: m?.txns ?? null,
        transfers: null,
        listedBy: r.listedBy,
        trendScore: r.score,
      };
    });
    const answered = lists.map((l) => l.name);
    return {
      window,
      tokens,
      source: {
        mode: 'live' as const,
        providers: [...answered, DEXSCREENER],
        asOf: deps.now().toISOString(),
        ...(answered.length < 2
          ? { note: `Only ${answered.join(', ')} answered; the other trending list failed.` }
          : {}),
      },
    };
  }

  /** Offline: the tokens moved by the most transactions of the token programs in the window, counted on the chain. */
  async function trendingOnChain(window: TrendWindow, limit: number) {
    const since = deps.now().getTime() / 1000 - TREND_WINDOW_SECONDS[window];
    const cap = deps.limits.trendingTransactions;
    const seen = new Map<string, number>();
    let capped = false;
    for (const program of [TOKEN_PROGRAM, TOKEN_2022_PROGRAM]) {
      let before: string | undefined;
      for (let page = 0; page < 3; page++) {
        const batch = await signaturesPage(deps.chain, program, 1000, before);
        const inWindow = batch.filter((s) => s.blockTime !== null && s.blockTime >= since);
        for (const s of inWindow) if (!s.failed) seen.set(s.signature, s.blockTime!);
        if (batch.length < 1000 || inWindow.length < batch.length) break;
        before = batch.at(-1)!.signature;
      }
    }
    const signatures = [...seen.entries()].sort((a, b) => b[1] - a[1]).map(([s]) => s);
    if (signatures.length > cap) capped = true;
    const txs = await mapLimited(signatures.slice(0, cap), 8, (s) => readTransaction(deps.chain, s));
    const counts = new Map<string, number>();
    for (const tx of txs) {
      if (!tx || tx.failed) continue;
      for (const mint of new Set(tx.tokenChanges.map((c) => c.mint))) counts.set(mint, (counts.get(mint) ?? 0) + 1);
    }
    const ranked = [...counts.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, limit);
    const fused = fuseRanks([{ name: deps.chain.provider, mints: ranked.map(([m]) => m) }]);
    const names = await mapLimited(ranked, 8, ([mint]) =>
      mintOf(mint).then(
        (f) => f.metadata,
        () => null,
      ),
    );
    const tokens: TrendingToken[] = ranked.map(([mint, transfers], i) => ({
      rank: i + 1,
      mint,
      symbol: names[i]?.symbol || null,
      name: names[i]?.name || null,
      priceUsd: null,
      priceChangePercent: null,
      volumeUsd: null,
      liquidityUsd: null,
      marketCapUsd: null,
      txns: null,
      transfers,
      listedBy: fused[i]!.listedBy,
      trendScore: fused[i]!.score,
    }));
    const extra = capped
      ? `Counted over the latest ${cap} token-program transactions of the window.`
      : `Counted over ${signatures.length} token-program transactions of the window.`;
    return { window, tokens, source: source(false, extra) };
  }

  return {
    mintOf,
    pairsOf,
    tokenIntel,
    walletScan,
    whaleWatch,
    trending,
    live,
    trendingLists: () => deps.trending!.read(),
  };
}

export type PricingReader = ReturnType<typeof pricingReader>;

const compareScaled = (a: string, b: string) => {
  const x = toScaled(a) ?? 0n;
  const y = toScaled(b) ?? 0n;
  return x > y ? 1 : x < y ? -1 : 0;
};
const signedUi = (amount: bigint, decimals: number) =>
  amount < 0n ? `-${uiAmount(-amount, decimals)}` : uiAmount(amount, decimals);

/** Findings about a token and their points (the risk score is their sum, capped at 100). */
export function riskWarnings(
  facts: Pick<
    MintFacts,
    | 'mintAuthority'
    | 'freezeAuthority'
    | 'permanentDelegate'
    | 'transferHookProgram'
    | 'transferFeePercent'
    | 'metadata'
  >,
  holding: { top1Percent: number; top10Percent: number; liquidityUsd: string | null; pairCount: number | null },
): (RiskWarning & { points: number })[] {
  const w: (RiskWarning & { points: number })[] = [];
  const add = (name: string, level: RiskWarning['level'], points: number, description: string) =>
    w.push({ name, level, points, description: `${description} (+${points})` });
  if (facts.mintAuthority) add('mint_authority_enabled', 'danger', 30, 'The mint authority can still create tokens');
  if (facts.permanentDelegate)
    add('permanent_delegate', 'danger', 25, 'A permanent delegate can move or burn any holder’s tokens');
  if (facts.freezeAuthority)
    add('freeze_authority_enabled', 'danger', 20, 'The freeze authority can freeze holders’ accounts');
  if (holding.top1Percent >= 20)
    add('single_holder_concentration', 'warn', 20, `One owner holds ${holding.top1Percent}% of the supply`);
  if (holding.top10Percent >= 50)
    add('top10_concentration', 'warn', 15, `The 10 largest owners hold ${holding.top10Percent}% of the supply`);
  if (facts.transferHookProgram)
    add('transfer_hook', 'warn', 10, `Transfers call the program ${facts.transferHookProgram}`);
  if (facts.transferFeePercent) add('transfer_fee', 'warn', 10, `Transfers pay a ${facts.transferFeePercent}% fee`);
  if (holding.pairCount === 0) add('no_market', 'warn', 10, 'No trading pair lists the token');
  else if (holding.liquidityUsd !== null && (toScaled(holding.liquidityUsd) ?? 0n) < (toScaled('10000') ?? 0n))
    add('low_liquidity', 'warn', 10, `Liquidity is ${holding.liquidityUsd} USD, below 10000`);
  if (facts.metadata?.mutable)
    add('mutable_metadata', 'info', 5, 'The update authority can change the name, symbol and image');
  return w;
}

export function pricingHandlers(deps: {
  reader: PricingReader;
  engine: PricingEngine;
  store: PricingStore;
  now: () => Date;
}): RouterImplementation<typeof pricing.router> {
  const { reader, engine, store } = deps;
  const applied = (endpoint: PricedEndpoint, res: { locals: Record<string, unknown> }) =>
    engine.applied(endpoint, (res.locals.payment as VerifiedPayment | undefined)?.amount);
  return {
    overview: async () => {
      const endpoints = await engine.prices();
      return {
        status: 200,
        body: {
          endpoints,
          surgeRange: { min: '0.5', max: '5' },
          demandZones: ZONE_RULES.map((z) => ({ ...z })),
          updatedAt: endpoints[0]!.updatedAt,
        },
      };
    },
    priceCheck: async ({ params }) => ({ status: 200, body: (await engine.prices([params.endpoint]))[0]! }),
    analytics: async ({ query }) => {
      const to = deps.now();
      const { seconds, bucketSeconds } = WINDOWS[query.window];
      const from = new Date(to.getTime() - seconds * 1000);
      // The demand before the window prices its first buckets.
      const sales = await store.sales(new Date(from.getTime() - 300_000), to);
      const endpoints = (query.endpoint ? [query.endpoint] : [...ENDPOINTS]).map((endpoint) => {
        const a = endpointAnalytics({
          sales: sales.filter((s) => s.endpoint === endpoint),
          baseAtomic: engine.ranges[endpoint].baseAtomic,
          baselineCallsPerMinute: engine.baselineCallsPerMinute,
          window: query.window,
          to,
        });
        return {
          endpoint,
          priceHistory: a.priceHistory,
          revenue: {
            calls: a.revenue.calls,
            revenueUsd: usd(a.revenue.revenue),
            averagePriceUsd: usd(a.revenue.average),
            lowestPriceUsd: usd(a.revenue.lowest),
            highestPriceUsd: usd(a.revenue.highest),
          },
          demandTrend: a.demandTrend,
          revenueAtomic: a.revenue.revenue,
        };
      });
      const total = endpoints.reduce((s, e) => s + e.revenueAtomic, 0n);
      return {
        status: 200,
        body: {
          window: query.window,
          from: from.toISOString(),
          to: to.toISOString(),
          bucketSeconds,
          endpoints: endpoints.map(({ revenueAtomic: _, ...e }) => e),
          totals: { calls: endpoints.reduce((s, e) => s + e.revenue.calls, 0), revenueUsd: usd(total) },
        },
      };
    },
    tokenIntel: async ({ body, res }) => ({
      status: 200,
      body: { ...(await reader.tokenIntel(body.mint)), appliedPrice: await applied('token-intel', res) },
    }),
    walletScan: async ({ body, res }) => ({
      status: 200,
      body: { ...(await reader.walletScan(body.address)), appliedPrice: await applied('wallet-scan', res) },
    }),
    trending: async ({ body, res }) => ({
      status: 200,
      body: { ...(await reader.trending(body.window, body.limit)), appliedPrice: await applied('trending', res) },
    }),
    whaleWatch: async ({ body, res }) => ({
      status: 200,
      body: {
        ...(await reader.whaleWatch(body.mint, body.minPercent, body.limit)),
        appliedPrice: await applied('whale-watch', res),
      },
    }),
  };
}

const usd = (atomic: bigint) => atomicToUsd(atomic);
