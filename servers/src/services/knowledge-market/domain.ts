import { createHash } from 'node:crypto';
import {
  atomicToUsd,
  type MarketContentFormat,
  type MarketModule,
  type MarketModuleRating,
  type MarketNegotiationMode,
  type MarketStats,
  type ModulePurchase,
  type ModuleRatingReceipt,
} from '@agent-economy/contracts';
import { HttpError, unprocessable } from '../../runtime/errors';

// Pure logic of the knowledge market: hashes, floors, ratings, BM25 search, ordering and pages.

// The market's entities are the contract's, with money as bigint atomic units and time as Date (toModule, toPurchase
// and the rate handler write them back as USD strings and ISO times); the store keeps each as one row of this shape.

/**
 * A module as listed: the contract's module with its seller and negotiation terms flattened; its content is stored
 * beside it.
 */
export interface StoredModule extends Omit<
  MarketModule,
  'seller' | 'priceUsd' | 'negotiation' | 'rating' | 'sales' | 'publishedAt'
> {
  seller: string;
  sellerName: string | null;
  /** List price, atomic units. */
  price: bigint;
  negotiationMode: MarketNegotiationMode;
  maxDiscountPercent: number;
  publishedAt: Date;
}

/** A listing with what buyers made of it: settled sales and the ratings of its buyers. */
export interface Listing extends StoredModule {
  sales: number;
  ratingSum: number;
  ratingCount: number;
}

export interface StoredPurchase extends Omit<ModulePurchase, 'priceUsd' | 'listPriceUsd' | 'purchasedAt'> {
  price: bigint;
  listPrice: bigint;
  purchasedAt: Date;
}

/** A buyer's rating of a purchase (the receipt's fields, and who rated). */
export interface StoredRating extends Omit<ModuleRatingReceipt, 'ratedAt' | 'moduleRating'> {
  buyer: string;
  ratedAt: Date;
}

/** SHA-256 of the UTF-8 content, lowercase hex (what verification certificates bind to). */
export const contentHashOf = (content: string): string => createHash('sha256').update(content, 'utf8').digest('hex');
export const sizeOf = (content: string): number => Buffer.byteLength(content, 'utf8');

/** The automatic responder's floor: price × (100 − maxDiscountPercent) / 100, rounded up to the next atomic unit. */
export function floorOf(price: bigint, maxDiscountPercent: number): bigint {
  const product = price * BigInt(100 - maxDiscountPercent);
  return (product + 99n) / 100n;
}

/** Two decimals (ratings are means of small integers). */
export const round2 = (x: number): number => Math.round(x * 100) / 100;

export function ratingOf(sum: number, count: number): MarketModuleRating {
  return { average: count ? round2(sum / count) : null, count };
}

const badField = (field: string, message: string) =>
  new HttpError(400, 'invalid_request', `Invalid request: ${field} ${message}`, { fields: [{ field, message }] });

/** NUL characters and lone surrogates: text PostgreSQL cannot store in a text column (and nobody means to send). */
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** A text field the database could not store is a 400 naming it, never a 500. */
export function assertStorable(fields: Record<string, string | undefined>): void {
  for (const [field, value] of Object.entries(fields)) {
    if (value !== undefined && UNSTORABLE.test(value))
      throw badField(field, 'must be Unicode text without NUL characters or lone surrogates');
  }
}

/** The content rules of the contract: code names its language, JSON parses. */
export function checkContent(format: MarketContentFormat, language: string | undefined, content: string): void {
  if (format === 'code' && !language)
    throw unprocessable('language_required', 'A module of format "code" must name its `language`', {
      field: 'language',
    });
  if (format === 'json') {
    try {
      JSON.parse(content);
    } catch (error) {
      throw unprocessable(
        'invalid_json_content',
        `The content of a module of format "json" must parse as JSON: ${(error as Error).message}`,
        { field: 'content' },
      );
    }
  }
}

export function toModule(m: Listing): MarketModule {
  return {
    id: m.id,
    title: m.title,
    description: m.description,
    tags: m.tags,
    capabilities: m.capabilities,
    seller: { wallet: m.seller, name: m.sellerName },
    priceUsd: atomicToUsd(m.price),
    negotiation: {
      mode: m.negotiationMode,
      maxDiscountPercent: m.maxDiscountPercent,
      floorUsd: m.negotiationMode === 'auto' ? atomicToUsd(floorOf(m.price, m.maxDiscountPercent)) : null,
    },
    version: m.version,
    format: m.format,
    language: m.language,
    contentHash: m.contentHash,
    sizeBytes: m.sizeBytes,
    preview: m.preview,
    rating: ratingOf(m.ratingSum, m.ratingCount),
    sales: m.sales,
    publishedAt: m.publishedAt.toISOString(),
  };
}

export function toPurchase({ price, listPrice, purchasedAt, ...p }: StoredPurchase): ModulePurchase {
  return {
    ...p,
    priceUsd: atomicToUsd(price),
    listPriceUsd: atomicToUsd(listPrice),
    purchasedAt: purchasedAt.toISOString(),
  };
}

// ---- search: BM25 over title, description, tags and capabilities ----

/** Lowercase words of letters and digits; slugs split at their hyphens ("fee-estimation" -> fee, estimation). */
export function tokenize(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
}

export const documentOf = (m: Pick<StoredModule, 'title' | 'description' | 'tags' | 'capabilities'>): string[] =>
  tokenize([m.title, m.description, ...m.tags, ...m.capabilities].join(' '));

