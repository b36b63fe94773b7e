import {
  atomicToUsd,
  usdToAtomic,
  type EcosystemProject,
  type MarketplaceResource,
  type SellerProfile,
  type SellerStats,
  type Timeframe,
} from '@agent-economy/contracts';

// The marketplace's figures: pure functions over the resource catalog (read from the running services' descriptors
// and OpenAPI documents) and the settlement totals (copied from the facilitator's records). Money is summed in atomic
// units (bigint) and turned into the contract's display numbers only at the end.

/** A paid route of a running service, as its documents describe it. */
export interface CatalogResource {
  /** Public base address + the route's path template, e.g. http://127.0.0.1:4105/api/lesson. */
  resourceUrl: string;
  displayName: string;
  description: string;
  category: string;
  priceUsd: string;
  payTo: string;
  serviceId: string;
}

/** A running service: its descriptor's name and description, where they were read, and its paid routes. */
export interface CatalogService {
  id: string;
  name: string;
  description: string;
  url: string;
  agentCardUrl: string;
  resources: CatalogResource[];
}

export interface ResourceTotals {
  resource: string;
  payTo: string;
  /** What each of these settlements paid, atomic units. */
  amount: bigint;
  calls: number;
  volume: bigint;
}

export interface WindowTotals {
  calls: number;
  volume: bigint;
  buyers: number;
}

export interface SellerTotals extends WindowTotals {
  payTo: string;
  window: WindowTotals;
  firstAt: Date;
  lastAt: Date;
  networks: string[];
}

export interface SettlementWindow {
  since: Date;
  until: Date;
}

export const TIMEFRAMES: readonly Timeframe[] = ['1d', '7d', '30d', '90d'];
const DAY_MS = 86_400_000;

export function windowOf(timeframe: Timeframe, now: Date): SettlementWindow {
  return { since: new Date(now.getTime() - Number.parseInt(timeframe, 10) * DAY_MS), until: now };
}

/** A display figure in USD (6 decimals at most), from atomic units. */
export const usd = (atomic: bigint): number => Number(atomicToUsd(atomic));

/** A paid URL without its query or fragment, as resources are matched. */
export function stripQuery(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return url;
  }
}

/** Whether a concrete paid URL is a call of a resource (its path parameters filled in). */
export function matcher(resourceUrl: string): (url: string) => boolean {
  const template = new URL(resourceUrl);
  const path = new RegExp(
    `^${template.pathname.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z_][A-Za-z0-9_]*/g, '[^/]+')}$`,
  );
  const origin = template.origin;
  return (url: string) => {
    try {
      const parsed = new URL(url);
      return parsed.origin === origin && path.test(parsed.pathname);
    } catch {
      return false;
    }
  };
}

/**
 * Whether settlements count as calls of a listed resource: their URL is a call of it, they paid its payTo (a payment to
 * someone else naming this URL is not this seller's business), and each paid at least its price (its lowest, for an
 * adaptive or tiered route): anyone can settle a transfer of dust naming a route, which buys no call of it.
 */
export function callsOf(resource: CatalogResource): (t: ResourceTotals) => boolean {
  const matches = matcher(resource.resourceUrl);
  const price = usdToAtomic(resource.priceUsd, 'up');
  return (t) => t.payTo === resource.payTo && t.amount >= price && matches(t.resource);
}

/** Every resource with its all-time calls and volume (the settlements `callsOf` it). Highest volume first. */
export function listResources(catalog: CatalogResource[], totals: ResourceTotals[]): MarketplaceResource[] {
  return catalog
    .map((resource) => {
      const own = totals.filter(callsOf(resource));
      const calls = own.reduce((n, t) => n + t.calls, 0);
      const volume = own.reduce((n, t) => n + t.volume, 0n);
      return { resource, calls, volume };
    })
    .sort(
      (a, b) =>
        compareBig(b.volume, a.volume) ||
        b.calls - a.calls ||
        a.resource.resourceUrl.localeCompare(b.resource.resourceUrl),
    )
    .map(({ resource, calls, volume }) => ({
      resourceUrl: resource.resourceUrl,
      displayName: resource.displayName,
      description: resource.description,
      category: resource.category,
      priceUsd: Number(resource.priceUsd),
      payTo: resource.payTo,
      stats: { totalCalls: calls, totalVolumeUsd: usd(volume) },
    }));
}

