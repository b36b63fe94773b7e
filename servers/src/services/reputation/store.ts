import { sql, type Kysely, type Migration } from 'kysely';
import { camelCaseDb } from '../../db/camel-case';
import { conflict } from '../../runtime/errors';
import type { StoredReport } from './domain';
import type { SharedDb } from '../../db';

export const migrations: Record<string, Migration> = {
  '001_reports': {
    async up(db) {
      await db.schema
        .createTable('reputation_reports')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('reporter', 'text', (c) => c.notNull())
        .addColumn('rated_by', 'text', (c) => c.notNull())
        .addColumn('subject', 'text', (c) => c.notNull())
        .addColumn('subject_role', 'text', (c) => c.notNull())
        .addColumn('outcome', 'text', (c) => c.notNull())
        .addColumn('rating', 'integer')
        .addColumn('comment', 'text')
        // Amounts may have up to 25 digits (the contract's atomic amount), beyond int8: numeric keeps them exact.
        .addColumn('amount', 'numeric(30, 0)')
        .addColumn('escrow_id', 'text')
        .addColumn('module_id', 'text')
        .addColumn('signature', 'text')
        .addColumn('verified', 'boolean', (c) => c.notNull())
        .addColumn('weight', 'double precision', (c) => c.notNull())
        .addColumn('points', 'double precision', (c) => c.notNull())
        .addColumn('score_before', 'double precision', (c) => c.notNull())
        .addColumn('score_after', 'double precision', (c) => c.notNull())
        .addColumn('created_at', 'timestamptz', (c) => c.notNull())
        .execute();
      // One report per reporter per trade about a subject (NULLs are distinct, so reports naming no escrow or
      // transaction are not constrained); these also make a duplicate that races past the preflight a 409.
      await db.schema
        .createIndex('reputation_reports_escrow_uq')
        .on('reputation_reports')
        .columns(['reporter', 'subject', 'escrow_id'])
        .unique()
        .execute();
      await db.schema
        .createIndex('reputation_reports_signature_uq')
        .on('reputation_reports')
        .columns(['reporter', 'subject', 'signature'])
        .unique()
        .execute();
      await db.schema
        .createIndex('reputation_reports_subject_idx')
        .on('reputation_reports')
        .columns(['subject', 'created_at', 'id'])
        .execute();
    },
  },
  // Unverified reports weigh nothing (they used to weigh 0.25): reports stored before keep their row, lose their
  // weight.
  '002_unverified_weightless': {
    async up(db) {
      await sql`update reputation_reports set weight = 0 where not verified`.execute(db);
    },
  },
};

// The row is the domain's report, but for `amount`: numeric(30, 0) (beyond int8) reads back as a string.
type ReportRow = Omit<StoredReport, 'amount'> & { amount: bigint | string | null };

interface Tables {
  reputation_reports: ReportRow;
}

const fromRow = (row: ReportRow): StoredReport => ({ ...row, amount: row.amount == null ? null : BigInt(row.amount) });

/** Where a page of history starts: after this report (newest first). */
export interface HistoryPosition {
  createdAt: Date;
  id: string;
}

