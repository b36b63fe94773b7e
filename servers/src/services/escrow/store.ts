import { sql, type Kysely, type Migration } from 'kysely';
import { nextTimerAt, stateOf, type EscrowDoc, type PendingOp, type ReportDraft } from './domain';
import type { SharedDb } from '../../db';
import { versionsFingerprint } from '../../runtime/recomputed';

export const migrations: Record<string, Migration> = {
  '001_escrow': {
    async up(db) {
      // One row per escrow: the document, and the money-moving operation in flight (`pending`, held by a worker
      // until `pending_lease`). `next_timer_at` is when the scheduler must look at it: the review timer, the
      // timeout release or a dispute's automatic resolution, whichever comes first.
      await db.schema
        .createTable('escrow_escrows')
        .addColumn('id', 'text', (c) => c.primaryKey())
        // The buyer's x402 payment funds exactly one escrow, whatever retries the request.
        .addColumn('payment_key', 'text', (c) => c.notNull().unique())
        .addColumn('buyer', 'text', (c) => c.notNull())
        .addColumn('seller', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('doc', 'jsonb', (c) => c.notNull())
        .addColumn('pending', 'jsonb')
        .addColumn('pending_lease', 'timestamptz')
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('next_timer_at', 'timestamptz')
        .addColumn('created_at', 'timestamptz', (c) => c.notNull())
        .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('escrow_escrows_buyer_idx').on('escrow_escrows').column('buyer').execute();
      await db.schema.createIndex('escrow_escrows_seller_idx').on('escrow_escrows').column('seller').execute();
      await db.schema.createIndex('escrow_escrows_timer_idx').on('escrow_escrows').column('next_timer_at').execute();
      // Reputation reports owed, written with the state change that owes them and sent after it (retried until sent).
      await db.schema
        .createTable('escrow_reports')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('escrow_id', 'text', (c) => c.notNull())
        .addColumn('op_id', 'text', (c) => c.notNull())
        .addColumn('subject', 'text', (c) => c.notNull())
        .addColumn('draft', 'jsonb', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('report_id', 'text')
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .addColumn('last_error', 'text')
        .addColumn('created_at', 'timestamptz', (c) => c.notNull())
        .addColumn('sent_at', 'timestamptz')
        .execute();
      await db.schema
        .createIndex('escrow_reports_op_subject_uq')
        .on('escrow_reports')
        .columns(['op_id', 'subject'])
        .unique()
        .execute();
      // What the vault paid other services (reputation reports and reads, verification scans): the books.
      await db.schema
        .createTable('escrow_expenses')
        .addColumn('transaction', 'text', (c) => c.primaryKey())
        .addColumn('route', 'text', (c) => c.notNull())
        .addColumn('amount', 'int8', (c) => c.notNull())
        .addColumn('at', 'timestamptz', (c) => c.notNull())
        .execute();
    },
  },
};

interface EscrowRow {
  id: string;
  payment_key: string;
  buyer: string;
  seller: string;
  state: string;
  doc: EscrowDoc;
  pending: PendingOp | null;
  pending_lease: Date | null;
  version: number;
  next_timer_at: Date | null;
  created_at: Date;
  updated_at: Date;
}
interface ReportRow {
  id: string;
  escrow_id: string;
  op_id: string;
  subject: string;
  draft: ReportDraft;
  status: 'pending' | 'sent' | 'refused';
  report_id: string | null;
  attempts: number;
  last_error: string | null;
  created_at: Date;
  sent_at: Date | null;
}
interface ExpenseRow {
  transaction: string;
  route: string;
  amount: bigint;
  at: Date;
}
interface Tables {
  escrow_escrows: EscrowRow;
  escrow_reports: ReportRow;
  escrow_expenses: ExpenseRow;
}

const json = (value: unknown) => sql`${JSON.stringify(value)}::jsonb`;
const parse = <T>(value: unknown): T => (typeof value === 'string' ? JSON.parse(value) : value) as T;

export interface Locked {
  doc: EscrowDoc;
  pending: PendingOp | null;
  lease: Date | null;
}
/** What a change under the row lock writes: a new document, the pending operation (null clears it), reports owed. */
export interface Change {
  doc?: EscrowDoc;
  pending?: PendingOp | null;
  lease?: Date | null;
  /** Reputation reports the change owes, at the time of the operation that owes them. */
  reports?: { opId: string; draft: ReportDraft; at: Date }[];
}

export function escrowStore(database: SharedDb) {
  const db = database as Kysely<Tables>;
  const docOf = (row: { doc: unknown }) => parse<EscrowDoc>(row.doc);

  return {
    /** Stores a new escrow; the same payment again (a retried request) returns the escrow it funded. */
    async insert(doc: EscrowDoc, paymentKey: string): Promise<EscrowDoc> {
      const inserted = await db
        .insertInto('escrow_escrows')
        .values({
          id: doc.id,
          payment_key: paymentKey,
          buyer: doc.buyer,
          seller: doc.seller,
          state: stateOf(doc),
          doc: json(doc) as never,
          pending: null,
          pending_lease: null,
          version: 1,
          next_timer_at: nextTimerAt(doc),
          created_at: new Date(doc.createdAt),
          updated_at: new Date(doc.updatedAt),
        })
        .onConflict((oc) => oc.column('payment_key').doNothing())
        .executeTakeFirst();
      if (inserted.numInsertedOrUpdatedRows) return doc;
      const row = await db
        .selectFrom('escrow_escrows')
        .select('doc')
        .where('payment_key', '=', paymentKey)
        .executeTakeFirstOrThrow();
      return docOf(row);
    },

    /** The escrow a payment funded, if any (its key: the settlement's). */
    async byPaymentKey(paymentKey: string): Promise<EscrowDoc | undefined> {
      const row = await db
        .selectFrom('escrow_escrows')
        .select('doc')
        .where('payment_key', '=', paymentKey)
        .executeTakeFirst();
      return row && docOf(row);
    },

    async get(id: string): Promise<Locked | undefined> {
      const row = await db
        .selectFrom('escrow_escrows')
        .select(['doc', 'pending', 'pending_lease'])
        .where('id', '=', id)
        .executeTakeFirst();
      return (
        row && {
          doc: docOf(row),
          pending: parse<PendingOp | null>(row.pending),
          lease: row.pending_lease && new Date(row.pending_lease),
        }
      );
    },

    /**
     * Runs `change` on the escrow under its row lock (SELECT … FOR UPDATE) and writes what it returns in the same
     * transaction: replicas on one PostgreSQL serialize on the row, so a decision is always taken on the latest state.
     */
    async mutate<T>(id: string, change: (locked: Locked) => { change: Change; result: T }): Promise<T | undefined> {
      return db.transaction().execute(async (tx) => {
        const row = await tx
          .selectFrom('escrow_escrows')
          .select(['doc', 'pending', 'pending_lease', 'version'])
          .where('id', '=', id)
          .forUpdate()
          .executeTakeFirst();
        if (!row) return undefined;
        const locked = {
          doc: docOf(row),
          pending: parse<PendingOp | null>(row.pending),
          lease: row.pending_lease && new Date(row.pending_lease),
        };
        const { change: c, result } = change(locked);
        const doc = c.doc ?? locked.doc;
        const pending = c.pending === undefined ? locked.pending : c.pending;
        await tx
          .updateTable('escrow_escrows')
          .set({
            doc: json(doc) as never,
            state: stateOf(doc),
            pending: (pending ? json(pending) : null) as never,
            pending_lease: c.lease === undefined ? locked.lease : c.lease,
            version: row.version + 1,
            next_timer_at: nextTimerAt(doc),
            updated_at: new Date(doc.updatedAt),
          })
          .where('id', '=', id)
          .execute();
        for (const r of c.reports ?? []) {
          await tx
            .insertInto('escrow_reports')
            .values({
              id: `${r.opId}:${r.draft.subject}`,
              escrow_id: id,
              op_id: r.opId,
              subject: r.draft.subject,
              draft: json(r.draft) as never,
              status: 'pending',
              report_id: null,
              attempts: 0,
              last_error: null,
              created_at: r.at,
              sent_at: null,
            })
            .onConflict((oc) => oc.columns(['op_id', 'subject']).doNothing())
            .execute();
        }
        return result;
      });
    },

    /**
     * Claims the escrows whose timer is due, or whose operation in flight was abandoned (its lease over), for this
     * replica: FOR UPDATE SKIP LOCKED, and their timer moved on by `leaseMs` so no other replica takes them meanwhile.
     */
    async claimDue(now: Date, leaseMs: number, limit = 20): Promise<string[]> {
      const rows = await sql<{ id: string }>`
        update escrow_escrows set next_timer_at = ${new Date(now.getTime() + leaseMs)}
        where id in (
          select id from escrow_escrows
          where next_timer_at <= ${now} or (pending is not null and (pending_lease is null or pending_lease <= ${now}))
          order by next_timer_at nulls first
          limit ${limit}
          for update skip locked
        )
        returning id`.execute(db);
      return rows.rows.map((r) => r.id);
    },

    async byAgent(agent: string, role: 'buyer' | 'seller' | 'any'): Promise<EscrowDoc[]> {
      let query = db.selectFrom('escrow_escrows').select('doc');
      query =
        role === 'any'
          ? query.where((eb) => eb.or([eb('buyer', '=', agent), eb('seller', '=', agent)]))
          : query.where(role, '=', agent);
      const rows = await query.orderBy('created_at', 'desc').orderBy('id').execute();
      return rows.map(docOf);
    },

    async all(): Promise<EscrowDoc[]> {
      return (await db.selectFrom('escrow_escrows').select('doc').execute()).map(docOf);
    },

    /**
     * Changes whenever an escrow is created or changed (every write raises its row's version; none is deleted), read
     * without loading any document: what the stats were computed from is still current while it stays the same.
     */
    async fingerprint(): Promise<string> {
      return versionsFingerprint(database, 'escrow_escrows');
    },

    /**
     * Open escrows (funded, delivered or disputed) of every agent, newest first: the console's list (no route lists
     * them all).
     */
    async open(limit = 50): Promise<EscrowDoc[]> {
      const rows = await db
        .selectFrom('escrow_escrows')
        .select('doc')
        .where('state', 'in', ['funded', 'delivered', 'disputed'])
        .orderBy('created_at', 'desc')
        .orderBy('id')
        .limit(limit)
        .execute();
      return rows.map(docOf);
    },

    async pendingReports(now: Date, opId?: string, limit = 20): Promise<ReportRow[]> {
      let query = db.selectFrom('escrow_reports').selectAll().where('status', '=', 'pending');
      // The request that owes a report sends it first; retries leave it a moment so they do not race it.
      if (opId) query = query.where('op_id', '=', opId);
      else
        query = query.where((eb) =>
          eb.or([eb('attempts', '>', 0), eb('created_at', '<', new Date(now.getTime() - 30_000))]),
        );
      const rows = await query.orderBy('created_at').limit(limit).execute();
      return rows.map((r) => ({ ...r, draft: parse<ReportDraft>(r.draft) }));
    },

    async reportsOf(opId: string): Promise<ReportRow[]> {
      return db.selectFrom('escrow_reports').selectAll().where('op_id', '=', opId).execute();
    },

    async markReport(
      id: string,
      outcome:
        { status: 'sent' | 'refused'; reportId: string | null; error?: string } | { status: 'pending'; error: string },
    ): Promise<void> {
      const base = db.updateTable('escrow_reports').where('id', '=', id).where('status', '=', 'pending');
      if (outcome.status === 'pending') {
        await base.set((eb) => ({ attempts: eb('attempts', '+', 1), last_error: outcome.error })).execute();
      } else {
        await base
          .set((eb) => ({
            status: outcome.status,
            report_id: outcome.reportId,
            sent_at: new Date(),
            attempts: eb('attempts', '+', 1),
            last_error: outcome.error ?? null,
          }))
          .execute();
      }
    },

    async recordExpense(transaction: string, route: string, amount: bigint, at: Date): Promise<void> {
      await db
        .insertInto('escrow_expenses')
        .values({ transaction, route, amount, at })
        .onConflict((oc) => oc.column('transaction').doNothing())
        .execute();
    },

    async expenses(): Promise<bigint> {
      const row = await db
        .selectFrom('escrow_expenses')
        .select(sql<string>`coalesce(sum(amount), 0)`.as('total'))
        .executeTakeFirstOrThrow();
      return BigInt(row.total);
    },
  };
}

export type EscrowStore = ReturnType<typeof escrowStore>;
