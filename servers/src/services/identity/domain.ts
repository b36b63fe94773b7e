import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import {
  atomicToUsd,
  base58Decode,
  base58Encode,
  usdToAtomic,
  type Capability,
  type CreateIdentityRequest,
  type CredentialClaims,
  type CredentialKind,
  type CredentialRecord,
  type CredentialStatus,
  type CredentialVerification,
  type DidDocument,
  type Identity,
  type IdentityDocument,
  type IdentitySummary,
  type PrepareCredentialRequest,
  type KindCounts,
  type ReputationReport,
  type TradeEvidence,
  type TrustChain,
  type TrustLink,
  type TrustNode,
  type TrustRiskFlag,
  type TrustScore,
  type TrustScoreRequest,
  type UpdateIdentityRequest,
  type VerifiableCredential,
  type VerificationFailure,
  type Voucher,
} from '@agent-economy/contracts';
import type { AiTask, Generator } from '../../ai';
import { HttpError, conflict, unprocessable } from '../../runtime/errors';
import { verifyEd25519 } from '../../solana/keys';
import {
  dataIntegrityInput,
  decodeEd25519Multikey,
  multikeyOfAddress,
  publicKeyOfDidKey,
  verifyDataIntegrity,
  verifyKeyProof,
  type ProofOptions,
} from './crypto';
import type { CredentialRow, IdentityChange, IdentityRecord, StoredCapability } from './store';

// The identity domain: plain functions over plain data. Handlers load the data, call these, store the result.

export const MAX_IDENTITIES_PER_CONTROLLER = 100;
export const MAX_CAPABILITIES = 50;
export const MAX_METADATA_KEYS = 20;
/** Held credentials embedded in an identity document; GET /api/credentials/:did pages through the rest. */
export const DOCUMENT_CREDENTIALS = 50;
export const MAX_TRUST_NODES = 200;
/** Depth of the trust chain summarized in identity documents and used by the trust score. */
export const DOCUMENT_CHAIN_DEPTH = 3;
const MAX_VALIDITY_MS = 5 * 365.25 * 86_400_000;
const DAY_MS = 86_400_000;
/** An identity younger than this is flagged new_identity. */
const NEW_IDENTITY_DAYS = 7;
/** A dispute rate above this is flagged high_dispute_rate. */
const HIGH_DISPUTE_RATE = 0.1;

const DID_PATTERN = /^did:agent:[1-9A-HJ-NP-Za-km-z]{16,24}$/;
export const KIND_ORDER: CredentialKind[] = ['skill_attestation', 'trade_certification', 'audit_badge'];
const KIND_TYPE: Record<CredentialKind, string> = {
  skill_attestation: 'SkillAttestation',
  trade_certification: 'TradeCertification',
  audit_badge: 'AuditBadge',
};
const CREDENTIAL_URN = 'urn:agent-economy:credential:';

const iso = (date: Date) => date.toISOString();

/** A fresh did:agent DID: base58btc of 16 random bytes (it never changes, whatever keys rotate). */
export function newDid(): string {
  for (;;) {
    const did = `did:agent:${base58Encode(randomBytes(16))}`;
    if (DID_PATTERN.test(did)) return did;
  }
}

export function newCredentialId(): string {
  for (;;) {
    const id = `cred_${base58Encode(randomBytes(16))}`;
    if (id.length >= 21) return id;
  }
}

export const credentialUrn = (credentialId: string) => `${CREDENTIAL_URN}${credentialId}`;

/** A credential's status at `now`: revoked is final; otherwise it is expired once validUntil has passed. */
export function effectiveStatus(credential: Pick<CredentialRow, 'status' | 'validUntil'>, now: Date): CredentialStatus {
  if (credential.status === 'revoked') return 'revoked';
  if (credential.validUntil && credential.validUntil.getTime() <= now.getTime()) return 'expired';
  return credential.status;
}

const emptyKinds = (): KindCounts => ({ skill_attestation: 0, trade_certification: 0, audit_badge: 0 });

// ---- identities ----

/** The new identity a create request describes, for the calling wallet; throws the contract's 422s. */
export function planCreate(
  body: CreateIdentityRequest,
  caller: string,
  controlled: number,
  now: Date,
): { identity: Omit<IdentityRecord, 'seq' | 'keys'>; key: string } {
  if (controlled >= MAX_IDENTITIES_PER_CONTROLLER) {
    throw unprocessable(
      'identity_limit_reached',
      `The wallet ${caller} already controls ${controlled} identities, the most one wallet may`,
      {
        limit: MAX_IDENTITIES_PER_CONTROLLER,
      },
    );
  }
  if (body.key && !verifyKeyProof(caller, body.key.publicKeyMultibase, body.key.proof)) {
    throw keyProofInvalid(caller, body.key.publicKeyMultibase);
  }
  const at = iso(now);
  return {
    identity: {
      did: newDid(),
      type: body.type,
      status: 'active',
      name: body.name,
      controller: caller,
      capabilities: body.capabilities.map((c) => ({ ...c, declaredAt: at })),
      metadata: body.metadata,
      serviceEndpoints: body.serviceEndpoints,
      version: 1,
      createdAt: now,
      updatedAt: now,
    },
    // Without a key of its own, the DID's key is the controller wallet's Ed25519 key (a Solana address is one).
    key: body.key?.publicKeyMultibase ?? multikeyOfAddress(caller),
  };
}

function keyProofInvalid(controller: string, key: string) {
  return unprocessable(
    'key_proof_invalid',
    'The key proof does not verify: sign "agent-economy identity key proof\\ncontroller: <your wallet>\\nkey: <publicKeyMultibase>" with the key',
    { controller, publicKeyMultibase: key },
  );
}

/**
 * Checks that the caller may change the identity at all: 403 not_controller, 409 did_deactivated, 409 version_conflict.
 */
export function assertMayUpdate(identity: IdentityRecord, caller: string, expectedVersion?: number): void {
  if (identity.controller !== caller) {
    throw new HttpError(403, 'not_controller', `Only the controller wallet of ${identity.did} may change it`, {
      did: identity.did,
    });
  }
  if (identity.status === 'deactivated')
    throw conflict('did_deactivated', `${identity.did} is deactivated and can no longer change`, { did: identity.did });
  if (expectedVersion !== undefined && expectedVersion !== identity.version) {
    throw conflict('version_conflict', `${identity.did} is at version ${identity.version}, not ${expectedVersion}`, {
      did: identity.did,
      version: identity.version,
      expectedVersion,
    });
  }
}