const compareBig = (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0);

/** What the catalog says about a seller: the services paying to it, their resources. */
export interface SellerIdentity {
  payTo: string;
  displayName: string;
  description: string;
  category: string;
  websiteUrl: string | null;
  agentCardUrl: string | null;
  resources: CatalogResource[];
}

/** The most frequent value (ties: the first in order). */
function mostCommon(values: string[]): string | undefined {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  let best: string | undefined;
  for (const [v, n] of counts) if (best === undefined || n > counts.get(best)!) best = v;
  return best;
}

/**
 * Who a seller is: named after the service (descriptor) most of its resources belong to; a wallet paid through the
 * facilitator for resources no running service lists is named after the origin it was paid for, else its address.
 */
export function identify(payTo: string, services: CatalogService[], paidUrls: string[]): SellerIdentity {
  const own = services
    .map((s) => ({ service: s, resources: s.resources.filter((r) => r.payTo === payTo) }))
    .filter((s) => s.resources.length > 0);
  const resources = own.flatMap((s) => s.resources);
  if (own.length > 0) {
    const main = own.slice().sort((a, b) => b.resources.length - a.resources.length)[0]!.service;
    return {
      payTo,
      displayName: own.length === 1 ? main.name : `${main.name} and ${own.length - 1} more`,
      description:
        own.length === 1 ? main.description : own.map((s) => `${s.service.name}: ${s.service.description}`).join(' '),
      category: mostCommon(resources.map((r) => r.category)) ?? 'uncategorized',
      websiteUrl: main.url,
      agentCardUrl: main.agentCardUrl,
      resources,
    };
  }
  const origins = paidUrls.flatMap((u) => {
    try {
      return [new URL(u).origin];
    } catch {
      return [];
    }
  });
  const origin = mostCommon(origins);
  return {
    payTo,
    displayName: origin ? new URL(origin).host : `${payTo.slice(0, 4)}…${payTo.slice(-4)}`,
    description: `A seller paid through the facilitator${origin ? ` for resources at ${origin}` : ''}; no running service of this deployment lists its resources.`,
    category: 'uncategorized',
    websiteUrl: origin ?? null,
    agentCardUrl: null,
    resources: [],
  };
}

export type ProjectSort = 'volume' | 'settlements' | 'recent';

/** Every seller (catalog payees and wallets with counted settlements) with the window's figures, sorted as asked. */
export function listProjects(
  services: CatalogService[],
  totals: SellerTotals[],
  resourceTotals: ResourceTotals[],
  sort: ProjectSort,
  direction: 'asc' | 'desc',
): EcosystemProject[] {
  const byPayTo = new Map(totals.map((t) => [t.payTo, t]));
  const sellers = [
    ...new Set([...services.flatMap((s) => s.resources.map((r) => r.payTo)), ...totals.map((t) => t.payTo)]),
  ];
  const projects = sellers.map((payTo) => {
    const t = byPayTo.get(payTo);
    const identity = identify(
      payTo,
      services,
      resourceTotals.filter((r) => r.payTo === payTo).map((r) => r.resource),
    );
    const paidUrls = new Set(resourceTotals.filter((r) => r.payTo === payTo).map((r) => stripQuery(r.resource)));
    return {
      payTo,
      displayName: identity.displayName,
      category: identity.category,
      resourceCount: identity.resources.length || paidUrls.size,
      settlements: t?.window.calls ?? 0,
      volume: t?.window.volume ?? 0n,
      uniqueBuyers: t?.window.buyers ?? 0,
      lastAt: t?.lastAt ?? null,
    };
  });
  const sign = direction === 'asc' ? 1 : -1;
  const key = (p: (typeof projects)[number]): [bigint, number] =>
    sort === 'volume'
      ? [p.volume, p.settlements]
      : sort === 'settlements'
        ? [BigInt(p.settlements), Number(p.volume)]
        : [BigInt(p.lastAt?.getTime() ?? -1), 0];
  projects.sort((a, b) => {
    const [ka, ta] = key(a);
    const [kb, tb] = key(b);
    return sign * (compareBig(ka, kb) || ta - tb) || a.payTo.localeCompare(b.payTo);
  });
  return projects.map((p) => ({
    payTo: p.payTo,
    displayName: p.displayName,
    category: p.category,
    resourceCount: p.resourceCount,
    settlements: p.settlements,
    volumeUsd: usd(p.volume),
    uniqueBuyers: p.uniqueBuyers,
    lastSettlementAt: p.lastAt?.toISOString() ?? null,
  }));
}

