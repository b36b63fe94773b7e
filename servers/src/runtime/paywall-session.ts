import {
  PAYMENT_RESPONSE_HEADER,
  SESSION_CLOSE_PATH,
  SESSION_PROTOCOL,
  SESSION_SCHEME,
  X402PaymentPayloadSchema,
  base58Decode,
  decodeX402Header,
  encodeX402Header,
  facilitator as facilitatorContract,
  sessionCloseMessage,
  voucherRequestMessage,
  type MppClosedSession,
  type MppSession,
  type MppSignedVoucher,
  type PaymentRequired,
  type PaymentRequirements,
  type X402SettleResponse,
} from '@agent-economy/contracts';
import { ApiError, createServiceClient, walletFromSecretKey } from '@agent-economy/sdk';
import express, { type Request, type Response, type Router } from 'express';
import { sql, type Kysely, type Migration } from 'kysely';
import type { Logger } from 'pino';
import { migrate, type SharedDb } from '../db';
import { answerWithin, inProcessRoutes } from '../http/in-process';
import { grouped } from '../db/grouped';
import { verifyBase58Signature } from '../services/facilitator/session-domain';
import { verifyEd25519Async, type Wallet } from '../solana/keys';
import { envelope } from './errors';
import {
  holdResponse,
  refuse,
  refusalOf,
  unsettledHeader,
  type HeldAnswer,
  type PaywallConfig,
  type Refusal,
  type VerifiedPayment,
} from './paywall';

// Payment sessions on the paid path (issue 14, goal 2): a buyer that calls one seller often opens a session
// at the facilitator (a deposit within its delegation role) and pays each call with a voucher: its session
// key's signature over the cumulative amount, the very "voucher request" the facilitator countersigns. The
// seller checks it before serving (one Ed25519 verification; the channel's first voucher also asks the facilitator
// whether the session is open, for this seller, under this key) and settles it after, with one compare-and-set
// UPDATE of the shared row, so replicas on one database share the session. Every sweep forwards the latest voucher
// to the facilitator (a checkpoint: the chain is read to cover it, the idle deadline moves on, and a buyer closing
// there settles it); the seller's close forwards the last one and /mpp/session/close settles on chain what was
// vouched. The rest of the deposit never leaves the buyer's wallet.

export interface SessionPaywallOptions {
  /** The seller closes a session after this long without a voucher; default 300 s. */
  idleSeconds?: number;
  /** How often this replica looks for sessions to checkpoint or close; default 5 s. */
  sweepMs?: number;
  /**
   * Forward the latest voucher to the facilitator at once when this much (atomic units) is unforwarded; default 1 USD.
   * Every sweep forwards whatever is unforwarded anyway (within a buyer's close grace at the facilitator), so a busy
   * session costs one facilitator call per sweep, not one per few calls.
   */
  checkpointAtomic?: string;
}