/** The identity after an update request, or the contract's 403/409/422; nothing is written here. */
export function planUpdate(
  identity: IdentityRecord,
  body: UpdateIdentityRequest,
  caller: string,
  now: Date,
): IdentityChange {
  assertMayUpdate(identity, caller, body.expectedVersion);
  const at = iso(now);
  let capabilities: StoredCapability[] = identity.capabilities;
  if (body.removeCapabilities) {
    const declared = new Set(capabilities.map((c) => c.id));
    const missing = body.removeCapabilities.filter((id) => !declared.has(id));
    if (missing.length) {
      throw unprocessable('capability_not_declared', `${identity.did} does not declare ${missing.join(', ')}`, {
        capabilities: missing,
      });
    }
    const removed = new Set(body.removeCapabilities);
    capabilities = capabilities.filter((c) => !removed.has(c.id));
  }
  for (const added of body.addCapabilities ?? []) {
    // A capability declared again is replaced in place: a new declaration, dated now.
    const next = { ...added, declaredAt: at };
    const index = capabilities.findIndex((c) => c.id === added.id);
    capabilities = index < 0 ? [...capabilities, next] : capabilities.map((c, i) => (i === index ? next : c));
  }
  if (capabilities.length > MAX_CAPABILITIES) {
    throw unprocessable(
      'too_many_capabilities',
      `The change leaves ${capabilities.length} capabilities; at most ${MAX_CAPABILITIES}`,
      { count: capabilities.length, limit: MAX_CAPABILITIES },
    );
  }
  const metadata: Record<string, string> = { ...identity.metadata };
  for (const [key, value] of Object.entries(body.metadata ?? {})) {
    if (value === null) delete metadata[key];
    else metadata[key] = value;
  }
  if (Object.keys(metadata).length > MAX_METADATA_KEYS) {
    throw unprocessable(
      'too_many_metadata_keys',
      `The change leaves ${Object.keys(metadata).length} metadata keys; at most ${MAX_METADATA_KEYS}`,
      {
        count: Object.keys(metadata).length,
        limit: MAX_METADATA_KEYS,
      },
    );
  }
  if (body.rotateKey) {
    const { publicKeyMultibase, proof } = body.rotateKey;
    if (!verifyKeyProof(identity.controller, publicKeyMultibase, proof))
      throw keyProofInvalid(identity.controller, publicKeyMultibase);
    if (identity.keys.some((k) => k.publicKeyMultibase === publicKeyMultibase)) {
      throw unprocessable('key_reused', `${identity.did} has used this key before; rotate to a new key`, {
        publicKeyMultibase,
      });
    }
  }
  return {
    name: body.name ?? identity.name,
    status: body.deactivate ? 'deactivated' : identity.status,
    capabilities,
    metadata,
    serviceEndpoints: body.serviceEndpoints ?? identity.serviceEndpoints,
    ...(body.rotateKey ? { rotateTo: body.rotateKey.publicKeyMultibase } : {}),
  };
}

/**
 * The W3C DID document: the current key (which signs the DID's credentials), the controller wallet's key, the service
 * endpoints.
 */
export function didDocument(identity: IdentityRecord): DidDocument {
  const { did } = identity;
  const current = identity.keys.find((k) => k.status === 'current')!;
  const keyId = `${did}#key-${current.n}`;
  const method = (id: string, publicKeyMultibase: string) => ({
    id,
    type: 'Multikey' as const,
    controller: did,
    publicKeyMultibase,
  });
  return {
    '@context': ['https://www.w3.org/ns/did/v1', 'https://w3id.org/security/multikey/v1'],
    id: did,
    controller: did,
    verificationMethod: [
      method(keyId, current.publicKeyMultibase),
      method(`${did}#controller`, multikeyOfAddress(identity.controller)),
    ],
    authentication: [keyId, `${did}#controller`],
    assertionMethod: [keyId],
    capabilityInvocation: [`${did}#controller`],
    service: identity.serviceEndpoints.map((e) => ({ id: `${did}#${e.id}`, type: e.type, serviceEndpoint: e.url })),
  };
}

/**
 * Whether a credential is third-party trust: its issuer is a DID of another controller wallet than its subject's. A
 * second DID of the same wallet vouching is self-attestation. `controllerOf` gives a DID's controller wallet; a
 * credential whose issuer or subject it does not know is not counted.
 */
export function fromAnotherController(controllerOf: (did: string) => string | undefined) {
  return (c: Pick<CredentialRow, 'issuer' | 'subject'>): boolean => {
    const issuer = controllerOf(c.issuer);
    const subject = controllerOf(c.subject);
    return !!issuer && !!subject && issuer !== subject;
  };
}

export type ThirdParty = (c: CredentialRow) => boolean;

/** Active skill attestations from DIDs of other controller wallets, by skill, among the credentials a DID holds. */
export function attestationCounts(
  did: string,
  held: CredentialRow[],
  now: Date,
  thirdParty: ThirdParty,
): Map<string, number> {
  const counts = new Map<string, number>();
  for (const c of held) {
    if (
      c.subject !== did ||
      !thirdParty(c) ||
      c.claims.kind !== 'skill_attestation' ||
      effectiveStatus(c, now) !== 'active'
    )
      continue;
    counts.set(c.claims.skill, (counts.get(c.claims.skill) ?? 0) + 1);
  }
  return counts;
}

export function identityView(
  identity: IdentityRecord,
  held: CredentialRow[],
  now: Date,
  thirdParty: ThirdParty,
): Identity {
  const attested = attestationCounts(identity.did, held, now, thirdParty);
  return {
    did: identity.did,
    type: identity.type,
    status: identity.status,
    name: identity.name,
    controller: identity.controller,
    capabilities: identity.capabilities.map((c): Capability => ({
      ...c,
      attested: (attested.get(c.id) ?? 0) > 0,
      attestations: attested.get(c.id) ?? 0,
    })),
    metadata: identity.metadata,
    serviceEndpoints: identity.serviceEndpoints,
    keys: identity.keys.map((k) => ({
      id: `${identity.did}#key-${k.n}`,
      type: 'Multikey' as const,
      publicKeyMultibase: k.publicKeyMultibase,
      status: k.status,
      createdAt: iso(k.createdAt),
      rotatedAt: k.rotatedAt ? iso(k.rotatedAt) : null,
    })),
    version: identity.version,
    createdAt: iso(identity.createdAt),
    updatedAt: iso(identity.updatedAt),
  };
}

