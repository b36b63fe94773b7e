import type { Kysely, Migration } from 'kysely';

export const migrations: Record<string, Migration> = {
  '001_settlements': {
    async up(db) {
      // One row per payment, keyed by the SHA-256 of its transaction message: the primary key is what makes
      // a payment settle at most once across every replica sharing the database.
      await db.schema
        .createTable('facilitator_settlements')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('scheme', 'text', (c) => c.notNull())
        .addColumn('network', 'text', (c) => c.notNull())
        .addColumn('payer', 'text', (c) => c.notNull())
        .addColumn('pay_to', 'text', (c) => c.notNull())
        .addColumn('amount', 'int8', (c) => c.notNull())
        .addColumn('asset', 'text', (c) => c.notNull())
        .addColumn('resource', 'text')
        .addColumn('description', 'text')
        .addColumn('transaction', 'text', (c) => c.notNull().unique())
        .addColumn('blockhash', 'text', (c) => c.notNull())
        .addColumn('error', 'text')
        .addColumn('created_at', 'timestamptz', (c) => c.notNull())
        .addColumn('settled_at', 'timestamptz')
        .execute();
      await db.schema.createIndex('facilitator_settlements_status').on('facilitator_settlements').columns(['status', 'created_at']).execute();
      await db.schema.createIndex('facilitator_settlements_pay_to').on('facilitator_settlements').columns(['pay_to', 'created_at']).execute();
    },
  },
};

/** pending: broadcast (or about to be), not yet seen confirmed; settled: confirmed on chain; failed: landed with an error or can no longer land. */
export type SettlementStatus = 'pending' | 'settled' | 'failed';

export interface Settlement {
  key: string;
  status: SettlementStatus;
  scheme: string;
  network: string;
  payer: string;
  payTo: string;
  amount: bigint;
  asset: string;
  resource: string | null;
  description: string | null;
  transaction: string;
  blockhash: string;
  error: string | null;
  createdAt: Date;
  settledAt: Date | null;
}

interface Row {
  key: string;
  status: SettlementStatus;
  scheme: string;
  network: string;
  payer: string;
  pay_to: string;
  amount: bigint;
  asset: string;
  resource: string | null;
  description: string | null;
  transaction: string;
  blockhash: string;
  error: string | null;
  created_at: Date;
  settled_at: Date | null;
}

const fromRow = (r: Row): Settlement => ({
  key: r.key,
  status: r.status,
  scheme: r.scheme,
  network: r.network,
  payer: r.payer,
  payTo: r.pay_to,
  amount: BigInt(r.amount),
  asset: r.asset,
  resource: r.resource,
  description: r.description,
  transaction: r.transaction,
  blockhash: r.blockhash,
  error: r.error,
  createdAt: new Date(r.created_at),
  settledAt: r.settled_at ? new Date(r.settled_at) : null,
});

export function settlementStore(database: Kysely<any>) {
  const db = database as Kysely<{ facilitator_settlements: Row }>;
  return {
    async get(key: string): Promise<Settlement | undefined> {
      const row = await db.selectFrom('facilitator_settlements').selectAll().where('key', '=', key).executeTakeFirst();
      return row ? fromRow(row) : undefined;
    },

    /** Claims a payment for settlement; false when another request (on any replica) already holds it. */
    async claim(s: Omit<Settlement, 'status' | 'error' | 'settledAt'>): Promise<boolean> {
      const result = await db
        .insertInto('facilitator_settlements')
        .values({
          key: s.key,
          status: 'pending',
          scheme: s.scheme,
          network: s.network,
          payer: s.payer,
          pay_to: s.payTo,
          amount: s.amount,
          asset: s.asset,
          resource: s.resource,
          description: s.description,
          transaction: s.transaction,
          blockhash: s.blockhash,
          error: null,
          created_at: s.createdAt,
          settled_at: null,
        })
        .onConflict((oc) => oc.doNothing())
        .executeTakeFirst();
      return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
    },

    /** A claim whose transaction certainly never reached the chain: the payment may be settled later. */
    async release(key: string): Promise<void> {
      await db.deleteFrom('facilitator_settlements').where('key', '=', key).where('status', '=', 'pending').execute();
    },

    async finish(key: string, status: 'settled' | 'failed', at: Date, error?: string): Promise<void> {
      await db
        .updateTable('facilitator_settlements')
        .set({ status, error: error ?? null, settled_at: status === 'settled' ? at : null })
        .where('key', '=', key)
        .where('status', '=', 'pending')
        .execute();
    },

    async pending(olderThan: Date, limit = 100): Promise<Settlement[]> {
      const rows = await db
        .selectFrom('facilitator_settlements')
        .selectAll()
        .where('status', '=', 'pending')
        .where('created_at', '<', olderThan)
        .orderBy('created_at')
        .limit(limit)
        .execute();
      return rows.map(fromRow);
    },
  };
}

export type SettlementStore = ReturnType<typeof settlementStore>;
