import { sql, type Kysely, type Migration } from 'kysely';
import type { DiscoverySettlement } from '@agent-economy/contracts';
import type { ResourceTotals, SellerTotals, SettlementWindow } from './domain';
import type { SharedDb } from '../../db';

export const migrations: Record<string, Migration> = {
  '001_marketplace': {
    async up(db) {
      // The facilitator's settlement records, copied by cursor (sync.ts). Keyed by the transaction signature: a page
      // read twice (two replicas syncing at once, a retried page) never counts a settlement twice.
      await db.schema
        .createTable('marketplace_settlements')
        .addColumn('transaction', 'text', (c) => c.primaryKey())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('pay_to', 'text', (c) => c.notNull())
        .addColumn('payer', 'text', (c) => c.notNull())
        .addColumn('amount', 'int8', (c) => c.notNull())
        .addColumn('asset', 'text', (c) => c.notNull())
        .addColumn('network', 'text', (c) => c.notNull())
        .addColumn('resource', 'text')
        .addColumn('settled_at', 'timestamptz', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('marketplace_settlements_pay_to')
        .on('marketplace_settlements')
        .columns(['pay_to', 'settled_at'])
        .execute();
      await db.schema
        .createIndex('marketplace_settlements_resource')
        .on('marketplace_settlements')
        .column('resource')
        .execute();
      // Where the copy stands, per facilitator: the feed's cursor only moves forward (greatest()).
      await db.schema
        .createTable('marketplace_sync')
        .addColumn('source', 'text', (c) => c.primaryKey())
        .addColumn('cursor', 'int8', (c) => c.notNull())
        .addColumn('synced_at', 'timestamptz', (c) => c.notNull())
        .execute();
    },
  },
  '002_refunds': {
    async up(db) {
      // A settlement the seller refunded (the feed repeats it with `refund` set): no longer a call or volume.
      await db.schema
        .alterTable('marketplace_settlements')
        .addColumn('refunded', 'boolean', (c) => c.notNull().defaultTo(false))
        .execute();
    },
  },
};

interface SettlementRow {
  transaction: string;
  kind: string;
  pay_to: string;
  payer: string;
  amount: bigint;
  asset: string;
  network: string;
  resource: string | null;
  settled_at: Date;
  refunded: boolean;
}
interface SyncRow {
  source: string;
  cursor: bigint;
  synced_at: Date;
}
interface Tables {
  marketplace_settlements: SettlementRow;
  marketplace_sync: SyncRow;
}

/**
 * Self-payments (payer = payTo) move nothing between parties, and refunded ones were given back: neither counts as
 * calls or volume.
 */
const COUNTED = sql<boolean>`payer <> pay_to and not refunded`;

export function marketplaceStore(database: SharedDb) {
  const db = database as Kysely<Tables>;
  return {
    async position(source: string): Promise<{ cursor: bigint; syncedAt: Date | null }> {
      const row = await db.selectFrom('marketplace_sync').selectAll().where('source', '=', source).executeTakeFirst();
      return { cursor: row ? BigInt(row.cursor) : 0n, syncedAt: row ? new Date(row.synced_at) : null };
    },

    /** Stores a page of the feed and moves the cursor past it, in one transaction. */
    async apply(source: string, settlements: DiscoverySettlement[], cursor: bigint, at: Date): Promise<void> {
      await db.transaction().execute(async (trx) => {
        if (settlements.length > 0) {
          await trx
            .insertInto('marketplace_settlements')
            .values(
              settlements.map((s) => ({
                transaction: s.transaction,
                kind: s.kind,
                pay_to: s.payTo,
                payer: s.payer,
                amount: BigInt(s.amount),
                asset: s.asset,
                network: s.network,
                resource: s.resource,
                settled_at: new Date(s.settledAt),
                refunded: s.refund !== null,
              })),
            )
            // A settlement seen again is the feed telling of its refund; a refund is never taken back.
            .onConflict((oc) =>
              oc
                .column('transaction')
                .doUpdateSet({ refunded: sql`marketplace_settlements.refunded or excluded.refunded` }),
            )
            .execute();
        }
        await trx
          .insertInto('marketplace_sync')
          .values({ source, cursor, synced_at: at })
          .onConflict((oc) =>
            oc.column('source').doUpdateSet({
              cursor: sql`greatest(marketplace_sync.cursor, excluded.cursor)`,
              synced_at: sql`greatest(marketplace_sync.synced_at, excluded.synced_at)`,
            }),
          )
          .execute();
      });
    },

    /**
     * Calls and volume by resource URL and amount paid per call (counted settlements paying `payTo` to it, when given):
     * the amount lets a reader tell a call at the route's price from a transfer of dust naming the route.
     */
    async resourceTotals(payTo?: string): Promise<ResourceTotals[]> {
      let query = db
        .selectFrom('marketplace_settlements')
        .select(['resource', 'pay_to', sql<string>`amount::text`.as('each')])
        .select([sql<string>`count(*)::text`.as('calls'), sql<string>`coalesce(sum(amount), 0)::text`.as('volume')])
        .where('resource', 'is not', null)
        .where(COUNTED)
        .groupBy(['resource', 'pay_to', 'amount']);
      if (payTo) query = query.where('pay_to', '=', payTo);
      const rows = await query.execute();
      return rows.map((r) => ({
        resource: r.resource!,
        payTo: r.pay_to,
        amount: BigInt(r.each),
        calls: Number(r.calls),
        volume: BigInt(r.volume),
      }));
    },

    /** Per seller: all-time and in-window figures, first and last settlement, networks. */
    async sellerTotals(window: SettlementWindow, payTo?: string): Promise<SellerTotals[]> {
      let query = db
        .selectFrom('marketplace_settlements')
        .select('pay_to')
        .select([
          sql<string>`count(*)::text`.as('calls'),
          sql<string>`coalesce(sum(amount), 0)::text`.as('volume'),
          sql<string>`count(distinct payer)::text`.as('buyers'),
          sql<string>`count(*) filter (where settled_at > ${window.since} and settled_at <= ${window.until})::text`.as(
            'window_calls',
          ),
          sql<string>`coalesce(sum(amount) filter (where settled_at > ${window.since} and settled_at <= ${window.until}), 0)::text`.as(
            'window_volume',
          ),
          sql<string>`count(distinct payer) filter (where settled_at > ${window.since} and settled_at <= ${window.until})::text`.as(
            'window_buyers',
          ),
          sql<Date>`min(settled_at)`.as('first_at'),
          sql<Date>`max(settled_at)`.as('last_at'),
          sql<string[]>`array_agg(distinct network order by network)`.as('networks'),
        ])
        .where(COUNTED)
        .groupBy('pay_to');
      if (payTo) query = query.where('pay_to', '=', payTo);
      const rows = await query.execute();
      return rows.map((r) => ({
        payTo: r.pay_to,
        calls: Number(r.calls),
        volume: BigInt(r.volume),
        buyers: Number(r.buyers),
        window: { calls: Number(r.window_calls), volume: BigInt(r.window_volume), buyers: Number(r.window_buyers) },
        firstAt: new Date(r.first_at),
        lastAt: new Date(r.last_at),
        networks: r.networks,
      }));
    },
  };
}

export type MarketplaceStore = ReturnType<typeof marketplaceStore>;