export const BM25_K1 = 1.2;
export const BM25_B = 0.75;

/**
 * Okapi BM25 of each document for the query: Σ over distinct query terms t of
 * idf(t) × f(t,d) × (k1 + 1) / (f(t,d) + k1 × (1 − b + b × |d| / avgdl)), idf(t) = ln(1 + (N − n(t) + 0.5) / (n(t) +
 * 0.5)),
 * with k1 = 1.2, b = 0.75, over the documents given (the whole catalogue).
 */
export function bm25(query: string[], documents: string[][]): number[] {
  const n = documents.length;
  if (!n) return [];
  const avgdl = documents.reduce((s, d) => s + d.length, 0) / n || 1;
  const terms = [...new Set(query)];
  const df = new Map(terms.map((t) => [t, documents.filter((d) => d.includes(t)).length]));
  return documents.map((doc) => {
    let score = 0;
    for (const t of terms) {
      const f = doc.filter((w) => w === t).length;
      if (!f) continue;
      const nt = df.get(t)!;
      const idf = Math.log(1 + (n - nt + 0.5) / (nt + 0.5));
      score += (idf * f * (BM25_K1 + 1)) / (f + BM25_K1 * (1 - BM25_B + (BM25_B * doc.length) / avgdl));
    }
    return score;
  });
}

export interface ListFilter {
  q?: string;
  tags?: string;
  capability?: string;
  seller?: string;
  maxPriceUsd?: string;
  minRating?: number;
  sort?: 'relevance' | 'rating' | 'price' | 'newest';
}

const newest = (a: Listing, b: Listing) =>
  b.publishedAt.getTime() - a.publishedAt.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

/** The catalogue filtered and ordered as the list route's query asks; relevance is BM25 over the whole catalogue. */
export function searchCatalogue(all: Listing[], filter: ListFilter, maxPrice: bigint | undefined): Listing[] {
  const query = filter.q ? tokenize(filter.q) : [];
  const scores = new Map<string, number>();
  if (filter.q) {
    const s = bm25(query, all.map(documentOf));
    all.forEach((m, i) => scores.set(m.id, s[i]!));
  }
  const tags = filter.tags ? new Set(filter.tags.split(',')) : undefined;
  const average = (m: Listing) => (m.ratingCount ? round2(m.ratingSum / m.ratingCount) : null);
  const hits = all.filter(
    (m) =>
      (!filter.q || scores.get(m.id)! > 0) &&
      (!tags || m.tags.some((t) => tags.has(t))) &&
      (!filter.capability || m.capabilities.includes(filter.capability)) &&
      (!filter.seller || m.seller === filter.seller) &&
      (maxPrice === undefined || m.price <= maxPrice) &&
      (filter.minRating === undefined || (average(m) ?? 0) >= filter.minRating),
  );
  const sort = filter.sort ?? (filter.q ? 'relevance' : 'newest');
  const order: Record<typeof sort, (a: Listing, b: Listing) => number> = {
    relevance: (a, b) => (scores.get(b.id) ?? 0) - (scores.get(a.id) ?? 0) || newest(a, b),
    // Unrated modules last; then more ratings first.
    rating: (a, b) => (average(b) ?? 0) - (average(a) ?? 0) || b.ratingCount - a.ratingCount || newest(a, b),
    price: (a, b) => (a.price < b.price ? -1 : a.price > b.price ? 1 : newest(a, b)),
    newest,
  };
  return hits.sort(order[sort]);
}

// ---- pages: the cursor is the offset of the next item, opaque on the wire ----

export const encodeCursor = (offset: number): string =>
  Buffer.from(JSON.stringify({ o: offset })).toString('base64url');

export function cursorOffset(cursor: string | undefined): number {
  if (cursor === undefined) return 0;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    value = undefined;
  }
  const o = (value as { o?: unknown } | undefined)?.o;
  if (typeof o !== 'number' || !Number.isInteger(o) || o < 0)
    throw badField('query.cursor', 'is not a cursor this route issued');
  return o;
}

// ---- statistics ----

export type PurchaseFact = Pick<StoredPurchase, 'price' | 'purchasedAt'>;

export function buildStats(modules: Listing[], purchases: PurchaseFact[], ratings: number[], now: Date): MarketStats {
  const byFormat: Record<MarketContentFormat, number> = { markdown: 0, text: 0, json: 0, code: 0 };
  const capabilities = new Map<string, number>();
  for (const m of modules) {
    byFormat[m.format] += 1;
    for (const c of new Set(m.capabilities)) capabilities.set(c, (capabilities.get(c) ?? 0) + 1);
  }
  const dayAgo = now.getTime() - 86_400_000;
  return {
    modules: modules.length,
    sellers: new Set(modules.map((m) => m.seller)).size,
    purchases: purchases.length,
    volumeUsd: atomicToUsd(purchases.reduce((s, p) => s + p.price, 0n)),
    ratings: ratings.length,
    averageRating: ratings.length ? round2(ratings.reduce((s, r) => s + r, 0) / ratings.length) : null,
    byFormat,
    // Most modules first, then alphabetical, so ties are stable.
    topCapabilities: [...capabilities]
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
      .slice(0, 10)
      .map(([capability, modules]) => ({ capability, modules })),
    purchasesLast24h: purchases.filter((p) => p.purchasedAt.getTime() > dayAgo).length,
    asOf: now.toISOString(),
  };
}
