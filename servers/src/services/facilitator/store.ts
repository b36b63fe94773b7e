import { sql, type Kysely, type Migration } from 'kysely';
import type { DiscoverySettlement, MppSettlementKind } from '@agent-economy/contracts';
import { camelCaseDb } from '../../db/camel-case';
import type { SharedDb } from '../../db';
import { grouped } from '../../db/grouped';

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
      await db.schema
        .createIndex('facilitator_settlements_status')
        .on('facilitator_settlements')
        .columns(['status', 'created_at'])
        .execute();
      await db.schema
        .createIndex('facilitator_settlements_pay_to')
        .on('facilitator_settlements')
        .columns(['pay_to', 'created_at'])
        .execute();
    },
  },
  '002_kinds_and_events': {
    async up(db) {
      // Which route settled a payment (x402 /settle, charge /mpp/settle, session close), for the statistics.
      await db.schema
        .alterTable('facilitator_settlements')
        .addColumn('kind', 'text', (c) => c.notNull().defaultTo('x402'))
        .execute();
      await db.schema
        .createIndex('facilitator_settlements_created')
        .on('facilitator_settlements')
        .column('created_at')
        .execute();
      await db.schema
        .createIndex('facilitator_settlements_settled')
        .on('facilitator_settlements')
        .columns(['status', 'settled_at'])
        .execute();
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
      await db.schema
        .createIndex('facilitator_settlements_payer')
        .on('facilitator_settlements')
        .columns(['payer', 'created_at'])
        .execute();
    },
  },
  '007_event_counts': {
    async up(db) {
      // Counts by kind, outcome and UTC day instead of a row per call: the free /verify and /mpp/prepare grew
      // facilitator_events by a row a call for anyone who asked, and /mpp/stats counted every row. The old table is
      // emptied into the counts and kept for replicas still running the code before this (a rolling upgrade).
      await db.schema
        .createTable('facilitator_event_counts')
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('outcome', 'text', (c) => c.notNull())
        .addColumn('day', 'timestamptz', (c) => c.notNull())
        .addColumn('count', 'int8', (c) => c.notNull())
        .addPrimaryKeyConstraint('facilitator_event_counts_pk', ['kind', 'outcome', 'day'])
        .execute();
      await sql`insert into facilitator_event_counts (kind, outcome, day, count)
        select kind, outcome, date_trunc('day', at, 'UTC'), count(*) from facilitator_events group by 1, 2, 3`.execute(
        db,
      );
      await sql`delete from facilitator_events`.execute(db);
    },
  },
};

/** x402: POST /settle; charge: POST /mpp/settle; session: POST /mpp/session/close. */
export type SettlementKind = MppSettlementKind;
/** Calls counted in the statistics. */
export type EventKind = 'prepare' | 'charge' | 'x402_verify' | 'x402_settle';
export type EventOutcome = 'ok' | 'success' | 'fail' | 'pending' | 'valid' | 'invalid';

/**
 * pending: broadcast (or about to be), not yet seen confirmed; settled: confirmed on chain; failed: landed with an
 * error or can no longer land.
 */
export type SettlementStatus = 'pending' | 'settled' | 'failed';

/**
 * A payment the facilitator claimed: the settlement feed's fields (DiscoverySettlement) with the amount as bigint
 * atomic
 * units and times as Date, and the claim's own state. The table's row is this (camelCaseDb).
 */
export interface Settlement extends Pick<
  DiscoverySettlement,
  'transaction' | 'kind' | 'payTo' | 'payer' | 'asset' | 'network' | 'resource'
> {
  key: string;
  status: SettlementStatus;
  scheme: string;
  amount: bigint;
  description: string | null;
  blockhash: string;
  error: string | null;
  createdAt: Date;
  settledAt: Date | null;
}
/** The settlement's own columns: discovery adds others to the table (the feed's sequence, refunds). */
const SETTLEMENT = [
  'key',
  'kind',
  'status',
  'scheme',
  'network',
  'payer',
  'payTo',
  'amount',
  'asset',
  'resource',
  'description',
  'transaction',
  'blockhash',
  'error',
  'createdAt',
  'settledAt',
] as const;

