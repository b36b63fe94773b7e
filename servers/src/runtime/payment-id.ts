import { createHash } from 'node:crypto';
import {
  PAYMENT_RESPONSE_HEADER,
  base58Decode,
  decodeX402Header,
  type PaymentRequired,
  type X402FacilitatorRequest,
} from '@agent-economy/contracts';
import type { Response } from 'express';
import { sql, type Kysely, type Migration, type OperationNodeSource, type RawBuilder } from 'kysely';
import { decodeBase64, parseTransaction } from '../solana/wire';
import { verifyEd25519Async } from '../solana/keys';
import { HttpError, envelope } from './errors';
import type { SharedDb } from '../db';
import { camelCaseDb } from '../db/camel-case';

// x402's payment-identifier extension (idempotency). Every paid route advertises it in its 402; a client
// sends `extensions['payment-identifier'].info.id` with its payment and the same id on every payment of
// one logical call. The paywall keeps one row per (payer, id): the payment the id is bound to and, once
// that payment settled and its answer went out, the answer itself. A later payment with the same id from
// the same payer is the same logical payment: it is answered from the first one's outcome (the stored
// answer, or the first payment's claim resumed) and is itself never verified or settled.

export const PAYMENT_IDENTIFIER = 'payment-identifier';
const ID_PATTERN = '^[a-zA-Z0-9_-]+$';

/** The declaration a 402 carries: optional ids, with the extension's JSON schema. */
export function paymentIdentifierDeclaration(): Record<string, unknown> {
  return {
    info: { required: false },
    schema: {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: {
        required: { type: 'boolean' },
        id: { type: 'string', minLength: 16, maxLength: 128, pattern: ID_PATTERN },
      },
      required: ['required'],
    },
  };
}

export const paymentIdMigrations: Record<string, Migration> = {
  '004_payment_identifiers': {
    async up(db) {
      // key/request: the payment the id is bound to (its claim in runtime_payments, and what to settle to
      // finish it); answer_*: the answer served for it, replayed to later payments with the same id.
      await db.schema
        .createTable('runtime_payment_ids')
        .addColumn('payer', 'text', (c) => c.notNull())
        .addColumn('id', 'text', (c) => c.notNull())
        .addColumn('fingerprint', 'text', (c) => c.notNull())
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('request', 'text', (c) => c.notNull())
        .addColumn('answer_status', 'int4')
        .addColumn('answer_type', 'text')
        .addColumn('answer_body', 'text')
        .addColumn('settlement', 'text')
        .addColumn('created_at', 'timestamptz', (c) => c.notNull())
        .addColumn('answered_at', 'timestamptz')
        .addPrimaryKeyConstraint('runtime_payment_ids_pk', ['payer', 'id'])
        .execute();
      // For forgetting ids past their retention (forgetOld).
      await db.schema
        .createIndex('runtime_payment_ids_created')
        .on('runtime_payment_ids')
        .column('created_at')
        .execute();
    },
  },
  '005_payment_answers_uncompressed': {
    async up(db) {
      // Every identified payment writes its request (a few KB) and its answer (base64, often past 10 KB): trying to
      // compress them was the costliest write of a paid call on PGlite, for little (base64 hardly compresses), and they
      // are kept a day only. They are stored out of line as they are.
      await sql`alter table runtime_payment_ids
        alter column request set storage external,
        alter column answer_body set storage external`.execute(db);
    },
  },
};

/**
 * Who sent an identified payment and for what: the payer (its signature checked), the id, and the request's
 * fingerprint.
 */
export interface PaymentIdentity {
  payer: string;
  id: string;
  /** SHA-256 of the request and its price: the same id for a different request is a conflict, not a retry. */
  fingerprint: string;
}

/** An id's row: the identity, the payment it is bound to and, once served, that payment's answer. */
interface IdRow extends PaymentIdentity {
  /** The bound payment's claim (its key in runtime_payments) and its request, JSON. */
  key: string;
  request: string;
  answerStatus: number | null;
  answerType: string | null;
  /** Base64. */
  answerBody: string | null;
  /** The PAYMENT-RESPONSE header sent with the answer. */
  settlement: string | null;
}