export function identitySummary(
  identity: IdentityRecord,
  held: CredentialRow[],
  now: Date,
  thirdParty: ThirdParty,
): IdentitySummary {
  const attested = attestationCounts(identity.did, held, now, thirdParty);
  return {
    did: identity.did,
    type: identity.type,
    status: identity.status,
    name: identity.name,
    controller: identity.controller,
    capabilities: identity.capabilities.map((c) => c.id),
    attestedCapabilities: identity.capabilities.filter((c) => attested.has(c.id)).map((c) => c.id),
    activeCredentials: held.filter((c) => c.subject === identity.did && effectiveStatus(c, now) === 'active').length,
    createdAt: iso(identity.createdAt),
    updatedAt: iso(identity.updatedAt),
  };
}

export function identityDocument(
  identity: IdentityRecord,
  held: CredentialRow[],
  chain: Pick<TrustChain, 'vouchers' | 'verified'>,
  now: Date,
  thirdParty: ThirdParty,
): IdentityDocument {
  return {
    ...identityView(identity, held, now, thirdParty),
    didDocument: didDocument(identity),
    didDocumentMetadata: {
      created: iso(identity.createdAt),
      updated: iso(identity.updatedAt),
      versionId: String(identity.version),
      deactivated: identity.status === 'deactivated',
    },
    credentials: held.slice(0, DOCUMENT_CREDENTIALS).map((c) => credentialRecord(c, now, thirdParty)),
    trustChain: { vouchers: chain.vouchers, verified: chain.verified },
  };
}

// ---- credentials ----

export function credentialRecord(row: CredentialRow, now: Date, thirdParty: ThirdParty): CredentialRecord {
  return {
    credentialId: row.credentialId,
    kind: row.kind,
    issuer: row.issuer,
    subject: row.subject,
    status: effectiveStatus(row, now),
    statusReason: row.statusReason,
    statusChangedAt: row.statusChangedAt ? iso(row.statusChangedAt) : null,
    issuedAt: iso(row.issuedAt),
    validUntil: row.validUntil ? iso(row.validUntil) : null,
    claims: row.claims,
    credential: row.document,
    sameController: !thirdParty(row),
  };
}

/**
 * The checks an issue request must pass, in the contract's order: who may issue (403), who exists
 * (404 by the caller), who is active (409), then the domain rules (422). Nothing is written.
 */
export function checkIssue(
  body: PrepareCredentialRequest,
  issuer: IdentityRecord,
  subject: IdentityRecord,
  caller: string,
  now: Date,
): void {
  if (issuer.controller !== caller) {
    throw new HttpError(403, 'not_issuer_controller', `Only the controller wallet of ${issuer.did} may issue as it`, {
      issuer: issuer.did,
    });
  }
  for (const identity of [issuer, subject]) {
    if (identity.status === 'deactivated')
      throw conflict('did_deactivated', `${identity.did} is deactivated`, { did: identity.did });
  }
  if (issuer.did === subject.did)
    throw unprocessable('self_attestation', 'A DID cannot issue a credential to itself', { did: issuer.did });
  const claims = body.claims;
  if (claims.kind === 'skill_attestation' && !subject.capabilities.some((c) => c.id === claims.skill)) {
    throw unprocessable('capability_not_declared', `${subject.did} does not declare the capability "${claims.skill}"`, {
      skill: claims.skill,
      declared: subject.capabilities.map((c) => c.id),
    });
  }
  // The wire format only checks the shape of a time; a date such as 2026-02-30 is caught here, as a domain rule.
  if (claims.kind === 'trade_certification' && !(realTime(claims.periodStart) <= realTime(claims.periodEnd))) {
    throw unprocessable('invalid_period', 'periodEnd must be a real time no earlier than periodStart', {
      periodStart: claims.periodStart,
      periodEnd: claims.periodEnd,
    });
  }
  if (body.validUntil !== undefined) {
    const until = realTime(body.validUntil);
    if (Number.isNaN(until) || until <= now.getTime() || until - now.getTime() > MAX_VALIDITY_MS) {
      throw unprocessable('invalid_validity', 'validUntil must be in the future and at most 5 years away', {
        validUntil: body.validUntil,
      });
    }
  }
}

/** Milliseconds of an ISO time that names a real calendar moment (it round-trips), else NaN. */
function realTime(text: string): number {
  const ms = Date.parse(text);
  return Number.isNaN(ms) || new Date(ms).toISOString() !== text ? NaN : ms;
}

/** The subject's claims in the credential: the request's claims without the kind, which the type carries. */
function subjectClaims(claims: CredentialClaims): Record<string, unknown> {
  const { kind: _kind, ...rest } = claims;
  return rest;
}

/** How long a prepared credential waits for its issuer's signature. */
export const PREPARED_TTL_MS = 10 * 60_000;

/** The issuer's current key as a verification method id, `<did>#key-<n>`, with its public key. */
export function currentKeyOf(issuer: IdentityRecord): { verificationMethod: string; publicKey: Uint8Array } {
  const current = issuer.keys.find((k) => k.status === 'current')!;
  return {
    verificationMethod: `${issuer.did}#key-${current.n}`,
    publicKey: decodeEd25519Multikey(current.publicKeyMultibase)!,
  };
}

export type UnsignedCredential = Omit<VerifiableCredential, 'proof'> & { proof: ProofOptions };

/**
 * A W3C VC Data Model 2.0 credential ready for its issuer to sign with eddsa-jcs-2022: the document, its proof options
 * naming the issuer's current key, and the exact bytes that key must sign. The registry never signs: it holds no key.
 */
