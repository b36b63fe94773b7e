import { sql, type Kysely, type Migration } from 'kysely';
import type { MarketContentFormat, MarketNegotiationMode } from '@agent-economy/contracts';
import { conflict } from '../../runtime/errors';
import type { Listing, PurchaseFact, StoredModule, StoredPurchase } from './domain';

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
      await db.schema.createIndex('knowledge_market_modules_seller_hash_uq').on('knowledge_market_modules').columns(['seller', 'content_hash']).unique().execute();
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
      await db.schema.createIndex('knowledge_market_purchases_module_idx').on('knowledge_market_purchases').column('module_id').execute();
      await db.schema.createIndex('knowledge_market_purchases_negotiation_idx').on('knowledge_market_purchases').column('negotiation_id').execute();
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
};

interface ModuleRow {
  id: string;
  seller: string;
  seller_name: string | null;
  title: string;
  description: string;
  tags: string[];
  capabilities: string[];
  price: bigint;
  negotiation_mode: MarketNegotiationMode;
  max_discount_percent: number;
  version: string;
  format: MarketContentFormat;
  language: string | null;
  content: string;
  content_hash: string;
  size_bytes: number;
  preview: string | null;
  published_at: Date;
}

interface PurchaseRow {
  id: string;
  module_id: string;
  title: string;
  version: string;
  seller: string;
  buyer: string;
  paid_by: string;
  price: bigint;
  list_price: bigint;
  negotiation_id: string | null;
  payment_key: string | null;
  purchased_at: Date;
}

interface RatingRow {
  purchase_id: string;
  module_id: string;
  buyer: string;
  rating: number;
  comment: string | null;
  rated_at: Date;
}

interface Tables {
  knowledge_market_modules: ModuleRow;
  knowledge_market_purchases: PurchaseRow;
  knowledge_market_ratings: RatingRow;
}

const json = (value: unknown) => sql`${JSON.stringify(value)}::jsonb`;

const toStored = (r: Omit<ModuleRow, 'content'>): StoredModule => ({
  id: r.id,
  seller: r.seller,
  sellerName: r.seller_name,
  title: r.title,
  description: r.description,
  tags: r.tags,
  capabilities: r.capabilities,
  price: BigInt(r.price),
  negotiationMode: r.negotiation_mode,
  maxDiscountPercent: r.max_discount_percent,
  version: r.version,
  format: r.format,
  language: r.language,
  contentHash: r.content_hash,
  sizeBytes: r.size_bytes,
  preview: r.preview,
  publishedAt: new Date(r.published_at),
});

/**
 * A purchase counts (sales, downloads, ratings, statistics) once it is paid: charged nothing (no payment key), or
 * its x402 payment settled. The runtime writes that status after settlement and deletes the claim of a payment
 * that failed, so a purchase whose settlement failed never counts.
 */
const SETTLED = sql<boolean>`(p.payment_key is null or exists (select 1 from runtime_payments r where r.key = p.payment_key and r.status = 'settled'))`;
/** Settled, or its payment still in flight (verifying, pending, unknown): it holds an agreement against reuse. */
const LIVE = sql<boolean>`(p.payment_key is null or exists (select 1 from runtime_payments r where r.key = p.payment_key))`;

export interface NewPurchase extends Omit<StoredPurchase, 'format' | 'language' | 'content' | 'contentHash'> {
  paymentKey: string | null;
}

