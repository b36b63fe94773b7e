import type { marketplace } from '@agent-economy/contracts';
import type { RouterImplementation } from '../../runtime/app';
import { HttpError, notFound } from '../../runtime/errors';
import { recomputed } from '../../runtime/recomputed';
import type { CatalogReader } from './catalog';
import {
  TIMEFRAMES,
  decodeCursor,
  encodeCursor,
  identify,
  listProjects,
  listResources,
  sellerProfile,
  sellerStats,
  windowOf,
  type ProjectSort,
  type ResourceTotals,
  type SellerTotals,
} from './domain';
import type { MarketplaceStore } from './store';

export interface MarketplaceDeps {
  store: MarketplaceStore;
  catalog: CatalogReader;
  /** Brings the copy of the settlement records up to date (never throws). */
  sync(): Promise<void>;
  /** The facilitator the records come from (the sync position's key). */
  source(): string;
  now: () => Date;
}

const sellerNotFound = (payTo: string) =>
  notFound('seller_not_found', `No resource or settlement pays to ${payTo}`, { payTo });

export function marketplaceHandlers(deps: MarketplaceDeps): RouterImplementation<typeof marketplace.router> {
  // The free listings aggregate every settlement copied: computed again only once the copy moved on (its cursor), and
  // a timeframe's figures also after a minute, as its window slides.
  const allResourceTotals = recomputed<ResourceTotals[]>();
  const sellerTotalsIn = new Map<string, ReturnType<typeof recomputed<SellerTotals[]>>>();
  const copied = async () => String((await deps.store.position(deps.source())).cursor);

  /** A seller the marketplace knows: a running service's payee, or a wallet with counted settlements. */
  async function seller(payTo: string) {
    await deps.sync();
    const [services, resourceTotals, totals] = await Promise.all([
      deps.catalog.services(),
      deps.store.resourceTotals(payTo),
      // Only the all-time figures are used here; any window will do.
      deps.store.sellerTotals(windowOf('1d', deps.now()), payTo),
    ]);
    const identity = identify(
      payTo,
      services,
      resourceTotals.map((t) => t.resource),
    );
    if (identity.resources.length === 0 && totals.length === 0) throw sellerNotFound(payTo);
    return { identity, resourceTotals, totals: totals[0] };
  }

  return {
    resources: async () => {
      await deps.sync();
      const cursor = await copied();
      const [catalog, totals] = await Promise.all([
        deps.catalog.resources(),
        allResourceTotals(cursor, deps.now(), () => deps.store.resourceTotals()),
      ]);
      return { status: 200 as const, body: { ok: true, resources: listResources(catalog, totals) } };
    },

    projects: async ({ query }) => {
      const offset = decodeCursor(query.cursor);
      if (offset === undefined) {
        throw new HttpError(400, 'invalid_request', 'Invalid request: query.cursor is not a cursor this API gave', {
          fields: [{ field: 'query.cursor', message: 'not a cursor this API gave' }],
        });
      }
      await deps.sync();
      const [cursor, now] = [await copied(), deps.now()];
      let inTimeframe = sellerTotalsIn.get(query.timeframe);
      if (!inTimeframe) sellerTotalsIn.set(query.timeframe, (inTimeframe = recomputed({ maxAgeMs: 60_000 })));
      const [services, totals, resourceTotals] = await Promise.all([
        deps.catalog.services(),
        inTimeframe(cursor, now, () => deps.store.sellerTotals(windowOf(query.timeframe, now))),
        allResourceTotals(cursor, now, () => deps.store.resourceTotals()),
      ]);
      const all = listProjects(services, totals, resourceTotals, query.sort as ProjectSort, query.direction);
      const items = all.slice(offset, offset + query.limit);
      const next = offset + query.limit < all.length ? encodeCursor(offset + query.limit) : null;
      return { status: 200 as const, body: { items, nextCursor: next } };
    },

    profile: async ({ params }) => {
      const { identity, totals } = await seller(params.payTo);
      return { status: 200 as const, body: sellerProfile(identity, totals) };
    },

    stats: async ({ params }) => {
      const { identity, resourceTotals } = await seller(params.payTo);
      const now = deps.now();
      const perTimeframe = await Promise.all(
        TIMEFRAMES.map(async (timeframe) => ({
          timeframe,
          totals: (await deps.store.sellerTotals(windowOf(timeframe, now), params.payTo))[0],
        })),
      );
      // The figures are as of the last successful copy of the facilitator's records.
      const { syncedAt } = await deps.store.position(deps.source());
      return {
        status: 200 as const,
        body: sellerStats(params.payTo, identity, perTimeframe, resourceTotals, syncedAt ?? now),
      };
    },
  };
}