interface Tables {
  runtime_payment_ids: IdRow & { createdAt: Date; answeredAt: Date | null };
  /** The paywall's claims (paywall.ts): only whether one exists is read here. */
  runtime_payments: { key: string };
}

const ID_COLUMNS = [
  'payer',
  'id',
  'fingerprint',
  'key',
  'request',
  'answerStatus',
  'answerType',
  'answerBody',
  'settlement',
] as const;

/**
 * The identity of a payment to a route whose quote advertises the extension, when it carries an id.
 * A malformed id is a 400 naming the field. The payer is the transaction's second signer (the exact
 * scheme's transfer authority), only when its signature verifies: an id is never matched on a payer
 * name alone; an unverifiable payment goes on without one, and verification refuses it.
 */
export async function identityOf(
  res: Response,
  header: string,
  quote: PaymentRequired,
  request: X402FacilitatorRequest,
): Promise<PaymentIdentity | undefined> {
  if (!quote.extensions?.[PAYMENT_IDENTIFIER]) return undefined;
  const sent = (decodeX402Header(header) as { extensions?: Record<string, unknown> } | undefined)?.extensions?.[
    PAYMENT_IDENTIFIER
  ] as { info?: { id?: unknown } } | undefined;
  const id = sent?.info?.id;
  if (id === undefined) return undefined;
  if (typeof id !== 'string' || id.length < 16 || id.length > 128 || !new RegExp(ID_PATTERN).test(id)) {
    const field = 'extensions.payment-identifier.info.id';
    throw new HttpError(400, 'invalid_request', `${field}: 16 to 128 characters of letters, digits, "-" and "_"`, {
      fields: [{ field, message: 'must be 16 to 128 characters of letters, digits, "-" and "_"' }],
    });
  }
  const payer = await signedPayer(request);
  if (!payer) return undefined;
  const requirements = request.paymentRequirements;
  const fingerprint = createHash('sha256')
    .update(
      JSON.stringify([
        res.req.method,
        quote.resource.url,
        res.req.body ?? null,
        requirements.amount,
        requirements.asset,
        requirements.payTo,
        requirements.network,
      ]),
    )
    .digest('hex');
  return { payer, id, fingerprint };
}

/**
 * The exact payment's payer: its transaction's second signer, when that signature verifies (on the thread pool, and
 * remembered: the facilitator checks the same signature next).
 */
export async function signedPayer(request: X402FacilitatorRequest): Promise<string | undefined> {
  const encoded = request.paymentPayload.payload.transaction;
  if (typeof encoded !== 'string') return undefined;
  try {
    const tx = parseTransaction(decodeBase64(encoded));
    const payer = tx.message.staticKeys[1];
    const key = payer ? base58Decode(payer) : undefined;
    const signature = tx.signatures[1];
    if (!payer || !key || !signature || tx.message.numRequiredSignatures < 2) return undefined;
    return (await verifyEd25519Async(key, tx.message.bytes, signature, { remember: true })) ? payer : undefined;
  } catch {
    return undefined;
  }
}

const conflict = (identity: PaymentIdentity) =>
  new HttpError(
    409,
    'payment_identifier_conflict',
    `Payment identifier ${identity.id} was used for a different request; use a new identifier for this one`,
    { paymentId: identity.id },
  );

/**
 * Before claiming: the stored answer of a payment with this id, when there is one (a 409 when the id
 * was used for another request). Checked first so that presenting a served payment again replays it.
 */
export async function storedAnswer(database: SharedDb, identity: PaymentIdentity): Promise<IdRow | undefined> {
  const row = await camelCaseDb<Tables>(database)
    .selectFrom('runtime_payment_ids')
    .select(ID_COLUMNS)
    .where('payer', '=', identity.payer)
    .where('id', '=', identity.id)
    .executeTakeFirst();
  if (!row) return undefined;
  if (row.fingerprint !== identity.fingerprint) throw conflict(identity);
  return row.answerStatus === null ? undefined : row;
}