export function prepareCredential(
  input: {
    credentialId: string;
    issuer: IdentityRecord;
    subject: string;
    claims: CredentialClaims;
    validUntil?: string;
    statusUrl: string;
  },
  now: Date,
): { credential: UnsignedCredential; signingInput: Uint8Array } {
  const unsigned = {
    '@context': ['https://www.w3.org/ns/credentials/v2'],
    id: credentialUrn(input.credentialId),
    type: ['VerifiableCredential', KIND_TYPE[input.claims.kind]],
    issuer: input.issuer.did,
    validFrom: iso(now),
    ...(input.validUntil ? { validUntil: input.validUntil } : {}),
    credentialSubject: { id: input.subject, ...subjectClaims(input.claims) },
    credentialStatus: { id: input.statusUrl, type: 'RegistryStatus' as const, statusPurpose: 'revocation' as const },
  };
  const options: ProofOptions = {
    type: 'DataIntegrityProof',
    cryptosuite: 'eddsa-jcs-2022',
    created: iso(now),
    verificationMethod: currentKeyOf(input.issuer).verificationMethod,
    proofPurpose: 'assertionMethod',
  };
  return { credential: { ...unsigned, proof: options }, signingInput: dataIntegrityInput(unsigned, options) };
}

/**
 * The prepared credential with the issuer's signature, once it verifies with the key the proof names, which must still
 * be the issuer's current key; 409 key_rotated or 422 proof_invalid otherwise.
 */
export function completeCredential(
  prepared: UnsignedCredential,
  proofValue: string,
  issuer: IdentityRecord,
): VerifiableCredential {
  const { verificationMethod, publicKey } = currentKeyOf(issuer);
  if (prepared.proof.verificationMethod !== verificationMethod) {
    throw conflict('key_rotated', `${issuer.did} rotated its key since the credential was prepared; prepare it again`, {
      verificationMethod,
    });
  }
  const { proof, ...unsigned } = prepared;
  const signature = base58Decode(proofValue.slice(1));
  if (
    !signature ||
    signature.length !== 64 ||
    !verifyEd25519(publicKey, dataIntegrityInput(unsigned, proof), signature)
  ) {
    throw unprocessable(
      'proof_invalid',
      `proofValue is not ${verificationMethod}'s Ed25519 signature of the prepared credential's signingInput`,
      { verificationMethod },
    );
  }
  return { ...unsigned, proof: { ...proof, proofValue } } as VerifiableCredential;
}

/** The credential id a presented document names, when it is one of ours. */
export function credentialIdOf(document: { id: string }): string | undefined {
  if (!document.id.startsWith(CREDENTIAL_URN)) return undefined;
  const id = document.id.slice(CREDENTIAL_URN.length);
  return /^cred_[A-Za-z0-9]{16,40}$/.test(id) ? id : undefined;
}

export function issuerOf(document: Record<string, unknown>): string | undefined {
  const issuer = document.issuer;
  if (typeof issuer === 'string') return issuer;
  if (issuer && typeof issuer === 'object' && typeof (issuer as { id?: unknown }).id === 'string')
    return (issuer as { id: string }).id;
  return undefined;
}

export function subjectOf(document: Record<string, unknown>): string | undefined {
  const subject = document.credentialSubject;
  if (
    subject &&
    typeof subject === 'object' &&
    !Array.isArray(subject) &&
    typeof (subject as { id?: unknown }).id === 'string'
  )
    return (subject as { id: string }).id;
  return undefined;
}

export function kindOf(document: Record<string, unknown>): CredentialKind | null {
  const types = Array.isArray(document.type) ? document.type : [];
  return KIND_ORDER.find((k) => types.includes(KIND_TYPE[k])) ?? null;
}

/**
 * The public key a proof's verificationMethod names, if the issuer's DID held it for assertions when the credential was
 * issued: `<did:agent>#key-<n>` (the current key, or a key rotated out after `validFrom`), or a did:key's own key.
 */
export function assertionKey(
  issuerDid: string,
  verificationMethod: unknown,
  issuer: IdentityRecord | undefined,
  validFrom?: unknown,
): Uint8Array | undefined {
  if (typeof verificationMethod !== 'string') return undefined;
  const [did, fragment] = verificationMethod.split('#');
  if (did !== issuerDid || !fragment) return undefined;
  if (issuerDid.startsWith('did:key:'))
    return fragment === issuerDid.slice('did:key:'.length) ? publicKeyOfDidKey(issuerDid) : undefined;
  if (!issuer) return undefined;
  const key = issuer.keys.find((k) => fragment === `key-${k.n}`);
  if (!key) return undefined;
  const issuedAt = typeof validFrom === 'string' ? Date.parse(validFrom) : NaN;
  // A rotated key still vouches for what it signed while it was current, never for anything dated later.
  if (key.status !== 'current' && !(key.rotatedAt && issuedAt < key.rotatedAt.getTime())) return undefined;
  return decodeEd25519Multikey(key.publicKeyMultibase);
}

/**
 * Verifies a credential document as presented: its signature, whether this registry issued it (and
 * then its live status), its issuer and subject, its validity period. Never throws for bad content.
 */
