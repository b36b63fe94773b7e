import { SiwxProofSchema, base58Decode, decodeX402Header, siwsMessage } from '@agent-economy/contracts';
import type { Migration } from 'kysely';
import { HttpError } from './errors';
import { verifyEd25519 } from '../solana/keys';
import type { SharedDb } from '../db';
import { camelCaseDb } from '../db/camel-case';

// Verifies SIGN-IN-WITH-X proofs (research/x402.md §4): bound to this deployment's origin and network,
// fresh, signed by the address it names, and used once.

export const MAX_PROOF_AGE_MS = 5 * 60_000;
const CLOCK_SKEW_MS = 30_000;

export const runtimeMigrations: Record<string, Migration> = {
  '001_siwx_nonces': {
    async up(db) {
      await db.schema
        .createTable('runtime_siwx_nonces')
        .addColumn('nonce', 'text', (c) => c.primaryKey())
        .addColumn('address', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
        .execute();
    },
  },
};

/** A nonce used by an accepted proof, kept until the proof could no longer be accepted anyway. */
interface NonceRow {
  nonce: string;
  address: string;
  expiresAt: Date;
}

interface Tables {
  runtime_siwx_nonces: NonceRow;
}

export interface SiwxPolicy {
  /** The deployment's public origin, e.g. https://edu.example.com (from its public URL, never the Host header). */
  origin: string;
  /** The CAIP-2 network proofs must name (the deployment's). */
  network: string;
  db: SharedDb;
  now?: () => Date;
}

const refuse = (reason: string, message: string) =>
  new HttpError(401, 'siwx_invalid', `SIGN-IN-WITH-X refused: ${message}`, { reason });

/** The 401 for a call to a SIGN-IN-WITH-X route that proves no wallet. */
export const siwxMissing = () => refuse('missing', 'this operation needs a SIGN-IN-WITH-X header proving your wallet');

function verifySignature(address: string, message: string, signature: string): boolean {
  const publicKey = base58Decode(address);
  const sig = base58Decode(signature);
  return !!publicKey && !!sig && verifyEd25519(publicKey, new TextEncoder().encode(message), sig);
}

/** The wallet address a SIGN-IN-WITH-X header proves, or a 401 siwx_invalid naming the reason. */
export async function verifySiwx(header: string | undefined, policy: SiwxPolicy): Promise<string> {
  if (!header) throw siwxMissing();
  const parsed = SiwxProofSchema.safeParse(decodeX402Header(header));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw refuse(
      'malformed',
      `the header is not a base64 JSON proof (${issue?.path.join('.') || 'body'}: ${issue?.message})`,
    );
  }
  const proof = parsed.data;
  const origin = new URL(policy.origin);
  if (proof.domain !== origin.host) throw refuse('domain_mismatch', `domain must be ${origin.host}`);
  let uri: URL;
  try {
    uri = new URL(proof.uri);
  } catch {
    throw refuse('uri_mismatch', `uri must be on ${origin.origin}`);
  }
  if (uri.origin !== origin.origin) throw refuse('uri_mismatch', `uri must be on ${origin.origin}`);
  if (proof.chainId !== policy.network) throw refuse('unsupported_chain', `chainId must be ${policy.network}`);

  const now = (policy.now?.() ?? new Date()).getTime();
  const issuedAt = Date.parse(proof.issuedAt);
  if (issuedAt > now + CLOCK_SKEW_MS) throw refuse('issued_at_in_future', 'issuedAt is in the future');
  if (now - issuedAt > MAX_PROOF_AGE_MS) throw refuse('issued_at_too_old', 'issuedAt is more than 5 minutes old');
  if (proof.expirationTime && Date.parse(proof.expirationTime) <= now) throw refuse('expired', 'the proof has expired');
  if (proof.notBefore && Date.parse(proof.notBefore) > now + CLOCK_SKEW_MS)
    throw refuse('not_yet_valid', 'notBefore is in the future');

  const { signature, ...fields } = proof;
  if (!verifySignature(proof.address, siwsMessage(fields), signature)) {
    throw refuse('signature_invalid', 'the signature does not match the address and the signed fields');
  }

  // A nonce is kept until its proof could no longer be accepted anyway; then it may be forgotten.
  const expiresAt = new Date(
    Math.min(issuedAt + MAX_PROOF_AGE_MS, proof.expirationTime ? Date.parse(proof.expirationTime) : Infinity) +
      CLOCK_SKEW_MS,
  );
  const db = camelCaseDb<Tables>(policy.db);
  const inserted = await db
    .insertInto('runtime_siwx_nonces')
    .values({ nonce: proof.nonce, address: proof.address, expiresAt })
    .onConflict((oc) => oc.doNothing())
    .executeTakeFirst();
  if (!inserted.numInsertedOrUpdatedRows)
    throw refuse('nonce_reused', 'this nonce was already used; sign a fresh proof');
  await sweepNonces(policy.db, now);
  return proof.address;
}

/** How often expired nonces are deleted, per database and process. */
export const NONCE_SWEEP_INTERVAL_MS = 60_000;
const lastSweep = new WeakMap<object, number>();

/**
 * Forgets nonces whose proofs could no longer be accepted anyway, at most once a minute (per database, per process)
 * rather than on every request. A row kept longer can only refuse a reused nonce for longer, never accept one, so
 * replay protection does not depend on when this runs.
 */
async function sweepNonces(database: SharedDb, now: number): Promise<void> {
  const last = lastSweep.get(database);
  // A clock moved back (tests) sweeps too.
  if (last !== undefined && now - last < NONCE_SWEEP_INTERVAL_MS && now >= last) return;
  lastSweep.set(database, now);
  await camelCaseDb<Tables>(database)
    .deleteFrom('runtime_siwx_nonces')
    .where('expiresAt', '<', new Date(now - CLOCK_SKEW_MS))
    .execute();
}
