import { funding } from '@agent-economy/contracts';
import { createServiceApp, fromContext } from '../../runtime/app';
import { unprocessable } from '../../runtime/errors';
import type { ServiceContext } from '../../runtime/context';
import { embeddedPerpSource, livePerpSource, sharedMarketModel, type PerpExchange } from '../../upstream/market';
import { decodeCursor } from './domain';
import { assetRows, fundingHandlers, scanFilters } from './handlers';

export interface FundingOptions {
  /** simulated: the seeded market model (MARKET_DATA=simulated, the default); live: the nine venues' public APIs. */
  market?: 'simulated' | 'live';
  /** Seed of the market model (MARKET_SEED): replicas with one seed simulate one market. */
  seed?: string;
  /** Live only: venue base URLs where they differ from the public ones. */
  venueUrls?: Partial<Record<PerpExchange, string>>;
  /** Live only: how long one read of every venue is reused, ms (default 15 000). */
  liveCacheMs?: number;
  /** The clock the embedded market is read at (default Date.now). */
  now?: () => number;
}

/**
 * The funding-rate scanner: perpetual funding, open interest, basis and squeeze risk across nine venues, from the
 * seeded market model or the venues' public APIs. It keeps no state: every answer is computed from the market.
 */
/** 422 venue_not_served when the request names a venue this deployment's market does not have. */
function servedVenues(served: readonly string[], asked: readonly string[] | undefined): void {
  const foreign = asked?.filter((venue) => !served.includes(venue)) ?? [];
  if (!foreign.length) return;
  throw unprocessable(
    'venue_not_served',
    `This deployment's market has no ${foreign.join(', ')}: it answers with ${served.join(', ')} (${served[0]?.startsWith('venue-') ? 'the simulated market; real exchanges need MARKET_DATA=live' : 'live exchanges'})`,
    { venues: foreign, served },
  );
}

export async function createFundingApp(context: ServiceContext, options: FundingOptions = {}) {
  const now = options.now ?? Date.now;
  const source =
    options.market === 'live'
      ? livePerpSource({
          ...(options.venueUrls ? { baseUrls: options.venueUrls } : {}),
          ...(options.liveCacheMs !== undefined ? { cacheMs: options.liveCacheMs } : {}),
        })
      : embeddedPerpSource(sharedMarketModel(options.seed), now);
  return await createServiceApp({
    service: funding,
    handlers: fundingHandlers({ source, reasoner: context.reasoner, now }),
    ...fromContext(context),
    // /health reports the market source: mode, each provider's last outcome, degraded while one is failing.
    upstream: source.tracker,
    // A cursor from other filters, an unknown asset, or every venue failing fail before the 402: nobody pays for them.
    // Venues this deployment does not serve (a real exchange on a simulated market, or the reverse) are refused too.
    preflight: {
      scan: async ({ body }) => {
        servedVenues(source.venues, body.exchanges);
        const page = body.cursor ? decodeCursor(body.cursor, scanFilters(body), now()) : undefined;
        await source.snapshot(page ? { at: page.at } : {});
      },
      squeeze: async ({ body }) => {
        servedVenues(source.venues, (body as { exchanges?: readonly string[] }).exchanges);
        await source.snapshot();
      },
      asset: async ({ params, body }) => {
        servedVenues(source.venues, body.exchanges);
        assetRows(await source.snapshot(), params.symbol, body.exchanges);
      },
    },
  });
}