export function verifyCredential(input: {
  document: Record<string, unknown>;
  /** The registry's record of the id the document names, if any. */
  record: CredentialRow | undefined;
  identities: Map<string, IdentityRecord>;
  now: Date;
}): CredentialVerification {
  const { document, record, identities, now } = input;
  const issuerDid = issuerOf(document) ?? '';
  const issuer = identities.get(issuerDid);
  const proof = document.proof as { verificationMethod?: unknown } | undefined;
  const key = assertionKey(issuerDid, proof?.verificationMethod, issuer, document.validFrom);
  const signature = !!key && verifyDataIntegrity(document, key);
  // Ours only if it is the document the registry registered: same issuer, same signing key.
  // The very signature registered: a variant re-signed with the same key (say, one rotated out and leaked) is not ours.
  const registered =
    !!record &&
    record.issuer === issuerDid &&
    proof?.verificationMethod === record.document.proof.verificationMethod &&
    (proof as { proofValue?: unknown } | undefined)?.proofValue === record.document.proof.proofValue;
  const subjectDid = registered ? record!.subject : subjectOf(document);
  const subject = subjectDid ? identities.get(subjectDid) : undefined;
  const validUntilText = registered
    ? record!.validUntil
      ? iso(record!.validUntil)
      : undefined
    : (document.validUntil as unknown);
  const notExpired =
    validUntilText === undefined || (typeof validUntilText === 'string' && Date.parse(validUntilText) > now.getTime());
  const status: CredentialStatus | 'unknown' = registered ? effectiveStatus(record!, now) : 'unknown';
  const checks = {
    registered,
    signature,
    issuerActive: issuer?.status === 'active' || false,
    subjectActive: subject?.status === 'active' || false,
    notExpired,
    notSuspended: !(registered && record!.status === 'suspended'),
    notRevoked: !(registered && record!.status === 'revoked'),
  };
  const failures: VerificationFailure[] = [];
  if (!registered) failures.push('not_registered');
  if (!signature) failures.push('signature_invalid');
  if (!issuer) failures.push('issuer_unknown');
  else if (issuer.status === 'deactivated') failures.push('issuer_deactivated');
  if (subject?.status === 'deactivated') failures.push('subject_deactivated');
  if (!notExpired) failures.push('expired');
  if (!checks.notSuspended) failures.push('suspended');
  if (!checks.notRevoked) failures.push('revoked');
  return {
    valid: failures.length === 0 && Object.values(checks).every(Boolean),
    credentialId: registered ? record!.credentialId : (credentialIdOf(document as { id: string }) ?? null),
    kind: registered ? record!.kind : kindOf(document),
    issuer: issuerDid || null,
    subject: subjectDid ?? null,
    status,
    checks,
    failures,
    verifiedAt: iso(now),
  };
}

// ---- trust chains ----

export interface ChainLoader {
  /** Every credential held by these DIDs, newest first. */
  held(subjects: string[]): Promise<CredentialRow[]>;
  identities(dids: string[]): Promise<Map<string, IdentityRecord>>;
}

/** The DID's direct vouchers: issuers of its active third-party credentials, most credentials first. */
export function vouchersOf(
  did: string,
  held: CredentialRow[],
  identities: Map<string, IdentityRecord>,
  anchors: ReadonlySet<string>,
  now: Date,
  thirdParty: ThirdParty,
): Voucher[] {
  const byIssuer = new Map<string, CredentialRow[]>();
  for (const c of held) {
    if (c.subject !== did || effectiveStatus(c, now) !== 'active' || !thirdParty(c)) continue;
    byIssuer.set(c.issuer, [...(byIssuer.get(c.issuer) ?? []), c]);
  }
  return [...byIssuer.entries()]
    .map(([issuer, credentials]) => ({
      did: issuer,
      name: identities.get(issuer)?.name ?? '',
      kinds: KIND_ORDER.filter((k) => credentials.some((c) => c.kind === k)),
      credentials: credentials.length,
      anchor: anchors.has(issuer),
    }))
    .sort((a, b) => b.credentials - a.credentials || a.name.localeCompare(b.name) || a.did.localeCompare(b.did));
}

/**
 * Breadth-first over "who issued credentials to whom", from the DID up through its issuers to
 * maxDepth; every DID is expanded once (cycles end there), at most MAX_TRUST_NODES nodes. Anchors
 * count as reached only along active credentials from active issuers of another controller wallet than their
 * subject's; paths are the shortest such. A link between two DIDs of one wallet is shown, marked, and carries nothing.
 */
export async function traceTrustChain(
  root: IdentityRecord,
  options: { maxDepth: number; includeInactive: boolean; anchors: ReadonlySet<string>; now: Date },
  load: ChainLoader,
): Promise<TrustChain> {
  const { maxDepth, includeInactive, anchors, now } = options;
  const nodes = new Map<string, { identity: IdentityRecord; depth: number }>([
    [root.did, { identity: root, depth: 0 }],
  ]);
  const links: TrustLink[] = [];
  /** Every identity loaded, including issuers left out by the node cap: their controllers decide self-attestation. */
  const known = new Map<string, IdentityRecord>([[root.did, root]]);
  /** subject → issuers, along links that carry trust (active credential, active issuer, another controller). */
  const trusted = new Map<string, string[]>();
  let rootHeld: CredentialRow[] = [];
  let frontier = [root.did];
  let truncated = false;
  const followed = (c: CredentialRow) => includeInactive || effectiveStatus(c, now) === 'active';
  const thirdParty = fromAnotherController((did) => known.get(did)?.controller);

  for (let depth = 1; depth <= maxDepth && frontier.length; depth++) {
    const held = await load.held(frontier);
    if (depth === 1) rootHeld = held;
    const unseen = [...new Set(held.filter(followed).map((c) => c.issuer))].filter((d) => !nodes.has(d));
    const issuers = await load.identities(unseen);
    for (const [did, identity] of issuers) known.set(did, identity);
    const next: string[] = [];
    // Subjects in frontier order, so nearer, older branches claim the node budget first.
    const order = new Map(frontier.map((d, i) => [d, i]));
    for (const c of [...held].sort((a, b) => order.get(a.subject)! - order.get(b.subject)!)) {
      if (!followed(c)) continue;
      if (!nodes.has(c.issuer)) {
        const identity = issuers.get(c.issuer);
        if (!identity) continue;
        if (nodes.size >= MAX_TRUST_NODES) {
          truncated = true;
          continue;
        }
        nodes.set(c.issuer, { identity, depth });
        next.push(c.issuer);
      }
      const status = effectiveStatus(c, now);
      const sameController = !thirdParty(c);
      links.push({
        issuer: c.issuer,
        subject: c.subject,
        credentialId: c.credentialId,
        kind: c.kind,
        status,
        issuedAt: iso(c.issuedAt),
        depth,
        sameController,
      });
      if (status === 'active' && !sameController && nodes.get(c.issuer)!.identity.status === 'active') {
        trusted.set(c.subject, [...(trusted.get(c.subject) ?? []), c.issuer]);
      }
    }
    frontier = next;
  }
  // Issuers left beyond maxDepth make the chain truncated too.
  if (!truncated && frontier.length) {
    const beyond = await load.held(frontier);
    truncated = beyond.some((c) => followed(c) && !nodes.has(c.issuer));
  }

  // Shortest trusted path from the DID to each anchor (breadth-first over trusted links).
  const parent = new Map<string, string | null>();
  if (root.status === 'active') {
    parent.set(root.did, null);
    const queue = [root.did];
    while (queue.length) {
      const did = queue.shift()!;
      for (const issuer of trusted.get(did) ?? []) {
        if (parent.has(issuer)) continue;
        parent.set(issuer, did);
        queue.push(issuer);
      }
    }
  }
  const anchorsReached = [...parent.keys()].filter((d) => anchors.has(d));
  const paths = anchorsReached.map((anchor) => {
    const path: string[] = [];
    for (let at: string | null = anchor; at; at = parent.get(at) ?? null) path.unshift(at);
    return path;
  });

  const held = rootHeld.filter((c) => c.subject === root.did && effectiveStatus(c, now) === 'active');
  const active = held.filter(thirdParty);
  const byKind = emptyKinds();
  for (const c of active) byKind[c.kind]++;
  return {
    did: root.did,
    maxDepth,
    verified: anchorsReached.length > 0,
    anchorsReached,
    vouchers: vouchersOf(root.did, rootHeld, known, anchors, now, thirdParty),
    endorsements: {
      total: active.length,
      distinctIssuers: new Set(active.map((c) => c.issuer)).size,
      byKind,
      sameController: held.length - active.length,
    },
    nodes: [...nodes.values()].map(({ identity, depth }): TrustNode => ({
      did: identity.did,
      name: identity.name,
      type: identity.type,
      status: identity.status,
      depth,
      anchor: anchors.has(identity.did),
    })),
    links,
    paths,
    truncated,
    computedAt: iso(now),
  };
}

