import { sql, type Kysely, type Migration } from 'kysely';
import { camelCaseDb, json } from '../../db/camel-case';
import { conflict } from '../../runtime/errors';
import type { Listing, PurchaseFact, StoredModule, StoredPurchase, StoredRating } from './domain';
import type { SharedDb } from '../../db';

export const migrations: Record<string, Migration> = {
  '001_market': {
    async up(db) {
      await db.schema
        .createTable('knowledge_market_modules')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('seller', 'text', (c) => c.notNull())
        .addColumn('seller_name', 'text')
        .addColumn('title', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull())
        .addColumn('tags', 'jsonb', (c) => c.notNull())
        .addColumn('capabilities', 'jsonb', (c) => c.notNull())
        .addColumn('price', 'int8', (c) => c.notNull())
        .addColumn('negotiation_mode', 'text', (c) => c.notNull())
        .addColumn('max_discount_percent', 'integer', (c) => c.notNull())
        .addColumn('version', 'text', (c) => c.notNull())
        .addColumn('format', 'text', (c) => c.notNull())
        .addColumn('language', 'text')
        .addColumn('content', 'text', (c) => c.notNull())
        .addColumn('content_hash', 'text', (c) => c.notNull())
        .addColumn('size_bytes', 'integer', (c) => c.notNull())
        .addColumn('preview', 'text')
        .addColumn('published_at', 'timestamptz', (c) => c.notNull())
        .execute();
      // A seller lists given content once; the index also makes a duplicate that races past the preflight a 409.
      await db.schema
        .createIndex('knowledge_market_modules_seller_hash_uq')
        .on('knowledge_market_modules')
        .columns(['seller', 'content_hash'])
        .unique()
        .execute();
      await db.schema
        .createTable('knowledge_market_purchases')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('module_id', 'text', (c) => c.notNull().references('knowledge_market_modules.id'))
        .addColumn('title', 'text', (c) => c.notNull())
        .addColumn('version', 'text', (c) => c.notNull())
        .addColumn('seller', 'text', (c) => c.notNull())
        .addColumn('buyer', 'text', (c) => c.notNull())
        .addColumn('paid_by', 'text', (c) => c.notNull())
        .addColumn('price', 'int8', (c) => c.notNull())
        .addColumn('list_price', 'int8', (c) => c.notNull())
        .addColumn('negotiation_id', 'text')
        // The x402 payment's key (runtime_payments.key), null when the deployment charged nothing: one payment buys
        // one purchase, and the purchase counts only once that payment has settled.
        .addColumn('payment_key', 'text', (c) => c.unique())
        .addColumn('purchased_at', 'timestamptz', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('knowledge_market_purchases_module_idx')
        .on('knowledge_market_purchases')
        .column('module_id')
        .execute();
      await db.schema
        .createIndex('knowledge_market_purchases_negotiation_idx')
        .on('knowledge_market_purchases')
        .column('negotiation_id')
        .execute();
      await db.schema
        .createTable('knowledge_market_ratings')
        .addColumn('purchase_id', 'text', (c) => c.primaryKey().references('knowledge_market_purchases.id'))
        .addColumn('module_id', 'text', (c) => c.notNull())
        .addColumn('buyer', 'text', (c) => c.notNull())
        .addColumn('rating', 'integer', (c) => c.notNull())
        .addColumn('comment', 'text')
        .addColumn('rated_at', 'timestamptz', (c) => c.notNull())
        .execute();
    },
  },
  // Each listing counts its module's ratings: without it, every listing read the whole ratings table once per module.
  '002_ratings_by_module': {
    async up(db) {
      await db.schema
        .createIndex('knowledge_market_ratings_module_idx')
        .on('knowledge_market_ratings')
        .column('module_id')
        .execute();
    },
  },
};

export interface NewPurchase extends Omit<StoredPurchase, 'format' | 'language' | 'content' | 'contentHash'> {
  paymentKey: string | null;
}

// Rows are the domain's entities (camelCaseDb), with what only storage has: a module's content, a purchase's payment.
interface Tables {
  knowledge_market_modules: StoredModule & { content: string };
  knowledge_market_purchases: NewPurchase;
  knowledge_market_ratings: StoredRating;
}

/**
 * A purchase counts (sales, downloads, ratings, statistics) once it is paid: charged nothing (no payment key), or
 * its x402 payment settled. The runtime writes that status after settlement and deletes the claim of a payment
 * that failed, so a purchase whose settlement failed never counts.
 */
const SETTLED = sql<boolean>`(p.payment_key is null or exists (select 1 from runtime_payments r where r.key = p.payment_key and r.status = 'settled'))`;
/**
 * Neither bought nor paid for by the module's own seller. The purchase route refuses both, so only a row recorded
 * before it did fails this; it never counts (sales, ratings, statistics): a seller paying themself is no sale.
 */
const ARMS_LENGTH = sql<boolean>`(p.paid_by <> p.seller and p.buyer <> p.seller)`;
/** A purchase's rating (g), joined to its purchase (p), that counts. */
const COUNTED_RATINGS = sql`knowledge_market_ratings g join knowledge_market_purchases p on p.id = g.purchase_id where ${ARMS_LENGTH}`;
/** Settled, or its payment still in flight (verifying, pending, unknown): it holds an agreement against reuse. */
const LIVE = sql<boolean>`(p.payment_key is null or exists (select 1 from runtime_payments r where r.key = p.payment_key))`;

export function marketStore(database: SharedDb) {
  const db = camelCaseDb<Tables>(database);

  const listingColumns = [
    'm.id',
    'm.seller',
    'm.sellerName',
    'm.title',
    'm.description',
    'm.tags',
    'm.capabilities',
    'm.price',
    'm.negotiationMode',
    'm.maxDiscountPercent',
    'm.version',
    'm.format',
    'm.language',
    'm.contentHash',
    'm.sizeBytes',
    'm.preview',
    'm.publishedAt',
  ] as const;

  /** Listings with their settled sales and their ratings, optionally of one module. */
  async function listings(id?: string): Promise<Listing[]> {
    let query = db
      .selectFrom('knowledge_market_modules as m')
      .select(listingColumns)
      .select([
        sql<string>`(select count(*) from knowledge_market_purchases p where p.module_id = m.id and ${SETTLED} and ${ARMS_LENGTH})`.as(
          'sales',
        ),
        sql<string>`(select coalesce(sum(g.rating), 0) from ${COUNTED_RATINGS} and g.module_id = m.id)`.as('ratingSum'),
        sql<string>`(select count(*) from ${COUNTED_RATINGS} and g.module_id = m.id)`.as('ratingCount'),
      ]);
    if (id) query = query.where('m.id', '=', id);
    const rows = await query.execute();
    return rows.map((r) => ({
      ...r,
      sales: Number(r.sales),
      ratingSum: Number(r.ratingSum),
      ratingCount: Number(r.ratingCount),
    }));
  }

  const purchaseSelect = (q: Kysely<Tables> = db) =>
    q
      .selectFrom('knowledge_market_purchases as p')
      .innerJoin('knowledge_market_modules as m', 'm.id', 'p.moduleId')
      .select([
        'p.id',
        'p.moduleId',
        'p.title',
        'p.version',
        'p.seller',
        'p.buyer',
        'p.paidBy',
        'p.price',
        'p.listPrice',
        'p.negotiationId',
        'p.purchasedAt',
      ])
      .select(['m.format', 'm.language', 'm.content', 'm.contentHash']);
  /**
   * The purchases other than the one paid with `exceptKey` that hold this agreement (paid, or their payment in flight).
   */
  const holders = (q: Kysely<Tables>, negotiationId: string, exceptKey: string | null) => {
    const query = q
      .selectFrom('knowledge_market_purchases as p')
      .select('p.id')
      .where('p.negotiationId', '=', negotiationId)
      .where(LIVE);
    return exceptKey
      ? query.where((eb) => eb.or([eb('p.paymentKey', 'is', null), eb('p.paymentKey', '<>', exceptKey)]))
      : query;
  };
  return {
    listings,

    async listing(id: string): Promise<Listing | undefined> {
      return (await listings(id))[0];
    },

    async moduleBySellerHash(seller: string, contentHash: string): Promise<string | undefined> {
      const row = await db
        .selectFrom('knowledge_market_modules')
        .select('id')
        .where('seller', '=', seller)
        .where('contentHash', '=', contentHash)
        .executeTakeFirst();
      return row?.id;
    },

    /** Lists a module; the same seller and content again is a 409 duplicate_module naming the listed one. */
    async insertModule(m: StoredModule, content: string): Promise<void> {
      const inserted = await db
        .insertInto('knowledge_market_modules')
        .values({ ...m, tags: json(m.tags), capabilities: json(m.capabilities), content })
        .onConflict((oc) => oc.columns(['seller', 'contentHash']).doNothing())
        .executeTakeFirst();
      if (!inserted.numInsertedOrUpdatedRows) {
        const existing = await this.moduleBySellerHash(m.seller, m.contentHash);
        throw conflict('duplicate_module', 'You already list a module with this content', { moduleId: existing });
      }
    },

    /**
     * True when a purchase other than the one paid with `exceptKey` holds this agreement (paid, or its payment in
     * flight).
     */
    async agreementUsed(negotiationId: string, exceptKey: string | null): Promise<boolean> {
      return !!(await holders(db, negotiationId, exceptKey).executeTakeFirst());
    },

    /**
     * Records a purchase. The same payment again (a settlement resumed) returns the purchase it bought; an agreement
     * is taken once, under a lock on it, so two purchases racing with one agreement cannot both have it.
     */
    async insertPurchase(p: NewPurchase): Promise<{ purchase: StoredPurchase } | { used: true }> {
      return db.transaction().execute(async (tx) => {
        if (p.paymentKey) {
          const earlier = await tx
            .selectFrom('knowledge_market_purchases')
            .select('id')
            .where('paymentKey', '=', p.paymentKey)
            .executeTakeFirst();
          if (earlier)
            return { purchase: await purchaseSelect(tx).where('p.id', '=', earlier.id).executeTakeFirstOrThrow() };
        }
        if (p.negotiationId) {
          await sql`select pg_advisory_xact_lock(hashtext(${`knowledge-market:${p.negotiationId}`}))`.execute(tx);
          if (await holders(tx, p.negotiationId, p.paymentKey).executeTakeFirst()) return { used: true as const };
        }
        await tx.insertInto('knowledge_market_purchases').values(p).execute();
        return { purchase: await purchaseSelect(tx).where('p.id', '=', p.id).executeTakeFirstOrThrow() };
      });
    },

    /** A paid purchase with its content, or undefined (unknown, or its payment never settled). */
    async purchase(id: string): Promise<StoredPurchase | undefined> {
      return purchaseSelect().where('p.id', '=', id).where(SETTLED).executeTakeFirst();
    },

    /** Records a rating; false when the purchase was already rated (the primary key decides races). */
    async insertRating(r: StoredRating): Promise<boolean> {
      const inserted = await db
        .insertInto('knowledge_market_ratings')
        .values(r)
        .onConflict((oc) => oc.column('purchaseId').doNothing())
        .executeTakeFirst();
      return !!inserted.numInsertedOrUpdatedRows;
    },

    async paidPurchases(): Promise<PurchaseFact[]> {
      return db
        .selectFrom('knowledge_market_purchases as p')
        .select(['p.price', 'p.purchasedAt'])
        .where(SETTLED)
        .where(ARMS_LENGTH)
        .execute();
    },

    async allRatings(): Promise<number[]> {
      const rows = await db
        .selectFrom('knowledge_market_ratings as g')
        .innerJoin('knowledge_market_purchases as p', 'p.id', 'g.purchaseId')
        .select('g.rating')
        .where(ARMS_LENGTH)
        .execute();
      return rows.map((r) => r.rating);
    },
  };
}

export type MarketStore = ReturnType<typeof marketStore>;
