import { sql, type ExpressionBuilder, type Kysely, type Migration } from 'kysely';
import type { SharedDb } from '../../db';

// Payment sessions and onboarding, in the database: delegation roles granted, onboarding transactions
// issued, sessions (channels) and the vouchers signed for them. Everything a restart or another replica
// needs is here; the settlement of a close is a row of facilitator_settlements (kind 'session').

export const sessionMigrations: Record<string, Migration> = {
  '003_sessions': {
    async up(db) {
      // The delegation role the buyer granted the facilitator on one network: one row, replaced on renewal.
      await db.schema
        .createTable('facilitator_roles')
        .addColumn('wallet', 'text', (c) => c.notNull())
        .addColumn('network', 'text', (c) => c.notNull())
        .addColumn('smart_wallet', 'text', (c) => c.notNull())
        .addColumn('delegate', 'text', (c) => c.notNull())
        .addColumn('role_id', 'integer', (c) => c.notNull())
        .addColumn('spend_limit', 'int8', (c) => c.notNull())
        .addColumn('ttl_seconds', 'integer', (c) => c.notNull())
        .addColumn('granted_at', 'timestamptz', (c) => c.notNull())
        .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
        .addColumn('round', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('facilitator_roles_pk', ['wallet', 'network'])
        .execute();
      // Every onboarding transaction handed out, keyed by the SHA-256 of its message: confirm accepts only these bytes.
      await db.schema
        .createTable('facilitator_onboarding_txs')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('wallet', 'text', (c) => c.notNull())
        .addColumn('network', 'text', (c) => c.notNull())
        .addColumn('round', 'text', (c) => c.notNull())
        .addColumn('position', 'integer', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull())
        .addColumn('message', 'text', (c) => c.notNull())
        .addColumn('transaction', 'text', (c) => c.notNull())
        .addColumn('blockhash', 'text', (c) => c.notNull())
        .addColumn('spend_limit', 'int8', (c) => c.notNull())
        .addColumn('ttl_seconds', 'integer', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('signature', 'text')
        .addColumn('issued_at', 'timestamptz', (c) => c.notNull())
        .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
        .addColumn('confirmed_at', 'timestamptz')
        .execute();
      await db.schema
        .createIndex('facilitator_onboarding_txs_wallet')
        .on('facilitator_onboarding_txs')
        .columns(['wallet', 'network', 'status'])
        .execute();
      // Onboarding calls per wallet, for the rate limit (the facilitator pays their fees and rent).
      await db.schema
        .createTable('facilitator_onboarding_calls')
        .addColumn('id', 'serial', (c) => c.primaryKey())
        .addColumn('wallet', 'text', (c) => c.notNull())
        .addColumn('at', 'timestamptz', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('facilitator_onboarding_calls_wallet')
        .on('facilitator_onboarding_calls')
        .columns(['wallet', 'at'])
        .execute();
      await db.schema
        .createTable('facilitator_sessions')
        .addColumn('channel_id', 'text', (c) => c.primaryKey())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('network', 'text', (c) => c.notNull())
        .addColumn('buyer', 'text', (c) => c.notNull())
        .addColumn('smart_wallet', 'text', (c) => c.notNull())
        .addColumn('seller', 'text', (c) => c.notNull())
        .addColumn('session_key', 'text', (c) => c.notNull())
        .addColumn('voucher_signer', 'text', (c) => c.notNull())
        .addColumn('deposit', 'int8', (c) => c.notNull())
        .addColumn('accepted', 'int8', (c) => c.notNull())
        .addColumn('sequence', 'integer', (c) => c.notNull())
        .addColumn('price_per_unit', 'int8')
        .addColumn('asset', 'text', (c) => c.notNull())
        .addColumn('channel_program', 'text', (c) => c.notNull())
        .addColumn('role_id', 'integer', (c) => c.notNull())
        .addColumn('idle_timeout_seconds', 'integer', (c) => c.notNull())
        .addColumn('metadata', 'text')
        .addColumn('opened_at', 'timestamptz', (c) => c.notNull())
        .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
        .addColumn('closing_at', 'timestamptz')
        .addColumn('closed_at', 'timestamptz')
        .addColumn('closed_by', 'text')
        .addColumn('settlement_key', 'text')
        .addColumn('settlement_signature', 'text')
        .addColumn('amount_settled', 'int8')
        .execute();
      await db.schema
        .createIndex('facilitator_sessions_buyer')
        .on('facilitator_sessions')
        .columns(['buyer', 'network', 'state'])
        .execute();
      await db.schema
        .createIndex('facilitator_sessions_state')
        .on('facilitator_sessions')
        .columns(['state', 'expires_at'])
        .execute();
      await db.schema
        .createTable('facilitator_vouchers')
        .addColumn('channel_id', 'text', (c) => c.notNull())
        .addColumn('sequence', 'integer', (c) => c.notNull())
        .addColumn('cumulative', 'int8', (c) => c.notNull())
        .addColumn('delta', 'int8', (c) => c.notNull())
        .addColumn('units', 'integer', (c) => c.notNull())
        .addColumn('meter', 'text')
        .addColumn('server_nonce', 'text')
        .addColumn('voucher', 'text', (c) => c.notNull())
        .addColumn('signature', 'text', (c) => c.notNull())
        .addColumn('issued_at', 'timestamptz', (c) => c.notNull())
        .addPrimaryKeyConstraint('facilitator_vouchers_pk', ['channel_id', 'sequence'])
        .execute();
    },
  },
  '005_session_seller_seen': {
    async up(db) {
      // When the seller first read the session: a seller paid by vouchers at its paywall may hold some it has not
      // forwarded, so a buyer's close then waits for them.
      await db.schema.alterTable('facilitator_sessions').addColumn('seller_seen_at', 'timestamptz').execute();
    },
  },
  '006_session_close_owner': {
    async up(db) {
      // The close that took the session to closing (a token it chose): only that close records, sends and finishes,
      // so a close that outlived reconciliation's reopen cannot settle a session that is open again.
      await db.schema.alterTable('facilitator_sessions').addColumn('close_owner', 'text').execute();
    },
  },
};

export type SessionState = 'open' | 'closing' | 'closed';
export type ClosedBy = 'buyer' | 'seller' | 'idle';

export interface RoleRow {
  wallet: string;
  network: string;
  smart_wallet: string;
  delegate: string;
  role_id: number;
  spend_limit: bigint;
  ttl_seconds: number;
  granted_at: Date;
  expires_at: Date;
  /** The onboarding round whose grant created it. */
  round: string;
}

export type OnboardingTxStatus = 'issued' | 'confirmed' | 'superseded';
export interface OnboardingTxRow {
  key: string;
  wallet: string;
  network: string;
  round: string;
  position: number;
  type: 'create_wallet' | 'grant_role';
  description: string;
  /** base64 message bytes as issued. */
  message: string;
  /** base64 unsigned wire transaction as issued. */
  transaction: string;
  blockhash: string;
  spend_limit: bigint;
  ttl_seconds: number;
  status: OnboardingTxStatus;
  signature: string | null;
  issued_at: Date;
  expires_at: Date;
  confirmed_at: Date | null;
}

export interface SessionRow {
  channel_id: string;
  state: SessionState;
  network: string;
  buyer: string;
  smart_wallet: string;
  seller: string;
  session_key: string;
  voucher_signer: string;
  deposit: bigint;
  accepted: bigint;
  sequence: number;
  price_per_unit: bigint | null;
  asset: string;
  channel_program: string;
  role_id: number;
  idle_timeout_seconds: number;
  metadata: string | null;
  opened_at: Date;
  expires_at: Date;
  closing_at: Date | null;
  closed_at: Date | null;
  closed_by: ClosedBy | null;
  settlement_key: string | null;
  settlement_signature: string | null;
  amount_settled: bigint | null;
  seller_seen_at: Date | null;
  /** The token of the close that holds the session closing (null when open, or closing from before the column). */
  close_owner: string | null;
}

/**
 * What reconciliation read of a session left closing: it reopens the session only if no close has moved it since.
 */
export interface ClosingSeen {
  closingAt: Date;
  settlementKey: string | null;
}

export interface VoucherRow {
  channel_id: string;
  sequence: number;
  cumulative: bigint;
  delta: bigint;
  units: number;
  meter: string | null;
  server_nonce: string | null;
  voucher: string;
  signature: string;
  issued_at: Date;
}

interface Tables {
  facilitator_roles: RoleRow;
  facilitator_onboarding_txs: OnboardingTxRow;
  facilitator_onboarding_calls: { id: import('kysely').Generated<number>; wallet: string; at: Date };
  facilitator_sessions: SessionRow;
  facilitator_vouchers: VoucherRow;
}

// The drivers return timestamps as Date and int8 as bigint on both engines; normalised here once.
const bigintOrNull = (v: unknown) => (v === null || v === undefined ? null : BigInt(v as bigint));
const dateOrNull = (v: unknown) => (v === null || v === undefined ? null : new Date(v as Date));

function sessionOf(r: SessionRow): SessionRow {
  return {
    ...r,
    deposit: BigInt(r.deposit),
    accepted: BigInt(r.accepted),
    sequence: Number(r.sequence),
    price_per_unit: bigintOrNull(r.price_per_unit),
    role_id: Number(r.role_id),
    idle_timeout_seconds: Number(r.idle_timeout_seconds),
    opened_at: new Date(r.opened_at),
    expires_at: new Date(r.expires_at),
    closing_at: dateOrNull(r.closing_at),
    closed_at: dateOrNull(r.closed_at),
    amount_settled: bigintOrNull(r.amount_settled),
    seller_seen_at: dateOrNull(r.seller_seen_at),
    close_owner: r.close_owner ?? null,
  };
}

function roleOf(r: RoleRow): RoleRow {
  return {
    ...r,
    role_id: Number(r.role_id),
    spend_limit: BigInt(r.spend_limit),
    ttl_seconds: Number(r.ttl_seconds),
    granted_at: new Date(r.granted_at),
    expires_at: new Date(r.expires_at),
  };
}

function onboardingTxOf(r: OnboardingTxRow): OnboardingTxRow {
  return {
    ...r,
    position: Number(r.position),
    spend_limit: BigInt(r.spend_limit),
    ttl_seconds: Number(r.ttl_seconds),
    issued_at: new Date(r.issued_at),
    expires_at: new Date(r.expires_at),
    confirmed_at: dateOrNull(r.confirmed_at),
  };
}

function voucherOf(r: VoucherRow): VoucherRow {
  return {
    ...r,
    sequence: Number(r.sequence),
    cumulative: BigInt(r.cumulative),
    delta: BigInt(r.delta),
    units: Number(r.units),
    issued_at: new Date(r.issued_at),
  };
}

/**
 * A voucher row's columns with their SQL types, every column once (the satisfies clause checks it): inserted by
 * INSERT … SELECT, whose parameters PostgreSQL types only when cast.
 */
const VOUCHER_TYPES = {
  channel_id: 'text',
  sequence: 'int4',
  cumulative: 'int8',
  delta: 'int8',
  units: 'int4',
  meter: 'text',
  server_nonce: 'text',
  voucher: 'text',
  signature: 'text',
  issued_at: 'timestamptz',
} as const satisfies Record<keyof VoucherRow, string>;
const VOUCHER_COLUMNS = Object.entries(VOUCHER_TYPES) as [keyof VoucherRow, string][];

/** A session whose close is `owner`'s (null: closing from before the column, as reconciliation may read it). */
const ownedBy = (owner: string | null) => (eb: ExpressionBuilder<Tables, 'facilitator_sessions'>) =>
  owner === null ? eb('close_owner', 'is', null) : eb('close_owner', '=', owner);

export function sessionStore(database: SharedDb) {
  const db = database as Kysely<Tables>;
  return {
    // Roles

    async role(wallet: string, network: string): Promise<RoleRow | undefined> {
      const row = await db
        .selectFrom('facilitator_roles')
        .selectAll()
        .where('wallet', '=', wallet)
        .where('network', '=', network)
        .executeTakeFirst();
      return row && roleOf(row);
    },

    /** Records the role the confirmed grant created, numbered after the previous one. */
    async grantRole(role: Omit<RoleRow, 'role_id'>): Promise<RoleRow> {
      return db.transaction().execute(async (tx) => {
        const previous = await tx
          .selectFrom('facilitator_roles')
          .selectAll()
          .where('wallet', '=', role.wallet)
          .where('network', '=', role.network)
          .forUpdate()
          .executeTakeFirst();
        // Two confirmations of one round (a retry, another replica) record its role once.
        if (previous?.round === role.round) return roleOf(previous);
        const row: RoleRow = { ...role, role_id: previous ? Number(previous.role_id) + 1 : 1 };
        await tx
          .insertInto('facilitator_roles')
          .values(row)
          .onConflict((oc) =>
            oc.columns(['wallet', 'network']).doUpdateSet({
              smart_wallet: row.smart_wallet,
              delegate: row.delegate,
              role_id: row.role_id,
              spend_limit: row.spend_limit,
              ttl_seconds: row.ttl_seconds,
              granted_at: row.granted_at,
              expires_at: row.expires_at,
              round: row.round,
            }),
          )
          .execute();
        return row;
      });
    },

    // Onboarding

    /** Hands out a new round: the wallet's earlier unconfirmed transactions are superseded. */
    async issueRound(rows: OnboardingTxRow[]): Promise<void> {
      const first = rows[0];
      if (!first) return;
      await db.transaction().execute(async (tx) => {
        await tx
          .updateTable('facilitator_onboarding_txs')
          .set({ status: 'superseded' })
          .where('wallet', '=', first.wallet)
          .where('network', '=', first.network)
          .where('status', '=', 'issued')
          .execute();
        await tx.insertInto('facilitator_onboarding_txs').values(rows).execute();
      });
    },

    async onboardingTx(key: string): Promise<OnboardingTxRow | undefined> {
      const row = await db
        .selectFrom('facilitator_onboarding_txs')
        .selectAll()
        .where('key', '=', key)
        .executeTakeFirst();
      return row && onboardingTxOf(row);
    },

    /** The wallet's transactions issued and not yet confirmed nor superseded, in round order. */
    async pendingOnboarding(wallet: string, network: string): Promise<OnboardingTxRow[]> {
      const rows = await db
        .selectFrom('facilitator_onboarding_txs')
        .selectAll()
        .where('wallet', '=', wallet)
        .where('network', '=', network)
        .where('status', '=', 'issued')
        .orderBy('position')
        .execute();
      return rows.map(onboardingTxOf);
    },

    async roundOf(round: string): Promise<OnboardingTxRow[]> {
      const rows = await db
        .selectFrom('facilitator_onboarding_txs')
        .selectAll()
        .where('round', '=', round)
        .orderBy('position')
        .execute();
      return rows.map(onboardingTxOf);
    },

    async confirmOnboardingTx(key: string, signature: string, at: Date): Promise<void> {
      await db
        .updateTable('facilitator_onboarding_txs')
        .set({ status: 'confirmed', signature, confirmed_at: at })
        .where('key', '=', key)
        .execute();
    },

    /** Counts the wallet's onboarding calls since `since`, then records this one. */
    /**
     * Wallets created by onboarding (confirmed create_wallet transactions) since `since`, and when the first of them
     * was.
     */
    async walletsCreatedSince(since: Date): Promise<{ count: number; oldest: Date | null }> {
      const row = await db
        .selectFrom('facilitator_onboarding_txs')
        .select((eb) => [eb.fn.countAll<bigint>().as('count'), eb.fn.min('confirmed_at').as('oldest')])
        .where('type', '=', 'create_wallet')
        .where('status', '=', 'confirmed')
        .where('confirmed_at', '>=', since)
        .executeTakeFirstOrThrow();
      return { count: Number(row.count), oldest: row.oldest ? new Date(row.oldest as Date) : null };
    },

    /** Onboarding transactions of every kind confirmed since `since`, and when the first of them was. */
    async onboardingTxsConfirmedSince(since: Date): Promise<{ count: number; oldest: Date | null }> {
      const row = await db
        .selectFrom('facilitator_onboarding_txs')
        .select((eb) => [eb.fn.countAll<bigint>().as('count'), eb.fn.min('confirmed_at').as('oldest')])
        .where('status', '=', 'confirmed')
        .where('confirmed_at', '>=', since)
        .executeTakeFirstOrThrow();
      return { count: Number(row.count), oldest: row.oldest ? new Date(row.oldest as Date) : null };
    },

    async countOnboardingCall(wallet: string, since: Date, at: Date): Promise<{ count: number; oldest: Date | null }> {
      const row = await db
        .selectFrom('facilitator_onboarding_calls')
        .select((eb) => [eb.fn.countAll<bigint>().as('count'), eb.fn.min('at').as('oldest')])
        .where('wallet', '=', wallet)
        .where('at', '>=', since)
        .executeTakeFirstOrThrow();
      await db.insertInto('facilitator_onboarding_calls').values({ wallet, at }).execute();
      return { count: Number(row.count), oldest: row.oldest ? new Date(row.oldest as Date) : null };
    },

    // Sessions

    async session(channelId: string): Promise<SessionRow | undefined> {
      const row = await db
        .selectFrom('facilitator_sessions')
        .selectAll()
        .where('channel_id', '=', channelId)
        .executeTakeFirst();
      return row && sessionOf(row);
    },

    /** Records that the seller read the session (the first time only). */
    async sellerSeen(channelId: string, at: Date): Promise<void> {
      await db
        .updateTable('facilitator_sessions')
        .set({ seller_seen_at: at })
        .where('channel_id', '=', channelId)
        .where('seller_seen_at', 'is', null)
        .execute();
    },

    /**
     * Sessions not yet closed (open or closing) of every buyer, newest first: the console's list (no route lists them).
     */
    async unclosed(limit = 50): Promise<SessionRow[]> {
      const rows = await db
        .selectFrom('facilitator_sessions')
        .selectAll()
        .where('state', '!=', 'closed')
        .orderBy('opened_at', 'desc')
        .orderBy('channel_id')
        .limit(limit)
        .execute();
      return rows.map(sessionOf);
    },

    /**
     * Opens a session if the role still covers it: the deposits of the buyer's sessions not yet closed plus
     * this one must fit in `available` (what the chain says the role and the wallet can still move). The role
     * row is locked, so two opens racing for the same allowance cannot both take it.
     */
    async openSession(
      row: SessionRow,
      available: bigint,
    ): Promise<{ opened: true } | { opened: false; reserved: bigint }> {
      return db.transaction().execute(async (tx) => {
        await tx
          .selectFrom('facilitator_roles')
          .select('wallet')
          .where('wallet', '=', row.buyer)
          .where('network', '=', row.network)
          .forUpdate()
          .execute();
        const { reserved } = await tx
          .selectFrom('facilitator_sessions')
          .select(sql<string>`coalesce(sum(deposit), 0)::text`.as('reserved'))
          .where('buyer', '=', row.buyer)
          .where('network', '=', row.network)
          .where('state', '!=', 'closed')
          .executeTakeFirstOrThrow();
        if (BigInt(reserved) + row.deposit > available) return { opened: false as const, reserved: BigInt(reserved) };
        await tx.insertInto('facilitator_sessions').values(row).execute();
        return { opened: true as const };
      });
    },

    /** Deposits of the buyer's sessions not yet closed, and how many are open. */
    async reserved(buyer: string, network: string): Promise<{ reserved: bigint; open: number }> {
      const row = await db
        .selectFrom('facilitator_sessions')
        .select([
          sql<string>`coalesce(sum(deposit), 0)::text`.as('reserved'),
          sql<string>`count(*) filter (where state = 'open')`.as('open'),
        ])
        .where('buyer', '=', buyer)
        .where('network', '=', network)
        .where('state', '!=', 'closed')
        .executeTakeFirstOrThrow();
      return { reserved: BigInt(row.reserved), open: Number(row.open) };
    },

    /** What the buyer's other sessions not yet closed have vouched (accepted cumulative amounts), in all. */
    async vouchedElsewhere(buyer: string, network: string, channelId: string): Promise<bigint> {
      const row = await db
        .selectFrom('facilitator_sessions')
        .select(sql<string>`coalesce(sum(accepted), 0)::text`.as('vouched'))
        .where('buyer', '=', buyer)
        .where('network', '=', network)
        .where('state', '!=', 'closed')
        .where('channel_id', '!=', channelId)
        .executeTakeFirstOrThrow();
      return BigInt(row.vouched);
    },

    async lastVoucher(channelId: string): Promise<VoucherRow | undefined> {
      const row = await db
        .selectFrom('facilitator_vouchers')
        .selectAll()
        .where('channel_id', '=', channelId)
        .orderBy('sequence', 'desc')
        .limit(1)
        .executeTakeFirst();
      return row && voucherOf(row);
    },

    /**
     * Accepts a voucher: the session must still be open at the cumulative amount the caller read. False when
     * another request moved it first (the caller reads again and decides anew).
     */
    async acceptVoucher(voucher: VoucherRow, previous: bigint, expiresAt: Date): Promise<boolean> {
      // One statement, so one atomic step without a transaction's begin and commit (three statements fewer a
      // checkpoint): the voucher's row is written only if the compare-and-set moved the session.
      const inserted = await db
        .with('moved', (q) =>
          q
            .updateTable('facilitator_sessions')
            .set({ accepted: voucher.cumulative, sequence: voucher.sequence, expires_at: expiresAt })
            .where('channel_id', '=', voucher.channel_id)
            .where('state', '=', 'open')
            .where('accepted', '=', previous)
            .where('sequence', '=', voucher.sequence - 1)
            .returning('channel_id'),
        )
        .insertInto('facilitator_vouchers')
        .columns(VOUCHER_COLUMNS.map(([column]) => column))
        .expression((eb) =>
          eb
            .selectFrom('moved')
            .select(
              VOUCHER_COLUMNS.map(([column, type]) => sql`cast(${voucher[column]} as ${sql.raw(type)})`.as(column)),
            ),
        )
        .executeTakeFirst();
      return Number(inserted.numInsertedOrUpdatedRows ?? 0n) > 0;
    },

    // A close owns the session from beginClose on: every later write of the close names its token (`owner`) and
    // changes nothing once the session is no longer closing under it (reconciliation reopened it, another close took
    // it). Each is one conditional UPDATE, so of a close's write and a reopen racing, exactly one applies.

    /** open -> closing, for one request only (on any replica), owned by the close whose token is `owner`. */
    async beginClose(channelId: string, at: Date, by: ClosedBy, owner: string): Promise<boolean> {
      const updated = await db
        .updateTable('facilitator_sessions')
        .set({ state: 'closing', closing_at: at, closed_by: by, close_owner: owner })
        .where('channel_id', '=', channelId)
        .where('state', '=', 'open')
        .executeTakeFirst();
      return Number(updated.numUpdatedRows ?? 0n) > 0;
    },

    /**
     * closing -> open: nothing was broadcast (or it failed on chain); the session goes on. By the owning close, or by
     * reconciliation when the session is still as it read it (`seen`): not if its close recorded a settlement since.
     */
    async reopen(channelId: string, owner: string | null, seen?: ClosingSeen): Promise<boolean> {
      let query = db
        .updateTable('facilitator_sessions')
        .set({
          state: 'open',
          closing_at: null,
          closed_by: null,
          settlement_key: null,
          settlement_signature: null,
          close_owner: null,
        })
        .where('channel_id', '=', channelId)
        .where('state', '=', 'closing')
        .where(ownedBy(owner));
      if (seen) {
        query = query
          .where('closing_at', '=', seen.closingAt)
          .where((eb) =>
            seen.settlementKey === null
              ? eb('settlement_key', 'is', null)
              : eb('settlement_key', '=', seen.settlementKey),
          );
      }
      const updated = await query.executeTakeFirst();
      return Number(updated.numUpdatedRows ?? 0n) > 0;
    },

    /**
     * Records the settlement the owning close is about to send, and renews its hold (closing_at = `at`): false when the
     * close no longer owns the session, which must then send nothing.
     */
    async noteSettlement(channelId: string, owner: string, key: string, signature: string, at: Date): Promise<boolean> {
      const updated = await db
        .updateTable('facilitator_sessions')
        .set({ settlement_key: key, settlement_signature: signature, closing_at: at })
        .where('channel_id', '=', channelId)
        .where('state', '=', 'closing')
        .where('close_owner', '=', owner)
        .executeTakeFirst();
      return Number(updated.numUpdatedRows ?? 0n) > 0;
    },

    /** closing -> closed, by the owning close (or by reconciliation, naming the owner it read). */
    async finishClose(
      channelId: string,
      owner: string | null,
      at: Date,
      amount: bigint,
      signature: string | null,
    ): Promise<boolean> {
      const updated = await db
        .updateTable('facilitator_sessions')
        .set({ state: 'closed', closed_at: at, amount_settled: amount, settlement_signature: signature })
        .where('channel_id', '=', channelId)
        .where('state', '=', 'closing')
        .where(ownedBy(owner))
        .executeTakeFirst();
      return Number(updated.numUpdatedRows ?? 0n) > 0;
    },

    /** What the buyer's sessions closed since `since` settled (through the current role). */
    async settledSince(buyer: string, network: string, since: Date): Promise<bigint> {
      const row = await db
        .selectFrom('facilitator_sessions')
        .select(sql<string>`coalesce(sum(amount_settled), 0)::text`.as('settled'))
        .where('buyer', '=', buyer)
        .where('network', '=', network)
        .where('state', '=', 'closed')
        .where('closed_at', '>=', since)
        .executeTakeFirstOrThrow();
      return BigInt(row.settled);
    },

    async closing(olderThan: Date, limit = 100): Promise<SessionRow[]> {
      const rows = await db
        .selectFrom('facilitator_sessions')
        .selectAll()
        .where('state', '=', 'closing')
        .where('closing_at', '<', olderThan)
        .limit(limit)
        .execute();
      return rows.map(sessionOf);
    },

    async idle(now: Date, limit = 100): Promise<SessionRow[]> {
      const rows = await db
        .selectFrom('facilitator_sessions')
        .selectAll()
        .where('state', '=', 'open')
        .where('expires_at', '<=', now)
        .limit(limit)
        .execute();
      return rows.map(sessionOf);
    },

    async counts(today: Date): Promise<{ open: number; openedToday: number; closedToday: number }> {
      const row = await db
        .selectFrom('facilitator_sessions')
        .select([
          sql<string>`count(*) filter (where state = 'open')`.as('open'),
          sql<string>`count(*) filter (where opened_at >= ${today})`.as('opened'),
          sql<string>`count(*) filter (where state = 'closed' and closed_at >= ${today})`.as('closed'),
        ])
        .executeTakeFirstOrThrow();
      return { open: Number(row.open), openedToday: Number(row.opened), closedToday: Number(row.closed) };
    },
  };
}

export type SessionStore = ReturnType<typeof sessionStore>;