// ---- trust score ----

const WEIGHTS = { didAge: 0.15, credentials: 0.3, tradeHistory: 0.3, reputation: 0.25 } as const;
const KIND_POINTS: Record<CredentialKind, number> = { skill_attestation: 15, trade_certification: 25, audit_badge: 35 };
const round = (value: number, places = 2) => Math.round(value * 10 ** places) / 10 ** places;

export function band(score: number): TrustScore['band'] {
  if (score < 20) return 'untrusted';
  if (score < 40) return 'low';
  if (score < 60) return 'moderate';
  if (score < 80) return 'high';
  return 'excellent';
}

export type ScoreFacts = Omit<TrustScore, 'summary' | 'generator'>;

/**
 * Which of a DID's credentials may count toward its trust: not those from a DID of the same controller wallet, nor from
 * an issuer the subject's controller vouched for in return (a ring of mutual vouching). `issuers` are the issuers'
 * identities; `vouchedBySubjectController` the DIDs that some DID of the subject's controller issued a credential to.
 */
export function independentAttestation(
  subject: IdentityRecord,
  issuers: Map<string, IdentityRecord>,
  vouchedBySubjectController: ReadonlySet<string>,
) {
  return (c: CredentialRow): boolean => {
    const issuer = issuers.get(c.issuer);
    return !!issuer && issuer.controller !== subject.controller && !vouchedBySubjectController.has(issuer.did);
  };
}

/** The reputation the reputation service holds for the DID's controller wallet. */
export interface ServiceReputation {
  score: number;
  /** The verified trades the score rests on. */
  ratings: number;
}

/** Trades tallied from reputation reports: completed, disputed (or expired undelivered), volume, the first one. */
export interface TradeTally {
  completed: number;
  disputed: number;
  volume: bigint;
  firstTradeAt: Date | null;
}

/** What the reputation service holds for a wallet, as the trust score uses it; null when the service did not answer. */
export interface ReputationRecord {
  wallet: string;
  /** Null when the wallet has no verified trade there: the reputation factor is then left out. */
  reputation: ServiceReputation | null;
  /** Trades a trusted reporter filed or an on-chain transfer between the parties backs: these count. */
  verified: TradeTally;
  /** Trades only unverified reports describe: shown, never counted. */
  unverified: TradeTally;
  /** Only the newest reports were read (a wallet with more than the reader pages through). */
  truncated: boolean;
}

/** The fields of a reputation report a tally reads. */
export type ReportFacts = Pick<
  ReputationReport,
  'id' | 'escrowId' | 'signature' | 'subjectRole' | 'verified' | 'outcome' | 'amount' | 'createdAt'
>;

const COMPLETED_OUTCOMES: ReadonlySet<ReputationReport['outcome']> = new Set(['completed', 'auto_released']);

/**
 * The trades behind a wallet's reputation reports, verified and not: several reports of one escrow or transaction (and
 * role) are one trade, verified when any of its reports is, its outcome and amount from its newest verified report
 * (else its newest). A report naming neither escrow nor transaction is a trade of its own, as the reputation service
 * counts them.
 */
export function tallyReports(reports: readonly ReportFacts[]): { verified: TradeTally; unverified: TradeTally } {
  // `first` is the trade's earliest report of the status the trade ends with (verified when any of its reports is).
  const trades = new Map<string, { report: ReportFacts; first: string }>();
  for (const r of reports) {
    const key = r.escrowId
      ? `e:${r.escrowId}:${r.subjectRole}`
      : r.signature
        ? `s:${r.signature}:${r.subjectRole}`
        : `r:${r.id}`;
    const held = trades.get(key);
    if (!held) {
      trades.set(key, { report: r, first: r.createdAt });
      continue;
    }
    const better =
      (r.verified && !held.report.verified) ||
      (r.verified === held.report.verified && r.createdAt > held.report.createdAt);
    // The amount, when the chosen report states none, is another report's of the same trade, never an unverified
    // report's for a verified trade (anyone may name an escrow id in a report).
    const [chosen, other] = better ? [r, held.report] : [held.report, r];
    const fallback = other.verified || !chosen.verified ? other.amount : null;
    trades.set(key, {
      report: { ...chosen, amount: chosen.amount ?? fallback },
      first:
        r.verified && !held.report.verified
          ? r.createdAt
          : r.verified === chosen.verified && r.createdAt < held.first
            ? r.createdAt
            : held.first,
    });
  }
  const empty = (): TradeTally => ({ completed: 0, disputed: 0, volume: 0n, firstTradeAt: null });
  const out = { verified: empty(), unverified: empty() };
  for (const { report, first } of trades.values()) {
    const tally = report.verified ? out.verified : out.unverified;
    if (COMPLETED_OUTCOMES.has(report.outcome)) tally.completed++;
    else tally.disputed++;
    tally.volume += report.amount ? BigInt(report.amount) : 0n;
    const at = new Date(first);
    if (!tally.firstTradeAt || at < tally.firstTradeAt) tally.firstTradeAt = at;
  }
  return out;
}

