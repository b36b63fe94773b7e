import { btcMetrics } from '@agent-economy/contracts';
import { createServiceApp, fromContext } from '../../runtime/app';
import type { ServiceContext } from '../../runtime/context';
import { answerer, btcMetricsHandlers, type Deployment } from './handlers';
import { metricsService } from './metrics';
import { embeddedSource, liveSource, type MetricsSource } from './sources';

export interface BtcMetricsOptions {
  /** 'first' (service id btc-metrics): info lists available date ranges. 'second' (btc-metrics-2): range results
   * carry summary statistics and upstream requests go one at a time. */
  deployment: 'first' | 'second';
  /** Where the daily data comes from: the embedded market model (default) or the public upstreams. */
  market?: 'simulated' | 'live';
  /** Coin Metrics Community API v4 base address (live). */
  coinMetricsUrl?: string;
  /** BGeometrics base address for SOPR (live); null reads no SOPR. */
  bgeometricsUrl?: string | null;
  /** The cache's clock, for tests. */
  now?: () => number;
}

/**
 * Bitcoin on-chain metrics (MVRV, MVRV Z-Score, SOPR, aSOPR, NUPL, price) for a date, a range or the latest day,
 * cached in memory for 1 hour. One contract, two deployments (DESIGN.md); each has its own cache and limiter.
 */
export async function createBtcMetricsApp(
  context: ServiceContext,
  options: BtcMetricsOptions = { deployment: 'first' },
) {
  const second = options.deployment === 'second';
  const deployment: Deployment = {
    summaryStatistics: second,
    sequentialUpstreamFetch: second,
    availableDateRanges: !second,
  };
  const source: MetricsSource =
    options.market === 'live'
      ? liveSource({
          sequential: second,
          ...(options.coinMetricsUrl ? { coinMetricsUrl: options.coinMetricsUrl } : {}),
          ...(options.bgeometricsUrl !== undefined ? { bgeometricsUrl: options.bgeometricsUrl } : {}),
        })
      : embeddedSource();
  const service = metricsService({ source, reasoner: context.reasoner, ...(options.now ? { now: options.now } : {}) });
  const answers = answerer(service);
  return await createServiceApp({
    service: btcMetrics,
    handlers: btcMetricsHandlers(service, deployment, answers),
    ...fromContext(context),
    // The answer is read before the 402: a day outside the data (404) or a failing upstream (502) costs nothing.
    preflight: {
      metrics: answers.preflight('metrics'),
      range: answers.preflight('range'),
      latest: answers.preflight('latest'),
    },
    upstream: source.tracker,
    deploymentId: options.deployment === 'second' ? 'btc-metrics-2' : 'btc-metrics',
  });
}
