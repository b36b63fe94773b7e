import { conviction } from '@agent-economy/contracts';
import { createServiceApp, fromContext } from '../../runtime/app';
import type { ServiceContext } from '../../runtime/context';
import { analyze } from './domain';
import { convictionHandlers, readFull, readQuick, resolveAll } from './handlers';
import { liveSource, simulatedSource, type LiveConvictionOptions } from './sources';

export interface ConvictionOptions {
  /** simulated: the seeded spot market (MARKET_DATA=simulated, the default); live: Binance and OKX spot APIs. */
  market?: 'simulated' | 'live';
  /** Seed of the market model (MARKET_SEED): replicas with one seed simulate one market. */
  seed?: string;
  /** Live only: provider base URLs and the read cache. */
  live?: LiveConvictionOptions;
  /**
   * The clock (default Date.now): the instant the simulated market is read at, or that decides the live hours complete.
   */
  now?: () => number;
}

/**
 * The market conviction index: whether a token's market is thin or firm, over five dimensions computed from order
 * books and hourly trade bars, read from the seeded market model or from exchanges' public APIs. It keeps no state.
 */
export async function createConvictionApp(context: ServiceContext, options: ConvictionOptions = {}) {
  const now = options.now ?? Date.now;
  const source = options.market === 'live' ? liveSource(options.live, now) : simulatedSource(options.seed, now);
  return await createServiceApp({
    service: conviction,
    handlers: convictionHandlers({
      source,
      reasoner: context.reasoner,
      db: context.db,
      now,
      ...(context.prices ? { prices: context.prices } : {}),
    }),
    ...fromContext(context),
    upstream: source.tracker,
    // An unknown token, a market too thin to score or a provider down fail before the 402: nobody pays for them.
    // The live source caches each read briefly, so the handler reuses the preflight's.
    preflight: {
      analyze: async ({ body }) => {
        const token = source.resolve((body as { token: string }).token);
        analyze(token, await readFull(source, token));
      },
      quickScore: async ({ body }) => {
        const token = source.resolve((body as { token: string }).token);
        analyze(token, await readQuick(source, token));
      },
      compare: async ({ body }) => {
        const tokens = resolveAll(source, (body as { tokens: string[] }).tokens);
        const reads = await Promise.all(tokens.map((t) => readFull(source, t)));
        tokens.forEach((t, i) => analyze(t, reads[i]!));
      },
    },
  });
}