/**
 * The trust score's factors, weights and flags (the contract's formulas), without the written summary. Nothing the
 * caller sends raises it: trade history counts only the trades the reputation service verified (`record`); the
 * request's tradeHistory and the figures of trade certifications are listed as evidence, uncounted.
 */
export function scoreTrust(
  identity: IdentityRecord,
  held: CredentialRow[],
  chainVerified: boolean,
  request: TrustScoreRequest,
  now: Date,
  independent: (c: CredentialRow) => boolean,
  record: ReputationRecord | null,
): ScoreFacts {
  // Attestations from the subject's own controller (or a ring) are not evidence: they are left out entirely.
  const mine = held.filter((c) => c.subject === identity.did && independent(c));
  const active = mine.filter((c) => effectiveStatus(c, now) === 'active');
  const suspended = mine.filter((c) => effectiveStatus(c, now) === 'suspended').length;
  const revoked = mine.filter((c) => effectiveStatus(c, now) === 'revoked').length;

  const days = Math.max(0, (now.getTime() - identity.createdAt.getTime()) / DAY_MS);
  const ageScore = 100 * (1 - Math.exp(-days / 90));

  // Each issuer counts once per kind, so one issuer cannot inflate the score with many credentials.
  const byKind = emptyKinds();
  for (const c of active) byKind[c.kind]++;
  const pairs = new Set(active.map((c) => `${c.issuer} ${c.kind}`));
  const points = [...pairs].reduce((sum, pair) => sum + KIND_POINTS[pair.split(' ')[1] as CredentialKind], 0);
  const credentialScore = Math.max(0, Math.min(100, points) - 20 * revoked);

  const evidence = tradeEvidence(active, request, record);
  const counted = record?.verified ?? { completed: 0, disputed: 0, volume: 0n, firstTradeAt: null };
  const completedTrades = counted.completed;
  const disputedTrades = counted.disputed;
  const trades = completedTrades + disputedTrades;
  const disputeRate = trades ? disputedTrades / trades : 0;
  const tradeScore = 100 * (1 - disputeRate) * Math.min(1, Math.log10(1 + trades) / 2);

  const reputation = record?.reputation ?? null;
  const reputationScore = reputation ? reputation.score * Math.min(1, reputation.ratings / 10) : 0;

  // Reputation left out: its weight is shared among the other factors in proportion to theirs.
  // Weights are rounded to 4 places before use, so the score is exactly the sum the response shows.
  const scale = reputation ? 1 : 1 / (1 - WEIGHTS.reputation);
  const weights = {
    didAge: round(WEIGHTS.didAge * scale, 4),
    credentials: round(WEIGHTS.credentials * scale, 4),
    tradeHistory: round(WEIGHTS.tradeHistory * scale, 4),
    reputation: reputation ? WEIGHTS.reputation : 0,
  };
  const factor = (score: number, weight: number) => ({
    score: round(score),
    weight,
    contribution: round(score * weight),
  });
  const raw =
    ageScore * weights.didAge +
    credentialScore * weights.credentials +
    tradeScore * weights.tradeHistory +
    reputationScore * weights.reputation;
  const deactivated = identity.status === 'deactivated';
  const score = deactivated ? 0 : round(Math.min(100, raw));

  const riskFlags: TrustRiskFlag[] = [];
  if (days < NEW_IDENTITY_DAYS) riskFlags.push('new_identity');
  if (deactivated) riskFlags.push('deactivated');
  if (!active.length) riskFlags.push('no_credentials');
  if (revoked) riskFlags.push('revoked_credentials');
  if (trades && disputeRate > HIGH_DISPUTE_RATE) riskFlags.push('high_dispute_rate');
  if (!chainVerified) riskFlags.push('unverified_chain');
  if (!trades) riskFlags.push('no_trade_history');

  return {
    did: identity.did,
    score,
    band: band(score),
    factors: {
      didAge: { ...factor(ageScore, weights.didAge), source: 'registry', days: round(days, 2) },
      credentials: {
        ...factor(credentialScore, weights.credentials),
        source: 'registry',
        active: active.length,
        suspended,
        revoked,
        distinctIssuers: new Set(active.map((c) => c.issuer)).size,
        byKind,
      },
      tradeHistory: {
        ...factor(tradeScore, weights.tradeHistory),
        // Unknown trades earn nothing: when the reputation service does not answer, the factor scores 0 at its weight.
        source: record ? 'reputation' : 'none',
        completedTrades,
        disputedTrades,
        disputeRate: round(disputeRate, 4),
        volumeUsd: atomicToUsd(counted.volume),
        firstTradeAt: counted.firstTradeAt ? iso(counted.firstTradeAt) : null,
        evidence,
      },
      reputation: {
        ...factor(reputationScore, weights.reputation),
        source: reputation ? 'reputation' : 'none',
        reputationScore: reputation ? reputation.score : null,
        ratings: reputation ? reputation.ratings : 0,
      },
    },
    riskFlags,
    computedAt: iso(now),
  };
}

