import { sql, type Kysely, type Migration } from 'kysely';
import type { NegotiationParty, NegotiationState } from '@agent-economy/contracts';
import type { Mode, PagePosition, StoredNegotiation, StoredOffer } from './domain';

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
      await sql`create unique index negotiation_unfinished_uq on negotiation_negotiations (buyer, module_id) where state in ('open', 'countered')`.execute(db);
      await db.schema.createIndex('negotiation_updated_idx').on('negotiation_negotiations').columns(['updated_at', 'id']).execute();
      await db.schema.createIndex('negotiation_seller_idx').on('negotiation_negotiations').column('seller').execute();
      await db.schema.createIndex('negotiation_broker_idx').on('negotiation_negotiations').column('broker').execute();
    },
  },
};

interface JsonOffer {
  round: number;
  by: NegotiationParty;
  price: string;
  message: string | null;
  automatic: boolean;
  rationale: string | null;
  at: string;
}

interface Row {
  id: string;
  module_id: string;
  module_title: string;
  buyer: string;
  seller: string;
  broker: string | null;
  mode: Mode;
  state: NegotiationState;
  turn: NegotiationParty | null;
  list_price: bigint;
  floor: bigint | null;
  rounds: number;
  offers: JsonOffer[];
  agreed_price: bigint | null;
  accepted_by: NegotiationParty | null;
  accepted_automatic: boolean | null;
  accepted_at: Date | null;
  valid_until: Date | null;
  rejected_by: NegotiationParty | null;
  rejected_automatic: boolean | null;
  rejection_reason: string | null;
  rejected_at: Date | null;
  opened_at: Date;
  updated_at: Date;
  expires_at: Date;
  version: number;
}

interface Tables {
  negotiation_negotiations: Row;
}

const fromRow = (r: Row): StoredNegotiation => ({
  id: r.id,
  moduleId: r.module_id,
  moduleTitle: r.module_title,
  buyer: r.buyer,
  seller: r.seller,
  broker: r.broker,
  mode: r.mode,
  state: r.state,
  turn: r.turn,
  listPrice: BigInt(r.list_price),
  floor: r.floor === null ? null : BigInt(r.floor),
  rounds: r.rounds,
  offers: r.offers.map((o): StoredOffer => ({ ...o, price: BigInt(o.price), at: new Date(o.at) })),
  agreement:
    r.agreed_price === null
      ? null
      : { price: BigInt(r.agreed_price), acceptedBy: r.accepted_by!, automatic: !!r.accepted_automatic, acceptedAt: new Date(r.accepted_at!), validUntil: new Date(r.valid_until!) },
  rejection: r.rejected_by === null ? null : { by: r.rejected_by, automatic: !!r.rejected_automatic, reason: r.rejection_reason, at: new Date(r.rejected_at!) },
  openedAt: new Date(r.opened_at),
  updatedAt: new Date(r.updated_at),
  expiresAt: new Date(r.expires_at),
  version: r.version,
});

const toRow = (n: StoredNegotiation) => ({
  id: n.id,
  module_id: n.moduleId,
  module_title: n.moduleTitle,
  buyer: n.buyer,
  seller: n.seller,
  broker: n.broker,
  mode: n.mode,
  state: n.state,
  turn: n.turn,
  list_price: n.listPrice,
  floor: n.floor,
  rounds: n.rounds,
  offers: sql`${JSON.stringify(n.offers.map((o) => ({ ...o, price: o.price.toString(), at: o.at.toISOString() })))}::jsonb` as never,
  agreed_price: n.agreement?.price ?? null,
  accepted_by: n.agreement?.acceptedBy ?? null,
  accepted_automatic: n.agreement?.automatic ?? null,
  accepted_at: n.agreement?.acceptedAt ?? null,
  valid_until: n.agreement?.validUntil ?? null,
  rejected_by: n.rejection?.by ?? null,
  rejected_automatic: n.rejection?.automatic ?? null,
  rejection_reason: n.rejection?.reason ?? null,
  rejected_at: n.rejection?.at ?? null,
  opened_at: n.openedAt,
  updated_at: n.updatedAt,
  expires_at: n.expiresAt,
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

export function negotiationStore(database: Kysely<any>) {
  const db = database as Kysely<Tables>;
  return {
    /** Records an unfinished negotiation's expiry once it is due: lists, filters and statistics then see it. */
    async expireDue(now: Date): Promise<void> {
      await db
        .updateTable('negotiation_negotiations')
        .set({ state: 'expired', turn: null, updated_at: sql`expires_at`, version: sql`version + 1` })
        .where('state', 'in', ['open', 'countered'])
        .where('expires_at', '<=', now)
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
        .where('module_id', '=', moduleId)
        .where('state', 'in', ['open', 'countered'])
        .executeTakeFirst();
      return row && fromRow(row);
    },

    /** Inserts a new negotiation; false when the buyer already has an unfinished one over the module. */
    async insert(n: StoredNegotiation): Promise<boolean> {
      const result = await db.insertInto('negotiation_negotiations').values({ ...toRow(n), version: 0 }).onConflict((oc) => oc.doNothing()).executeTakeFirst();
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
            ? query.where((eb) => eb.or([eb('buyer', '=', wallet), eb('seller', '=', wallet), eb('broker', '=', wallet)]))
            : query.where(role, '=', wallet);
      }
      if (q.state) query = query.where('state', '=', q.state);
      if (q.moduleId) query = query.where('module_id', '=', q.moduleId);
      for (const word of q.words ?? []) query = query.where(sql<boolean>`module_title ilike ${`%${likeEscape(word)}%`} escape '\\'`);
      if (q.after) {
        const { updatedAt, id } = q.after;
        query = query.where((eb) => eb.or([eb('updated_at', '<', updatedAt), eb.and([eb('updated_at', '=', updatedAt), eb('id', '<', id)])]));
      }
      const rows = await query.orderBy('updated_at', 'desc').orderBy('id', 'desc').limit(q.limit + 1).execute();
      return { items: rows.slice(0, q.limit).map(fromRow), more: rows.length > q.limit };
    },

    async all(): Promise<StoredNegotiation[]> {
      return (await db.selectFrom('negotiation_negotiations').selectAll().execute()).map(fromRow);
    },
  };
}

export type NegotiationStore = ReturnType<typeof negotiationStore>;
