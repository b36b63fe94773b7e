import { sql, type Generated, type Kysely, type Migration, type Selectable, type Transaction } from 'kysely';
import type { ChallengeStatus } from '@agent-economy/contracts';
import { HttpError, conflict } from '../../runtime/errors';
import type { StoredChallenge, StoredFlip, StoredTransfer, StoredUser, StoredWager, RecordFacts } from './domain';
import type { SharedDb } from '../../db';

export const migrations: Record<string, Migration> = {
  '001_wagers': {
    async up(db) {
      await db.schema
        .createTable('wagers_users')
        .addColumn('address', 'text', (c) => c.primaryKey())
        .addColumn('username', 'text', (c) => c.notNull())
        // Chat usernames are unique regardless of case: "Bob" and "bob" are one user.
        .addColumn('username_key', 'text', (c) => c.notNull().unique())
        .addColumn('connected', 'boolean', (c) => c.notNull())
        .addColumn('connected_at', 'timestamptz', (c) => c.notNull())
        .addColumn('disconnected_at', 'timestamptz')
        .execute();
      await db.schema
        .createTable('wagers_challenges')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('challenger', 'text', (c) => c.notNull())
        .addColumn('challenger_name', 'text', (c) => c.notNull())
        .addColumn('opponent', 'text', (c) => c.notNull())
        .addColumn('opponent_name', 'text', (c) => c.notNull())
        // The two wallets in a fixed order: one pending challenge per pair, whoever challenged.
        .addColumn('pair_key', 'text', (c) => c.notNull())
        .addColumn('amount', 'int8', (c) => c.notNull())
        .addColumn('message', 'text')
        .addColumn('seed', 'text', (c) => c.notNull())
        .addColumn('seed_hash', 'text', (c) => c.notNull())
        .addColumn('stake_tx', 'text', (c) => c.notNull().unique())
        .addColumn('refund_tx', 'text')
        .addColumn('wager_id', 'text')
        .addColumn('created_at', 'timestamptz', (c) => c.notNull())
        .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
        .addColumn('responded_at', 'timestamptz')
        .execute();
      await sql`create unique index wagers_challenges_pending_pair_uq on wagers_challenges (pair_key) where status = 'pending'`.execute(
        db,
      );
      await db.schema
        .createIndex('wagers_challenges_status_idx')
        .on('wagers_challenges')
        .columns(['status', 'expires_at'])
        .execute();
      await db.schema
        .createIndex('wagers_challenges_opponent_idx')
        .on('wagers_challenges')
        .columns(['opponent', 'status'])
        .execute();
      await db.schema
        .createIndex('wagers_challenges_challenger_idx')
        .on('wagers_challenges')
        .columns(['challenger', 'status'])
        .execute();
      await db.schema
        .createTable('wagers_wagers')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('challenge_id', 'text', (c) => c.notNull().unique())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('challenger', 'text', (c) => c.notNull())
        .addColumn('challenger_name', 'text', (c) => c.notNull())
        .addColumn('opponent', 'text', (c) => c.notNull())
        .addColumn('opponent_name', 'text', (c) => c.notNull())
        .addColumn('amount', 'int8', (c) => c.notNull())
        .addColumn('house_cut_bps', 'integer', (c) => c.notNull())
        .addColumn('house_cut', 'int8', (c) => c.notNull())
        .addColumn('payout', 'int8', (c) => c.notNull())
        .addColumn('seed', 'text', (c) => c.notNull())
        .addColumn('seed_hash', 'text', (c) => c.notNull())
        .addColumn('challenger_stake_tx', 'text', (c) => c.notNull())
        .addColumn('opponent_stake_tx', 'text', (c) => c.notNull())
        .addColumn('winner', 'text')
        .addColumn('flip', 'jsonb')
        .addColumn('entropy_fee', 'int8')
        .addColumn('payout_tx', 'text')
        // Whoever finishes an active wager (the accepting request, or a sweep on any replica) holds it until then.
        .addColumn('lease_until', 'timestamptz')
        .addColumn('created_at', 'timestamptz', (c) => c.notNull())
        .addColumn('settled_at', 'timestamptz')
        .execute();
      await db.schema.createIndex('wagers_wagers_status_idx').on('wagers_wagers').column('status').execute();
      // A player has at most one active wager: the primary key decides races between replicas.
      await db.schema
        .createTable('wagers_active')
        .addColumn('address', 'text', (c) => c.primaryKey())
        .addColumn('wager_id', 'text', (c) => c.notNull())
        .execute();
      // The audit trail. A transaction signature appears once, ever: a stake transfer funds one stake only.
      await db.schema
        .createTable('wagers_transfers')
        .addColumn('tx', 'text', (c) => c.primaryKey())
        .addColumn('challenge_id', 'text', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('from_address', 'text', (c) => c.notNull())
        .addColumn('to_address', 'text', (c) => c.notNull())
        .addColumn('amount', 'int8', (c) => c.notNull())
        .addColumn('confirmed_at', 'timestamptz', (c) => c.notNull())
        // The order the service recorded them in: the challenger's stake, the opponent's, then the refund or payout.
        .addColumn('seq', 'serial', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('wagers_transfers_challenge_idx')
        .on('wagers_transfers')
        .column('challenge_id')
        .execute();
    },
  },
  // A wager with no flip for longer than WAGER_VOID_HOURS is void: when, and each player's refund (null until sent).
  '002_wagers_void': {
    async up(db) {
      await db.schema
        .alterTable('wagers_wagers')
        .addColumn('voided_at', 'timestamptz')
        .addColumn('challenger_refund_tx', 'text')
        .addColumn('opponent_refund_tx', 'text')
        .execute();
    },
  },
};

interface UserRow {
  address: string;
  username: string;
  username_key: string;
  connected: boolean;
  connected_at: Date;
  disconnected_at: Date | null;
}
interface ChallengeRow {
  id: string;
  status: ChallengeStatus;
  challenger: string;
  challenger_name: string;
  opponent: string;
  opponent_name: string;
  pair_key: string;
  amount: bigint;
  message: string | null;
  seed: string;
  seed_hash: string;
  stake_tx: string;
  refund_tx: string | null;
  wager_id: string | null;
  created_at: Date;
  expires_at: Date;
  responded_at: Date | null;
}
interface WagerRow {
  id: string;
  challenge_id: string;
  status: StoredWager['status'];
  challenger: string;
  challenger_name: string;
  opponent: string;
  opponent_name: string;
  amount: bigint;
  house_cut_bps: number;
  house_cut: bigint;
  payout: bigint;
  seed: string;
  seed_hash: string;
  challenger_stake_tx: string;
  opponent_stake_tx: string;
  winner: 'challenger' | 'opponent' | null;
  flip: Omit<StoredFlip, 'fee'> | null;
  entropy_fee: bigint | null;
  payout_tx: string | null;
  lease_until: Date | null;
  created_at: Date;
  settled_at: Date | null;
  voided_at: Date | null;
  challenger_refund_tx: string | null;
  opponent_refund_tx: string | null;
}
interface ActiveRow {
  address: string;
  wager_id: string;
}
interface TransferRow {
  seq: Generated<number>;
  tx: string;
  challenge_id: string;
  kind: StoredTransfer['kind'];
  from_address: string;
  to_address: string;
  amount: bigint;
  confirmed_at: Date;
}
interface Tables {
  wagers_users: UserRow;
  wagers_challenges: ChallengeRow;
  wagers_wagers: WagerRow;
  wagers_active: ActiveRow;
  wagers_transfers: TransferRow;
}

const pairKey = (a: string, b: string) => (a < b ? `${a}|${b}` : `${b}|${a}`);
const json = (value: unknown) => sql`${JSON.stringify(value)}::jsonb`;
const lock = (tx: Transaction<Tables>, key: string) =>
  sql`select pg_advisory_xact_lock(hashtext(${`wagers:${key}`}))`.execute(tx);

const toUser = (r: UserRow): StoredUser => ({
  address: r.address,
  username: r.username,
  connected: r.connected,
  connectedAt: new Date(r.connected_at),
});
const toChallenge = (r: ChallengeRow): StoredChallenge => ({
  id: r.id,
  status: r.status,
  challenger: r.challenger,
  challengerName: r.challenger_name,
  opponent: r.opponent,
  opponentName: r.opponent_name,
  amount: BigInt(r.amount),
  message: r.message,
  seed: r.seed,
  seedHash: r.seed_hash,
  stakeTx: r.stake_tx,
  refundTx: r.refund_tx,
  wagerId: r.wager_id,
  createdAt: new Date(r.created_at),
  expiresAt: new Date(r.expires_at),
  respondedAt: r.responded_at ? new Date(r.responded_at) : null,
});
const toWager = (r: WagerRow): StoredWager => ({
  id: r.id,
  challengeId: r.challenge_id,
  status: r.status,
  challenger: r.challenger,
  challengerName: r.challenger_name,
  opponent: r.opponent,
  opponentName: r.opponent_name,
  amount: BigInt(r.amount),
  houseCutBps: r.house_cut_bps,
  houseCut: BigInt(r.house_cut),
  payout: BigInt(r.payout),
  seed: r.seed,
  seedHash: r.seed_hash,
  challengerStakeTx: r.challenger_stake_tx,
  opponentStakeTx: r.opponent_stake_tx,
  flip: r.flip ? { ...r.flip, fee: BigInt(r.entropy_fee ?? 0) } : null,
  payoutTx: r.payout_tx,
  createdAt: new Date(r.created_at),
  settledAt: r.settled_at ? new Date(r.settled_at) : null,
  voidedAt: r.voided_at ? new Date(r.voided_at) : null,
  challengerRefundTx: r.challenger_refund_tx,
  opponentRefundTx: r.opponent_refund_tx,
});
const toTransfer = (r: Selectable<TransferRow>): StoredTransfer => ({
  kind: r.kind,
  from: r.from_address,
  to: r.to_address,
  amount: BigInt(r.amount),
  tx: r.tx,
  confirmedAt: new Date(r.confirmed_at),
});

const stakeUsed = (tx: string) =>
  conflict(
    'STAKE_ALREADY_USED',
    `The transfer ${tx} already funded a stake; transfer the stake again and name the new signature`,
    { stakeTxSignature: tx },
  );
export const wagerInProgress = (address: string) =>
  conflict('WAGER_IN_PROGRESS', 'A player of this wager already has an active wager; wait until it is settled', {
    address,
  });

export interface NewChallenge extends Omit<StoredChallenge, 'refundTx' | 'wagerId' | 'respondedAt' | 'status'> {
  stakeConfirmedAt: Date;
  vault: string;
}

export interface Acceptance {
  challengeId: string;
  opponent: string;
  stakeTx: string;
  stakeConfirmedAt: Date;
  vault: string;
  wagerId: string;
  houseCutBps: number;
  houseCut: bigint;
  payout: bigint;
  now: Date;
}

export function wagerStore(database: SharedDb) {
  const db = database as Kysely<Tables>;

  const insertTransfer = async (q: Kysely<Tables>, t: StoredTransfer & { challengeId: string }) => {
    const inserted = await q
      .insertInto('wagers_transfers')
      .values({
        tx: t.tx,
        challenge_id: t.challengeId,
        kind: t.kind,
        from_address: t.from,
        to_address: t.to,
        amount: t.amount,
        confirmed_at: t.confirmedAt,
      })
      .onConflict((oc) => oc.column('tx').doNothing())
      .executeTakeFirst();
    return (inserted.numInsertedOrUpdatedRows ?? 0n) > 0n;
  };

  return {
    async user(address: string): Promise<StoredUser | undefined> {
      const row = await db.selectFrom('wagers_users').selectAll().where('address', '=', address).executeTakeFirst();
      return row && toUser(row);
    },

    async userByName(username: string): Promise<StoredUser | undefined> {
      const row = await db
        .selectFrom('wagers_users')
        .selectAll()
        .where('username_key', '=', username.toLowerCase())
        .executeTakeFirst();
      return row && toUser(row);
    },

    /** Binds the wallet to the username (online); the username held by another wallet is a 409 USERNAME_TAKEN. */
    async connect(address: string, username: string, now: Date): Promise<StoredUser> {
      return db.transaction().execute(async (tx) => {
        const key = username.toLowerCase();
        await lock(tx, `user:${key}`);
        const holder = await tx
          .selectFrom('wagers_users')
          .select('address')
          .where('username_key', '=', key)
          .executeTakeFirst();
        if (holder && holder.address !== address)
          throw conflict('USERNAME_TAKEN', `The username ${username} belongs to another wallet`, { username });
        const row = await tx
          .insertInto('wagers_users')
          .values({ address, username, username_key: key, connected: true, connected_at: now, disconnected_at: null })
          .onConflict((oc) =>
            oc.column('address').doUpdateSet({
              username,
              username_key: key,
              connected: true,
              // Reconnecting while online keeps the first connection time.
              connected_at: sql`case when wagers_users.connected then wagers_users.connected_at else excluded.connected_at end`,
              disconnected_at: null,
            }),
          )
          .returningAll()
          .executeTakeFirstOrThrow();
        return toUser(row);
      });
    },

    async challenge(id: string): Promise<StoredChallenge | undefined> {
      const row = await db.selectFrom('wagers_challenges').selectAll().where('id', '=', id).executeTakeFirst();
      return row && toChallenge(row);
    },

    async pendingBetween(a: string, b: string, now: Date): Promise<StoredChallenge | undefined> {
      const row = await db
        .selectFrom('wagers_challenges')
        .selectAll()
        .where('pair_key', '=', pairKey(a, b))
        .where('status', '=', 'pending')
        .where('expires_at', '>', now)
        .executeTakeFirst();
      return row && toChallenge(row);
    },

    async transferUsed(tx: string): Promise<boolean> {
      return !!(await db.selectFrom('wagers_transfers').select('tx').where('tx', '=', tx).executeTakeFirst());
    },

    /** Records a pending challenge with its stake, in one transaction: the stake's signature is taken once, ever. */
    async insertChallenge(c: NewChallenge): Promise<StoredChallenge> {
      return db.transaction().execute(async (tx) => {
        const pair = pairKey(c.challenger, c.opponent);
        await lock(tx, `pair:${pair}`);
        // An expired challenge still pending (the sweep has not passed yet) no longer blocks the pair.
        await tx
          .updateTable('wagers_challenges')
          .set({ status: 'expired', responded_at: c.createdAt })
          .where('pair_key', '=', pair)
          .where('status', '=', 'pending')
          .where('expires_at', '<=', c.createdAt)
          .execute();
        const pending = await tx
          .selectFrom('wagers_challenges')
          .select('id')
          .where('pair_key', '=', pair)
          .where('status', '=', 'pending')
          .executeTakeFirst();
        if (pending)
          throw conflict('CHALLENGE_EXISTS', 'A pending challenge between you two already exists', {
            challengeId: pending.id,
          });
        const claimed = await insertTransfer(tx, {
          challengeId: c.id,
          kind: 'stake',
          from: c.challenger,
          to: c.vault,
          amount: c.amount,
          tx: c.stakeTx,
          confirmedAt: c.stakeConfirmedAt,
        });
        if (!claimed) throw stakeUsed(c.stakeTx);
        const row = await tx
          .insertInto('wagers_challenges')
          .values({
            id: c.id,
            status: 'pending',
            challenger: c.challenger,
            challenger_name: c.challengerName,
            opponent: c.opponent,
            opponent_name: c.opponentName,
            pair_key: pair,
            amount: c.amount,
            message: c.message,
            seed: c.seed,
            seed_hash: c.seedHash,
            stake_tx: c.stakeTx,
            refund_tx: null,
            wager_id: null,
            created_at: c.createdAt,
            expires_at: c.expiresAt,
            responded_at: null,
          })
          .returningAll()
          .executeTakeFirstOrThrow();
        return toChallenge(row);
      });
    },

    /** Pending challenges to and from a wallet (not yet expired), oldest first. */
    async pending(address: string, now: Date): Promise<{ incoming: StoredChallenge[]; outgoing: StoredChallenge[] }> {
      const rows = await db
        .selectFrom('wagers_challenges')
        .selectAll()
        .where('status', '=', 'pending')
        .where('expires_at', '>', now)
        .where((eb) => eb.or([eb('opponent', '=', address), eb('challenger', '=', address)]))
        .orderBy('created_at')
        .orderBy('id')
        .execute();
      const all = rows.map(toChallenge);
      return {
        incoming: all.filter((c) => c.opponent === address),
        outgoing: all.filter((c) => c.challenger === address),
      };
    },

    /**
     * Every active wager and unexpired pending challenge, newest first: the console's list (routes show only the
     * caller's).
     */
    async open(now: Date, limit = 50): Promise<{ wagers: StoredWager[]; challenges: StoredChallenge[] }> {
      const [wagers, challenges] = await Promise.all([
        db
          .selectFrom('wagers_wagers')
          .selectAll()
          .where('status', '=', 'active')
          .orderBy('created_at', 'desc')
          .orderBy('id')
          .limit(limit)
          .execute(),
        db
          .selectFrom('wagers_challenges')
          .selectAll()
          .where('status', '=', 'pending')
          .where('expires_at', '>', now)
          .orderBy('created_at', 'desc')
          .orderBy('id')
          .limit(limit)
          .execute(),
      ]);
      return { wagers: wagers.map(toWager), challenges: challenges.map(toChallenge) };
    },

    /**
     * Turns a pending challenge into an active wager, in one transaction: the challenge must still be pending and
     * unexpired, the acceptor's stake signature unused, and neither player in another active wager.
     */
    async accept(a: Acceptance): Promise<StoredWager> {
      return db.transaction().execute(async (tx) => {
        const row = await tx
          .selectFrom('wagers_challenges')
          .selectAll()
          .where('id', '=', a.challengeId)
          .forUpdate()
          .executeTakeFirst();
        if (!row || row.opponent !== a.opponent) throw notPending('CHALLENGE_NOT_FOUND', a.challengeId);
        if (row.status !== 'pending' || new Date(row.expires_at) <= a.now)
          throw notPending('CHALLENGE_NOT_PENDING', a.challengeId, row.status === 'pending' ? 'expired' : row.status);
        for (const address of [row.challenger, row.opponent]) {
          const taken = await tx
            .insertInto('wagers_active')
            .values({ address, wager_id: a.wagerId })
            .onConflict((oc) => oc.column('address').doNothing())
            .executeTakeFirst();
          if (!taken.numInsertedOrUpdatedRows) throw wagerInProgress(address);
        }
        const claimed = await insertTransfer(tx, {
          challengeId: row.id,
          kind: 'stake',
          from: a.opponent,
          to: a.vault,
          amount: BigInt(row.amount),
          tx: a.stakeTx,
          confirmedAt: a.stakeConfirmedAt,
        });
        if (!claimed) throw stakeUsed(a.stakeTx);
        await tx
          .updateTable('wagers_challenges')
          .set({ status: 'accepted', wager_id: a.wagerId, responded_at: a.now })
          .where('id', '=', row.id)
          .execute();
        const wager = await tx
          .insertInto('wagers_wagers')
          .values({
            id: a.wagerId,
            challenge_id: row.id,
            status: 'active',
            challenger: row.challenger,
            challenger_name: row.challenger_name,
            opponent: row.opponent,
            opponent_name: row.opponent_name,
            amount: row.amount,
            house_cut_bps: a.houseCutBps,
            house_cut: a.houseCut,
            payout: a.payout,
            seed: row.seed,
            seed_hash: row.seed_hash,
            challenger_stake_tx: row.stake_tx,
            opponent_stake_tx: a.stakeTx,
            winner: null,
            flip: null,
            entropy_fee: null,
            payout_tx: null,
            lease_until: null,
            created_at: a.now,
            settled_at: null,
            voided_at: null,
            challenger_refund_tx: null,
            opponent_refund_tx: null,
          })
          .returningAll()
          .executeTakeFirstOrThrow();
        return toWager(wager);
      });
    },

    /** Declines a pending challenge to `opponent` (by id, or the oldest); refunds are the caller's next step. */
    async decline(opponent: string, challengeId: string | undefined, now: Date): Promise<StoredChallenge> {
      return db.transaction().execute(async (tx) => {
        let query = tx.selectFrom('wagers_challenges').selectAll().where('opponent', '=', opponent);
        query = challengeId
          ? query.where('id', '=', challengeId)
          : query
              .where('status', '=', 'pending')
              .where('expires_at', '>', now)
              .orderBy('created_at')
              .orderBy('id')
              .limit(1);
        const row = await query.forUpdate().executeTakeFirst();
        if (!row)
          throw challengeId ? notPending('CHALLENGE_NOT_FOUND', challengeId) : notPending('CHALLENGE_NOT_FOUND');
        if (row.status !== 'pending' || new Date(row.expires_at) <= now)
          throw notPending('CHALLENGE_NOT_PENDING', row.id, row.status === 'pending' ? 'expired' : row.status);
        const updated = await tx
          .updateTable('wagers_challenges')
          .set({ status: 'declined', responded_at: now })
          .where('id', '=', row.id)
          .returningAll()
          .executeTakeFirstOrThrow();
        return toChallenge(updated);
      });
    },

    /**
     * Takes the wallet offline: its pending outgoing challenges cancelled, pending incoming ones declined (their
     * refunds follow); refused while it has an active wager.
     */
    async disconnect(
      address: string,
      now: Date,
    ): Promise<{ cancelled: StoredChallenge[]; declined: StoredChallenge[] }> {
      return db.transaction().execute(async (tx) => {
        // The user row is locked first so that an acceptance racing with this sees one order.
        await tx.selectFrom('wagers_users').select('address').where('address', '=', address).forUpdate().execute();
        const active = await tx
          .selectFrom('wagers_active')
          .select('wager_id')
          .where('address', '=', address)
          .executeTakeFirst();
        if (active)
          throw conflict('WAGER_IN_PROGRESS', 'You have an active wager; disconnect once it is settled', {
            wagerId: active.wager_id,
          });
        const cancelled = await tx
          .updateTable('wagers_challenges')
          .set({ status: 'cancelled', responded_at: now })
          .where('challenger', '=', address)
          .where('status', '=', 'pending')
          .returningAll()
          .execute();
        const declined = await tx
          .updateTable('wagers_challenges')
          .set({ status: 'declined', responded_at: now })
          .where('opponent', '=', address)
          .where('status', '=', 'pending')
          .returningAll()
          .execute();
        await tx
          .updateTable('wagers_users')
          .set({ connected: false, disconnected_at: now })
          .where('address', '=', address)
          .execute();
        return { cancelled: cancelled.map(toChallenge), declined: declined.map(toChallenge) };
      });
    },

    /** Marks every pending challenge past its expiry expired (a conditional update: each is expired once). */
    async expireDue(now: Date): Promise<StoredChallenge[]> {
      const rows = await db
        .updateTable('wagers_challenges')
        .set({ status: 'expired', responded_at: now })
        .where('status', '=', 'pending')
        .where('expires_at', '<=', now)
        .returningAll()
        .execute();
      return rows.map(toChallenge);
    },

    /** Challenges over (declined, expired, cancelled) whose stake has not been refunded yet. */
    async refundsDue(limit = 50): Promise<StoredChallenge[]> {
      const rows = await db
        .selectFrom('wagers_challenges')
        .selectAll()
        .where('status', 'in', ['declined', 'expired', 'cancelled'])
        .where('refund_tx', 'is', null)
        .orderBy('responded_at')
        .limit(limit)
        .execute();
      return rows.map(toChallenge);
    },

    /** Records a confirmed refund (once: the vault's key makes a second call return the same transaction). */
    async refunded(c: StoredChallenge, tx: string, vault: string, at: Date): Promise<StoredChallenge> {
      return db.transaction().execute(async (t) => {
        await insertTransfer(t, {
          challengeId: c.id,
          kind: 'refund',
          from: vault,
          to: c.challenger,
          amount: c.amount,
          tx,
          confirmedAt: at,
        });
        await t
          .updateTable('wagers_challenges')
          .set({ refund_tx: tx })
          .where('id', '=', c.id)
          .where('refund_tx', 'is', null)
          .execute();
        return toChallenge(
          await t.selectFrom('wagers_challenges').selectAll().where('id', '=', c.id).executeTakeFirstOrThrow(),
        );
      });
    },

    async wager(id: string): Promise<StoredWager | undefined> {
      const row = await db.selectFrom('wagers_wagers').selectAll().where('id', '=', id).executeTakeFirst();
      return row && toWager(row);
    },

    async activeWagerOf(address: string): Promise<StoredWager | undefined> {
      const row = await db
        .selectFrom('wagers_active as a')
        .innerJoin('wagers_wagers as w', 'w.id', 'a.wager_id')
        .selectAll('w')
        .where('a.address', '=', address)
        .executeTakeFirst();
      return row && toWager(row);
    },

    async hasActiveWager(address: string): Promise<boolean> {
      return !!(await db
        .selectFrom('wagers_active')
        .select('wager_id')
        .where('address', '=', address)
        .executeTakeFirst());
    },

    async transfers(challengeId: string): Promise<StoredTransfer[]> {
      const rows = await db
        .selectFrom('wagers_transfers')
        .selectAll()
        .where('challenge_id', '=', challengeId)
        .orderBy('seq')
        .execute();
      return rows.map(toTransfer);
    },

    /** Takes the right to finish an active wager until `until`; false while another holds it. */
    async lease(id: string, now: Date, until: Date): Promise<boolean> {
      const updated = await db
        .updateTable('wagers_wagers')
        .set({ lease_until: until })
        .where('id', '=', id)
        .where('status', '=', 'active')
        .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<=', now)]))
        .executeTakeFirst();
      return updated.numUpdatedRows > 0n;
    },

    async release(id: string): Promise<void> {
      await db
        .updateTable('wagers_wagers')
        .set({ lease_until: null })
        .where('id', '=', id)
        .where('status', '=', 'active')
        .execute();
    },

    /**
     * Stores the flip once, on an active wager: the first drawn decides, whatever another replica drew later. A flip
     * arriving after the wager was voided (a conditional update on the same row: exactly one of the two wins) decides
     * nothing; only its fee, paid by the vault, is recorded (once) for the books.
     */
    async setFlip(id: string, flip: StoredFlip): Promise<StoredWager> {
      const { fee, ...rest } = flip;
      const stored = await db
        .updateTable('wagers_wagers')
        .set({
          flip: json(rest) as never,
          entropy_fee: fee,
          winner: flip.outcome === 'heads' ? 'challenger' : 'opponent',
        })
        .where('id', '=', id)
        .where('status', '=', 'active')
        .where('flip', 'is', null)
        .executeTakeFirst();
      if (!stored.numUpdatedRows && fee > 0n)
        await db
          .updateTable('wagers_wagers')
          .set({ entropy_fee: fee })
          .where('id', '=', id)
          .where('status', '=', 'void')
          .where('flip', 'is', null)
          .where('entropy_fee', 'is', null)
          .execute();
      return toWager(await db.selectFrom('wagers_wagers').selectAll().where('id', '=', id).executeTakeFirstOrThrow());
    },

    /**
     * Voids an active wager that has no flip (a conditional update: a flip stored first wins, and a void stored first
     * keeps any later flip from deciding), freeing both players; the refunds are the caller's next step.
     */
    async voidWager(id: string, at: Date): Promise<StoredWager> {
      return db.transaction().execute(async (t) => {
        const voided = await t
          .updateTable('wagers_wagers')
          .set({ status: 'void', voided_at: at, lease_until: null })
          .where('id', '=', id)
          .where('status', '=', 'active')
          .where('flip', 'is', null)
          .executeTakeFirst();
        if (voided.numUpdatedRows > 0n) await t.deleteFrom('wagers_active').where('wager_id', '=', id).execute();
        return toWager(await t.selectFrom('wagers_wagers').selectAll().where('id', '=', id).executeTakeFirstOrThrow());
      });
    },

    /** Void wagers with a refund not sent yet. */
    async voidRefundsDue(limit = 50): Promise<StoredWager[]> {
      const rows = await db
        .selectFrom('wagers_wagers')
        .selectAll()
        .where('status', '=', 'void')
        .where((eb) => eb.or([eb('challenger_refund_tx', 'is', null), eb('opponent_refund_tx', 'is', null)]))
        .orderBy('voided_at')
        .limit(limit)
        .execute();
      return rows.map(toWager);
    },

    /** Records one player's confirmed refund of a void wager (once: the vault's key returns the same transaction). */
    async voidRefunded(
      w: StoredWager,
      side: 'challenger' | 'opponent',
      tx: string,
      vault: string,
      at: Date,
    ): Promise<StoredWager> {
      const column = side === 'challenger' ? 'challenger_refund_tx' : 'opponent_refund_tx';
      return db.transaction().execute(async (t) => {
        await insertTransfer(t, {
          challengeId: w.challengeId,
          kind: 'refund',
          from: vault,
          to: side === 'challenger' ? w.challenger : w.opponent,
          amount: w.amount,
          tx,
          confirmedAt: at,
        });
        await t
          .updateTable('wagers_wagers')
          .set({ [column]: tx })
          .where('id', '=', w.id)
          .where('status', '=', 'void')
          .where(column, 'is', null)
          .execute();
        return toWager(
          await t.selectFrom('wagers_wagers').selectAll().where('id', '=', w.id).executeTakeFirstOrThrow(),
        );
      });
    },

    /** Records the payout and settles the wager, freeing both players. */
    async settle(w: StoredWager, winner: string, tx: string, vault: string, at: Date): Promise<StoredWager> {
      return db.transaction().execute(async (t) => {
        await insertTransfer(t, {
          challengeId: w.challengeId,
          kind: 'payout',
          from: vault,
          to: winner,
          amount: w.payout,
          tx,
          confirmedAt: at,
        });
        await t
          .updateTable('wagers_wagers')
          .set({ status: 'settled', payout_tx: tx, settled_at: at, lease_until: null })
          .where('id', '=', w.id)
          .where('status', '=', 'active')
          .execute();
        await t.deleteFrom('wagers_active').where('wager_id', '=', w.id).execute();
        return toWager(
          await t.selectFrom('wagers_wagers').selectAll().where('id', '=', w.id).executeTakeFirstOrThrow(),
        );
      });
    },

    /** Active wagers nobody is finishing right now. */
    async unfinished(now: Date, limit = 20): Promise<string[]> {
      const rows = await db
        .selectFrom('wagers_wagers')
        .select('id')
        .where('status', '=', 'active')
        .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<=', now)]))
        .orderBy('created_at')
        .limit(limit)
        .execute();
      return rows.map((r) => r.id);
    },

    /** A player's settled wagers (a void one is neither won nor lost): how many, won, staked and received. */
    async record(address: string): Promise<RecordFacts> {
      const row = await db
        .selectFrom('wagers_wagers')
        .select([
          sql<string>`count(*)`.as('wagers'),
          sql<string>`count(*) filter (where (winner = 'challenger' and challenger = ${address}) or (winner = 'opponent' and opponent = ${address}))`.as(
            'wins',
          ),
          sql<string>`coalesce(sum(amount), 0)`.as('wagered'),
          sql<string>`coalesce(sum(payout) filter (where (winner = 'challenger' and challenger = ${address}) or (winner = 'opponent' and opponent = ${address})), 0)`.as(
            'won',
          ),
        ])
        .where('status', '=', 'settled')
        .where((eb) => eb.or([eb('challenger', '=', address), eb('opponent', '=', address)]))
        .executeTakeFirstOrThrow();
      return { wagers: Number(row.wagers), wins: Number(row.wins), wagered: BigInt(row.wagered), won: BigInt(row.won) };
    },

    /**
     * The books: stakes the vault holds for others (pending or unrefunded challenges, active wagers, unrefunded stakes
     * of void wagers), and what the house kept (house cuts of settled wagers less the entropy fees the vault paid). The
     * vault's balance should be their sum.
     */
    async books(): Promise<{ held: bigint; houseRetained: bigint }> {
      const challenges = await db
        .selectFrom('wagers_challenges')
        .select(sql<string>`coalesce(sum(amount), 0)`.as('held'))
        .where((eb) =>
          eb.or([
            eb('status', '=', 'pending'),
            eb.and([eb('status', 'in', ['declined', 'expired', 'cancelled']), eb('refund_tx', 'is', null)]),
          ]),
        )
        .executeTakeFirstOrThrow();
      const wagers = await db
        .selectFrom('wagers_wagers')
        .select([
          sql<string>`coalesce(sum(amount * 2) filter (where status = 'active'), 0)`.as('held'),
          sql<string>`coalesce(sum(amount) filter (where status = 'void' and challenger_refund_tx is null), 0) + coalesce(sum(amount) filter (where status = 'void' and opponent_refund_tx is null), 0)`.as(
            'owed',
          ),
          sql<string>`coalesce(sum(house_cut) filter (where status = 'settled'), 0)`.as('cut'),
          sql<string>`coalesce(sum(entropy_fee), 0)`.as('fees'),
        ])
        .executeTakeFirstOrThrow();
      return {
        held: BigInt(challenges.held) + BigInt(wagers.held) + BigInt(wagers.owed),
        houseRetained: BigInt(wagers.cut) - BigInt(wagers.fees),
      };
    },
  };
}

function notPending(code: 'CHALLENGE_NOT_FOUND' | 'CHALLENGE_NOT_PENDING', challengeId?: string, status?: string) {
  if (code === 'CHALLENGE_NOT_FOUND') {
    return new HttpError(
      404,
      code,
      challengeId ? `No challenge ${challengeId} to you` : 'You have no pending challenge',
      challengeId ? { challengeId } : undefined,
    );
  }
  return new HttpError(409, code, `Challenge ${challengeId} is ${status}, no longer pending`, { challengeId, status });
}

export type WagerStore = ReturnType<typeof wagerStore>;