/** Every body of trade figures the score saw, with its source, counted (verified records) first. */
function tradeEvidence(
  active: CredentialRow[],
  request: TrustScoreRequest,
  record: ReputationRecord | null,
): TradeEvidence[] {
  const evidence: TradeEvidence[] = [];
  const read = record?.truncated ? ' (the newest reports read)' : '';
  const entry = (
    source: TradeEvidence['source'],
    counted: boolean,
    tally: TradeTally,
    note: string,
  ): TradeEvidence => ({
    source,
    counted,
    completedTrades: tally.completed,
    disputedTrades: tally.disputed,
    volumeUsd: atomicToUsd(tally.volume),
    firstTradeAt: tally.firstTradeAt ? iso(tally.firstTradeAt) : null,
    note,
  });
  if (record && record.verified.completed + record.verified.disputed) {
    evidence.push(
      entry(
        'reputation',
        true,
        record.verified,
        `trades of the controller wallet ${record.wallet} the reputation service verified: filed by a trusted service ` +
          `(such as the escrow) or backed by an on-chain transfer between the parties${read}`,
      ),
    );
  }
  if (record && record.unverified.completed + record.unverified.disputed) {
    evidence.push(
      entry(
        'reputation',
        false,
        record.unverified,
        `trades of ${record.wallet} only unverified reports describe (no trusted reporter, no on-chain transfer): ` +
          `anyone can file those, so they do not count${read}`,
      ),
    );
  }
  const certifications = active.filter((c) => c.claims.kind === 'trade_certification');
  if (certifications.length) {
    const tally: TradeTally = { completed: 0, disputed: 0, volume: 0n, firstTradeAt: null };
    for (const c of certifications) {
      if (c.claims.kind !== 'trade_certification') continue;
      const disputes = Math.min(c.claims.disputes, c.claims.trades);
      tally.completed += c.claims.trades - disputes;
      tally.disputed += disputes;
      tally.volume += usdToAtomic(c.claims.volumeUsd);
      const start = new Date(c.claims.periodStart);
      if (!tally.firstTradeAt || start < tally.firstTradeAt) tally.firstTradeAt = start;
    }
    evidence.push(
      entry(
        'certification',
        false,
        tally,
        `claimed in ${certifications.length} trade certification${certifications.length === 1 ? '' : 's'} from ` +
          'independent issuers: the issuers’ word, not records of trades, so they count as credentials and not as trades',
      ),
    );
  }
  if (request.tradeHistory) {
    const t = request.tradeHistory;
    evidence.push({
      source: 'caller',
      counted: false,
      completedTrades: t.completedTrades,
      disputedTrades: t.disputedTrades,
      volumeUsd: atomicToUsd(usdToAtomic(t.volumeUsd)),
      firstTradeAt: t.firstTradeAt ?? null,
      note: 'reported by the caller: not verified, so not counted',
    });
  }
  return evidence;
}

export interface TrustSummaryInput {
  name: string;
  facts: ScoreFacts;
}

const FLAG_TEXT: Record<TrustRiskFlag, string> = {
  new_identity: `the identity is less than ${NEW_IDENTITY_DAYS} days old`,
  deactivated: 'the DID is deactivated, so it scores 0',
  no_credentials: 'it holds no active credentials',
  revoked_credentials: 'issuers have revoked credentials they gave it',
  high_dispute_rate: `more than ${HIGH_DISPUTE_RATE * 100}% of its trades were disputed`,
  unverified_chain: 'no trust anchor vouches for it through active credentials',
  no_trade_history: 'it has no verified trade history',
};

const UNCOUNTED_TEXT: Record<TradeEvidence['source'], string> = {
  caller: 'the caller reported',
  certification: 'claimed in trade certifications',
  reputation: 'only unverified reputation reports describe',
};

/** The built-in explanation: the score, the strongest and weakest factors, and every risk flag, in plain words. */
export function composeTrustSummary({ name, facts }: TrustSummaryInput): { summary: string } {
  const f = facts.factors;
  const parts = [
    ['DID age', f.didAge],
    ['credentials', f.credentials],
    ['trade history', f.tradeHistory],
    ['reputation', f.reputation],
  ] as const;
  const counted = parts.filter(([, p]) => p.weight > 0);
  const strongest = [...counted].sort((a, b) => b[1].contribution - a[1].contribution)[0]!;
  const weakest = [...counted].sort((a, b) => a[1].score - b[1].score)[0]!;
  const sentences = [
    `${name || facts.did} scores ${facts.score} of 100 (${facts.band}).`,
    `The largest contribution is ${strongest[0]} (${strongest[1].score} × ${strongest[1].weight} = ${strongest[1].contribution}); the weakest factor is ${weakest[0]} at ${weakest[1].score}.`,
    `It is ${Math.floor(f.didAge.days)} days old and holds ${f.credentials.active} active credential${f.credentials.active === 1 ? '' : 's'} from ${f.credentials.distinctIssuers} issuer${f.credentials.distinctIssuers === 1 ? '' : 's'}.`,
  ];
  const t = f.tradeHistory;
  const trades = t.completedTrades + t.disputedTrades;
  if (trades) {
    sentences.push(
      `Verified trade history from the reputation service: ${trades} trades worth ${t.volumeUsd} USD, ${round(t.disputeRate * 100, 1)}% disputed${t.firstTradeAt ? `, trading since ${t.firstTradeAt.slice(0, 10)}` : ''}.`,
    );
  } else if (t.source === 'none') {
    sentences.push('The reputation service did not answer, so no trade counts.');
  }
  for (const e of t.evidence.filter((x) => !x.counted)) {
    sentences.push(
      `${e.completedTrades + e.disputedTrades} trades ${UNCOUNTED_TEXT[e.source]} are not verified and do not count.`,
    );
  }
  sentences.push(
    f.reputation.source === 'none'
      ? t.source === 'none'
        ? 'Without an answer from the reputation service, its weight is shared among the other factors.'
        : 'The reputation service holds no verified trade of its controller wallet, so that weight is shared among the other factors.'
      : `Reputation ${f.reputation.reputationScore} from ${f.reputation.ratings} rating${f.reputation.ratings === 1 ? '' : 's'}.`,
  );
  if (facts.riskFlags.length) sentences.push(`Risks: ${facts.riskFlags.map((flag) => FLAG_TEXT[flag]).join('; ')}.`);
  return { summary: sentences.join(' ') };
}

export function trustSummaryTask(input: TrustSummaryInput): AiTask<TrustSummaryInput, { summary: string }> {
  return {
    name: 'trust-score-summary',
    instructions:
      'Explain this agent trust score to a person deciding whether to trade with the agent, in 3 to 6 sentences: the score ' +
      'and band, which factors raise or lower it and why, and every risk flag. Use only the numbers given; invent nothing. ' +
      'Trade evidence with counted false is an unverified claim: say it does not count, never present it as the record.',
    input,
    output: z.object({ summary: z.string().min(1).max(2000) }),
    builtin: composeTrustSummary,
  };
}

export function withSummary(facts: ScoreFacts, summary: string, generator: Generator): TrustScore {
  return { ...facts, summary, generator };
}