export const sessionPaymentMigrations: Record<string, Migration> = {
  '001_paywall_sessions': {
    async up(db) {
      // One row per channel this seller was paid through, shared by every replica of the service.
      await db.schema
        .createTable('paywall_sessions')
        .addColumn('channel_id', 'text', (c) => c.primaryKey())
        .addColumn('buyer', 'text', (c) => c.notNull())
        .addColumn('session_key', 'text', (c) => c.notNull())
        .addColumn('pay_to', 'text', (c) => c.notNull())
        .addColumn('network', 'text', (c) => c.notNull())
        .addColumn('asset', 'text', (c) => c.notNull())
        .addColumn('deposit', 'int8', (c) => c.notNull())
        // spent: the highest voucher accepted; forwarded: the highest the facilitator has accepted.
        .addColumn('spent', 'int8', (c) => c.notNull())
        .addColumn('forwarded', 'int8', (c) => c.notNull())
        .addColumn('last_signature', 'text', (c) => c.notNull())
        .addColumn('vouchers', 'integer', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('opened_at', 'timestamptz', (c) => c.notNull())
        .addColumn('last_voucher_at', 'timestamptz', (c) => c.notNull())
        .addColumn('facilitator_expires_at', 'timestamptz', (c) => c.notNull())
        .addColumn('closing_at', 'timestamptz')
        .addColumn('closed_at', 'timestamptz')
        .addColumn('settled', 'int8')
        .addColumn('settlement', 'text')
        .addColumn('close_error', 'text')
        .execute();
      await db.schema
        .createIndex('paywall_sessions_state')
        .on('paywall_sessions')
        .columns(['state', 'last_voucher_at'])
        .execute();
    },
  },
  '002_voucher_updates_in_place': {
    async up(db) {
      // Every voucher moves last_voucher_at. Indexed, each update wrote a new entry into both indexes and left the old
      // row version behind; PGlite never vacuums, so the update slowed as a session lived (0.12 to 0.25 ms in 400
      // vouchers a channel). Indexed by state alone, and with room left in each page, an update stays in its page
      // (a heap-only tuple) and the next read prunes the old version. The sweep reads a seller's open sessions,
      // few, by state.
      await db.schema.dropIndex('paywall_sessions_state').execute();
      await db.schema.createIndex('paywall_sessions_state').on('paywall_sessions').column('state').execute();
      await sql`alter table paywall_sessions set (fillfactor = 70)`.execute(db);
    },
  },
  '003_price_per_unit': {
    async up(db) {
      // The minimum increment the buyer set at open: a voucher below it would be refused at every checkpoint.
      await db.schema.alterTable('paywall_sessions').addColumn('price_per_unit', 'int8').execute();
    },
  },
  '004_sessions_by_seller': {
    async up(db) {
      // The services of a deployment share the table, and each sweeps its own sessions (pay_to): indexed by state
      // alone, every sweep read the open sessions of every seller. Neither column moves with a voucher, so its update
      // stays in its page.
      await db.schema.dropIndex('paywall_sessions_state').execute();
      await db.schema
        .createIndex('paywall_sessions_seller')
        .on('paywall_sessions')
        .columns(['pay_to', 'state'])
        .execute();
    },
  },
};

export interface SessionRow {
  channel_id: string;
  buyer: string;
  session_key: string;
  pay_to: string;
  network: string;
  asset: string;
  deposit: bigint;
  /** The session's minimum increment a voucher (pricePerUnit at open), or null. */
  price_per_unit: bigint | null;
  spent: bigint;
  forwarded: bigint;
  last_signature: string;
  vouchers: number;
  state: 'open' | 'closing' | 'closed';
  opened_at: Date;
  last_voucher_at: Date;
  facilitator_expires_at: Date;
  closing_at: Date | null;
  closed_at: Date | null;
  settled: bigint | null;
  settlement: string | null;
  close_error: string | null;
}

const rowOf = (r: SessionRow): SessionRow => ({
  ...r,
  deposit: BigInt(r.deposit),
  price_per_unit: r.price_per_unit === null || r.price_per_unit === undefined ? null : BigInt(r.price_per_unit),
  spent: BigInt(r.spent),
  forwarded: BigInt(r.forwarded),
  vouchers: Number(r.vouchers),
  opened_at: new Date(r.opened_at),
  last_voucher_at: new Date(r.last_voucher_at),
  facilitator_expires_at: new Date(r.facilitator_expires_at),
  closing_at: r.closing_at ? new Date(r.closing_at) : null,
  closed_at: r.closed_at ? new Date(r.closed_at) : null,
  settled: r.settled === null || r.settled === undefined ? null : BigInt(r.settled),
});

/** A voucher as PAYMENT-SIGNATURE carries it (payload of scheme `session`). */
export interface SessionVoucher {
  channelId: string;
  cumulativeAmount: string;
  signer: string;
  signature: string;
}

/** A well-formed voucher, with the bytes of its signer's key and signature. */
interface ReadVoucher extends SessionVoucher {
  signerKey: Uint8Array;
  signatureBytes: Uint8Array;
}

const CHANNEL = /^chn_[A-Za-z0-9]{16,40}$/;
/**
 * The facilitator's refusals of a checkpoint that no retry changes: the buyer's wallet or role no longer covers what
 * was vouched, or the vouchers break the session's own terms (its minimum increment, its key, their signatures). Each
 * closes the session at once, settling what the facilitator accepted, rather than serve more on it.
 */
const FINAL_REFUSALS = new Set([
  'insufficient_balance',
  'wallet_role_not_found',
  'underpayment',
  'signer_mismatch',
  'voucher_signature_invalid',
]);
/** How long the seller waits for the facilitator (a session lookup, a checkpoint, a close). */
const FACILITATOR_TIMEOUT_MS = 30_000;
const ATOMIC = /^[1-9]\d{0,19}$/;

function voucherOf(payload: Record<string, unknown>): ReadVoucher | string {
  const { channelId, cumulativeAmount, signer, signature } = payload;
  if (typeof channelId !== 'string' || !CHANNEL.test(channelId))
    return 'payload.channelId must be a channel id (chn_…)';
  if (typeof cumulativeAmount !== 'string' || !ATOMIC.test(cumulativeAmount))
    return 'payload.cumulativeAmount must be a positive integer string (atomic units)';
  const signerKey = typeof signer === 'string' ? base58Decode(signer) : undefined;
  if (signerKey?.length !== 32) return 'payload.signer must be the session key (base58)';
  const signatureBytes = typeof signature === 'string' ? base58Decode(signature) : undefined;
  if (signatureBytes?.length !== 64) return 'payload.signature must be a base58 Ed25519 signature';
  return {
    channelId,
    cumulativeAmount,
    signer: signer as string,
    signature: signature as string,
    signerKey,
    signatureBytes,
  };
}

/** A PAYMENT-SIGNATURE header for scheme `session`, decoded (undefined for any other: the exact path reads it). */
export function sessionPayment(header: string): unknown {
  const decoded = decodeX402Header(header) as { accepted?: { scheme?: unknown } } | undefined;
  return decoded?.accepted?.scheme === SESSION_SCHEME ? decoded : undefined;
}

type Db = Kysely<{ paywall_sessions: SessionRow }>;

/** A voucher checked against the session at `previous`, to land at `cumulative`. */
interface LandedVoucher {
  channelId: string;
  cumulative: bigint;
  previous: bigint;
  signature: string;
  at: Date;
}

export interface SessionPaywall {
  /** The quote's `accepts` with the session offer after `exact`, where this request may be paid by voucher. */
  offer(quote: PaymentRequired, requirements: PaymentRequirements, settleFirst: boolean): PaymentRequired;
  /** Takes a voucher for one request (header of scheme `session`). */
  collect(
    res: Response,
    runHandler: () => void,
    options: { requirements: PaymentRequirements; quote: PaymentRequired; payment: unknown; requestId: string },
  ): Promise<void>;
  /** The seller's close: forwards the last voucher and settles on chain through the facilitator. */
  close(channelId: string): Promise<SessionRow | undefined>;
  /** Checkpoints and closes what is due (the timer calls it; tests call it on demand). */
  sweep(): Promise<void>;
  router(): Router;
  stop(): void;
}

/**
 * The session side of a service's paywall. Needs the facilitator (first vouchers, checkpoints, closes) and
 * the service's wallet (it signs in as the seller to close).
 */
export async function createSessionPaywall(options: {
  db: SharedDb;
  config: PaywallConfig;
  signer: Wallet;
  logger: Logger;
  now?: () => Date;
}): Promise<SessionPaywall> {
  const { config, logger } = options;
  const facilitatorUrl = config.facilitatorUrl;
  if (!facilitatorUrl) throw new Error('payment sessions need a facilitator (paywall.facilitatorUrl)');
  const settings = config.sessions ?? {};
  const idleMs = (settings.idleSeconds ?? 300) * 1000;
  const checkpointAtomic = BigInt(settings.checkpointAtomic ?? '1000000');
  const now = options.now ?? (() => new Date());
  await migrate(options.db, 'paywall_sessions', sessionPaymentMigrations);
  const db = options.db as unknown as Db;
  const fac = createServiceClient(facilitatorContract, facilitatorUrl, {
    wallet: await walletFromSecretKey(options.signer.secretKey),
    payments: false,
    maxRetries: 1,
    network: config.network,
    timeoutMs: FACILITATOR_TIMEOUT_MS,
  });

  // What this replica last saw of each session: its fixed facts, and a `spent` that can only be behind the
  // database's (spent only grows), so a voucher at or below it is stale for certain. The UPDATE after the handler
  // judges the rest.
  const known = new Map<string, SessionRow>();
  const remember = (r: SessionRow) => {
    if (known.size >= 10_000 && !known.has(r.channel_id)) known.clear();
    known.set(r.channel_id, r);
  };
  /** Vouchers being served on this replica (channel and amount): the same voucher twice at once runs once. */
  const inFlight = new Set<string>();
  const read = async (channelId: string) => {
    const row = await db
      .selectFrom('paywall_sessions')
      .selectAll()
      .where('channel_id', '=', channelId)
      .executeTakeFirst();
    return row && rowOf(row);
  };

  /**
   * Lands accepted vouchers, those of concurrent requests in one UPDATE (group commit, db/grouped.ts), each row its own
   * compare-and-set: it moves only from the amount its voucher was checked against, while open and within the
   * deposit. A channel twice in a batch goes in a statement of its own after the first (an UPDATE takes one source
   * row a target row), in the same transaction. Gives what the facilitator holds of each landed voucher's session;
   * undefined where it did not land.
   */
  const land = grouped<LandedVoucher, { forwarded: bigint } | undefined>(async (vouchers) => {
    // Rounds of distinct channels, a channel's vouchers in the order they came; each round sorted by channel, so that
    // replicas updating the same sessions lock their rows in one order and never deadlock.
    const rounds: LandedVoucher[][] = [];
    for (const v of vouchers) {
      const round = rounds.find((r) => r.every((o) => o.channelId !== v.channelId));
      if (round) round.push(v);
      else rounds.push([v]);
    }
    const landed = new Map<LandedVoucher, { forwarded: bigint }>();
    const update = async (executor: Db) => {
      for (const round of rounds) {
        round.sort((x, y) => (x.channelId < y.channelId ? -1 : 1));
        const rows = round.map(
          (v) =>
            sql`(${v.channelId}, ${v.cumulative.toString()}::int8, ${v.previous.toString()}::int8, ${v.signature}, ${v.at.toISOString()}::timestamptz)`,
        );
        const { rows: updated } = await sql<{ channel_id: string; forwarded: string | bigint }>`
          update paywall_sessions as p
          set spent = v.cumulative, last_signature = v.signature, vouchers = p.vouchers + 1, last_voucher_at = v.at
          from (values ${sql.join(rows)}) as v(channel_id, cumulative, previous, signature, at)
          where p.channel_id = v.channel_id and p.spent = v.previous and p.state = 'open' and p.deposit >= v.cumulative
          returning p.channel_id, p.forwarded`.execute(executor);
        const byChannel = new Map(updated.map((r) => [r.channel_id, BigInt(r.forwarded)]));
        for (const v of round) {
          const forwarded = byChannel.get(v.channelId);
          if (forwarded !== undefined) landed.set(v, { forwarded });
        }
      }
    };
    // Rounds go in one transaction: should a later one fail, no voucher of the batch has landed, and each is tried
    // again alone (grouped.ts) against its session as it was, rather than refused as stale by the first round's move.
    if (rounds.length === 1) await update(db);
    else await db.transaction().execute(update);
    return vouchers.map((v) => landed.get(v));
  });

  /** Forwards a voucher to the facilitator: the signed voucher, or the error it answered. */
  async function forward(v: SessionVoucher): Promise<MppSignedVoucher | ApiError> {
    const body = {
      channelId: v.channelId,
      cumulativeAmount: v.cumulativeAmount,
      units: 1,
      signer: v.signer,
      signature: v.signature,
    };
    // A facilitator served by this very process (npm start) is asked directly: the same route, without HTTP, and within
    // the same time limit. A refusal it would retry once over HTTP (429, 503) waits for the next checkpoint instead.
    const local = inProcessRoutes.lookup(facilitatorUrl!)?.signVoucher;
    if (local) {
      const answer = await answerWithin(
        local(body, undefined),
        FACILITATOR_TIMEOUT_MS,
        'the facilitator’s voucher route',
      );
      return answer.status === 200
        ? (answer.body as MppSignedVoucher)
        : ApiError.from(answer.status, answer.body, answer.retryAfter ? { 'retry-after': answer.retryAfter } : {});
    }
    try {
      return await fac.signVoucher({ body });
    } catch (error) {
      if (error instanceof ApiError) return error;
      throw error;
    }
  }

  /**
   * The facilitator refuses for good what the buyer vouched (FINAL_REFUSALS: no longer covered, or against the
   * session's terms): the session is closed at once, settling what is covered, rather than serve more on it.
   */
  const uncovered = (error: unknown) => error instanceof ApiError && FINAL_REFUSALS.has(error.code);

  /** A checkpoint that failed: a session no longer covered is closed (settled), any other failure tried again. */
  async function checkpointed(row: SessionRow): Promise<void> {
    try {
      await checkpoint(row);
    } catch (error) {
      if (!uncovered(error)) throw error;
      logger.warn(
        { channelId: row.channel_id, err: (error as ApiError).message },
        'payment session no longer covered by the buyer; closing it',
      );
      await close(row.channel_id);
    }
  }

  /** Channels whose checkpoint this replica has on its way to the facilitator. */
  const forwarding = new Set<string>();
  /**
   * A checkpoint of the session as `current` reads it, unless one is on its way already (a voucher's or the
   * sweep's): each would forward the same vouchers again, a facilitator call and a transaction of its database
   * each. Never throws.
   */
  async function checkpointOnce(channelId: string, current: () => Promise<SessionRow | undefined>): Promise<void> {
    if (forwarding.has(channelId)) return;
    forwarding.add(channelId);
    await current()
      .then((row) => row && checkpointed(row))
      .catch((error: unknown) => logger.warn({ err: error, channelId }, 'session checkpoint failed'))
      .finally(() => forwarding.delete(channelId));
  }

  async function checkpoint(row: SessionRow): Promise<void> {
    if (row.spent <= row.forwarded) return;
    const answer = await forward({
      channelId: row.channel_id,
      cumulativeAmount: row.spent.toString(),
      signer: row.session_key,
      signature: row.last_signature,
    });
    if (answer instanceof ApiError) {
      const accepted = (answer.details as { acceptedCumulative?: string } | undefined)?.acceptedCumulative;
      // Another replica forwarded this one or a later one already.
      if (answer.code === 'amount_not_monotonic' && accepted && BigInt(accepted) >= row.spent) {
        await db
          .updateTable('paywall_sessions')
          .set({ forwarded: sql`greatest(forwarded, ${row.spent})` as never })
          .where('channel_id', '=', row.channel_id)
          .execute();
        return;
      }
      const closedThere = answer.details as { state?: string; signature?: string | null } | undefined;
      if (answer.code === 'session_not_open' && closedThere?.state === 'closed') {
        // Closed at the facilitator (by the buyer, or idle) before these vouchers reached it: what they add is lost.
        logger.warn(
          { channelId: row.channel_id, unforwarded: (row.spent - row.forwarded).toString() },
          'payment session closed before its last vouchers were forwarded',
        );
        await db
          .updateTable('paywall_sessions')
          .set({ state: 'closed', closed_at: now(), settlement: closedThere.signature ?? null, close_error: null })
          .where('channel_id', '=', row.channel_id)
          .execute();
        known.delete(row.channel_id);
        return;
      }
      throw answer;
    }
    await db
      .updateTable('paywall_sessions')
      .set({
        forwarded: sql`greatest(forwarded, ${row.spent})` as never,
        facilitator_expires_at: new Date(answer.expiresAt),
      })
      .where('channel_id', '=', row.channel_id)
      .execute();
  }

  /** closing -> closed: forwards the last voucher, then the facilitator settles it on chain. */
  async function finish(row: SessionRow): Promise<SessionRow> {
    try {
      // A last voucher the facilitator refuses as uncovered is lost; the close settles what it accepted before.
      await checkpoint(row).catch((error: unknown) => {
        if (!uncovered(error)) throw error;
      });
      const closed: MppClosedSession = await fac.closeSession({ body: { channelId: row.channel_id } });
      const settled = BigInt(closed.settlement.amountSettled);
      await db
        .updateTable('paywall_sessions')
        .set({
          state: 'closed',
          closed_at: new Date(closed.closedAt),
          settled,
          settlement: closed.settlement.signature,
          close_error: null,
        })
        .where('channel_id', '=', row.channel_id)
        .execute();
      logger.info(
        { channelId: row.channel_id, settled: settled.toString(), signature: closed.settlement.signature },
        'payment session settled',
      );
    } catch (error) {
      const details =
        error instanceof ApiError
          ? (error.details as { state?: string; signature?: string | null } | undefined)
          : undefined;
      if (error instanceof ApiError && error.code === 'session_not_open' && details?.state === 'closed') {
        // Closed already (by the buyer or the facilitator): what it settled is the facilitator's to say.
        await db
          .updateTable('paywall_sessions')
          .set({ state: 'closed', closed_at: now(), settlement: details.signature ?? null, close_error: null })
          .where('channel_id', '=', row.channel_id)
          .execute();
      } else {
        // Left closing: vouchers stay refused, and the sweep tries again.
        const message = error instanceof ApiError ? `${error.code}: ${error.message}` : (error as Error).message;
        logger.warn({ channelId: row.channel_id, err: message }, 'payment session close failed; retried later');
        await db
          .updateTable('paywall_sessions')
          .set({ close_error: message.slice(0, 500) })
          .where('channel_id', '=', row.channel_id)
          .execute();
      }
    }
    return (await read(row.channel_id))!;
  }

  async function close(channelId: string): Promise<SessionRow | undefined> {
    // open -> closing decides, across replicas, which request closes; a voucher's UPDATE requires open.
    const taken = await db
      .updateTable('paywall_sessions')
      .set({ state: 'closing', closing_at: now() })
      .where('channel_id', '=', channelId)
      .where('state', '=', 'open')
      .returningAll()
      .executeTakeFirst();
    if (taken) return finish(rowOf(taken));
    const row = await read(channelId);
    if (row?.state === 'closing' && row.close_error) return finish(row);
    return row;
  }

  const answerOf = (
    requirements: PaymentRequirements,
    row: Pick<SessionRow, 'channel_id' | 'buyer' | 'deposit'>,
    cumulative: bigint,
  ): X402SettleResponse => ({
    success: true,
    transaction: '',
    network: requirements.network,
    payer: row.buyer,
    amount: requirements.amount,
    extensions: {
      session: {
        channelId: row.channel_id,
        acceptedCumulative: cumulative.toString(),
        depositAtomic: row.deposit.toString(),
        remainingAtomic: (row.deposit - cumulative).toString(),
      },
    },
  });

  /** Why a voucher does not fit the session as it stands, or undefined when it does. */
  function misfit(
    row: SessionRow,
    v: SessionVoucher,
    requirements: PaymentRequirements,
    cumulative: bigint,
    price: bigint,
  ): Refusal | undefined {
    const details = {
      acceptedCumulative: row.spent.toString(),
      depositAtomic: row.deposit.toString(),
      state: row.state,
    };
    const reason = (code: string, message: string) =>
      refusalOf(402, code, message, { reason: code, extraHeaders: { 'x-session-state': JSON.stringify(details) } });
    if (row.session_key !== v.signer)
      return reason(
        'session_voucher_invalid',
        `vouchers of ${row.channel_id} are signed by its session key ${row.session_key}, not ${v.signer}`,
      );
    if (row.pay_to !== requirements.payTo)
      return reason(
        'session_payee_mismatch',
        `session ${row.channel_id} pays ${row.pay_to}, not ${requirements.payTo}`,
      );
    if (row.state !== 'open')
      return reason(
        'session_closed',
        `session ${row.channel_id} is ${row.state}; pay with exact or open a new session`,
      );
    if (cumulative <= row.spent)
      return reason(
        'session_voucher_stale',
        `cumulativeAmount ${cumulative} is not above the accepted ${row.spent}: a replayed or stale voucher`,
      );
    if (cumulative > row.deposit)
      return reason(
        'session_deposit_exhausted',
        `cumulativeAmount ${cumulative} exceeds the session's deposit ${row.deposit}`,
      );
    if (row.price_per_unit !== null && price < row.price_per_unit)
      return reason(
        'session_price_mismatch',
        `session ${row.channel_id} was opened with a minimum of ${row.price_per_unit} a voucher, above this request's price ${price}: the facilitator would refuse its vouchers; pay with exact`,
      );
    if (cumulative - row.spent !== price)
      return reason(
        'session_voucher_mismatch',
        `this request costs ${price}: the voucher must be for ${row.spent + price}, not ${cumulative}`,
      );
    return undefined;
  }

  async function collect(
    res: Response,
    runHandler: () => void,
    o: { requirements: PaymentRequirements; quote: PaymentRequired; payment: unknown; requestId: string },
  ): Promise<void> {
    const { requirements, quote, requestId } = o;
    const parsed = X402PaymentPayloadSchema.safeParse(o.payment);
    if (!parsed.success)
      return refuse(
        res,
        requestId,
        quote,
        refusalOf(402, 'payment_invalid', 'PAYMENT-SIGNATURE is not a base64 JSON x402 v2 payment', {
          reason: 'invalid_payload',
        }),
      );
    const accepted = parsed.data.accepted;
    const differs = (['network', 'amount', 'asset', 'payTo'] as const).find((f) => accepted[f] !== requirements[f]);
    if (differs) {
      return refuse(
        res,
        requestId,
        quote,
        refusalOf(
          402,
          'payment_invalid',
          `The voucher was made for ${differs} ${accepted[differs]}; this request requires ${requirements[differs]}`,
          { reason: 'invalid_payment_requirements' },
        ),
      );
    }
    const v = voucherOf(parsed.data.payload);
    if (typeof v === 'string')
      return refuse(
        res,
        requestId,
        quote,
        refusalOf(402, 'session_voucher_invalid', v, { reason: 'session_voucher_invalid' }),
      );
    // One Ed25519 verification: the session key's signature over the cumulative amount, on the thread pool (it is most
    // of a voucher's own CPU, and the event loop serves the other requests meanwhile).
    const message = voucherRequestMessage({ channelId: v.channelId, cumulativeAmount: v.cumulativeAmount, units: 1 });
    if (!(await verifyEd25519Async(v.signerKey, message, v.signatureBytes))) {
      return refuse(
        res,
        requestId,
        quote,
        refusalOf(402, 'session_voucher_invalid', `the signature is not ${v.signer}'s over this voucher`, {
          reason: 'session_voucher_invalid',
        }),
      );
    }
    const price = BigInt(requirements.amount);
    const cumulative = BigInt(v.cumulativeAmount);
    // Everything that can be judged before the handler runs is: a forged, replayed or unknown voucher gets no work.
    let row = known.get(v.channelId);
    if (!row || row.state !== 'open' || misfit(row, v, requirements, cumulative, price)) {
      row = await read(v.channelId);
      if (!row) {
        const learned = await learn(v, requirements);
        if ('status' in learned) return refuse(res, requestId, quote, learned);
        row = learned;
      }
      const refusal = misfit(row, v, requirements, cumulative, price);
      if (refusal) return refuse(res, requestId, quote, refusal);
      remember(row);
    }
    const flight = `${v.channelId} ${cumulative}`;
    if (inFlight.has(flight))
      return refuse(
        res,
        requestId,
        quote,
        refusalOf(402, 'session_voucher_stale', `cumulativeAmount ${cumulative} is being served already`, {
          reason: 'session_voucher_stale',
        }),
      );
    inFlight.add(flight);
    const session = row;
    res.locals.payment = {
      payer: session.buyer,
      payTo: requirements.payTo,
      amount: requirements.amount,
      asset: requirements.asset,
      network: requirements.network,
    } satisfies VerifiedPayment;
    // The voucher stays in flight until its update has landed (or not) and the cache says so: a copy arriving meanwhile
    // is refused before its handler runs.
    const settle = async (held: HeldAnswer) => {
      if (held.status < 200 || held.status >= 300)
        return held.flush(held.body, undefined, unsettledHeader(held.status, requirements.network, session.buyer));
      const withheld = (refusal: Refusal) => {
        res.removeHeader('etag');
        return refuse(res, requestId, quote, refusal, (b) => held.flush(b, res.statusCode));
      };
      // The one atomic update: the voucher lands only on the amount it was checked against, while open.
      const at = now();
      const updated = await land({
        channelId: v.channelId,
        cumulative,
        previous: cumulative - price,
        signature: v.signature,
        at,
      });
      if (!updated) {
        const after = await read(v.channelId);
        if (after) remember(after);
        return withheld(
          (after && misfit(after, v, requirements, cumulative, price)) ??
            refusalOf(402, 'session_voucher_stale', 'the session moved while this request ran; sign again', {
              reason: 'session_voucher_stale',
            }),
        );
      }
      // The session as the update left it, with what the facilitator holds as the update read it: what a checkpoint
      // needs, so it starts without a read. Should another replica have forwarded a later voucher meanwhile, the
      // facilitator says so and the row follows.
      const landed = {
        ...session,
        spent: cumulative,
        forwarded: updated.forwarded,
        last_signature: v.signature,
        last_voucher_at: at,
      };
      remember(landed);
      if (cumulative - updated.forwarded >= checkpointAtomic) void checkpointOnce(v.channelId, async () => landed);
      const answer = answerOf(requirements, session, cumulative);
      return held.flush(held.body, undefined, { [PAYMENT_RESPONSE_HEADER]: encodeX402Header(answer) });
    };
    holdResponse(res, (held) => settle(held).finally(() => inFlight.delete(flight)), logger, requestId);
    // A request whose connection went away before its answer never reaches settle: its voucher is not stuck in flight.
    res.once('close', () => inFlight.delete(flight));
    runHandler();
  }

  /**
   * A channel this seller has not been paid through yet: the facilitator, which opened it, says whether it is open,
   * for this seller, under this session key and with what deposit; the row then starts at what it has accepted.
   */
  async function learn(v: SessionVoucher, requirements: PaymentRequirements): Promise<SessionRow | Refusal> {
    const refusal = (code: string, message: string) => refusalOf(402, code, message, { reason: code });
    let session: MppSession;
    try {
      session = await fac.getSession({ params: { channelId: v.channelId } });
    } catch (error) {
      if (error instanceof ApiError && error.status < 500) {
        return error.status === 404
          ? refusal('session_not_found', `the facilitator has no session ${v.channelId}`)
          : refusal(error.code, `The facilitator refused to show session ${v.channelId}: ${error.message}`);
      }
      logger.warn({ err: error, channelId: v.channelId }, 'session lookup failed');
      return refusalOf(
        503,
        'facilitator_unavailable',
        'The payment facilitator did not answer; nothing was charged, try again shortly',
        { retryAfterSeconds: 5 },
      );
    }
    if (session.sellerWallet !== requirements.payTo)
      return refusal(
        'session_payee_mismatch',
        `session ${v.channelId} pays ${session.sellerWallet}, not ${requirements.payTo}`,
      );
    if (session.sessionKey !== v.signer)
      return refusal(
        'session_voucher_invalid',
        `vouchers of ${v.channelId} are signed by its session key ${session.sessionKey}, not ${v.signer}`,
      );
    if (session.state !== 'open')
      return refusal(
        'session_closed',
        `session ${v.channelId} is ${session.state}; pay with exact or open a new session`,
      );
    if (session.network !== requirements.network || session.asset !== requirements.asset)
      return refusal(
        'payment_invalid',
        `session ${v.channelId} is in ${session.asset} on ${session.network}; this request is paid in ${requirements.asset} on ${requirements.network}`,
      );
    const at = now();
    const accepted = BigInt(session.acceptedCumulative);
    await db
      .insertInto('paywall_sessions')
      .values({
        channel_id: v.channelId,
        buyer: session.buyerWallet,
        session_key: session.sessionKey,
        pay_to: requirements.payTo,
        network: requirements.network,
        asset: requirements.asset,
        deposit: BigInt(session.depositAtomic),
        price_per_unit: session.pricePerUnit === null ? null : BigInt(session.pricePerUnit),
        spent: accepted,
        forwarded: accepted,
        last_signature: '',
        vouchers: 0,
        state: 'open',
        opened_at: at,
        last_voucher_at: at,
        facilitator_expires_at: new Date(session.expiresAt),
        closing_at: null,
        closed_at: null,
        settled: null,
        settlement: null,
        close_error: null,
      })
      .onConflict((oc) => oc.doNothing())
      .execute();
    // Another replica may have learnt it first (and taken vouchers since): the row is the truth.
    return (await read(v.channelId))!;
  }

  let sweeping: Promise<void> | undefined;
  // Only this seller's sessions: services of one deployment share the database (npm start), and another service's
  // sessions are its own to checkpoint and close (the facilitator refuses a close by anyone but the session's seller).
  async function sweepOnce(): Promise<void> {
    const at = now();
    const due = await db
      .selectFrom('paywall_sessions')
      .selectAll()
      .where('pay_to', '=', config.payTo)
      .where((eb) =>
        eb.or([
          eb.and([
            eb('state', '=', 'open'),
            eb.or([
              eb('last_voucher_at', '<=', new Date(at.getTime() - idleMs)),
              eb('facilitator_expires_at', '<=', new Date(at.getTime() + 60_000)),
            ]),
          ]),
          eb.and([eb('state', '=', 'closing'), eb('closing_at', '<=', new Date(at.getTime() - 15_000))]),
        ]),
      )
      .limit(50)
      .execute();
    for (const r of due.map(rowOf)) {
      await (r.state === 'closing' ? finish(r) : close(r.channel_id)).catch((error: unknown) =>
        logger.warn({ err: error, channelId: r.channel_id }, 'session close failed'),
      );
    }
    const behind = await db
      .selectFrom('paywall_sessions')
      .selectAll()
      .where('pay_to', '=', config.payTo)
      .where('state', '=', 'open')
      .where(sql<boolean>`spent > forwarded`)
      .limit(200)
      .execute();
    for (const r of behind.map(rowOf)) await checkpointOnce(r.channel_id, async () => r);
  }
  const sweep = () => (sweeping ??= sweepOnce().finally(() => (sweeping = undefined)));
  const timer = setInterval(
    () => void sweep().catch((error: unknown) => logger.warn({ err: error }, 'session sweep failed')),
    settings.sweepMs ?? 5000,
  );
  timer.unref();

  function router(): Router {
    const r = express.Router();
    r.post(SESSION_CLOSE_PATH, express.json({ limit: '4kb' }), async (req: Request, res: Response) => {
      const requestId = (req as Request & { requestId?: string }).requestId ?? '';
      const { channelId, signature } = (req.body ?? {}) as { channelId?: unknown; signature?: unknown };
      const bad = (field: string, message: string) =>
        res.status(400).json(envelope(requestId, 'invalid_request', message, { fields: [{ path: field, message }] }));
      if (typeof channelId !== 'string' || !CHANNEL.test(channelId))
        return bad('channelId', 'channelId must be a channel id (chn_…)');
      if (typeof signature !== 'string' || base58Decode(signature)?.length !== 64)
        return bad('signature', 'signature must be a base58 Ed25519 signature');
      try {
        const row = await read(channelId);
        // Another service's session on a shared database is not this seller's to close.
        if (!row || row.pay_to !== config.payTo)
          return res
            .status(404)
            .json(
              envelope(
                requestId,
                'session_not_found',
                `this seller was never paid through ${channelId}; close it at the facilitator`,
              ),
            );
        if (!verifyBase58Signature(row.session_key, sessionCloseMessage(channelId), signature)) {
          return res
            .status(401)
            .json(
              envelope(
                requestId,
                'session_signature_invalid',
                `the signature is not the session key's (${row.session_key}) over the close of ${channelId}`,
              ),
            );
        }
        const after = await close(channelId);
        if (after?.state !== 'closed') {
          res.setHeader('retry-after', '5');
          return res
            .status(503)
            .json(
              envelope(
                requestId,
                'session_closing',
                `the session is closing; its settlement is not done yet${after?.close_error ? ` (${after.close_error})` : ''}`,
                { state: after?.state },
              ),
            );
        }
        return res.json(viewOf(after));
      } catch (error) {
        logger.error({ err: error, requestId }, 'session close failed');
        res.setHeader('retry-after', '5');
        return res
          .status(503)
          .json(envelope(requestId, 'session_closing', 'the session could not be closed now; try again shortly'));
      }
    });
    return r;
  }

  return {
    offer(quote, requirements, settleFirst) {
      // Vouchers go to the service's own wallet, and settle-first routes refund from it: those stay exact.
      if (settleFirst || requirements.payTo !== config.payTo) return quote;
      const extra = {
        ...requirements.extra,
        protocol: SESSION_PROTOCOL,
        close: SESSION_CLOSE_PATH,
        idleSeconds: idleMs / 1000,
      };
      return { ...quote, accepts: [...quote.accepts, { ...requirements, scheme: SESSION_SCHEME, extra }] };
    },
    collect,
    close,
    sweep,
    router,
    stop: () => clearInterval(timer),
  };
}

/** A closed session as the close route answers it. */
export function viewOf(row: SessionRow) {
  return {
    channelId: row.channel_id,
    state: row.state,
    acceptedCumulative: row.spent.toString(),
    depositAtomic: row.deposit.toString(),
    vouchers: row.vouchers,
    settlement: {
      amountSettled: (row.settled ?? row.spent).toString(),
      buyerRefund: (row.deposit - (row.settled ?? row.spent)).toString(),
      signature: row.settlement,
    },
  };
}
