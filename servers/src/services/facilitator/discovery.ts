import { sql, type InsertObject, type Migration } from 'kysely';
import type {
  BazaarResource,
  DiscoverySettlement,
  PaymentRequirements,
  X402FacilitatorRequest,
} from '@agent-economy/contracts';
import type { Logger } from 'pino';
import { HttpError, conflict, notFound, unprocessable } from '../../runtime/errors';
import { tokenBalanceChanges, type TransactionMeta } from '../../solana/token-balances';
import type { SharedDb } from '../../db';
import { camelCaseDb, json } from '../../db/camel-case';
import { grouped } from '../../db/grouped';
import type { Settlement } from './store';

// Discovery: what the facilitator tells the world about the payments it settled.
// - The settlement feed (GET /discovery/settlements): the public fields of every confirmed settlement, in a
//   confirmation order readers can follow with a cursor (the marketplace API syncs its tables from it).
// - x402's bazaar extension (GET /discovery/resources, /discovery/search): the catalog of resources learned from
//   the payments settled through POST /settle. Source: the settlement itself, never a registration: the resource
//   URL and the `bazaar` extension the resource server put in its 402 quote (the client echoes it in its payment)
//   and the requirements that were paid. An entry exists only because real money reached its payTo; it is keyed by
//   resource and payTo, so a payment to one seller can never rewrite another seller's entry.

export const discoveryMigrations: Record<string, Migration> = {
  '001_discovery': {
    async up(db) {
      // The feed's order: a number given to each settlement once it is confirmed (see sequence()).
      await db.schema.alterTable('facilitator_settlements').addColumn('seq', 'int8').execute();
      await sql`create unique index facilitator_settlements_seq on facilitator_settlements (seq) where seq is not null`.execute(
        db,
      );
      await sql`create index facilitator_settlements_unsequenced on facilitator_settlements (settled_at) where seq is null and status = 'settled'`.execute(
        db,
      );
      await db.schema
        .createTable('facilitator_bazaar')
        .addColumn('resource', 'text', (c) => c.notNull())
        .addColumn('pay_to', 'text', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('scheme', 'text', (c) => c.notNull())
        .addColumn('network', 'text', (c) => c.notNull())
        .addColumn('x402_version', 'integer', (c) => c.notNull())
        .addColumn('accepts', 'jsonb', (c) => c.notNull())
        .addColumn('description', 'text')
        .addColumn('mime_type', 'text')
        .addColumn('extensions', 'jsonb', (c) => c.notNull())
        .addColumn('settlements', 'int8', (c) => c.notNull())
        .addColumn('last_updated', 'timestamptz', (c) => c.notNull())
        .addPrimaryKeyConstraint('facilitator_bazaar_pk', ['resource', 'pay_to'])
        .execute();
      await db.schema
        .createIndex('facilitator_bazaar_updated')
        .on('facilitator_bazaar')
        .column('last_updated')
        .execute();
    },
  },
  '002_refunds': {
    async up(db) {
      // A seller's refund of a settlement (POST /discovery/refunds): one refund transaction refunds one settlement.
      await db.schema.alterTable('facilitator_settlements').addColumn('refund_transaction', 'text').execute();
      await db.schema.alterTable('facilitator_settlements').addColumn('refund_amount', 'int8').execute();
      await sql`create unique index facilitator_settlements_refund on facilitator_settlements (refund_transaction) where refund_transaction is not null`.execute(
        db,
      );
    },
  },
};

/** Any constant: serialises the numbering of settlements across replicas (pg_advisory_xact_lock). */
const SEQUENCE_LOCK = 402_617_001;
const BAZAAR_KEY = 'bazaar';
const MAX_EXTENSION_BYTES = 16_384;
const MAX_CATALOG_SCAN = 5_000;
const QUERY_METHODS = new Set(['GET', 'HEAD', 'DELETE']);
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

// Rows are camelCase (camelCaseDb): a catalog entry is the contract's resource, keyed by resource and payTo, with
// what only storage keeps; a settlement is the settlement store's (store.ts) with the columns discovery adds.

interface BazaarRow extends Pick<BazaarResource, 'resource' | 'type' | 'x402Version' | 'accepts'> {
  payTo: string;
  scheme: string;
  network: string;
  description: string | null;
  mimeType: string | null;
  extensions: Record<string, unknown>;
  /** How many settlements taught the entry. */
  settlements: bigint;
  lastUpdated: Date;
}

interface SettlementRow extends Settlement {
  /** Its position in the feed, given once it is confirmed (sequence()). */
  seq: bigint | null;
  refundTransaction: string | null;
  refundAmount: bigint | null;
}

interface Tables {
  facilitator_bazaar: BazaarRow;
  facilitator_settlements: SettlementRow;
}

/** What getTransaction says of a transaction, as the refund check reads it: null when it is not confirmed. */
export type ReadLanded = (
  signature: string,
) => Promise<
  | { slot: bigint; meta: (TransactionMeta & { logMessages?: readonly string[] | null }) | null | undefined }
  | null
  | undefined
>;

export interface BazaarFilter {
  type?: string;
  payTo?: string;
  scheme?: string;
  network?: string;
  extensions?: string;
}

/**
 * The x402 reference rules for a route template (a client could otherwise catalog a payment under any URL):
 * a path of safe characters starting with "/", no "..", no "://", at any percent-encoding depth.
 */
export function isValidRouteTemplate(value: unknown): value is string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 512 || !value.startsWith('/')) return false;
  if (!/^[A-Za-z0-9_:/.\-~%]+$/.test(value)) return false;
  let decoded = value;
  for (let depth = 0; depth < 4; depth++) {
    if (decoded.includes('..') || decoded.includes('://')) return false;
    let next: string;
    try {
      next = decodeURIComponent(decoded);
    } catch {
      return false;
    }
    if (next === decoded) break;
    decoded = next;
  }
  return !decoded.includes('..') && !decoded.includes('://');
}