/** Whether this identity (payer, id, same request) is the one bound to the payment `key`: its first presentation's. */
export async function boundTo(database: SharedDb, identity: PaymentIdentity, key: string): Promise<boolean> {
  const row = await camelCaseDb<Tables>(database)
    .selectFrom('runtime_payment_ids')
    .select(['key', 'fingerprint'])
    .where('payer', '=', identity.payer)
    .where('id', '=', identity.id)
    .executeTakeFirst();
  return row?.key === key && row.fingerprint === identity.fingerprint;
}

export type Binding = { bound: true } | { replay: IdRow } | { first: { key: string; request: X402FacilitatorRequest } };

/**
 * A payment presented for the first time, in one statement: `claim` (the paywall's insert of its claim, returning
 * its key) and, when that went in, this id bound to it. `bound` is false when the id is in use already: bindPaymentId
 * then examines it. Every statement of a paid call is a round trip to the database; this one is two writes.
 */
export async function claimWithId(
  database: SharedDb,
  claim: OperationNodeSource,
  identity: PaymentIdentity,
  key: string,
  request: X402FacilitatorRequest,
  now: Date,
): Promise<{ claimed: boolean; bound: boolean }> {
  await forgetOld(camelCaseDb<Tables>(database), now);
  const { rows } = await sql<{ claimed: boolean; bound: boolean }>`with claim as (${claim}),
    bound as (
      insert into runtime_payment_ids (payer, id, fingerprint, key, request, created_at)
      select ${identity.payer}::text, ${identity.id}::text, ${identity.fingerprint}::text, ${key}::text,
        ${JSON.stringify(request)}::text, ${now}::timestamptz
      where exists (select 1 from claim)
      on conflict (payer, id) do nothing
      returning id)
    select exists (select 1 from claim) as claimed, exists (select 1 from bound) as bound`.execute(database);
  return { claimed: rows[0]!.claimed, bound: rows[0]!.bound };
}

/**
 * With this payment's claim held: binds the id to it, unless the id is bound to an earlier payment that
 * still has a claim (in flight, settled, pending, refunded). Then this payment yields to that one: the
 * caller releases its own claim and goes on with the first payment (its key and stored request), exactly
 * as if it had been presented again. An id whose payment left no claim (it was refused or failed,
 * nothing charged) is rebound. The row is locked, so of two payments racing with one id only one is bound.
 */
export async function bindPaymentId(
  database: SharedDb,
  identity: PaymentIdentity,
  key: string,
  request: X402FacilitatorRequest,
  now: Date,
): Promise<Binding> {
  const db = camelCaseDb<Tables>(database);
  await forgetOld(db, now);
  const insert = (into: Kysely<Tables>) =>
    into
      .insertInto('runtime_payment_ids')
      .values({
        payer: identity.payer,
        id: identity.id,
        fingerprint: identity.fingerprint,
        key,
        request: JSON.stringify(request),
        createdAt: now,
      })
      .onConflict((oc) => oc.columns(['payer', 'id']).doNothing())
      .executeTakeFirst();
  // A new id (the usual case) is bound by its insert alone; one in use already is examined under its row's lock.
  if ((await insert(db)).numInsertedOrUpdatedRows) return { bound: true as const };
  return db.transaction().execute(async (trx) => {
    await insert(trx);
    const row = await trx
      .selectFrom('runtime_payment_ids')
      .select(ID_COLUMNS)
      .where('payer', '=', identity.payer)
      .where('id', '=', identity.id)
      .forUpdate()
      .executeTakeFirstOrThrow();
    if (row.fingerprint !== identity.fingerprint) throw conflict(identity);
    if (row.answerStatus !== null) return { replay: row };
    if (row.key === key) return { bound: true as const };
    const claim = await trx.selectFrom('runtime_payments').select('key').where('key', '=', row.key).executeTakeFirst();
    if (claim) return { first: { key: row.key, request: JSON.parse(row.request) as X402FacilitatorRequest } };
    await trx
      .updateTable('runtime_payment_ids')
      .set({ key, request: JSON.stringify(request) })
      .where('payer', '=', identity.payer)
      .where('id', '=', identity.id)
      .execute();
    return { bound: true as const };
  });
}

