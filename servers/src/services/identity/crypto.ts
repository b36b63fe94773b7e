import { createHash } from 'node:crypto';
import { base58Decode, base58Encode } from '@agent-economy/contracts';
import { signEd25519, verifyEd25519, type Wallet } from '../../solana/keys';

// The cryptography of the identity service: Ed25519 Multikeys (did:key encoding), proofs of key
// possession, JCS (RFC 8785) and the eddsa-jcs-2022 Data Integrity cryptosuite. Ed25519 itself is
// runtime/wallet.ts (node:crypto).

/** Multicodec varint of an Ed25519 public key (0xed, as an unsigned varint: 0xed 0x01). */
const ED25519_PUB_MULTICODEC = [0xed, 0x01] as const;

/** Multikey multibase of a 32-byte Ed25519 public key: "z" + base58btc(0xed 0x01 ‖ key), always "z6Mk…". */
export function ed25519Multikey(publicKey: Uint8Array): string {
  if (publicKey.length !== 32) throw new Error(`an Ed25519 public key has 32 bytes, not ${publicKey.length}`);
  return 'z' + base58Encode(new Uint8Array([...ED25519_PUB_MULTICODEC, ...publicKey]));
}

/** The 32-byte Ed25519 public key inside a Multikey multibase, or undefined when it is not one. */
export function decodeEd25519Multikey(multibase: string): Uint8Array | undefined {
  if (!multibase.startsWith('z')) return undefined;
  const bytes = base58Decode(multibase.slice(1));
  if (!bytes || bytes.length !== 34 || bytes[0] !== ED25519_PUB_MULTICODEC[0] || bytes[1] !== ED25519_PUB_MULTICODEC[1])
    return undefined;
  return bytes.subarray(2);
}

/** did:key of an Ed25519 public key (the did:key method: the Multikey itself is the method-specific id). */
export function didKeyOf(publicKey: Uint8Array): string {
  return `did:key:${ed25519Multikey(publicKey)}`;
}

/** The Ed25519 public key a did:key names, or undefined. */
export function publicKeyOfDidKey(did: string): Uint8Array | undefined {
  return did.startsWith('did:key:') ? decodeEd25519Multikey(did.slice('did:key:'.length)) : undefined;
}

/** Multikey of a Solana wallet address: the address is the wallet's Ed25519 public key in base58. */
export function multikeyOfAddress(address: string): string {
  const bytes = base58Decode(address);
  if (!bytes || bytes.length !== 32) throw new Error(`not a Solana address: ${address}`);
  return ed25519Multikey(bytes);
}

/** The text a key's holder signs to prove possession of it for a controller wallet (see the contract's KeyProof). */
export function keyProofMessage(controller: string, publicKeyMultibase: string): string {
  return `agent-economy identity key proof\ncontroller: ${controller}\nkey: ${publicKeyMultibase}`;
}

export function verifyKeyProof(controller: string, publicKeyMultibase: string, proof: string): boolean {
  const publicKey = decodeEd25519Multikey(publicKeyMultibase);
  const signature = base58Decode(proof);
  if (!publicKey || !signature) return false;
  return verifyEd25519(publicKey, new TextEncoder().encode(keyProofMessage(controller, publicKeyMultibase)), signature);
}

/** RFC 8785 JSON Canonicalization Scheme: keys sorted by UTF-16 code units, ECMAScript number and string forms. */
export function canonicalize(value: unknown): string {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error('JCS cannot represent a non-finite number');
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map((v) => canonicalize(v === undefined ? null : v)).join(',')}]`;
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    // Default string sort compares UTF-16 code units, as RFC 8785 §3.2.3 requires.
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalize(v)}`).join(',')}}`;
  }
  throw new Error(`JCS cannot represent a ${typeof value}`);
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/** eddsa-jcs-2022 hashData: SHA-256(JCS(proof config)) ‖ SHA-256(JCS(unsecured document)), 64 bytes. */
function hashData(unsecured: Record<string, unknown>, proofOptions: Record<string, unknown>): Uint8Array {
  // The proof configuration carries the document's @context (Data Integrity EdDSA, "Proof Configuration").
  const config =
    unsecured['@context'] === undefined ? proofOptions : { ...proofOptions, '@context': unsecured['@context'] };
  return new Uint8Array(Buffer.concat([sha256(canonicalize(config)), sha256(canonicalize(unsecured))]));
}

export interface ProofOptions {
  type: 'DataIntegrityProof';
  cryptosuite: 'eddsa-jcs-2022';
  created: string;
  verificationMethod: string;
  proofPurpose: 'assertionMethod';
}

/**
 * The 64 bytes an eddsa-jcs-2022 proof signs for a document (without proof) and its proof options: what an issuer
 * signs.
 */
export function dataIntegrityInput(unsecured: Record<string, unknown>, options: object): Uint8Array {
  return hashData(unsecured, { ...options });
}

/** Adds an eddsa-jcs-2022 Data Integrity proof by `signer` to a document (which must have no proof yet). */
export function signDataIntegrity<D extends Record<string, unknown>>(
  document: D,
  options: ProofOptions,
  signer: Wallet,
): D & { proof: ProofOptions & { proofValue: string } } {
  const signature = signEd25519(signer, hashData(document, { ...options }));
  return { ...document, proof: { ...options, proofValue: 'z' + base58Encode(signature) } };
}

/**
 * Verifies the eddsa-jcs-2022 proof of a secured document against a 32-byte Ed25519 public key.
 * False for any malformed proof (wrong suite, a proofValue that is not "z" + base58 of 64 bytes, a
 * proof @context that the document's does not start with).
 */
export function verifyDataIntegrity(secured: Record<string, unknown>, publicKey: Uint8Array): boolean {
  const { proof, ...unsecured } = secured;
  if (!proof || typeof proof !== 'object' || Array.isArray(proof)) return false;
  const { proofValue, ...options } = proof as Record<string, unknown>;
  if (options.type !== 'DataIntegrityProof' || options.cryptosuite !== 'eddsa-jcs-2022') return false;
  if (typeof proofValue !== 'string' || !proofValue.startsWith('z')) return false;
  const signature = base58Decode(proofValue.slice(1));
  if (!signature || signature.length !== 64) return false;
  try {
    const proofContext = options['@context'];
    if (proofContext !== undefined) {
      // The document's @context must start with the proof's, in order; the proof's then stands for it.
      const documentContext = unsecured['@context'];
      if (!Array.isArray(proofContext) || !Array.isArray(documentContext)) return false;
      if (!proofContext.every((entry, i) => canonicalize(entry) === canonicalize(documentContext[i]))) return false;
      unsecured['@context'] = proofContext;
    }
    return verifyEd25519(publicKey, hashData(unsecured, options), signature);
  } catch {
    // What JCS cannot canonicalize (nesting too deep to walk) cannot have been signed: it does not verify.
    return false;
  }
}
