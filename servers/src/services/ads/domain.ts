import { createHash } from 'node:crypto';
import type {
  BidStrategy,
  Campaign,
  CampaignStatus,
  ManifestCampaign,
  ResourceTransport,
} from '@agent-economy/contracts';

// The ad network's rules as plain functions over plain data: eligibility, ranking, charges, statuses.

export interface StoredCampaign {
  id: string;
  seq: number;
  advertiserId: string;
  advertiser: { id: string; name: string; wallet: string; network: string };
  name: string;
  status: CampaignStatus;
  budgetTotal: bigint;
  budgetDaily: bigint;
  maxBid: bigint;
  bidStrategy: BidStrategy;
  scheduleStart: Date;
  scheduleEnd: Date | null;
  targetCategories: string[];
  targetNetworks: string[];
  targetTransports: ResourceTransport[];
  targetUrlPatterns: string[];
  recResourceUrl: string;
  recDescription: string;
  recSponsorName: string;
  recCatalogId: string | null;
  spentTotal: bigint;
  /** Spent on `spentDay` (a UTC date, YYYY-MM-DD); on any other day nothing has been spent yet. */
  spentToday: bigint;
  spentDay: string;
  funded: bigint;
  refunded: bigint;
  lastRefundTransaction: string | null;
  matches: number;
  settlements: number;
  impressions: number;
  conversions: number;
  lastMatchedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  activatedAt: Date | null;
}

/** What the resource catalog says about a settled resource (absent from the catalog: no category, http). */
export interface ResourceFacts {
  category: string | null;
  transport: ResourceTransport;
}

export const utcDay = (at: Date) => at.toISOString().slice(0, 10);

/** Spent today as of `now`: what was spent on another day does not count. */
export const spentOn = (c: Pick<StoredCampaign, 'spentToday' | 'spentDay'>, now: Date) =>
  c.spentDay === utcDay(now) ? c.spentToday : 0n;

/** What the network holds for the campaign: paid in, less paid back, less charged. */
export const heldOf = (c: Pick<StoredCampaign, 'funded' | 'refunded' | 'spentTotal'>) =>
  c.funded - c.refunded - c.spentTotal;

/** What an activation must pay in so the campaign holds its whole remaining budget. */
export function unfunded(c: Pick<StoredCampaign, 'budgetTotal' | 'spentTotal' | 'funded' | 'refunded'>): bigint {
  const lacking = c.budgetTotal - c.spentTotal - heldOf(c);
  return lacking > 0n ? lacking : 0n;
}

/**
 * What a charge of `bid` may take now: never more than is left of the total budget, of today's budget, or of
 * what the campaign holds (spend never exceeds what was funded).
 */
export function chargeable(c: StoredCampaign, bid: bigint, now: Date): bigint {
  const limits = [bid, c.budgetTotal - c.spentTotal, c.budgetDaily - spentOn(c, now), heldOf(c)];
  const least = limits.reduce((a, b) => (b < a ? b : a));
  return least > 0n ? least : 0n;
}

/** The charge of one sponsored settlement (cpm: a thousandth of the bid, rounded down) or one conversion (cpa). */
export const settlementBid = (c: Pick<StoredCampaign, 'bidStrategy' | 'maxBid'>) =>
  c.bidStrategy === 'cpm' ? c.maxBid / 1000n : 0n;
export const conversionBid = (c: Pick<StoredCampaign, 'bidStrategy' | 'maxBid'>) =>
  c.bidStrategy === 'cpa' ? c.maxBid : 0n;

/**
 * The bid per delivery, scaled by 1000 to stay in integers: cpm pays max_bid/1000 per settlement; cpa pays max_bid
 * per conversion, worth max_bid/100 per delivery at the assumed 1 % conversion rate.
 */
export const deliveryValue = (c: Pick<StoredCampaign, 'bidStrategy' | 'maxBid'>) =>
  c.bidStrategy === 'cpm' ? c.maxBid : c.maxBid * 10n;