/**
 * A bazaar extension we accept in the catalog: an http declaration (info.input with type "http" and a method,
 * body methods with a bodyType and a body), a JSON schema without external references, and a bounded size.
 */
export function checkBazaarExtension(value: unknown): { method: string; routeTemplate?: string } | undefined {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const extension = value as { info?: { input?: Record<string, unknown> }; schema?: unknown; routeTemplate?: unknown };
  const input = extension.info?.input;
  if (!input || input.type !== 'http' || typeof input.method !== 'string') return undefined;
  if (!QUERY_METHODS.has(input.method) && !BODY_METHODS.has(input.method)) return undefined;
  if (
    BODY_METHODS.has(input.method) &&
    (!['json', 'form-data', 'text'].includes(input.bodyType as string) || typeof input.body !== 'object')
  )
    return undefined;
  if (!extension.schema || typeof extension.schema !== 'object' || hasExternalReference(extension.schema))
    return undefined;
  if (JSON.stringify(value).length > MAX_EXTENSION_BYTES) return undefined;
  if (extension.routeTemplate !== undefined && !isValidRouteTemplate(extension.routeTemplate)) return undefined;
  return {
    method: input.method,
    ...(typeof extension.routeTemplate === 'string' ? { routeTemplate: extension.routeTemplate } : {}),
  };
}

function hasExternalReference(node: unknown): boolean {
  if (Array.isArray(node)) return node.some(hasExternalReference);
  if (!node || typeof node !== 'object') return false;
  return Object.entries(node).some(([key, value]) =>
    (key === '$ref' || key === '$id') && (typeof value !== 'string' || !value.startsWith('#'))
      ? true
      : hasExternalReference(value),
  );
}

/** The catalog key of a paid URL: its origin and route template (or path), without query or fragment. */
export function canonicalResource(url: string, routeTemplate?: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  if (
    (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') ||
    parsed.username ||
    parsed.password ||
    url.length > 2048
  )
    return undefined;
  return `${parsed.origin}${routeTemplate ?? parsed.pathname}`;
}

/** A paid URL as the feed publishes it: without its query or fragment, which may carry the buyer's input. */
function withoutQuery(url: string): string | null {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return null;
  }
}

const FEED_COLUMNS = [
  'transaction',
  'kind',
  'payer',
  'payTo',
  'amount',
  'asset',
  'network',
  'resource',
  'settledAt',
  'seq',
  'refundTransaction',
  'refundAmount',
] as const;

function toFeedEntry(r: Pick<SettlementRow, (typeof FEED_COLUMNS)[number]>): DiscoverySettlement {
  return {
    transaction: r.transaction,
    kind: r.kind,
    payTo: r.payTo,
    payer: r.payer,
    amount: BigInt(r.amount).toString(),
    asset: r.asset,
    network: r.network,
    resource: r.resource === null ? null : withoutQuery(r.resource),
    settledAt: new Date(r.settledAt!).toISOString(),
    refund: r.refundTransaction
      ? { transaction: r.refundTransaction, amount: BigInt(r.refundAmount ?? 0n).toString() }
      : null,
  };
}

