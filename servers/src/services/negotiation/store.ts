import { sql, type Kysely, type Migration } from 'kysely';
import type { NegotiationParty, NegotiationState } from '@agent-economy/contracts';
import { camelCaseDb, json } from '../../db/camel-case';
import type { PagePosition, StoredNegotiation, StoredOffer } from './domain';
import type { SharedDb } from '../../db';
import { versionsFingerprint } from '../../runtime/recomputed';

export const migrations: Record<string, Migration> = {
  '001_negotiations': {
    async up(db) {
      await db.schema
        .createTable('negotiation_negotiations')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('module_id', 'text', (c) => c.notNull())
        .addColumn('module_title', 'text', (c) => c.notNull())
        .addColumn('buyer', 'text', (c) => c.notNull())
        .addColumn('seller', 'text', (c) => c.notNull())
        .addColumn('broker', 'text')
        .addColumn('mode', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('turn', 'text')
        .addColumn('list_price', 'int8', (c) => c.notNull())
        .addColumn('floor', 'int8')
        .addColumn('rounds', 'integer', (c) => c.notNull())
        // Offers in order, prices as atomic-unit strings: the whole history changes with the row, under its version.
        .addColumn('offers', 'jsonb', (c) => c.notNull())
        .addColumn('agreed_price', 'int8')
        .addColumn('accepted_by', 'text')
        .addColumn('accepted_automatic', 'boolean')
        .addColumn('accepted_at', 'timestamptz')
        .addColumn('valid_until', 'timestamptz')
        .addColumn('rejected_by', 'text')
        .addColumn('rejected_automatic', 'boolean')
        .addColumn('rejection_reason', 'text')
        .addColumn('rejected_at', 'timestamptz')
        .addColumn('opened_at', 'timestamptz', (c) => c.notNull())
        .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
        .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
        .addColumn('version', 'integer', (c) => c.notNull())
        .execute();
      // One unfinished negotiation per buyer and module; the index decides two openings racing past the preflight.
      await sql`create unique index negotiation_unfinished_uq on negotiation_negotiations (buyer, module_id) where state in ('open', 'countered')`.execute(
        db,
      );
      await db.schema
        .createIndex('negotiation_updated_idx')
        .on('negotiation_negotiations')
        .columns(['updated_at', 'id'])
        .execute();
      await db.schema.createIndex('negotiation_seller_idx').on('negotiation_negotiations').column('seller').execute();
      await db.schema.createIndex('negotiation_broker_idx').on('negotiation_negotiations').column('broker').execute();
    },
  },
};

// The row is the negotiation but for what the table keeps apart: the agreement and the rejection as nullable columns,
// the offers as JSON (prices as atomic-unit strings, times as ISO strings).
type JsonOffer = Omit<StoredOffer, 'price' | 'at'> & { price: string; at: string };
interface Row extends Omit<StoredNegotiation, 'offers' | 'agreement' | 'rejection'> {
  offers: JsonOffer[];
  agreedPrice: bigint | null;
  acceptedBy: NegotiationParty | null;
  acceptedAutomatic: boolean | null;
  acceptedAt: Date | null;
  validUntil: Date | null;
  rejectedBy: NegotiationParty | null;
  rejectedAutomatic: boolean | null;
  rejectionReason: string | null;
  rejectedAt: Date | null;
}

interface Tables {
  negotiation_negotiations: Row;
}

const fromRow = ({
  offers,
  agreedPrice,
  acceptedBy,
  acceptedAutomatic,
  acceptedAt,
  validUntil,
  rejectedBy,
  rejectedAutomatic,
  rejectionReason,
  rejectedAt,
  ...n
}: Row): StoredNegotiation => ({
  ...n,
  offers: offers.map((o) => ({ ...o, price: BigInt(o.price), at: new Date(o.at) })),
  agreement:
    agreedPrice === null
      ? null
      : {
          price: agreedPrice,
          acceptedBy: acceptedBy!,
          automatic: !!acceptedAutomatic,
          acceptedAt: acceptedAt!,
          validUntil: validUntil!,
        },
  rejection:
    rejectedBy === null
      ? null
      : { by: rejectedBy, automatic: !!rejectedAutomatic, reason: rejectionReason, at: rejectedAt! },
});

const toRow = ({ offers, agreement, rejection, ...n }: StoredNegotiation) => ({
  ...n,
  offers: json<JsonOffer[]>(offers.map((o) => ({ ...o, price: o.price.toString(), at: o.at.toISOString() }))),
  agreedPrice: agreement?.price ?? null,
  acceptedBy: agreement?.acceptedBy ?? null,
  acceptedAutomatic: agreement?.automatic ?? null,
  acceptedAt: agreement?.acceptedAt ?? null,
  validUntil: agreement?.validUntil ?? null,
  rejectedBy: rejection?.by ?? null,
  rejectedAutomatic: rejection?.automatic ?? null,
  rejectionReason: rejection?.reason ?? null,
  rejectedAt: rejection?.at ?? null,
});

export interface ListQuery {
  wallet?: string;
  role?: 'buyer' | 'seller' | 'broker' | 'any';
  state?: NegotiationState;
  moduleId?: string;
  /** Words that must all appear in the module title (case-insensitive). */
  words?: string[];
  limit: number;
  after?: PagePosition;
}

const likeEscape = (word: string) => word.replace(/[\\%_]/g, (c) => `\\${c}`);

export function negotiationStore(database: SharedDb) {
  const db = camelCaseDb<Tables>(database);
  return {
    /** Records an unfinished negotiation's expiry once it is due: lists, filters and statistics then see it. */
    async expireDue(now: Date): Promise<void> {
      await db
        .updateTable('negotiation_negotiations')
        .set({ state: 'expired', turn: null, updatedAt: sql`expires_at`, version: sql`version + 1` })
        .where('state', 'in', ['open', 'countered'])
        .where('expiresAt', '<=', now)
        .execute();
    },

    async get(id: string): Promise<StoredNegotiation | undefined> {
      const row = await db.selectFrom('negotiation_negotiations').selectAll().where('id', '=', id).executeTakeFirst();
      return row && fromRow(row);
    },

    async unfinished(buyer: string, moduleId: string): Promise<StoredNegotiation | undefined> {
      const row = await db
        .selectFrom('negotiation_negotiations')
        .selectAll()
        .where('buyer', '=', buyer)
        .where('moduleId', '=', moduleId)
        .where('state', 'in', ['open', 'countered'])
        .executeTakeFirst();
      return row && fromRow(row);
    },

    /** Inserts a new negotiation; false when the buyer already has an unfinished one over the module. */
    async insert(n: StoredNegotiation): Promise<boolean> {
      const result = await db
        .insertInto('negotiation_negotiations')
        .values({ ...toRow(n), version: 0 })
        .onConflict((oc) => oc.doNothing())
        .executeTakeFirst();
      return !!result.numInsertedOrUpdatedRows;
    },

    /** Writes the next state if nobody wrote since `version` was read; false when another move won. */
    async save(n: StoredNegotiation, version: number): Promise<boolean> {
      const { id: _id, ...row } = toRow(n);
      const result = await db
        .updateTable('negotiation_negotiations')
        .set({ ...row, version: version + 1 })
        .where('id', '=', n.id)
        .where('version', '=', version)
        .executeTakeFirst();
      return result.numUpdatedRows === 1n || Number(result.numUpdatedRows) === 1;
    },

    /** A page, most recently updated first. */
    async list(q: ListQuery): Promise<{ items: StoredNegotiation[]; more: boolean }> {
      let query = db.selectFrom('negotiation_negotiations').selectAll();
      if (q.wallet) {
        const wallet = q.wallet;
        const role = q.role ?? 'any';
        query =
          role === 'any'
            ? query.where((eb) =>
                eb.or([eb('buyer', '=', wallet), eb('seller', '=', wallet), eb('broker', '=', wallet)]),
              )
            : query.where(role, '=', wallet);
      }
      if (q.state) query = query.where('state', '=', q.state);
      if (q.moduleId) query = query.where('moduleId', '=', q.moduleId);
      for (const word of q.words ?? [])
        query = query.where(sql<boolean>`module_title ilike ${`%${likeEscape(word)}%`} escape '\\'`);
      if (q.after) {
        const { updatedAt, id } = q.after;
        query = query.where((eb) =>
          eb.or([eb('updatedAt', '<', updatedAt), eb.and([eb('updatedAt', '=', updatedAt), eb('id', '<', id)])]),
        );
      }
      const rows = await query
        .orderBy('updatedAt', 'desc')
        .orderBy('id', 'desc')
        .limit(q.limit + 1)
        .execute();
      return { items: rows.slice(0, q.limit).map(fromRow), more: rows.length > q.limit };
    },

    async all(): Promise<StoredNegotiation[]> {
      return (await db.selectFrom('negotiation_negotiations').selectAll().execute()).map(fromRow);
    },

    /** Changes with every negotiation opened or moved (each write raises its version, none is deleted): no row read. */
    async fingerprint(): Promise<string> {
      return versionsFingerprint(database, 'negotiation_negotiations');
    },
  };
}

export type NegotiationStore = ReturnType<typeof negotiationStore>;