export function reputationStore(database: SharedDb) {
  const db = camelCaseDb<Tables>(database);
  return {
    /** The earlier report by this reporter about this subject for the same escrow or transaction, if any. */
    async findDuplicate(
      reporter: string,
      subject: string,
      escrowId: string | undefined,
      signature: string | undefined,
    ): Promise<StoredReport | undefined> {
      if (!escrowId && !signature) return undefined;
      const row = await db
        .selectFrom('reputation_reports')
        .selectAll()
        .where('reporter', '=', reporter)
        .where('subject', '=', subject)
        .where((eb) =>
          eb.or([
            ...(escrowId ? [eb('escrowId', '=', escrowId)] : []),
            ...(signature ? [eb('signature', '=', signature)] : []),
          ]),
        )
        .executeTakeFirst();
      return row && fromRow(row);
    },

    /**
     * Records a report. `complete` receives the subject's earlier verified reports, all a score rests on (read under a
     * per-subject lock, so concurrent reports about one agent see each other), and returns the report with its scores
     * filled in.
     */
    async insert(subject: string, complete: (earlier: StoredReport[]) => StoredReport): Promise<StoredReport> {
      return db.transaction().execute(async (tx) => {
        await sql`select pg_advisory_xact_lock(hashtext(${`reputation:${subject}`}))`.execute(tx);
        const earlier = (
          await tx
            .selectFrom('reputation_reports')
            .selectAll()
            .where('subject', '=', subject)
            .where('verified', '=', true)
            .execute()
        ).map(fromRow);
        const report = complete(earlier);
        const inserted = await tx
          .insertInto('reputation_reports')
          .values(report)
          .onConflict((oc) => oc.doNothing())
          .executeTakeFirst();
        if (!inserted.numInsertedOrUpdatedRows) {
          throw conflict('duplicate_report', 'You already reported this escrow or transaction about this agent', {
            subject,
          });
        }
        return report;
      });
    },

    /** The verified reports about `subject`: every figure of a profile comes from these (however many others). */
    async verifiedReportsAbout(subject: string): Promise<StoredReport[]> {
      return (
        await db
          .selectFrom('reputation_reports')
          .selectAll()
          .where('subject', '=', subject)
          .where('verified', '=', true)
          .execute()
      ).map(fromRow);
    },

    /** A page of reports about `subject` (only verified or unverified ones if asked), newest first, after `after`. */
    async history(
      subject: string,
      limit: number,
      after?: HistoryPosition,
      verified?: boolean,
    ): Promise<{ items: StoredReport[]; more: boolean }> {
      let query = db.selectFrom('reputation_reports').selectAll().where('subject', '=', subject);
      if (verified !== undefined) query = query.where('verified', '=', verified);
      if (after) {
        query = query.where((eb) =>
          eb.or([
            eb('createdAt', '<', after.createdAt),
            eb.and([eb('createdAt', '=', after.createdAt), eb('id', '<', after.id)]),
          ]),
        );
      }
      const rows = await query
        .orderBy('createdAt', 'desc')
        .orderBy('id', 'desc')
        .limit(limit + 1)
        .execute();
      return { items: rows.slice(0, limit).map(fromRow), more: rows.length > limit };
    },

    /**
     * When `agent` first appears: as the subject of a verified report, or as a report's reporter or rated-by party.
     * Being named in an unverified report is no appearance (anyone could name a fresh wallet today to age it).
     */
    async firstSeen(agent: string): Promise<Date | null> {
      const row = await db
        .selectFrom('reputation_reports')
        .select((eb) => eb.fn.min('createdAt').as('first'))
        .where((eb) =>
          eb.or([
            eb.and([eb('subject', '=', agent), eb('verified', '=', true)]),
            eb('ratedBy', '=', agent),
            eb('reporter', '=', agent),
          ]),
        )
        .executeTakeFirst();
      return row?.first ? new Date(row.first as Date) : null;
    },

    /** Changes with every report filed (reports are only ever added), reading no row. */
    async fingerprint(): Promise<string> {
      const row = await db
        .selectFrom('reputation_reports')
        .select([sql<string>`count(*)::text`.as('rows'), sql<string>`coalesce(max(created_at)::text, '')`.as('last')])
        .executeTakeFirstOrThrow();
      return `${row.rows}:${row.last}`;
    },

    async all(options: { verifiedOnly?: boolean } = {}): Promise<StoredReport[]> {
      let query = db.selectFrom('reputation_reports').selectAll();
      if (options.verifiedOnly) query = query.where('verified', '=', true);
      return (await query.execute()).map(fromRow);
    },
  };
}

export type ReputationStore = ReturnType<typeof reputationStore>;
