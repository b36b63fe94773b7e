import { marketplace, services as registry } from '@agent-economy/contracts';
import { migrate } from '../../db';
import { createServiceApp, fromContext } from '../../runtime/app';
import type { ServiceContext } from '../../runtime/context';
import { catalogReader } from './catalog';
import { marketplaceHandlers } from './handlers';
import { marketplaceStore, migrations } from './store';
import { settlementSync } from './sync';

export interface MarketplaceOptions {
  /**
   * Base addresses of the services whose paid routes are listed, by id. Default: every service of the contracts
   * registry at the deployment's address (context.serviceUrl); those that do not answer are left out.
   */
  serviceUrls?: () => Record<string, string>;
  /** The facilitator whose settlement records are read. Default: the deployment's (the paywall's, else its address). */
  facilitatorUrl?: () => string;
  /** How long the catalog read from the services is kept; default 30 s. */
  catalogTtlMs?: number;
  /** The clock timeframes and the catalog's TTL are judged by (tests move it). */
  now?: () => Date;
}

export async function createMarketplaceApp(context: ServiceContext, options: MarketplaceOptions = {}) {
  await migrate(context.db, 'marketplace', migrations);
  const now = options.now ?? (() => new Date());
  const logger = context.logger.child({ service: 'marketplace' });
  const store = marketplaceStore(context.db);
  const facilitatorUrl =
    options.facilitatorUrl ?? (() => context.paywall.facilitatorUrl ?? context.serviceUrl('facilitator'));
  const serviceUrls =
    options.serviceUrls ??
    (() =>
      Object.fromEntries(registry.filter((s) => s.id !== marketplace.id).map((s) => [s.id, context.serviceUrl(s.id)])));
  const catalog = catalogReader({ serviceUrls, now, ttlMs: options.catalogTtlMs ?? 30_000, timeoutMs: 3_000, logger });
  const sync = settlementSync({ store, facilitatorUrl, now, logger });
  return await createServiceApp({
    service: marketplace,
    handlers: marketplaceHandlers({
      store,
      catalog,
      sync: () => sync.sync(),
      source: () => facilitatorUrl().replace(/\/+$/, ''),
      now,
    }),
    ...fromContext(context),
  });
}