interface EventCountRow {
  kind: EventKind;
  outcome: EventOutcome;
  /** The UTC day's start. */
  day: Date;
  count: string;
}

/** How long counted calls wait in memory to be written together: one insert for many paid calls. */
const EVENT_FLUSH_MS = 250;

type Claim = Omit<Settlement, 'status' | 'error' | 'settledAt'>;
type Finish = { key: string; status: 'settled' | 'failed'; at: Date; error: string | null };

export function settlementStore(database: SharedDb) {
  const db = camelCaseDb<{ facilitator_settlements: Settlement; facilitator_event_counts: EventCountRow }>(database);
  // Statistics only (/mpp/stats): a crash loses at most EVENT_FLUSH_MS of counts, never a payment.
  let events: { kind: EventKind; outcome: EventOutcome; at: Date }[] = [];
  let flushing: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  const flushEvents = async (): Promise<void> => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    await flushing?.catch(() => undefined);
    if (!events.length) return;
    const batch = new Map<string, { kind: EventKind; outcome: EventOutcome; day: Date; count: number }>();
    for (const e of events) {
      const day = new Date(e.at);
      day.setUTCHours(0, 0, 0, 0);
      const key = `${e.kind} ${e.outcome} ${day.getTime()}`;
      const counted = batch.get(key);
      if (counted) counted.count++;
      else batch.set(key, { kind: e.kind, outcome: e.outcome, day, count: 1 });
    }
    events = [];
    flushing = db
      .insertInto('facilitator_event_counts')
      .values([...batch.values()].map((c) => ({ ...c, count: String(c.count) })))
      .onConflict((oc) =>
        oc
          .columns(['kind', 'outcome', 'day'])
          .doUpdateSet({ count: sql`facilitator_event_counts.count + excluded.count` }),
      )
      .execute()
      .then(() => undefined);
    await flushing;
  };
  const get = grouped<string, Settlement | undefined>(async (keys) => {
    const rows = await db
      .selectFrom('facilitator_settlements')
      .select(SETTLEMENT)
      .where('key', keys.length === 1 ? '=' : 'in', keys.length === 1 ? keys[0]! : keys)
      .execute();
    const byKey = new Map(rows.map((r) => [r.key, r]));
    return keys.map((key) => byKey.get(key));
  });
  // One insert for the batch: the primary key still lets exactly one claim of a payment through, here or on any
  // replica; the rows it returns are the claims won. A payment twice in one batch wins once.
  const claim = grouped<Claim, boolean>(async (claims) => {
    const first = new Map<string, number>();
    claims.forEach((c, i) => first.has(c.key) || first.set(c.key, i));
    const inserted = await db
      .insertInto('facilitator_settlements')
      .values(
        [...first.values()].map((i) => ({ ...claims[i]!, status: 'pending' as const, error: null, settledAt: null })),
      )
      .onConflict((oc) => oc.doNothing())
      .returning('key')
      .execute();
    const won = new Set(inserted.map((r) => r.key));
    return claims.map((c, i) => first.get(c.key) === i && won.has(c.key));
  });
  // Only a pending claim is finished: a settlement's outcome, once written, is never rewritten.
  const finish = grouped<Finish, void>(async (finishes) => {
    const last = new Map(finishes.map((f) => [f.key, f]));
    const rows = [...last.values()].map(
      (f) => sql`(${f.key}, ${f.status}, ${f.error}, ${f.status === 'settled' ? f.at.toISOString() : null})`,
    );
    await sql`update facilitator_settlements as s
      set status = v.status, error = v.error, settled_at = v.settled_at::timestamptz
      from (values ${sql.join(rows)}) as v(key, status, error, settled_at)
      where s.key = v.key and s.status = 'pending'`.execute(database);
    return finishes.map(() => undefined);
  });
  return {
    async get(key: string): Promise<Settlement | undefined> {
      return get(key);
    },

    /** Claims a payment for settlement; false when another request (on any replica) already holds it. */
    async claim(s: Claim): Promise<boolean> {
      return claim(s);
    },

    /**
     * Claims `key` as failed with `error`, for a transaction that will never be sent: whoever would claim it later to
     * send it finds it taken. False when someone claimed it first (it may have been sent).
     */
    async abandon(s: Claim, error: string): Promise<boolean> {
      const inserted = await db
        .insertInto('facilitator_settlements')
        .values({ ...s, status: 'failed', error, settledAt: null })
        .onConflict((oc) => oc.doNothing())
        .returning('key')
        .execute();
      return inserted.length > 0;
    },

    /** A claim whose transaction certainly never reached the chain: the payment may be settled later. */
    async release(key: string): Promise<void> {
      await db.deleteFrom('facilitator_settlements').where('key', '=', key).where('status', '=', 'pending').execute();
    },

    async finish(key: string, status: 'settled' | 'failed', at: Date, error?: string): Promise<void> {
      await finish({ key, status, at, error: error ?? null });
    },

    /**
     * Settlements claimed since `since` (all of them, or those of a kind, paying `payTo`, from `payer`) and when the
     * oldest of them
     * was claimed: what the settle caps count.
     */
    /**
     * Claims since `since` matching the filter, counted up to `upTo` (a cap needs to know only whether it is
     * reached: counting the whole window made every settlement cost more the busier the window was); `oldest`
     * only once `upTo` is reached.
     */
    async claimedSince(
      since: Date,
      filter: { kind?: SettlementKind; payTo?: string; payer?: string } = {},
      upTo?: number,
    ): Promise<{ count: number; oldest: Date | null }> {
      let window = db.selectFrom('facilitator_settlements').where('createdAt', '>=', since);
      if (filter.kind) window = window.where('kind', '=', filter.kind);
      if (filter.payTo) window = window.where('payTo', '=', filter.payTo);
      if (filter.payer) window = window.where('payer', '=', filter.payer);
      const counted =
        upTo === undefined
          ? window.select(sql<number>`1`.as('one'))
          : window.select(sql<number>`1`.as('one')).limit(upTo);
      const row = await db
        .selectFrom(counted.as('w'))
        .select((eb) => eb.fn.countAll<bigint>().as('count'))
        .executeTakeFirstOrThrow();
      const count = Number(row.count);
      if (upTo !== undefined && count < upTo) return { count, oldest: null };
      const first = await window.select('createdAt').orderBy('createdAt').limit(1).executeTakeFirst();
      return { count, oldest: first ? new Date(first.createdAt) : null };
    },

    /** Counts a call; written with the others of the next EVENT_FLUSH_MS, and before any read of the counts. */
    async recordEvent(kind: EventKind, outcome: EventOutcome, at: Date): Promise<void> {
      events.push({ kind, outcome, at });
      timer ??= setTimeout(() => void flushEvents().catch(() => undefined), EVENT_FLUSH_MS).unref();
    },

    /** Counts of calls by kind and outcome: in all, and since `today`. */
    async eventCounts(
      today: Date,
    ): Promise<{ kind: EventKind; outcome: EventOutcome; total: number; today: number }[]> {
      await flushEvents();
      const rows = await db
        .selectFrom('facilitator_event_counts')
        .select(['kind', 'outcome'])
        .select([
          sql<string>`sum(count)::text`.as('total'),
          sql<string>`coalesce(sum(count) filter (where day >= ${today}), 0)::text`.as('today'),
        ])
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
      return db
        .selectFrom('facilitator_settlements')
        .select(SETTLEMENT)
        .where('status', '=', 'settled')
        .orderBy('settledAt', 'desc')
        .orderBy('key')
        .limit(limit)
        .execute();
    },

    async pending(olderThan: Date, limit = 100): Promise<Settlement[]> {
      return db
        .selectFrom('facilitator_settlements')
        .select(SETTLEMENT)
        .where('status', '=', 'pending')
        .where('createdAt', '<', olderThan)
        .orderBy('createdAt')
        .limit(limit)
        .execute();
    },
  };
}

export type SettlementStore = ReturnType<typeof settlementStore>;