export function marketStore(database: Kysely<any>) {
  const db = database as Kysely<Tables>;

  const listingColumns = [
    'm.id', 'm.seller', 'm.seller_name', 'm.title', 'm.description', 'm.tags', 'm.capabilities', 'm.price', 'm.negotiation_mode',
    'm.max_discount_percent', 'm.version', 'm.format', 'm.language', 'm.content_hash', 'm.size_bytes', 'm.preview', 'm.published_at',
  ] as const;

  /** Listings with their settled sales and their ratings, optionally of one module. */
  async function listings(id?: string): Promise<Listing[]> {
    let query = db
      .selectFrom('knowledge_market_modules as m')
      .select(listingColumns)
      .select([
        sql<string>`(select count(*) from knowledge_market_purchases p where p.module_id = m.id and ${SETTLED})`.as('sales'),
        sql<string>`(select coalesce(sum(rating), 0) from knowledge_market_ratings g where g.module_id = m.id)`.as('rating_sum'),
        sql<string>`(select count(*) from knowledge_market_ratings g where g.module_id = m.id)`.as('rating_count'),
      ]);
    if (id) query = query.where('m.id', '=', id);
    const rows = await query.execute();
    return rows.map((r) => ({ ...toStored(r), sales: Number(r.sales), ratingSum: Number(r.rating_sum), ratingCount: Number(r.rating_count) }));
  }

  const purchaseSelect = (q: Kysely<Tables> = db) =>
    q
      .selectFrom('knowledge_market_purchases as p')
      .innerJoin('knowledge_market_modules as m', 'm.id', 'p.module_id')
      .select(['p.id', 'p.module_id', 'p.title', 'p.version', 'p.seller', 'p.buyer', 'p.paid_by', 'p.price', 'p.list_price', 'p.negotiation_id', 'p.purchased_at'])
      .select(['m.format', 'm.language', 'm.content', 'm.content_hash']);
  /** The purchases other than the one paid with `exceptKey` that hold this agreement (paid, or their payment in flight). */
  const holders = (q: Kysely<Tables>, negotiationId: string, exceptKey: string | null) => {
    const query = q.selectFrom('knowledge_market_purchases as p').select('p.id').where('p.negotiation_id', '=', negotiationId).where(LIVE);
    return exceptKey ? query.where((eb) => eb.or([eb('p.payment_key', 'is', null), eb('p.payment_key', '<>', exceptKey)])) : query;
  };
  const toPurchase = (r: Awaited<ReturnType<ReturnType<typeof purchaseSelect>['executeTakeFirstOrThrow']>>): StoredPurchase => ({
    id: r.id,
    moduleId: r.module_id,
    title: r.title,
    version: r.version,
    seller: r.seller,
    buyer: r.buyer,
    paidBy: r.paid_by,
    price: BigInt(r.price),
    listPrice: BigInt(r.list_price),
    negotiationId: r.negotiation_id,
    format: r.format,
    language: r.language,
    content: r.content,
    contentHash: r.content_hash,
    purchasedAt: new Date(r.purchased_at),
  });

  return {
    listings,

    async listing(id: string): Promise<Listing | undefined> {
      return (await listings(id))[0];
    },

    async moduleBySellerHash(seller: string, contentHash: string): Promise<string | undefined> {
      const row = await db.selectFrom('knowledge_market_modules').select('id').where('seller', '=', seller).where('content_hash', '=', contentHash).executeTakeFirst();
      return row?.id;
    },

    /** Lists a module; the same seller and content again is a 409 duplicate_module naming the listed one. */
    async insertModule(m: StoredModule, content: string): Promise<void> {
      const inserted = await db
        .insertInto('knowledge_market_modules')
        .values({
          id: m.id,
          seller: m.seller,
          seller_name: m.sellerName,
          title: m.title,
          description: m.description,
          tags: json(m.tags) as never,
          capabilities: json(m.capabilities) as never,
          price: m.price,
          negotiation_mode: m.negotiationMode,
          max_discount_percent: m.maxDiscountPercent,
          version: m.version,
          format: m.format,
          language: m.language,
          content,
          content_hash: m.contentHash,
          size_bytes: m.sizeBytes,
          preview: m.preview,
          published_at: m.publishedAt,
        })
        .onConflict((oc) => oc.columns(['seller', 'content_hash']).doNothing())
        .executeTakeFirst();
      if (!inserted.numInsertedOrUpdatedRows) {
        const existing = await this.moduleBySellerHash(m.seller, m.contentHash);
        throw conflict('duplicate_module', 'You already list a module with this content', { moduleId: existing });
      }
    },

    /** True when a purchase other than the one paid with `exceptKey` holds this agreement (paid, or its payment in flight). */
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
          const earlier = await tx.selectFrom('knowledge_market_purchases').select('id').where('payment_key', '=', p.paymentKey).executeTakeFirst();
          if (earlier) return { purchase: toPurchase(await purchaseSelect(tx).where('p.id', '=', earlier.id).executeTakeFirstOrThrow()) };
        }
        if (p.negotiationId) {
          await sql`select pg_advisory_xact_lock(hashtext(${`knowledge-market:${p.negotiationId}`}))`.execute(tx);
          if (await holders(tx, p.negotiationId, p.paymentKey).executeTakeFirst()) return { used: true as const };
        }
        await tx
          .insertInto('knowledge_market_purchases')
          .values({
            id: p.id,
            module_id: p.moduleId,
            title: p.title,
            version: p.version,
            seller: p.seller,
            buyer: p.buyer,
            paid_by: p.paidBy,
            price: p.price,
            list_price: p.listPrice,
            negotiation_id: p.negotiationId,
            payment_key: p.paymentKey,
            purchased_at: p.purchasedAt,
          })
          .execute();
        return { purchase: toPurchase(await purchaseSelect(tx).where('p.id', '=', p.id).executeTakeFirstOrThrow()) };
      });
    },

    /** A paid purchase with its content, or undefined (unknown, or its payment never settled). */
    async purchase(id: string): Promise<StoredPurchase | undefined> {
      const row = await purchaseSelect().where('p.id', '=', id).where(SETTLED).executeTakeFirst();
      return row && toPurchase(row);
    },

    async rating(purchaseId: string): Promise<RatingRow | undefined> {
      return db.selectFrom('knowledge_market_ratings').selectAll().where('purchase_id', '=', purchaseId).executeTakeFirst();
    },

    /** Records a rating; false when the purchase was already rated (the primary key decides races). */
    async insertRating(r: RatingRow): Promise<boolean> {
      const inserted = await db.insertInto('knowledge_market_ratings').values(r).onConflict((oc) => oc.column('purchase_id').doNothing()).executeTakeFirst();
      return !!inserted.numInsertedOrUpdatedRows;
    },

    async paidPurchases(): Promise<PurchaseFact[]> {
      const rows = await db.selectFrom('knowledge_market_purchases as p').select(['p.price', 'p.purchased_at']).where(SETTLED).execute();
      return rows.map((r) => ({ price: BigInt(r.price), purchasedAt: new Date(r.purchased_at) }));
    },

    async allRatings(): Promise<number[]> {
      return (await db.selectFrom('knowledge_market_ratings').select('rating').execute()).map((r) => r.rating);
    },
  };
}

export type MarketStore = ReturnType<typeof marketStore>;
