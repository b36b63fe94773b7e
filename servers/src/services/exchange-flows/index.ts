import { exchangeFlows } from '@agent-economy/contracts';
import { createServiceApp, fromContext } from '../../runtime/app';
import type { ServiceContext } from '../../runtime/context';
import { flowsService } from './analysis';
import { answerer, exchangeFlowsHandlers } from './handlers';
import { liveFlowSource, simulatedFlowSource, type FlowSource } from './sources';

export interface ExchangeFlowsOptions {
  /** simulated: the seeded flow model (MARKET_DATA=simulated, the default); live: Coin Metrics and CoinGecko. */
  market?: 'simulated' | 'live';
  /** Seed of the market model (MARKET_SEED): replicas with one seed simulate one market. */
  seed?: string;
  /** Live only: Coin Metrics Community API v4 base address. */
  coinMetricsUrl?: string;
  /** Live only: CoinGecko API v3 base address. */
  coinGeckoUrl?: string;
  /** Live only: CoinGecko demo API key. */
  coinGeckoApiKey?: string;
  /** The clock (tests move it): the latest full UTC day, the simulated market's instant, `asOf`. */
  now?: () => number;
}

/**
 * The bitcoin exchange-flow monitor: daily inflow, outflow and netflow with direction, z-score, reserve change and
 * sentiment; per-exchange rankings; a weighted bullish/bearish/neutral signal with reasoning. It keeps no state:
 * every answer is computed from its source, the seeded model or the public providers.
 */
export async function createExchangeFlowsApp(context: ServiceContext, options: ExchangeFlowsOptions = {}) {
  const now = options.now ?? Date.now;
  const source: FlowSource =
    options.market === 'live'
      ? liveFlowSource({
          ...(options.coinMetricsUrl ? { coinMetricsUrl: options.coinMetricsUrl } : {}),
          ...(options.coinGeckoUrl ? { coinGeckoUrl: options.coinGeckoUrl } : {}),
          ...(options.coinGeckoApiKey ? { coinGeckoApiKey: options.coinGeckoApiKey } : {}),
        })
      : simulatedFlowSource(options.seed);
  const service = flowsService({ source, reasoner: context.reasoner, now });
  const answers = answerer(service);
  return await createServiceApp({
    service: exchangeFlows,
    handlers: exchangeFlowsHandlers(service, answers),
    ...fromContext(context),
    // A refused filter or a failing provider (502) fails before the 402: nobody pays for it.
    preflight: {
      flows: answers.preflight('flows'),
      exchanges: answers.preflight('exchanges'),
      signal: answers.preflight('signal'),
    },
    upstream: source.tracker,
  });
}
