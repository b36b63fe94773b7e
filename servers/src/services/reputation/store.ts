import { sql, type Kysely, type Migration } from 'kysely';
import type { ReputationOutcome, ReputationRole } from '@agent-economy/contracts';
import { conflict } from '../../runtime/errors';
import type { StoredReport } from './domain';

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
      await db.schema.createIndex('reputation_reports_escrow_uq').on('reputation_reports').columns(['reporter', 'subject', 'escrow_id']).unique().execute();
      await db.schema.createIndex('reputation_reports_signature_uq').on('reputation_reports').columns(['reporter', 'subject', 'signature']).unique().execute();
      await db.schema.createIndex('reputation_reports_subject_idx').on('reputation_reports').columns(['subject', 'created_at', 'id']).execute();
    },
  },
  // Unverified reports weigh nothing (they used to weigh 0.25): reports stored before keep their row, lose their weight.
  '002_unverified_weightless': {
    async up(db) {
      await sql`update reputation_reports set weight = 0 where not verified`.execute(db);
    },
  },
};

interface ReportRow {
  id: string;
  reporter: string;
  rated_by: string;
  subject: string;
  subject_role: ReputationRole;
  outcome: ReputationOutcome;
  rating: number | null;
  comment: string | null;
  amount: bigint | string | null;
  escrow_id: string | null;
  module_id: string | null;
  signature: string | null;
  verified: boolean;
  weight: number;
  points: number;
  score_before: number;
  score_after: number;
  created_at: Date;
}

interface Tables {
  reputation_reports: ReportRow;
}

const fromRow = (row: ReportRow): StoredReport => ({
  id: row.id,
  reporter: row.reporter,
  ratedBy: row.rated_by,
  subject: row.subject,
  subjectRole: row.subject_role,
  outcome: row.outcome,
  rating: row.rating,
  comment: row.comment,
  amount: row.amount == null ? null : BigInt(row.amount),
  escrowId: row.escrow_id,
  moduleId: row.module_id,
  signature: row.signature,
  verified: row.verified,
  weight: Number(row.weight),
  points: Number(row.points),
  scoreBefore: Number(row.score_before),
  scoreAfter: Number(row.score_after),
  createdAt: new Date(row.created_at),
});

const toRow = (r: StoredReport): ReportRow => ({
  id: r.id,
  reporter: r.reporter,
  rated_by: r.ratedBy,
  subject: r.subject,
  subject_role: r.subjectRole,
  outcome: r.outcome,
  rating: r.rating,
  comment: r.comment,
  amount: r.amount,
  escrow_id: r.escrowId,
  module_id: r.moduleId,
  signature: r.signature,
  verified: r.verified,
  weight: r.weight,
  points: r.points,
  score_before: r.scoreBefore,
  score_after: r.scoreAfter,
  created_at: r.createdAt,
});

/** Where a page of history starts: after this report (newest first). */
export interface HistoryPosition {
  createdAt: Date;
  id: string;
}

export function reputationStore(database: Kysely<any>) {
  const db = database as Kysely<Tables>;
  return {
    /** The earlier report by this reporter about this subject for the same escrow or transaction, if any. */
    async findDuplicate(reporter: string, subject: string, escrowId: string | undefined, signature: string | undefined): Promise<StoredReport | undefined> {
      if (!escrowId && !signature) return undefined;
      const row = await db
        .selectFrom('reputation_reports')
        .selectAll()
        .where('reporter', '=', reporter)
        .where('subject', '=', subject)
        .where((eb) => eb.or([...(escrowId ? [eb('escrow_id', '=', escrowId)] : []), ...(signature ? [eb('signature', '=', signature)] : [])]))
        .executeTakeFirst();
      return row && fromRow(row);
    },

    /**
     * Records a report. `complete` receives the subject's earlier reports (read under a per-subject lock, so
     * concurrent reports about one agent see each other) and returns the report with its scores filled in.
     */
    async insert(subject: string, complete: (earlier: StoredReport[]) => StoredReport): Promise<StoredReport> {
      return db.transaction().execute(async (tx) => {
        await sql`select pg_advisory_xact_lock(hashtext(${`reputation:${subject}`}))`.execute(tx);
        const earlier = (await tx.selectFrom('reputation_reports').selectAll().where('subject', '=', subject).execute()).map(fromRow);
        const report = complete(earlier);
        const inserted = await tx.insertInto('reputation_reports').values(toRow(report)).onConflict((oc) => oc.doNothing()).executeTakeFirst();
        if (!inserted.numInsertedOrUpdatedRows) {
          throw conflict('duplicate_report', 'You already reported this escrow or transaction about this agent', { subject });
        }
        return report;
      });
    },

    async reportsAbout(subject: string): Promise<StoredReport[]> {
      return (await db.selectFrom('reputation_reports').selectAll().where('subject', '=', subject).execute()).map(fromRow);
    },

    /** A page of reports about `subject`, newest first, starting after `after`. */
    async history(subject: string, limit: number, after?: HistoryPosition): Promise<{ items: StoredReport[]; more: boolean }> {
      let query = db.selectFrom('reputation_reports').selectAll().where('subject', '=', subject);
      if (after) {
        query = query.where((eb) =>
          eb.or([eb('created_at', '<', after.createdAt), eb.and([eb('created_at', '=', after.createdAt), eb('id', '<', after.id)])]),
        );
      }
      const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit + 1).execute();
      return { items: rows.slice(0, limit).map(fromRow), more: rows.length > limit };
    },

    /** When `agent` first appears in any report, as subject, reporter or rated-by party. */
    async firstSeen(agent: string): Promise<Date | null> {
      const row = await db
        .selectFrom('reputation_reports')
        .select((eb) => eb.fn.min('created_at').as('first'))
        .where((eb) => eb.or([eb('subject', '=', agent), eb('rated_by', '=', agent), eb('reporter', '=', agent)]))
        .executeTakeFirst();
      return row?.first ? new Date(row.first as Date) : null;
    },

    async all(): Promise<StoredReport[]> {
      return (await db.selectFrom('reputation_reports').selectAll().execute()).map(fromRow);
    },
  };
}

export type ReputationStore = ReturnType<typeof reputationStore>;