/** A glob over addresses: `*` matches any run of characters, everything else itself. */
export function globMatches(pattern: string, value: string): boolean {
  const source = pattern
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${source}$`).test(value);
}

/** The status as of `now`: an active or paused campaign whose schedule has ended is completed. */
export function statusAt(c: Pick<StoredCampaign, 'status' | 'scheduleEnd'>, now: Date): CampaignStatus {
  if ((c.status === 'active' || c.status === 'paused') && c.scheduleEnd && c.scheduleEnd.getTime() <= now.getTime())
    return 'completed';
  return c.status;
}

/** Active, inside its schedule, with budget left in total, today and in what it holds. */
export function canServe(c: StoredCampaign, now: Date): boolean {
  return (
    statusAt(c, now) === 'active' &&
    c.scheduleStart.getTime() <= now.getTime() &&
    c.spentTotal < c.budgetTotal &&
    spentOn(c, now) < c.budgetDaily &&
    heldOf(c) > 0n
  );
}

export interface SettledResource {
  resourceUrl: string;
  network: string;
}

/** Every non-empty target list matches the settled resource; a campaign never matches its own resource. */
export function targets(c: StoredCampaign, settled: SettledResource, facts: ResourceFacts): boolean {
  if (settled.resourceUrl === c.recResourceUrl) return false;
  if (c.targetNetworks.length && !c.targetNetworks.includes(settled.network)) return false;
  if (c.targetUrlPatterns.length && !c.targetUrlPatterns.some((p) => globMatches(p, settled.resourceUrl))) return false;
  if (c.targetCategories.length && (!facts.category || !c.targetCategories.includes(facts.category))) return false;
  if (c.targetTransports.length && !c.targetTransports.includes(facts.transport)) return false;
  return true;
}

/** The winner: the highest bid per delivery, ties to the campaign served least recently, then the oldest. */
export function pickCampaign(
  campaigns: StoredCampaign[],
  settled: SettledResource,
  facts: ResourceFacts,
  now: Date,
): StoredCampaign | undefined {
  const eligible = campaigns.filter((c) => canServe(c, now) && targets(c, settled, facts));
  eligible.sort((a, b) => {
    const byBid = deliveryValue(b) - deliveryValue(a);
    if (byBid !== 0n) return byBid > 0n ? 1 : -1;
    const served = (a.lastMatchedAt?.getTime() ?? 0) - (b.lastMatchedAt?.getTime() ?? 0);
    return served !== 0 ? served : a.seq - b.seq;
  });
  return eligible[0];
}

/** 422 reasons a campaign's budgets, bid and schedule can break, checked on create and update. */
export function budgetProblem(
  c: Pick<StoredCampaign, 'budgetTotal' | 'budgetDaily' | 'maxBid' | 'spentTotal' | 'scheduleStart' | 'scheduleEnd'>,
  now: Date,
  scheduleChanged: boolean,
): { code: string; message: string } | null {
  if (c.budgetTotal < c.spentTotal)
    return {
      code: 'budget_below_spent',
      message: `budget_total is below what the campaign has already spent (${c.spentTotal})`,
    };
  if (c.budgetDaily > c.budgetTotal)
    return { code: 'budget_daily_exceeds_total', message: 'budget_daily is larger than budget_total' };
  if (c.maxBid > c.budgetDaily)
    return { code: 'bid_exceeds_daily_budget', message: 'max_bid_amount is larger than budget_daily' };
  if (c.scheduleEnd && c.scheduleEnd.getTime() <= c.scheduleStart.getTime())
    return { code: 'schedule_invalid', message: 'schedule_end is not after schedule_start' };
  if (scheduleChanged && c.scheduleEnd && c.scheduleEnd.getTime() <= now.getTime())
    return { code: 'schedule_invalid', message: 'schedule_end is already past' };
  return null;
}

export function beaconUrl(publicUrl: string, campaignId: string, tx?: string): string {
  return `${publicUrl}/v1/track/impression/${campaignId}${tx ? `?tx=${tx}` : ''}`;
}

export function toCampaign(c: StoredCampaign, now: Date): Campaign {
  return {
    id: c.id,
    advertiser_id: c.advertiserId,
    advertiser: {
      id: c.advertiser.id,
      name: c.advertiser.name,
      wallet_address: c.advertiser.wallet,
      network: c.advertiser.network,
    },
    name: c.name,
    status: statusAt(c, now),
    budget_total: c.budgetTotal.toString(),
    budget_daily: c.budgetDaily.toString(),
    max_bid_amount: c.maxBid.toString(),
    bid_strategy: c.bidStrategy,
    schedule_start: c.scheduleStart.toISOString(),
    schedule_end: c.scheduleEnd?.toISOString() ?? null,
    target_categories: c.targetCategories,
    target_networks: c.targetNetworks,
    target_transports: c.targetTransports,
    target_url_patterns: c.targetUrlPatterns,
    rec_resource_url: c.recResourceUrl,
    rec_description: c.recDescription,
    rec_sponsor_name: c.recSponsorName,
    rec_catalog_id: c.recCatalogId,
    spent_total: c.spentTotal.toString(),
    spent_today: spentOn(c, now).toString(),
    budget_funded: c.funded.toString(),
    budget_refunded: c.refunded.toString(),
    budget_held: heldOf(c).toString(),
    last_refund_transaction: c.lastRefundTransaction,
    stats: { matches: c.matches, settlements: c.settlements, impressions: c.impressions, conversions: c.conversions },
    created_at: c.createdAt.toISOString(),
    updated_at: c.updatedAt.toISOString(),
    activated_at: c.activatedAt?.toISOString() ?? null,
  };
}

export function toManifestCampaign(c: StoredCampaign, publicUrl: string): ManifestCampaign {
  return {
    campaignId: c.id,
    recommendation: { resourceUrl: c.recResourceUrl, description: c.recDescription, sponsor: c.recSponsorName },
    catalogId: c.recCatalogId,
    targeting: {
      categories: c.targetCategories,
      networks: c.targetNetworks,
      transports: c.targetTransports,
      urlPatterns: c.targetUrlPatterns,
    },
    impressionBeacon: beaconUrl(publicUrl, c.id),
    conversionResource: c.recResourceUrl,
    scheduleEnd: c.scheduleEnd?.toISOString() ?? null,
  };
}

/** A manifest version that changes whenever its content does. */
export const manifestVersion = (campaigns: ManifestCampaign[]) =>
  createHash('sha256').update(JSON.stringify(campaigns)).digest('hex').slice(0, 16);

/** Opaque cursors over a list ordered by a descending sequence number. */
export const encodeCursor = (seq: number) => Buffer.from(`s:${seq}`).toString('base64url');
export function decodeCursor(cursor: string | undefined): number | undefined {
  if (!cursor) return undefined;
  const match = /^s:(\d{1,15})$/.exec(Buffer.from(cursor, 'base64url').toString());
  return match ? Number(match[1]) : Number.NaN;
}
