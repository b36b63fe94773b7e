import type { AppRoute, AppRouter } from '@ts-rest/core';
import { isAppRoute } from '@ts-rest/core';

/**
 * Where a data service's numbers can come from, by `source.mode`, each with what it means for this service:
 * chain (the deployment's Solana RPC), live (named third-party providers), simulated (the seeded model).
 */
export type DataModes = Partial<Record<'chain' | 'live' | 'simulated', string>>;

/** A service: its id (folder, document and SDK name), what it is, and its ts-rest router. */
export interface ServiceDefinition<R extends AppRouter = AppRouter, Id extends string = string> {
  id: Id;
  title: string;
  description: string;
  router: R;
  /**
   * A data service's possible `source.mode`s: the documents state them on every route whose answer carries `source`.
   */
  dataModes?: DataModes;
}

export function defineService<const Id extends string, const R extends AppRouter>(
  definition: ServiceDefinition<R, Id>,
): ServiceDefinition<R, Id> {
  return definition;
}

export interface ListedRoute {
  /** Route key, dotted for nested routers; it becomes the SDK method name. */
  key: string;
  route: AppRoute;
}

/** Every route of a router in listing order (the order skills and documents use). */
export function listRoutes(router: AppRouter, prefix = ''): ListedRoute[] {
  return Object.entries(router).flatMap(([key, value]) =>
    isAppRoute(value) ? [{ key: prefix + key, route: value }] : listRoutes(value as AppRouter, `${prefix}${key}.`),
  );
}
