import { SiwxProofSchema, base58Decode, decodeX402Header, siwsMessage } from '@agent-economy/contracts';
import { sql, type Kysely, type Migration } from 'kysely';
import { HttpError } from './errors';
import { verifyEd25519 } from './wallet';

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

export interface SiwxPolicy {
  /** The deployment's public origin, e.g. https://edu.example.com (from its public URL, never the Host header). */
  origin: string;
  /** The CAIP-2 network proofs must name (the deployment's). */
  network: string;
  db: Kysely<any>;
  now?: () => Date;
}

const refuse = (reason: string, message: string) => new HttpError(401, 'siwx_invalid', `SIGN-IN-WITH-X refused: ${message}`, { reason });

function verifySignature(address: string, message: string, signature: string): boolean {
  const publicKey = base58Decode(address);
  const sig = base58Decode(signature);
  return !!publicKey && !!sig && verifyEd25519(publicKey, new TextEncoder().encode(message), sig);
}

/** The wallet address a SIGN-IN-WITH-X header proves, or a 401 siwx_invalid naming the reason. */
export async function verifySiwx(header: string | undefined, policy: SiwxPolicy): Promise<string> {
  if (!header) throw refuse('missing', 'this operation needs a SIGN-IN-WITH-X header proving your wallet');
  const parsed = SiwxProofSchema.safeParse(decodeX402Header(header));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw refuse('malformed', `the header is not a base64 JSON proof (${issue?.path.join('.') || 'body'}: ${issue?.message})`);
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
  if (proof.notBefore && Date.parse(proof.notBefore) > now + CLOCK_SKEW_MS) throw refuse('not_yet_valid', 'notBefore is in the future');

  const { signature, ...fields } = proof;
  if (!verifySignature(proof.address, siwsMessage(fields), signature)) {
    throw refuse('signature_invalid', 'the signature does not match the address and the signed fields');
  }

  // A nonce is kept until its proof could no longer be accepted anyway; then it may be forgotten.
  const expiresAt = new Date(Math.min(issuedAt + MAX_PROOF_AGE_MS, proof.expirationTime ? Date.parse(proof.expirationTime) : Infinity) + CLOCK_SKEW_MS);
  const inserted = await policy.db
    .insertInto('runtime_siwx_nonces')
    .values({ nonce: proof.nonce, address: proof.address, expires_at: expiresAt })
    .onConflict((oc) => oc.doNothing())
    .executeTakeFirst();
  if (!inserted.numInsertedOrUpdatedRows) throw refuse('nonce_reused', 'this nonce was already used; sign a fresh proof');
  await sql`delete from runtime_siwx_nonces where expires_at < ${new Date(now - CLOCK_SKEW_MS)}`.execute(policy.db);
  return proof.address;
}
