import { sql, type Kysely, type Migration, type Transaction } from 'kysely';
import type { BidStrategy, CampaignStatus, ResourceTransport } from '@agent-economy/contracts';
import { chargeable, conversionBid, heldOf, settlementBid, utcDay, type StoredCampaign } from './domain';
import type { SharedDb } from '../../db';
import { grouped } from '../../db/grouped';

export const migrations: Record<string, Migration> = {
  '001_ads': {
    async up(db) {
      await db.schema
        .createTable('ads_advertisers')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('seq', 'serial', (c) => c.notNull().unique())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('wallet', 'text', (c) => c.notNull())
        .addColumn('network', 'text', (c) => c.notNull())
        .addColumn('created_at', 'timestamptz', (c) => c.notNull())
        .execute();
      // One advertiser per wallet and network, across replicas.
      await db.schema
        .createIndex('ads_advertisers_wallet_uq')
        .on('ads_advertisers')
        .columns(['wallet', 'network'])
        .unique()
        .execute();
      await db.schema
        .createTable('ads_campaigns')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('seq', 'serial', (c) => c.notNull().unique())
        .addColumn('advertiser_id', 'text', (c) => c.notNull().references('ads_advertisers.id'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('budget_total', 'int8', (c) => c.notNull())
        .addColumn('budget_daily', 'int8', (c) => c.notNull())
        .addColumn('max_bid', 'int8', (c) => c.notNull())
        .addColumn('bid_strategy', 'text', (c) => c.notNull())
        .addColumn('schedule_start', 'timestamptz', (c) => c.notNull())
        .addColumn('schedule_end', 'timestamptz')
        .addColumn('target_categories', 'jsonb', (c) => c.notNull())
        .addColumn('target_networks', 'jsonb', (c) => c.notNull())
        .addColumn('target_transports', 'jsonb', (c) => c.notNull())
        .addColumn('target_url_patterns', 'jsonb', (c) => c.notNull())
        .addColumn('rec_resource_url', 'text', (c) => c.notNull())
        .addColumn('rec_description', 'text', (c) => c.notNull())
        .addColumn('rec_sponsor_name', 'text', (c) => c.notNull())
        .addColumn('rec_catalog_id', 'text')
        .addColumn('spent_total', 'int8', (c) => c.notNull().defaultTo(0))
        .addColumn('spent_today', 'int8', (c) => c.notNull().defaultTo(0))
        .addColumn('spent_day', 'text', (c) => c.notNull())
        .addColumn('funded', 'int8', (c) => c.notNull().defaultTo(0))
        .addColumn('refunded', 'int8', (c) => c.notNull().defaultTo(0))
        .addColumn('last_refund_tx', 'text')
        .addColumn('matches', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('settlements', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('impressions', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('conversions', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('last_matched_at', 'timestamptz')
        .addColumn('created_at', 'timestamptz', (c) => c.notNull())
        .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
        .addColumn('activated_at', 'timestamptz')
        .addCheckConstraint(
          'ads_campaigns_spend_bounded',
          sql`spent_total <= budget_total and spent_total + refunded <= funded`,
        )
        .execute();
      await db.schema.createIndex('ads_campaigns_status').on('ads_campaigns').column('status').execute();
      // An activation's settled payment, once (keyed by the payment): what the campaign was funded with.
      await db.schema
        .createTable('ads_fundings')
        .addColumn('payment_key', 'text', (c) => c.primaryKey())
        .addColumn('campaign_id', 'text', (c) => c.notNull().references('ads_campaigns.id'))
        .addColumn('transaction', 'text', (c) => c.notNull())
        .addColumn('payer', 'text', (c) => c.notNull())
        .addColumn('amount', 'int8', (c) => c.notNull())
        .addColumn('at', 'timestamptz', (c) => c.notNull())
        .execute();
      // A refund of unspent budget: recorded (and taken off what the campaign holds) before the vault sends it.
      await db.schema
        .createTable('ads_refunds')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('campaign_id', 'text', (c) => c.notNull().references('ads_campaigns.id'))
        .addColumn('to_wallet', 'text', (c) => c.notNull())
        .addColumn('amount', 'int8', (c) => c.notNull())
        .addColumn('transaction', 'text')
        .addColumn('created_at', 'timestamptz', (c) => c.notNull())
        .execute();
      // Every settlement the facilitator reported to /v1/match with its txHash, and the campaign it delivered.
      await db.schema
        .createTable('ads_settlements')
        .addColumn('tx_hash', 'text', (c) => c.primaryKey())
        .addColumn('network', 'text', (c) => c.notNull())
        .addColumn('resource_url', 'text', (c) => c.notNull())
        .addColumn('payer', 'text', (c) => c.notNull())
        .addColumn('settled_amount', 'int8', (c) => c.notNull())
        .addColumn('campaign_id', 'text')
        .addColumn('impression_counted', 'boolean', (c) => c.notNull().defaultTo(false))
        .addColumn('reported_at', 'timestamptz', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('ads_settlements_payer')
        .on('ads_settlements')
        .columns(['payer', 'resource_url'])
        .execute();
      await db.schema
        .createTable('ads_events')
        .addColumn('tx_hash', 'text', (c) => c.primaryKey())
        .addColumn('seq', 'serial', (c) => c.notNull().unique())
        .addColumn('event_id', 'text', (c) => c.notNull().unique())
        .addColumn('campaign_id', 'text', (c) => c.notNull().references('ads_campaigns.id'))
        .addColumn('network', 'text', (c) => c.notNull())
        .addColumn('resource_url', 'text', (c) => c.notNull())
        .addColumn('resource_description', 'text', (c) => c.notNull())
        .addColumn('payer', 'text', (c) => c.notNull())
        .addColumn('settled_amount', 'int8', (c) => c.notNull())
        .addColumn('settled_at', 'timestamptz', (c) => c.notNull())
        .addColumn('charged', 'int8', (c) => c.notNull())
        .addColumn('received_at', 'timestamptz', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('ads_events_campaign').on('ads_events').columns(['campaign_id', 'seq']).execute();
      await db.schema
        .createTable('ads_conversions')
        .addColumn('conversion_tx', 'text', (c) => c.primaryKey())
        .addColumn('seq', 'serial', (c) => c.notNull().unique())
        .addColumn('conversion_id', 'text', (c) => c.notNull().unique())
        .addColumn('original_tx', 'text', (c) => c.notNull())
        .addColumn('campaign_id', 'text', (c) => c.notNull().references('ads_campaigns.id'))
        .addColumn('payer', 'text', (c) => c.notNull())
        .addColumn('converted_url', 'text', (c) => c.notNull())
        .addColumn('network', 'text', (c) => c.notNull())
        .addColumn('converted_at', 'timestamptz', (c) => c.notNull())
        .addColumn('charged', 'int8', (c) => c.notNull())
        .addColumn('recorded_at', 'timestamptz', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('ads_conversions_campaign')
        .on('ads_conversions')
        .columns(['campaign_id', 'seq'])
        .execute();
    },
  },
};

interface AdvertiserRow {
  id: string;
  seq: number;
  name: string;
  wallet: string;
  network: string;
  created_at: Date;
}
interface CampaignRow {
  id: string;
  seq: number;
  advertiser_id: string;
  name: string;
  status: CampaignStatus;
  budget_total: bigint;
  budget_daily: bigint;
  max_bid: bigint;
  bid_strategy: BidStrategy;
  schedule_start: Date;
  schedule_end: Date | null;
  target_categories: string[];
  target_networks: string[];
  target_transports: ResourceTransport[];
  target_url_patterns: string[];
  rec_resource_url: string;
  rec_description: string;
  rec_sponsor_name: string;
  rec_catalog_id: string | null;
  spent_total: bigint;
  spent_today: bigint;
  spent_day: string;
  funded: bigint;
  refunded: bigint;
  last_refund_tx: string | null;
  matches: number;
  settlements: number;
  impressions: number;
  conversions: number;
  last_matched_at: Date | null;
  created_at: Date;
  updated_at: Date;
  activated_at: Date | null;
}
interface FundingRow {
  payment_key: string;
  campaign_id: string;
  transaction: string;
  payer: string;
  amount: bigint;
  at: Date;
}
interface RefundRow {
  key: string;
  campaign_id: string;
  to_wallet: string;
  amount: bigint;
  transaction: string | null;
  created_at: Date;
}
export interface SettlementRow {
  tx_hash: string;
  network: string;
  resource_url: string;
  payer: string;
  settled_amount: bigint;
  campaign_id: string | null;
  impression_counted: boolean;
  reported_at: Date;
}
export interface EventRow {
  tx_hash: string;
  seq: number;
  event_id: string;
  campaign_id: string;
  network: string;
  resource_url: string;
  resource_description: string;
  payer: string;
  settled_amount: bigint;
  settled_at: Date;
  charged: bigint;
  received_at: Date;
}
export interface ConversionRow {
  conversion_tx: string;
  seq: number;
  conversion_id: string;
  original_tx: string;
  campaign_id: string;
  payer: string;
  converted_url: string;
  network: string;
  converted_at: Date;
  charged: bigint;
  recorded_at: Date;
}
interface Tables {
  ads_advertisers: AdvertiserRow;
  ads_campaigns: CampaignRow;
  ads_fundings: FundingRow;
  ads_refunds: RefundRow;
  ads_settlements: SettlementRow;
  ads_events: EventRow;
  ads_conversions: ConversionRow;
}
type Db = Kysely<Tables> | Transaction<Tables>;

const json = (value: unknown) => sql`${JSON.stringify(value)}::jsonb`;
const parseList = <T>(value: unknown): T[] => (typeof value === 'string' ? JSON.parse(value) : (value as T[]));

function toStored(r: CampaignRow & { adv_name: string; adv_wallet: string; adv_network: string }): StoredCampaign {
  return {
    id: r.id,
    seq: Number(r.seq),
    advertiserId: r.advertiser_id,
    advertiser: { id: r.advertiser_id, name: r.adv_name, wallet: r.adv_wallet, network: r.adv_network },
    name: r.name,
    status: r.status,
    budgetTotal: BigInt(r.budget_total),
    budgetDaily: BigInt(r.budget_daily),
    maxBid: BigInt(r.max_bid),
    bidStrategy: r.bid_strategy,
    scheduleStart: new Date(r.schedule_start),
    scheduleEnd: r.schedule_end ? new Date(r.schedule_end) : null,
    targetCategories: parseList(r.target_categories),
    targetNetworks: parseList(r.target_networks),
    targetTransports: parseList(r.target_transports),
    targetUrlPatterns: parseList(r.target_url_patterns),
    recResourceUrl: r.rec_resource_url,
    recDescription: r.rec_description,
    recSponsorName: r.rec_sponsor_name,
    recCatalogId: r.rec_catalog_id,
    spentTotal: BigInt(r.spent_total),
    spentToday: BigInt(r.spent_today),
    spentDay: r.spent_day,
    funded: BigInt(r.funded),
    refunded: BigInt(r.refunded),
    lastRefundTransaction: r.last_refund_tx,
    matches: Number(r.matches),
    settlements: Number(r.settlements),
    impressions: Number(r.impressions),
    conversions: Number(r.conversions),
    lastMatchedAt: r.last_matched_at ? new Date(r.last_matched_at) : null,
    createdAt: new Date(r.created_at),
    updatedAt: new Date(r.updated_at),
    activatedAt: r.activated_at ? new Date(r.activated_at) : null,
  };
}

export interface AdvertiserSummary extends AdvertiserRow {
  campaign_count: number;
  active_campaigns: number;
  spent_total: bigint;
}

/** What creating a campaign writes: the advertiser's fields of a stored campaign; counters and status start empty. */
export type NewCampaign = Pick<
  StoredCampaign,
  | 'id'
  | 'advertiserId'
  | 'name'
  | 'budgetTotal'
  | 'budgetDaily'
  | 'maxBid'
  | 'bidStrategy'
  | 'scheduleStart'
  | 'scheduleEnd'
  | 'targetCategories'
  | 'targetNetworks'
  | 'targetTransports'
  | 'targetUrlPatterns'
  | 'recResourceUrl'
  | 'recDescription'
  | 'recSponsorName'
  | 'recCatalogId'
>;

/** Fields PATCH may change, in column names. */
export type CampaignChanges = Partial<
  Pick<
    CampaignRow,
    | 'name'
    | 'budget_total'
    | 'budget_daily'
    | 'max_bid'
    | 'bid_strategy'
    | 'schedule_start'
    | 'schedule_end'
    | 'rec_resource_url'
    | 'rec_description'
    | 'rec_sponsor_name'
    | 'rec_catalog_id'
    | 'status'
  >
> & {
  target_categories?: string[];
  target_networks?: string[];
  target_transports?: ResourceTransport[];
  target_url_patterns?: string[];
};

/** A charge applied to a campaign: what it cost and the campaign after it. */
export interface Charged {
  charged: bigint;
}

export function adsStore(database: SharedDb) {
  const db = database as Kysely<Tables>;

  const campaignQuery = (q: Db) =>
    q
      .selectFrom('ads_campaigns as c')
      .innerJoin('ads_advertisers as a', 'a.id', 'c.advertiser_id')
      .selectAll('c')
      .select(['a.name as adv_name', 'a.wallet as adv_wallet', 'a.network as adv_network']);

  async function lockCampaign(trx: Transaction<Tables>, id: string): Promise<StoredCampaign | undefined> {
    const row = await campaignQuery(trx).where('c.id', '=', id).forUpdate('c').executeTakeFirst();
    return row ? toStored(row) : undefined;
  }

  /**
   * Charges `bid` (capped by what is left today, in total and held) in the caller's transaction: a conditional
   * UPDATE that cannot take the campaign past its budgets or what it holds, whatever runs beside it.
   */
  async function charge(
    trx: Transaction<Tables>,
    c: StoredCampaign,
    bid: bigint,
    counter: 'settlements' | 'conversions',
    now: Date,
  ): Promise<bigint> {
    const amount = chargeable(c, bid, now);
    const day = utcDay(now);
    const today = sql<bigint>`(case when spent_day = ${day} then spent_today else 0 end)`;
    const result = await trx
      .updateTable('ads_campaigns')
      .set({
        spent_total: sql`spent_total + ${amount}`,
        spent_today: sql`${today} + ${amount}`,
        spent_day: day,
        [counter]: sql`${sql.ref(counter)} + 1`,
        // The total budget spent: the campaign has ended.
        status: sql`case when spent_total + ${amount} >= budget_total then 'exhausted' else status end`,
        updated_at: now,
      })
      .where('id', '=', c.id)
      .where(sql<boolean>`spent_total + ${amount} <= budget_total`)
      .where(sql<boolean>`${today} + ${amount} <= budget_daily`)
      .where(sql<boolean>`spent_total + refunded + ${amount} <= funded`)
      .executeTakeFirst();
    if (!result.numUpdatedRows) throw new Error(`campaign ${c.id} changed under its row lock`);
    return amount;
  }

  async function campaigns(
    filter: { status?: CampaignStatus[]; advertiserId?: string; before?: number; limit?: number } = {},
  ): Promise<StoredCampaign[]> {
    let q = campaignQuery(db);
    if (filter.status) q = q.where('c.status', 'in', filter.status);
    if (filter.advertiserId) q = q.where('c.advertiser_id', '=', filter.advertiserId);
    if (filter.before !== undefined) q = q.where('c.seq', '<', filter.before);
    q = q.orderBy('c.seq', 'desc');
    if (filter.limit) q = q.limit(filter.limit);
    return (await q.execute()).map(toStored);
  }

  async function completeEnded(now: Date): Promise<void> {
    await db
      .updateTable('ads_campaigns')
      .set({ status: 'completed', updated_at: now })
      .where('status', 'in', ['active', 'paused'])
      .where('schedule_end', '<=', now)
      .execute();
  }

  const toSettlement = (row: SettlementRow): SettlementRow => ({
    ...row,
    settled_amount: BigInt(row.settled_amount),
    reported_at: new Date(row.reported_at),
  });

  // The facilitator asks for a match after every settlement it records. Concurrent matches share one read of the active
  // campaigns (a read never started before its caller asked: grouped), and the settlements that matched no campaign,
  // most of them, one insert.
  const activeRead = grouped(async (calls: null[]) => {
    const rows = await campaigns({ status: ['active'] });
    return calls.map(() => rows);
  });
  const recordUnmatched = grouped(async (rows: Omit<SettlementRow, 'impression_counted'>[]) => {
    const inserted = await db
      .insertInto('ads_settlements')
      .values(rows.map((row) => ({ ...row, impression_counted: false })))
      .onConflict((oc) => oc.column('tx_hash').doNothing())
      .returningAll()
      .execute();
    const recorded = new Map(inserted.map((row) => [row.tx_hash, toSettlement(row)]));
    // Recorded before (a report again, or twice in this batch): each answers its first record.
    const before = rows.filter((row) => !recorded.has(row.tx_hash)).map((row) => row.tx_hash);
    if (before.length) {
      const first = await db.selectFrom('ads_settlements').selectAll().where('tx_hash', 'in', before).execute();
      for (const row of first) recorded.set(row.tx_hash, toSettlement(row));
    }
    return rows.map((row) => recorded.get(row.tx_hash)!);
  });

  return {
    // Advertisers ----------------------------------------------------------------------------------------

    async insertAdvertiser(row: Omit<AdvertiserRow, 'seq'>): Promise<boolean> {
      const result = await db
        .insertInto('ads_advertisers')
        .values(row as never)
        .onConflict((oc) => oc.columns(['wallet', 'network']).doNothing())
        .executeTakeFirst();
      return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
    },

    async advertiser(id: string, now: Date): Promise<AdvertiserSummary | undefined> {
      return (await this.advertisers({ id, limit: 1 }, now))[0];
    },

    async advertisers(
      filter: { id?: string; before?: number; limit: number },
      now: Date,
    ): Promise<AdvertiserSummary[]> {
      let q = db
        .selectFrom('ads_advertisers as a')
        .selectAll('a')
        .select([
          sql<number>`(select count(*) from ads_campaigns c where c.advertiser_id = a.id)::int`.as('campaign_count'),
          sql<number>`(select count(*) from ads_campaigns c where c.advertiser_id = a.id and c.status = 'active' and (c.schedule_end is null or c.schedule_end > ${now}))::int`.as(
            'active_campaigns',
          ),
          sql<string>`(select coalesce(sum(c.spent_total), 0)::text from ads_campaigns c where c.advertiser_id = a.id)`.as(
            'spent_total',
          ),
        ]);
      if (filter.id) q = q.where('a.id', '=', filter.id);
      if (filter.before !== undefined) q = q.where('a.seq', '<', filter.before);
      const rows = await q.orderBy('a.seq', 'desc').limit(filter.limit).execute();
      return rows.map((r) => ({
        ...r,
        seq: Number(r.seq),
        created_at: new Date(r.created_at),
        campaign_count: Number(r.campaign_count),
        active_campaigns: Number(r.active_campaigns),
        spent_total: BigInt(r.spent_total),
      }));
    },

    // Campaigns ------------------------------------------------------------------------------------------

    async insertCampaign(c: NewCampaign, now: Date): Promise<void> {
      await db
        .insertInto('ads_campaigns')
        .values({
          id: c.id,
          advertiser_id: c.advertiserId,
          name: c.name,
          status: 'draft',
          budget_total: c.budgetTotal,
          budget_daily: c.budgetDaily,
          max_bid: c.maxBid,
          bid_strategy: c.bidStrategy,
          schedule_start: c.scheduleStart,
          schedule_end: c.scheduleEnd,
          target_categories: json(c.targetCategories),
          target_networks: json(c.targetNetworks),
          target_transports: json(c.targetTransports),
          target_url_patterns: json(c.targetUrlPatterns),
          rec_resource_url: c.recResourceUrl,
          rec_description: c.recDescription,
          rec_sponsor_name: c.recSponsorName,
          rec_catalog_id: c.recCatalogId,
          spent_day: utcDay(now),
          created_at: now,
          updated_at: now,
        } as never)
        .execute();
    },

    async campaign(id: string): Promise<StoredCampaign | undefined> {
      const row = await campaignQuery(db).where('c.id', '=', id).executeTakeFirst();
      return row ? toStored(row) : undefined;
    },

    campaigns,

    /** Campaigns whose schedule has ended are completed (kept in the row, so filters and counts agree). */
    completeEnded,

    /**
     * The active campaigns, as matching and the manifest read them. Those whose schedule has ended are marked
     * completed only when one is due (not with an UPDATE on every match); until then statusAt reports them
     * completed and canServe leaves them out, so nothing served or shown depends on when the row catches up.
     */
    async activeCampaigns(now: Date): Promise<StoredCampaign[]> {
      // Shared by the callers of one batch: read, never changed (pickCampaign filters into an array of its own).
      const rows = await activeRead(null);
      if (rows.some((c) => c.scheduleEnd && c.scheduleEnd.getTime() <= now.getTime())) await completeEnded(now);
      return rows;
    },

    /** Applies a PATCH under the row lock; `decide` sees the campaign as it is and returns the changes (or throws). */
    async updateCampaign(
      id: string,
      decide: (c: StoredCampaign) => CampaignChanges,
      now: Date,
    ): Promise<StoredCampaign | undefined> {
      return await db.transaction().execute(async (trx) => {
        const c = await lockCampaign(trx, id);
        if (!c) return undefined;
        const changes = decide(c);
        const values: Record<string, unknown> = { ...changes, updated_at: now };
        for (const key of [
          'target_categories',
          'target_networks',
          'target_transports',
          'target_url_patterns',
        ] as const) {
          if (changes[key]) values[key] = json(changes[key]);
        }
        await trx
          .updateTable('ads_campaigns')
          .set(values as never)
          .where('id', '=', id)
          .execute();
        return toStored(await campaignQuery(trx).where('c.id', '=', id).executeTakeFirstOrThrow());
      });
    },

    /**
     * Activates a campaign, adding a settled activation payment (once per payment key) to what it holds. `check`
     * sees the campaign under its lock with the payment counted, and throws to refuse (the transaction rolls back).
     */
    async activate(
      id: string,
      funding: { paymentKey: string; transaction: string; payer: string; amount: bigint } | null,
      check: (c: StoredCampaign, alreadyApplied: boolean) => void,
      now: Date,
    ): Promise<StoredCampaign | undefined> {
      return await db.transaction().execute(async (trx) => {
        const c = await lockCampaign(trx, id);
        if (!c) return undefined;
        let applied = false;
        if (funding) {
          const inserted = await trx
            .insertInto('ads_fundings')
            .values({
              payment_key: funding.paymentKey,
              campaign_id: id,
              transaction: funding.transaction,
              payer: funding.payer,
              amount: funding.amount,
              at: now,
            })
            .onConflict((oc) => oc.column('payment_key').doNothing())
            .executeTakeFirst();
          applied = !inserted.numInsertedOrUpdatedRows;
          if (!applied) c.funded += funding.amount;
        }
        check(c, applied);
        if (applied) return c;
        await trx
          .updateTable('ads_campaigns')
          .set({
            funded: c.funded,
            ...(c.status === 'active' ? {} : { status: 'active' as const, activated_at: now }),
            updated_at: now,
          })
          .where('id', '=', id)
          .execute();
        return toStored(await campaignQuery(trx).where('c.id', '=', id).executeTakeFirstOrThrow());
      });
    },

    /**
     * Pauses (an active campaign) and takes what it holds off it as a refund to send, in one transaction; `check`
     * refuses under the lock. Answers the campaign and the refunds not yet sent (this one and any earlier).
     */
    async pause(
      id: string,
      check: (c: StoredCampaign) => void,
      now: Date,
    ): Promise<{ campaign: StoredCampaign; unsent: RefundRow[] } | undefined> {
      return await db.transaction().execute(async (trx) => {
        const c = await lockCampaign(trx, id);
        if (!c) return undefined;
        check(c);
        const held = heldOf(c);
        if (held > 0n) {
          const count = await trx
            .selectFrom('ads_refunds')
            .select(sql<number>`count(*)::int`.as('n'))
            .where('campaign_id', '=', id)
            .executeTakeFirstOrThrow();
          await trx
            .insertInto('ads_refunds')
            .values({
              key: `ads:${id}:refund:${Number(count.n) + 1}`,
              campaign_id: id,
              to_wallet: c.advertiser.wallet,
              amount: held,
              transaction: null,
              created_at: now,
            })
            .execute();
        }
        await trx
          .updateTable('ads_campaigns')
          .set({
            refunded: sql`refunded + ${held}`,
            ...(c.status === 'active' ? { status: 'paused' as const } : {}),
            updated_at: now,
          })
          .where('id', '=', id)
          .execute();
        const unsent = await trx
          .selectFrom('ads_refunds')
          .selectAll()
          .where('campaign_id', '=', id)
          .where('transaction', 'is', null)
          .orderBy('created_at')
          .execute();
        return {
          campaign: toStored(await campaignQuery(trx).where('c.id', '=', id).executeTakeFirstOrThrow()),
          unsent: unsent.map((r) => ({ ...r, amount: BigInt(r.amount) })),
        };
      });
    },

    async refundSent(key: string, campaignId: string, transaction: string, now: Date): Promise<void> {
      await db.transaction().execute(async (trx) => {
        await trx.updateTable('ads_refunds').set({ transaction }).where('key', '=', key).execute();
        await trx
          .updateTable('ads_campaigns')
          .set({ last_refund_tx: transaction, updated_at: now })
          .where('id', '=', campaignId)
          .execute();
      });
    },

    // Settlements, matches and impressions --------------------------------------------------------------

    async settlement(txHash: string): Promise<SettlementRow | undefined> {
      const row = await db.selectFrom('ads_settlements').selectAll().where('tx_hash', '=', txHash).executeTakeFirst();
      return row ? toSettlement(row) : undefined;
    },

    /**
     * Records a reported settlement and the campaign chosen for it (once per txHash), counting the match, in one
     * statement (one matching no campaign goes with the others of its batch); a repeat answers the first record (read
     * only then).
     */
    async recordMatch(row: Omit<SettlementRow, 'impression_counted'>, now: Date): Promise<SettlementRow> {
      if (!row.campaign_id) return recordUnmatched(row);
      const insert = db
        .insertInto('ads_settlements')
        .values({ ...row, impression_counted: false })
        .onConflict((oc) => oc.column('tx_hash').doNothing())
        .returningAll();
      const campaignId = row.campaign_id;
      const inserted = await db
        .with('recorded', () => insert)
        // Counted only when the settlement is new: the same statement sees what the insert returned.
        .with('counted', (q) =>
          q
            .updateTable('ads_campaigns')
            .set({ matches: sql`matches + 1`, last_matched_at: now })
            .where('id', '=', campaignId)
            .where(sql<boolean>`exists (select 1 from recorded)`),
        )
        .selectFrom('recorded')
        .selectAll()
        .executeTakeFirst();
      if (inserted) return toSettlement(inserted);
      const first = await db
        .selectFrom('ads_settlements')
        .selectAll()
        .where('tx_hash', '=', row.tx_hash)
        .executeTakeFirstOrThrow();
      return toSettlement(first);
    },

    /** A match without a settlement to record: counts only. */
    async countMatch(campaignId: string, now: Date): Promise<void> {
      await db
        .updateTable('ads_campaigns')
        .set({ matches: sql`matches + 1`, last_matched_at: now })
        .where('id', '=', campaignId)
        .execute();
    },

    /** Counts the impression of a delivered settlement the first time its beacon fires; false otherwise. */
    async countImpression(campaignId: string, txHash: string): Promise<boolean> {
      return await db.transaction().execute(async (trx) => {
        const flipped = await trx
          .updateTable('ads_settlements')
          .set({ impression_counted: true })
          .where('tx_hash', '=', txHash)
          .where('campaign_id', '=', campaignId)
          .where('impression_counted', '=', false)
          .executeTakeFirst();
        if (!flipped.numUpdatedRows) return false;
        await trx
          .updateTable('ads_campaigns')
          .set({ impressions: sql`impressions + 1` })
          .where('id', '=', campaignId)
          .execute();
        return true;
      });
    },

    // Events and conversions ------------------------------------------------------------------------------

    /** Records a sponsored settlement and charges its campaign, once per txHash. */
    async recordEvent(
      row: Omit<EventRow, 'seq' | 'charged'>,
      now: Date,
    ): Promise<{ event: EventRow; duplicate: boolean } | undefined> {
      return await db.transaction().execute(async (trx) => {
        const existing = await trx
          .selectFrom('ads_events')
          .selectAll()
          .where('tx_hash', '=', row.tx_hash)
          .executeTakeFirst();
        if (existing) return { event: existing, duplicate: true };
        const c = await lockCampaign(trx, row.campaign_id);
        if (!c) return undefined;
        // Re-read under the campaign's lock: a concurrent report of the same settlement may have just committed.
        const raced = await trx
          .selectFrom('ads_events')
          .selectAll()
          .where('tx_hash', '=', row.tx_hash)
          .executeTakeFirst();
        if (raced) return { event: raced, duplicate: true };
        const charged = await charge(trx, c, settlementBid(c), 'settlements', now);
        const event = await trx
          .insertInto('ads_events')
          .values({ ...row, charged } as never)
          .returningAll()
          .executeTakeFirstOrThrow();
        return { event, duplicate: false };
      });
    },

    async events(filter: {
      campaignId?: string;
      txHash?: string;
      before?: number;
      limit: number;
    }): Promise<EventRow[]> {
      let q = db.selectFrom('ads_events').selectAll();
      if (filter.txHash) q = q.where('tx_hash', '=', filter.txHash);
      if (filter.campaignId) q = q.where('campaign_id', '=', filter.campaignId);
      if (filter.before !== undefined) q = q.where('seq', '<', filter.before);
      return await q.orderBy('seq', 'desc').limit(filter.limit).execute();
    },

    /** Records a conversion and charges its campaign, once per conversion transaction. */
    async recordConversion(
      row: Omit<ConversionRow, 'seq' | 'charged'>,
      now: Date,
    ): Promise<{ conversion: ConversionRow; duplicate: boolean } | undefined> {
      return await db.transaction().execute(async (trx) => {
        const existing = await trx
          .selectFrom('ads_conversions')
          .selectAll()
          .where('conversion_tx', '=', row.conversion_tx)
          .executeTakeFirst();
        if (existing) return { conversion: existing, duplicate: true };
        const c = await lockCampaign(trx, row.campaign_id);
        if (!c) return undefined;
        const raced = await trx
          .selectFrom('ads_conversions')
          .selectAll()
          .where('conversion_tx', '=', row.conversion_tx)
          .executeTakeFirst();
        if (raced) return { conversion: raced, duplicate: true };
        const charged = await charge(trx, c, conversionBid(c), 'conversions', now);
        const conversion = await trx
          .insertInto('ads_conversions')
          .values({ ...row, charged } as never)
          .returningAll()
          .executeTakeFirstOrThrow();
        return { conversion, duplicate: false };
      });
    },

    async conversions(filter: { campaignId: string; before?: number; limit: number }): Promise<ConversionRow[]> {
      let q = db.selectFrom('ads_conversions').selectAll().where('campaign_id', '=', filter.campaignId);
      if (filter.before !== undefined) q = q.where('seq', '<', filter.before);
      return await q.orderBy('seq', 'desc').limit(filter.limit).execute();
    },

    async ping(): Promise<void> {
      await sql`select 1`.execute(db);
    },
  };
}

export type AdsStore = ReturnType<typeof adsStore>;