/** Why a transaction is not a refund of `amount` of `asset` from `payTo` to `payer`, or null when it is. */
export function refundProblem(
  meta: TransactionMeta | null | undefined,
  asset: string,
  payTo: string,
  payer: string,
  amount: bigint,
): string | null {
  if (!meta) return 'it is not confirmed on the chain';
  if (meta.err) return 'it failed';
  const changes = tokenBalanceChanges(meta, asset);
  const received = changes.get(payer) ?? 0n;
  const sent = -(changes.get(payTo) ?? 0n);
  if (received < amount) return `the payer received ${received} atomic units of ${asset}, not the ${amount} it paid`;
  if (sent < amount) return `the seller sent ${sent > 0n ? sent : 0n} atomic units of ${asset}, not ${amount}`;
  return null;
}

const words = (text: string) =>
  text
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length >= 2);

/** The text a resource is searched by, by weight: 3 its name and tags, 2 its URL path, 1 its description and inputs. */
function searchFields(item: BazaarResource): [number, string[]][] {
  const info =
    (item.extensions?.[BAZAAR_KEY] as { info?: { input?: Record<string, unknown> } } | undefined)?.info?.input ?? {};
  const inputs = ['queryParams', 'body', 'pathParams'].flatMap((k) =>
    Object.keys((info[k] as Record<string, unknown> | undefined) ?? {}),
  );
  let path = item.resource;
  try {
    path = new URL(item.resource).pathname;
  } catch {
    // kept whole
  }
  return [
    [3, words([item.serviceName ?? '', ...(item.tags ?? [])].join(' '))],
    [2, words(path)],
    [1, words([item.description ?? '', ...inputs].join(' '))],
  ];
}

/**
 * Ranks resources for a query: each query word scores the best weight of a field holding a word it starts, times its
 * rarity across the candidates (ln(1 + N / (1 + documents holding it))); resources matching no word are left out.
 * Ties go to the most recently settled.
 */
export function rankResources(items: BazaarResource[], query: string): BazaarResource[] {
  const terms = [...new Set(words(query))];
  if (terms.length === 0) return [];
  const fields = items.map(searchFields);
  const weightOf = (doc: [number, string[]][], term: string) =>
    Math.max(0, ...doc.filter(([, ws]) => ws.some((w) => w.startsWith(term))).map(([weight]) => weight));
  const rarity = new Map(
    terms.map((term) => [
      term,
      Math.log(1 + items.length / (1 + fields.filter((doc) => weightOf(doc, term) > 0).length)),
    ]),
  );
  return items
    .map((item, i) => ({
      item,
      score: terms.reduce((sum, term) => sum + weightOf(fields[i]!, term) * rarity.get(term)!, 0),
    }))
    .filter((r) => r.score > 0)
    .sort(
      (a, b) =>
        b.score - a.score ||
        b.item.lastUpdated.localeCompare(a.item.lastUpdated) ||
        a.item.resource.localeCompare(b.item.resource),
    )
    .map((r) => r.item);
}

const toResource = (r: BazaarRow): BazaarResource => ({
  resource: r.resource,
  type: r.type,
  x402Version: r.x402Version,
  accepts: r.accepts,
  lastUpdated: new Date(r.lastUpdated).toISOString(),
  ...(r.description ? { description: r.description } : {}),
  ...(r.mimeType ? { mimeType: r.mimeType } : {}),
  extensions: r.extensions,
});

