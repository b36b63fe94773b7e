import { pricing, type PricedEndpoint, type RouteMeta } from '@agent-economy/contracts';
import { migrate } from '../../db';
import { createServiceApp, fromContext } from '../../runtime/app';
import type { ServiceContext } from '../../runtime/context';
import { DEXSCREENER, DEXSCREENER_URL, dexScreenerSource } from '../../upstream/dexscreener';
import { solanaSource } from '../../upstream/solana';
import { UpstreamTracker } from '../../upstream/tracker';
import { ROUTE_OF, pricingEngine, rangeOf, type Range } from './engine';
import { pricingHandlers, pricingReader } from './handlers';
import { BOOSTS, PROFILES, trendingProviders } from './market';
import { migrations, pricingStore } from './store';
import { ENDPOINTS } from './surge';

export interface PricingOptions {
  /**
   * live: market data and trending lists from DexScreener (MARKET_DATA=live); simulated (the default): none are read.
   */
  market?: 'simulated' | 'live';
  /** DexScreener's base address, where it differs from the public one (tests point it at a replay server). */
  dexScreenerUrl?: string;
  /** The call rate (paid calls per minute) at which an endpoint's multiplier is 1. Default 1. */
  baselineCallsPerMinute?: number;
  now?: () => Date;
}

/**
 * The adaptive-pricing marketplace: blockchain data (token intelligence, wallet scans, trending tokens, whale
 * tracking) read from the chain and, live, from DexScreener, priced by the demand measured in settled payments.
 */
export async function createPricingApp(context: ServiceContext, options: PricingOptions = {}) {
  const now = options.now ?? (() => new Date());
  const live = options.market === 'live';
  const baseline = options.baselineCallsPerMinute ?? 1;
  if (!(baseline > 0)) throw new Error('baselineCallsPerMinute must be positive');
  await migrate(context.db, 'pricing', migrations);
  const chainProvider = context.localChain ? 'local-ledger' : 'solana-rpc';
  const tracker = new UpstreamTracker(
    live ? 'live' : 'chain',
    live ? [chainProvider, DEXSCREENER, BOOSTS, PROFILES] : [chainProvider],
  );
  const chain = solanaSource(context, tracker);
  const baseUrl = options.dexScreenerUrl ?? DEXSCREENER_URL;
  const reader = pricingReader({
    chain,
    market: live ? dexScreenerSource(tracker, { baseUrl }) : null,
    trending: live ? trendingProviders(tracker, { baseUrl }) : null,
    localChain: context.localChain,
    now,
    limits: { signaturePages: 10, trendingTransactions: 300, movesPerWhale: 25 },
  });
  // The deployment's ranges (<ID>_PRICES may move them), each endpoint's base at twice its minimum.
  const ranges = Object.fromEntries(
    ENDPOINTS.map((e): [PricedEndpoint, Range] => [
      e,
      rangeOf(context.prices?.[ROUTE_OF[e]] ?? (pricing.router[ROUTE_OF[e]].metadata as RouteMeta).payment),
    ]),
  ) as Record<PricedEndpoint, Range>;
  const store = pricingStore(context.db, context.paywall.payTo);
  const engine = pricingEngine({
    store,
    ranges,
    baselineCallsPerMinute: baseline,
    quoteSeconds: context.paywall.maxTimeoutSeconds,
    now,
  });

  const mintReadable = async ({ body }: { body: { mint: string } }) =>
    void (await Promise.all([reader.mintOf(body.mint), reader.pairsOf(body.mint)]));
  return await createServiceApp({
    service: pricing,
    handlers: pricingHandlers({ reader, engine, store, now }),
    ...fromContext(context),
    now,
    upstream: tracker,
    // Requests bound to fail (an address that is not a mint, a chain or provider that does not answer) fail here,
    // before the 402: nobody is quoted or charged for them.
    preflight: {
      tokenIntel: mintReadable,
      whaleWatch: mintReadable,
      walletScan: async () => void (await chain.read((rpc) => rpc.getSlot().send())),
      trending: async () =>
        void (live ? await reader.trendingLists() : await chain.read((rpc) => rpc.getSlot().send())),
    },
    pricing: {
      tokenIntel: engine.resolver('token-intel'),
      walletScan: engine.resolver('wallet-scan'),
      trending: engine.resolver('trending'),
      whaleWatch: engine.resolver('whale-watch'),
    },
  });
}
