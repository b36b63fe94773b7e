import { tokens } from '@agent-economy/contracts';
import { createServiceApp, fromContext } from '../../runtime/app';
import type { ServiceContext } from '../../runtime/context';
import { solanaSource } from '../../upstream/solana';
import { UpstreamTracker } from '../../upstream/tracker';
import { tokenReader, tokensHandlers } from './handlers';
import { DEXSCREENER, dexScreenerSource } from '../../upstream/dexscreener';

export interface TokensOptions {
  /** live: trading pairs from DexScreener (MARKET_DATA=live); simulated (the default): no market provider is read. */
  market?: 'simulated' | 'live';
  /** DexScreener's base address, where it differs from the public one (tests point it at a replay server). */
  dexScreenerUrl?: string;
  now?: () => Date;
}

/**
 * Token analysis: mint, authorities, Token-2022 extensions, metadata and holders read from the chain; trading pairs
 * from DexScreener when the deployment reads live market data, and otherwise null market fields that say why.
 */
export async function createTokensApp(context: ServiceContext, options: TokensOptions = {}) {
  const live = options.market === 'live';
  const chainProvider = context.localChain ? 'local-ledger' : 'solana-rpc';
  const tracker = new UpstreamTracker(live ? 'live' : 'chain', live ? [chainProvider, DEXSCREENER] : [chainProvider]);
  const chain = solanaSource(context, tracker);
  const reader = tokenReader({
    chain,
    market: live ? dexScreenerSource(tracker, options.dexScreenerUrl ? { baseUrl: options.dexScreenerUrl } : {}) : null,
    localChain: context.localChain,
    now: options.now ?? (() => new Date()),
  });
  // The mint and its market (when one is read) are fetched before the quote; the handler reuses both reads.
  const readable = (mint: string) => Promise.all([reader.mintOf(mint), reader.pairsOf(mint)]);
  const mintExists = async ({ params }: { params: { mint: string } }) => void (await readable(params.mint));
  return await createServiceApp({
    service: tokens,
    handlers: tokensHandlers(reader),
    ...fromContext(context),
    upstream: tracker,
    // An address that is not a mint, or a chain that does not answer, fails before the 402: nobody pays for it.
    preflight: {
      overview: mintExists,
      security: mintExists,
      holders: mintExists,
      market: mintExists,
      full: mintExists,
      compare: async ({ body }) => void (await Promise.all((body as { mints: string[] }).mints.map(readable))),
    },
  });
}