export function discoveryDesk(database: SharedDb, logger: Logger) {
  const db = camelCaseDb<Tables>(database);

  type BazaarEntry = InsertObject<Tables, 'facilitator_bazaar'> & {
    resource: string;
    payTo: string;
    settlements: bigint;
  };
  /**
   * Upserts catalog entries, one statement for the settlements recorded together (group commit, store.ts): entries of
   * one resource and payTo add up their settlements and keep the latest declaration.
   */
  const catalogEntry = grouped<BazaarEntry, void>(async (entries) => {
    const merged = new Map<string, BazaarEntry>();
    for (const entry of entries) {
      const key = JSON.stringify([entry.resource, entry.payTo]);
      const earlier = merged.get(key);
      merged.set(key, earlier ? { ...entry, settlements: earlier.settlements + entry.settlements } : entry);
    }
    await db
      .insertInto('facilitator_bazaar')
      .values([...merged.values()])
      .onConflict((oc) =>
        oc.columns(['resource', 'payTo']).doUpdateSet((eb) => ({
          scheme: eb.ref('excluded.scheme'),
          network: eb.ref('excluded.network'),
          x402Version: eb.ref('excluded.x402Version'),
          accepts: eb.ref('excluded.accepts'),
          description: eb.ref('excluded.description'),
          mimeType: eb.ref('excluded.mimeType'),
          extensions: eb.ref('excluded.extensions'),
          settlements: sql`facilitator_bazaar.settlements + excluded.settlements`,
          lastUpdated: eb.ref('excluded.lastUpdated'),
        })),
      )
      .execute();
    return entries.map(() => undefined);
  });

  /**
   * Numbers the settlements confirmed since the last call. Numbers are handed out under a transaction-scoped advisory
   * lock, so the transaction that numbered n commits before anyone numbers n+1: a reader that sees n+1 also sees n,
   * and a cursor never skips a settlement whichever replica confirmed it, or when.
   */
  async function sequence(): Promise<void> {
    await db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(${SEQUENCE_LOCK})`.execute(trx);
      // Next numbers after the highest given, in confirmation order.
      await sql`with next as (
          select key, row_number() over (order by settled_at, key) as n from facilitator_settlements
          where status = 'settled' and seq is null order by settled_at, key limit 5000),
        base as (select coalesce(max(seq), 0) as top from facilitator_settlements)
        update facilitator_settlements s set seq = base.top + next.n from next, base where s.key = next.key`.execute(
        trx,
      );
    });
  }

  const filtered = (filter: BazaarFilter) => {
    let query = db.selectFrom('facilitator_bazaar');
    if (filter.type) query = query.where('type', '=', filter.type);
    if (filter.payTo) query = query.where('payTo', '=', filter.payTo);
    if (filter.scheme) query = query.where('scheme', '=', filter.scheme);
    if (filter.network) query = query.where('network', '=', filter.network);
    if (filter.extensions) query = query.where(sql<boolean>`jsonb_exists(extensions, ${filter.extensions})`);
    return query;
  };

  return {
    /**
     * Confirmed settlements after a cursor, oldest first; nextCursor is the last one's position, null on an empty page.
     */
    async settlements(
      after: bigint,
      limit: number,
    ): Promise<{ settlements: DiscoverySettlement[]; nextCursor: string | null }> {
      await sequence();
      const rows = await db
        .selectFrom('facilitator_settlements')
        .select(FEED_COLUMNS)
        .where('status', '=', 'settled')
        .where('seq', '>', after)
        .orderBy('seq')
        .limit(limit)
        .execute();
      return {
        settlements: rows.map(toFeedEntry),
        nextCursor: rows.length > 0 ? String(rows[rows.length - 1]!.seq) : null,
      };
    },

    /**
     * Records a seller's refund of one of its settlements, after checking on chain that `refund` succeeded and moved at
     * least the settled amount of the asset from payTo to the payer. `reporter` is the wallet that signed the call:
     * only
     * the payTo may say its own sale was refunded. The settlement loses its place in the feed and gets the next one, so
     * readers past it see it again, with its refund.
     */
    async recordRefund(
      settlement: string,
      refund: string,
      reporter: string,
      read: ReadLanded,
    ): Promise<DiscoverySettlement> {
      const row = await db
        .selectFrom('facilitator_settlements')
        .select(FEED_COLUMNS)
        .where('transaction', '=', settlement)
        .where('status', '=', 'settled')
        .executeTakeFirst();
      if (!row) throw notFound('settlement_not_found', `no settled payment has the transaction ${settlement}`);
      if (reporter !== row.payTo) {
        throw new HttpError(
          403,
          'not_the_seller',
          `only the seller paid by this settlement (${row.payTo}) may report its refund; the call was signed by ${reporter}`,
        );
      }
      if (row.refundTransaction === refund) return toFeedEntry(row);
      if (row.refundTransaction)
        throw conflict('already_refunded', `the settlement ${settlement} was refunded by ${row.refundTransaction}`, {
          refund: row.refundTransaction,
        });
      const used = await db
        .selectFrom('facilitator_settlements')
        .select('transaction')
        .where('refundTransaction', '=', refund)
        .executeTakeFirst();
      if (used)
        throw conflict(
          'refund_already_used',
          `the transaction ${refund} already refunded the settlement ${used.transaction}`,
          { settlement: used.transaction },
        );
      const amount = BigInt(row.amount);
      const [refunded, settled] = await Promise.all([read(refund), read(settlement)]);
      // A transfer from the seller to the buyer made for anything else (another sale's refund, a payment) is not this
      // sale's refund: the refund names the settlement in a memo, which no transaction made before the sale can do.
      const problem =
        refunded && settled && refunded.slot < settled.slot
          ? `it landed in slot ${refunded.slot}, before the settlement (slot ${settled.slot})`
          : refunded?.meta && !(refunded.meta.logMessages ?? []).some((line) => line.includes(settlement))
            ? `it carries no memo naming the settlement ${settlement}`
            : refundProblem(refunded?.meta, row.asset, row.payTo, row.payer, amount);
      if (problem)
        throw unprocessable(
          'refund_not_verified',
          `the transaction ${refund} is not a refund of this settlement: ${problem}`,
          { reason: problem },
        );
      // Kept on the row only while it has no refund yet (two reports racing: one wins, the other reads it next time).
      const updated = await db
        .updateTable('facilitator_settlements')
        .set({ refundTransaction: refund, refundAmount: amount, seq: null })
        .where('transaction', '=', settlement)
        .where('refundTransaction', 'is', null)
        .executeTakeFirst()
        .catch((error: unknown) => {
          if ((error as { code?: string }).code === '23505')
            throw conflict('refund_already_used', `the transaction ${refund} already refunded another settlement`);
          throw error;
        });
      if (!updated.numUpdatedRows) return this.recordRefund(settlement, refund, reporter, read);
      logger.info({ settlement, refund, amount: amount.toString() }, 'recorded a refund');
      await sequence();
      return toFeedEntry({ ...row, refundTransaction: refund, refundAmount: amount });
    },

    /**
     * Learns a resource from a payment that settled: its URL (canonicalised by the declared route template), the paid
     * requirements and the bazaar declaration. A payment without a valid declaration teaches nothing.
     */
    async catalog(request: X402FacilitatorRequest, at: Date): Promise<void> {
      const { paymentPayload: payload, paymentRequirements: requirements } = request;
      const extension = payload.extensions?.[BAZAAR_KEY];
      const declared = checkBazaarExtension(extension);
      const url = payload.resource?.url;
      if (!declared || !url) return;
      const resource = canonicalResource(url, declared.routeTemplate);
      if (!resource) return;
      try {
        await catalogEntry({
          resource,
          payTo: requirements.payTo,
          type: 'http',
          scheme: requirements.scheme,
          network: requirements.network,
          x402Version: payload.x402Version,
          accepts: json([requirements]),
          description: payload.resource?.description?.slice(0, 1000) ?? null,
          mimeType: payload.resource?.mimeType?.slice(0, 100) ?? null,
          extensions: json({ [BAZAAR_KEY]: extension }),
          settlements: 1n,
          lastUpdated: at,
        });
      } catch (error) {
        // The payment is settled whatever happens to the catalog: a failed entry is logged, never an error to the
        // payer.
        logger.warn({ err: error, resource }, 'bazaar: could not catalog a settled resource');
      }
    },

    async list(filter: BazaarFilter, limit: number, offset: number) {
      const [rows, total] = await Promise.all([
        filtered(filter)
          .selectAll()
          .orderBy('lastUpdated', 'desc')
          .orderBy('resource')
          .orderBy('payTo')
          .limit(limit)
          .offset(offset)
          .execute(),
        filtered(filter)
          .select((eb) => eb.fn.countAll<bigint>().as('n'))
          .executeTakeFirstOrThrow(),
      ]);
      return { x402Version: 2, items: rows.map(toResource), pagination: { limit, offset, total: Number(total.n) } };
    },

    async search(query: string, filter: BazaarFilter, limit: number, cursor: number) {
      const rows = await filtered(filter)
        .selectAll()
        .orderBy('lastUpdated', 'desc')
        .limit(MAX_CATALOG_SCAN + 1)
        .execute();
      const ranked = rankResources(rows.slice(0, MAX_CATALOG_SCAN).map(toResource), query);
      const page = ranked.slice(cursor, cursor + limit);
      return {
        x402Version: 2,
        resources: page,
        // Only the most recent MAX_CATALOG_SCAN entries are searched.
        partialResults: rows.length > MAX_CATALOG_SCAN,
        pagination: { limit, cursor: cursor + limit < ranked.length ? String(cursor + limit) : null },
      };
    },
  };
}

export type DiscoveryDesk = ReturnType<typeof discoveryDesk>;