export function sellerProfile(identity: SellerIdentity, totals: SellerTotals | undefined): SellerProfile {
  return {
    payTo: identity.payTo,
    displayName: identity.displayName,
    description: identity.description,
    category: identity.category,
    websiteUrl: identity.websiteUrl,
    agentCardUrl: identity.agentCardUrl,
    networks: totals?.networks ?? [],
    resources: identity.resources.map((r) => ({
      resourceUrl: r.resourceUrl,
      displayName: r.displayName,
      priceUsd: Number(r.priceUsd),
    })),
    firstSettlementAt: totals?.firstAt.toISOString() ?? null,
  };
}

/** The seller's all-time figures, one entry per timeframe, and its top 10 resources by volume. */
export function sellerStats(
  payTo: string,
  identity: SellerIdentity,
  perTimeframe: { timeframe: Timeframe; totals: SellerTotals | undefined }[],
  resourceTotals: ResourceTotals[],
  asOf: Date,
): SellerStats {
  // Every row carries the all-time figures beside its window's: take them from the first.
  const all = perTimeframe[0]?.totals;
  const calls = all?.calls ?? 0;
  const volume = all?.volume ?? 0n;
  // Settled URLs grouped under the listed resource they call (path parameters folded), else as paid; a transfer below a
  // listed resource's price naming it is no call of it, and is left out of the top resources.
  const matchers = identity.resources.map((r) => ({
    url: r.resourceUrl,
    named: matcher(r.resourceUrl),
    calls: callsOf(r),
  }));
  const grouped = new Map<string, { calls: number; volume: bigint }>();
  for (const t of resourceTotals) {
    const named = matchers.filter((m) => m.named(t.resource));
    if (named.length > 0 && !named.some((m) => m.calls(t))) continue;
    const url = named.find((m) => m.calls(t))?.url ?? stripQuery(t.resource);
    const entry = grouped.get(url) ?? { calls: 0, volume: 0n };
    grouped.set(url, { calls: entry.calls + t.calls, volume: entry.volume + t.volume });
  }
  const topResources = [...grouped]
    .sort(([ua, a], [ub, b]) => compareBig(b.volume, a.volume) || b.calls - a.calls || ua.localeCompare(ub))
    .slice(0, 10)
    .map(([resourceUrl, t]) => ({ resourceUrl, totalCalls: t.calls, totalVolumeUsd: usd(t.volume) }));
  return {
    payTo,
    stats: { totalCalls: calls, totalVolumeUsd: usd(volume) },
    uniqueBuyers: all?.buyers ?? 0,
    // Average in atomic units, rounded down to the unit, then shown in USD.
    averagePriceUsd: calls > 0 ? usd(volume / BigInt(calls)) : 0,
    lastSettlementAt: all?.lastAt.toISOString() ?? null,
    timeframes: perTimeframe.map(({ timeframe, totals }) => ({
      timeframe,
      settlements: totals?.window.calls ?? 0,
      volumeUsd: usd(totals?.window.volume ?? 0n),
      uniqueBuyers: totals?.window.buyers ?? 0,
    })),
    topResources,
    asOf: asOf.toISOString(),
  };
}

/** Page positions are opaque: "p" and the offset, base64url. */
export function encodeCursor(offset: number): string {
  return Buffer.from(`p${offset}`).toString('base64url');
}

export function decodeCursor(cursor: string | undefined): number | undefined {
  if (cursor === undefined) return 0;
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!/^p\d{1,9}$/.test(text) || encodeCursor(Number(text.slice(1))) !== cursor) return undefined;
  return Number(text.slice(1));
}