/**
 * How long an id and its stored answer are kept. A payment's transaction expires within minutes, so only a lost
 * answer is asked for again later (an agent that restarts with its spend log); a day covers that, and the table
 * (answer bodies included) does not grow for ever.
 */
export const PAYMENT_ID_RETENTION_MS = 24 * 3_600_000;
let lastPrune = 0;

/** Deletes ids older than the retention, at most once a minute per process. */
async function forgetOld(db: Kysely<Tables>, now: Date): Promise<void> {
  if (now.getTime() - lastPrune < 60_000) return;
  lastPrune = now.getTime();
  await db
    .deleteFrom('runtime_payment_ids')
    .where('createdAt', '<', new Date(now.getTime() - PAYMENT_ID_RETENTION_MS))
    .execute();
}

/** An identified payment's answer as it is kept: replayed whole (status, type, body, receipt) to a later payment. */
export interface KeptAnswer {
  status: number;
  type: string | undefined;
  body: Buffer | string;
  /** The PAYMENT-RESPONSE header sent with it. */
  settlement: string;
}

const base64Body = (answer: KeptAnswer) =>
  (Buffer.isBuffer(answer.body) ? answer.body : Buffer.from(answer.body)).toString('base64');

/**
 * Keeps the answer of the payment an id is bound to, in the statement that records its settlement: `record(kept)` is
 * the paywall's update of its claim, `kept` true within it when the answer was kept. Returns that update's rows.
 */
export async function recordWithAnswer<R>(
  database: SharedDb,
  identity: PaymentIdentity,
  key: string,
  answer: KeptAnswer,
  now: Date,
  record: (kept: RawBuilder<boolean>) => OperationNodeSource,
): Promise<R[]> {
  const body = base64Body(answer);
  const { rows } = await sql<R>`with kept_answer as (
      update runtime_payment_ids
      set answer_status = ${answer.status}::int4, answer_type = ${answer.type ?? null}::text, answer_body = ${body}::text,
        settlement = ${answer.settlement}::text, answered_at = ${now}::timestamptz
      where payer = ${identity.payer} and id = ${identity.id} and key = ${key}
      returning key)
    ${record(sql<boolean>`exists (select 1 from kept_answer)`)}`.execute(database);
  return rows;
}

/** Keeps the answer of the payment an id is bound to, before it is sent: a later payment with the id gets it. */
export async function storeAnswer(
  database: SharedDb,
  identity: PaymentIdentity,
  key: string,
  answer: KeptAnswer,
  now: Date,
): Promise<void> {
  await camelCaseDb<Tables>(database)
    .updateTable('runtime_payment_ids')
    .set({
      answerStatus: answer.status,
      answerType: answer.type ?? null,
      answerBody: base64Body(answer),
      settlement: answer.settlement,
      answeredAt: now,
    })
    .where('payer', '=', identity.payer)
    .where('id', '=', identity.id)
    .where('key', '=', key)
    .execute();
}

/** Answers a payment with its id's stored answer: the first payment's response and receipt; nothing is charged. */
export function replayAnswer(res: Response, requestId: string, row: IdRow): void {
  const body =
    row.answerBody === null
      ? Buffer.from(JSON.stringify(envelope(requestId, 'internal_error', 'The stored answer is missing')))
      : Buffer.from(row.answerBody, 'base64');
  res.statusCode = row.answerStatus ?? 500;
  res.setHeader('cache-control', 'no-store');
  if (row.answerType) res.setHeader('content-type', row.answerType);
  if (row.settlement) res.setHeader(PAYMENT_RESPONSE_HEADER, row.settlement);
  res.setHeader('payment-identifier-replayed', 'true');
  res.setHeader('content-length', body.length);
  res.end(body);
}
