import { sql, type Generated, type Kysely, type Migration } from 'kysely';

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
  '002_kinds_and_events': {
    async up(db) {
      // Which route settled a payment (x402 /settle, charge /mpp/settle, session close), for the statistics.
      await db.schema.alterTable('facilitator_settlements').addColumn('kind', 'text', (c) => c.notNull().defaultTo('x402')).execute();
      await db.schema.createIndex('facilitator_settlements_created').on('facilitator_settlements').column('created_at').execute();
      await db.schema.createIndex('facilitator_settlements_settled').on('facilitator_settlements').columns(['status', 'settled_at']).execute();
      // One row per call that counts in /mpp/stats (prepare, charge settle, x402 verify and settle) and its outcome.
      await db.schema
        .createTable('facilitator_events')
        .addColumn('id', 'serial', (c) => c.primaryKey())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('outcome', 'text', (c) => c.notNull())
        .addColumn('at', 'timestamptz', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('facilitator_events_kind').on('facilitator_events').columns(['kind', 'at']).execute();
    },
  },
  '004_settlement_payer': {
    async up(db) {
      // The per-payer settle cap counts a payer's recent claims.
      await db.schema.createIndex('facilitator_settlements_payer').on('facilitator_settlements').columns(['payer', 'created_at']).execute();
    },
  },
};

/** x402: POST /settle; charge: POST /mpp/settle; session: POST /mpp/session/close. */
export type SettlementKind = 'x402' | 'charge' | 'session';
/** Calls counted in the statistics. */
export type EventKind = 'prepare' | 'charge' | 'x402_verify' | 'x402_settle';
export type EventOutcome = 'ok' | 'success' | 'fail' | 'pending' | 'valid' | 'invalid';

/** pending: broadcast (or about to be), not yet seen confirmed; settled: confirmed on chain; failed: landed with an error or can no longer land. */
export type SettlementStatus = 'pending' | 'settled' | 'failed';

export interface Settlement {
  key: string;
  kind: SettlementKind;
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
  kind: SettlementKind;
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

interface EventRow {
  id: Generated<number>;
  kind: EventKind;
  outcome: EventOutcome;
  at: Date;
}

const fromRow = (r: Row): Settlement => ({
  key: r.key,
  kind: r.kind,
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
  const db = database as Kysely<{ facilitator_settlements: Row; facilitator_events: EventRow }>;
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
          kind: s.kind,
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

    /**
     * Settlements claimed since `since` (all of them, or those of a kind, paying `payTo`, from `payer`) and when the oldest of them
     * was claimed: what the settle caps count.
     */
    async claimedSince(since: Date, filter: { kind?: SettlementKind; payTo?: string; payer?: string } = {}): Promise<{ count: number; oldest: Date | null }> {
      let query = db
        .selectFrom('facilitator_settlements')
        .select((eb) => [eb.fn.countAll<bigint>().as('count'), eb.fn.min('created_at').as('oldest')])
        .where('created_at', '>=', since);
      if (filter.kind) query = query.where('kind', '=', filter.kind);
      if (filter.payTo) query = query.where('pay_to', '=', filter.payTo);
      if (filter.payer) query = query.where('payer', '=', filter.payer);
      const row = await query.executeTakeFirstOrThrow();
      return { count: Number(row.count), oldest: row.oldest ? new Date(row.oldest as Date) : null };
    },

    async recordEvent(kind: EventKind, outcome: EventOutcome, at: Date): Promise<void> {
      await db.insertInto('facilitator_events').values({ kind, outcome, at }).execute();
    },

    /** Counts of calls by kind and outcome: in all, and since `today`. */
    async eventCounts(today: Date): Promise<{ kind: EventKind; outcome: EventOutcome; total: number; today: number }[]> {
      const rows = await db
        .selectFrom('facilitator_events')
        .select(['kind', 'outcome'])
        .select((eb) => [eb.fn.countAll<bigint>().as('total'), sql<bigint>`count(*) filter (where ${eb.ref('at')} >= ${today})`.as('today')])
        .groupBy(['kind', 'outcome'])
        .execute();
      return rows.map((r) => ({ kind: r.kind, outcome: r.outcome, total: Number(r.total), today: Number(r.today) }));
    },

    /** Atomic units settled on chain by kind: in all, and since `today`. */
    async settledVolume(today: Date): Promise<Map<SettlementKind, { total: bigint; today: bigint }>> {
      const rows = await db
        .selectFrom('facilitator_settlements')
        .select('kind')
        .select([
          sql<string>`coalesce(sum(amount), 0)::text`.as('total'),
          sql<string>`coalesce(sum(amount) filter (where settled_at >= ${today}), 0)::text`.as('today'),
        ])
        .where('status', '=', 'settled')
        .groupBy('kind')
        .execute();
      return new Map(rows.map((r) => [r.kind, { total: BigInt(r.total), today: BigInt(r.today) }]));
    },

    /** The most recent settlements confirmed on chain, newest first. */
    async recentSettled(limit: number): Promise<Settlement[]> {
      const rows = await db
        .selectFrom('facilitator_settlements')
        .selectAll()
        .where('status', '=', 'settled')
        .orderBy('settled_at', 'desc')
        .orderBy('key')
        .limit(limit)
        .execute();
      return rows.map(fromRow);
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
