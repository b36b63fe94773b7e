import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { defineService } from '../core/service';
import { named } from '../core/names';
import { ErrorEnvelope, paymentErrors, standardErrors } from '../core/errors';
import { fixed, free, tiered, type RouteMeta } from '../core/payment';
import { SolanaAddress, Timestamp, isBase58OfLength } from '../core/chain';
import { UsdAmount } from '../core/money';
import { base58Decode } from '../core/base58';
import { Generator, PageQuery, authErrors, page } from './shared';

const c = initContract();

// Interfaces first, then schemas annotated with them: keeps the emitted declarations small.

export type IdentityType = 'agent' | 'service' | 'organization';
/** Deactivation is final: a deactivated DID still resolves (didDocumentMetadata.deactivated) but cannot change. */
export type IdentityStatus = 'active' | 'deactivated';
export type CredentialKind = 'skill_attestation' | 'trade_certification' | 'audit_badge';
/** revoked is final; suspended can return to active; expired is reached when validUntil passes. */
export type CredentialStatus = 'active' | 'suspended' | 'revoked' | 'expired';
export type SkillLevel = 'basic' | 'proficient' | 'expert';
export type ServiceEndpointType = 'AgentCard' | 'X402Service' | 'LinkedDomains' | 'Messaging';

export interface CapabilityDeclaration {
  /** Lowercase slug, e.g. "code-review". */
  id: string;
  description?: string;
  version?: string;
}
export interface Capability extends CapabilityDeclaration {
  declaredAt: string;
  /**
   * true when an active skill attestation from a DID of another controller wallet covers this capability (a second DID
   * of the same wallet attesting is self-attestation, not counted).
   */
  attested: boolean;
  attestations: number;
}
export interface ServiceEndpoint {
  /** Fragment of the DID URL: did:agent:…#<id>. */
  id: string;
  type: ServiceEndpointType;
  url: string;
}
/** A new verification key and the proof that the caller holds its private half. */
export interface KeyProof {
  /** Ed25519 public key as Multikey multibase: "z6Mk…". */
  publicKeyMultibase: string;
  /**
   * Base58 Ed25519 signature by that key over the UTF-8 text
   * "agent-economy identity key proof\ncontroller: <controller wallet>\nkey: <publicKeyMultibase>".
   */
  proof: string;
}
export interface VerificationKey {
  /** DID URL of the key: did:agent:…#key-<n>. */
  id: string;
  type: 'Multikey';
  publicKeyMultibase: string;
  status: 'current' | 'rotated';
  createdAt: string;
  rotatedAt: string | null;
}
export interface VerificationMethod {
  id: string;
  type: 'Multikey';
  controller: string;
  publicKeyMultibase: string;
}
/** W3C DID Core document. */
export interface DidDocument {
  '@context': string[];
  id: string;
  controller: string;
  verificationMethod: VerificationMethod[];
  authentication: string[];
  assertionMethod: string[];
  capabilityInvocation: string[];
  service: { id: string; type: ServiceEndpointType; serviceEndpoint: string }[];
}
export interface DidDocumentMetadata {
  created: string;
  updated: string;
  versionId: string;
  deactivated: boolean;
}
export interface Identity {
  did: string;
  type: IdentityType;
  status: IdentityStatus;
  name: string;
  /** The Solana wallet that controls the DID: it signs in (SIGN-IN-WITH-X) to update it and to issue as it. */
  controller: string;
  capabilities: Capability[];
  metadata: Record<string, string>;
  serviceEndpoints: ServiceEndpoint[];
  /** The keypair's public halves, current first; the service never holds or returns a private key. */
  keys: VerificationKey[];
  /** 1 at creation, +1 per update. */
  version: number;
  createdAt: string;
  updatedAt: string;
}
export interface IdentitySummary {
  did: string;
  type: IdentityType;
  status: IdentityStatus;
  name: string;
  controller: string;
  capabilities: string[];
  attestedCapabilities: string[];
  activeCredentials: number;
  createdAt: string;
  updatedAt: string;
}

export interface SkillAttestationClaims {
  kind: 'skill_attestation';
  /** A capability the subject declared. */
  skill: string;
  level: SkillLevel;
  evidenceUrl?: string;
  note?: string;
}
export interface TradeCertificationClaims {
  kind: 'trade_certification';
  trades: number;
  volumeUsd: string;
  disputes: number;
  periodStart: string;
  periodEnd: string;
  escrowIds?: string[];
}
export interface AuditBadgeClaims {
  kind: 'audit_badge';
  /** What was audited: a module id, a package name, a repository. */
  artifact: string;
  /** SHA-256 of the audited content, hex. */
  artifactHash?: string;
  result: 'passed' | 'passed_with_findings';
  findings: { critical: number; high: number; medium: number; low: number };
  reportUrl?: string;
}
export type CredentialClaims = SkillAttestationClaims | TradeCertificationClaims | AuditBadgeClaims;

export interface DataIntegrityProof {
  type: 'DataIntegrityProof';
  cryptosuite: 'eddsa-jcs-2022';
  created: string;
  verificationMethod: string;
  proofPurpose: 'assertionMethod';
  proofValue: string;
}
/** W3C Verifiable Credential Data Model 2.0 document, secured with a Data Integrity proof. */
export interface VerifiableCredential {
  '@context': string[];
  id: string;
  type: string[];
  issuer: string;
  validFrom: string;
  validUntil?: string;
  credentialSubject: { id: string; [claim: string]: unknown };
  credentialStatus: { id: string; type: 'RegistryStatus'; statusPurpose: 'revocation' };
  proof: DataIntegrityProof;
}
export interface CredentialRecord {
  credentialId: string;
  kind: CredentialKind;
  issuer: string;
  subject: string;
  status: CredentialStatus;
  statusReason: string | null;
  statusChangedAt: string | null;
  issuedAt: string;
  validUntil: string | null;
  claims: CredentialClaims;
  credential: VerifiableCredential;
  /** Issuer and subject DIDs share a controller wallet: self-attestation, never counted as third-party trust. */
  sameController: boolean;
}

export interface KindCounts {
  skill_attestation: number;
  trade_certification: number;
  audit_badge: number;
}
export interface Voucher {
  did: string;
  name: string;
  kinds: CredentialKind[];
  credentials: number;
  /** A trust anchor of this deployment. */
  anchor: boolean;
}
export interface IdentityDocument extends Identity {
  didDocument: DidDocument;
  didDocumentMetadata: DidDocumentMetadata;
  /** Credentials the DID holds (as subject), newest first, at most 50; GET /api/credentials/:did pages through all. */
  credentials: CredentialRecord[];
  trustChain: { vouchers: Voucher[]; verified: boolean };
}

export interface CreateIdentityRequest {
  type: IdentityType;
  name: string;
  key?: KeyProof;
  capabilities: CapabilityDeclaration[];
  metadata: Record<string, string>;
  serviceEndpoints: ServiceEndpoint[];
}
export type CreateIdentityRequestInput = Omit<
  CreateIdentityRequest,
  'type' | 'capabilities' | 'metadata' | 'serviceEndpoints'
> & {
  type?: IdentityType;
  capabilities?: CapabilityDeclaration[];
  metadata?: Record<string, string>;
  serviceEndpoints?: ServiceEndpoint[];
};
export interface UpdateIdentityRequest {
  did: string;
  expectedVersion?: number;
  name?: string;
  addCapabilities?: CapabilityDeclaration[];
  removeCapabilities?: string[];
  /** Keys to set; a null value deletes the key. */
  metadata?: Record<string, string | null>;
  serviceEndpoints?: ServiceEndpoint[];
  rotateKey?: KeyProof;
  deactivate?: true;
}
/** Step 1 of issuing: the registry builds the credential and says exactly what the issuer's key must sign. */
export interface PrepareCredentialRequest {
  action: 'prepare';
  issuer: string;
  subject: string;
  claims: CredentialClaims;
  validUntil?: string;
}
/**
 * Step 2 of issuing: the issuer's signature over the prepared credential; the registry verifies it and registers the
 * credential.
 */
export interface IssueCredentialRequest {
  action: 'issue';
  credentialId: string;
  /** "z" + base58btc of the Ed25519 signature of `signingInput` by the key `verificationMethod` names. */
  proofValue: string;
}
export interface SetCredentialStatusRequest {
  action: 'setStatus';
  credentialId: string;
  status: 'active' | 'suspended' | 'revoked';
  reason?: string;
}
export type CredentialActionRequest = PrepareCredentialRequest | IssueCredentialRequest | SetCredentialStatusRequest;
/** A credential built for its issuer to sign: the document with its proof options, and the bytes to sign. */
export interface PreparedCredential {
  credentialId: string;
  /** The credential as it will be issued, its proof without proofValue. */
  credential: Omit<VerifiableCredential, 'proof'> & { proof: Omit<DataIntegrityProof, 'proofValue'> };
  /** The issuer DID's current key, which must sign (`<did>#key-<n>`). */
  verificationMethod: string;
  /**
   * base58btc of the 64 bytes to sign: SHA-256(JCS(proof options with the credential's @context)) ‖
   * SHA-256(JCS(credential without proof)).
   */
  signingInput: string;
  /** Sign and send it with action "issue" before this time. */
  expiresAt: string;
}

/** A credential someone presents: verified exactly as received (unknown fields are kept, they are signed too). */
export interface PresentedCredential {
  id: string;
  type: string[];
  issuer: string | { id: string; [field: string]: unknown };
  proof: { verificationMethod: string; proofValue: string; [field: string]: unknown };
  [field: string]: unknown;
}
export type VerifyCredentialRequest = { credentialId: string } | { credential: PresentedCredential };
export type VerificationFailure =
  | 'not_registered'
  | 'signature_invalid'
  | 'issuer_unknown'
  | 'issuer_deactivated'
  | 'subject_deactivated'
  | 'expired'
  | 'suspended'
  | 'revoked';
export interface CredentialVerification {
  valid: boolean;
  credentialId: string | null;
  kind: CredentialKind | null;
  issuer: string | null;
  subject: string | null;
  status: CredentialStatus | 'unknown';
  checks: {
    registered: boolean;
    signature: boolean;
    issuerActive: boolean;
    subjectActive: boolean;
    notExpired: boolean;
    notSuspended: boolean;
    notRevoked: boolean;
  };
  failures: VerificationFailure[];
  verifiedAt: string;
}

export interface ListIdentitiesQuery {
  type?: IdentityType;
  status?: IdentityStatus;
  capability?: string;
  controller?: string;
  limit: number;
  cursor?: string;
}
export type ListIdentitiesQueryInput = Omit<ListIdentitiesQuery, 'limit'> & { limit?: number };
export interface ListCredentialsQuery {
  role: 'subject' | 'issuer';
  credentialId?: string;
  kind?: CredentialKind;
  status?: CredentialStatus;
  limit: number;
  cursor?: string;
}
export type ListCredentialsQueryInput = Omit<ListCredentialsQuery, 'role' | 'limit'> & {
  role?: 'subject' | 'issuer';
  limit?: number;
};
export interface TrustChainQuery {
  maxDepth: number;
  includeInactive: 'true' | 'false';
}
export type TrustChainQueryInput = Partial<TrustChainQuery>;

export interface TrustNode {
  did: string;
  name: string;
  type: IdentityType;
  status: IdentityStatus;
  depth: number;
  anchor: boolean;
}
export interface TrustLink {
  issuer: string;
  subject: string;
  credentialId: string;
  kind: CredentialKind;
  status: CredentialStatus;
  issuedAt: string;
  depth: number;
  /** Issuer and subject have the same controller wallet: self-attestation, shown but carrying no trust. */
  sameController: boolean;
}
export interface TrustChain {
  did: string;
  maxDepth: number;
  verified: boolean;
  anchorsReached: string[];
  vouchers: Voucher[];
  endorsements: { total: number; distinctIssuers: number; byKind: KindCounts; sameController: number };
  nodes: TrustNode[];
  links: TrustLink[];
  paths: string[][];
  truncated: boolean;
  computedAt: string;
}

export interface TrustScoreRequest {
  did: string;
  /** The caller's own account of the DID's trades: shown back as unverified evidence, never counted. */
  tradeHistory?: { completedTrades: number; disputedTrades: number; volumeUsd: string; firstTradeAt?: string };
}
export type TrustFactorSource = 'registry' | 'reputation' | 'none';
/**
 * Where trade figures came from: `reputation` (reports the reputation service holds for the controller wallet),
 * `certification` (the claims of trade certifications the DID holds), `caller` (the request's tradeHistory).
 */
export type TradeEvidenceSource = 'reputation' | 'certification' | 'caller';
/** One body of trade figures the score saw, and whether it counted. */
export interface TradeEvidence {
  source: TradeEvidenceSource;
  /** Only trades backed by a record (verified by the reputation service) count. */
  counted: boolean;
  completedTrades: number;
  disputedTrades: number;
  volumeUsd: string;
  firstTradeAt: string | null;
  /** Why these figures count or not. */
  note: string;
}
export interface FactorScore {
  score: number;
  weight: number;
  contribution: number;
  source: TrustFactorSource;
}
export interface DidAgeFactor extends FactorScore {
  days: number;
}
export interface CredentialsFactor extends FactorScore {
  active: number;
  suspended: number;
  revoked: number;
  distinctIssuers: number;
  byKind: KindCounts;
}
export interface TradeHistoryFactor extends FactorScore {
  /** Counted (verified) trades only, as are the other figures here. */
  completedTrades: number;
  disputedTrades: number;
  disputeRate: number;
  volumeUsd: string;
  firstTradeAt: string | null;
  /** Every body of trade figures seen, counted or not, with its source. */
  evidence: TradeEvidence[];
}
export interface ReputationFactor extends FactorScore {
  reputationScore: number | null;
  ratings: number;
}
export type TrustRiskFlag =
  | 'new_identity'
  | 'deactivated'
  | 'no_credentials'
  | 'revoked_credentials'
  | 'high_dispute_rate'
  | 'unverified_chain'
  | 'no_trade_history';
export interface TrustScore {
  did: string;
  score: number;
  band: 'untrusted' | 'low' | 'moderate' | 'high' | 'excellent';
  factors: {
    didAge: DidAgeFactor;
    credentials: CredentialsFactor;
    tradeHistory: TradeHistoryFactor;
    reputation: ReputationFactor;
  };
  riskFlags: TrustRiskFlag[];
  summary: string;
  generator: Generator;
  computedAt: string;
}

export interface BatchResolveRequest {
  dids: string[];
}
export interface BatchResolution {
  results: { did: string; found: boolean; identity: IdentityDocument | null; error: 'notFound' | null }[];
  found: number;
  notFound: number;
  resolvedAt: string;
}

export interface IdentityStats {
  dids: { total: number; active: number; deactivated: number; byType: Record<IdentityType, number> };
  credentials: {
    issued: number;
    active: number;
    suspended: number;
    revoked: number;
    expired: number;
    byKind: KindCounts;
  };
  verifications: { total: number; valid: number; invalid: number };
  resolutions: { single: number; batch: number; didsResolved: number };
  keyRotations: number;
  asOf: string;
}

// ---- schemas ----

/** Most DIDs one batch resolves. */
export const MAX_BATCH_DIDS = 25;

const BASE58 = '[1-9A-HJ-NP-Za-km-z]';
/** A did:agent DID, as this service mints them. */
export const AgentDid = z
  .string()
  .regex(
    new RegExp(`^did:agent:${BASE58}{16,24}$`),
    'must be a did:agent DID: "did:agent:" then 16 to 24 base58 characters',
  )
  .describe('a did:agent DID: "did:agent:" + base58btc of 16 random bytes');
const Slug = z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'must be a lowercase slug such as "code-review"');
const CredentialId = z
  .string()
  .regex(/^cred_[A-Za-z0-9]{16,40}$/, 'must be a credential id such as "cred_8fK2xQ7mLp3Vn9RtWb4Z"');
const Url = z
  .string()
  .url()
  .max(500)
  .regex(/^https?:\/\//, 'must be an http or https URL');
const PublicKeyMultibase = z
  .string()
  .regex(new RegExp(`^z6Mk${BASE58}{40,50}$`), 'must be an Ed25519 Multikey such as "z6Mk…"')
  .refine((s) => {
    const bytes = base58Decode(s.slice(1));
    return bytes?.length === 34 && bytes[0] === 0xed && bytes[1] === 0x01;
  }, 'must be "z" + base58btc of 0xed 0x01 and a 32-byte Ed25519 public key')
  .describe('Ed25519 public key as Multikey: "z" + base58btc(0xed 0x01 ‖ 32-byte key)');
const IdentityTypeSchema = named('IdentityType', z.enum(['agent', 'service', 'organization']));
const IdentityStatusSchema = named('IdentityStatus', z.enum(['active', 'deactivated']));
const CredentialKindSchema = named(
  'CredentialKind',
  z.enum(['skill_attestation', 'trade_certification', 'audit_badge']),
);
const CredentialStatusSchema = named('CredentialStatus', z.enum(['active', 'suspended', 'revoked', 'expired']));
const ServiceEndpointTypeSchema = named(
  'ServiceEndpointType',
  z.enum(['AgentCard', 'X402Service', 'LinkedDomains', 'Messaging']),
);
const count = () => z.number().int().min(0);

const CapabilityDeclarationSchema: z.ZodType<CapabilityDeclaration> = named(
  'CapabilityDeclaration',
  z
    .object({
      id: Slug,
      description: z.string().trim().min(1).max(300).optional(),
      version: z
        .string()
        .regex(/^\d{1,4}(\.\d{1,4}){0,2}$/, 'must be a version such as "1.2"')
        .optional(),
    })
    .strict(),
);
const capabilityList = () =>
  z
    .array(CapabilityDeclarationSchema)
    .max(50)
    .refine((list) => new Set(list.map((c) => c.id)).size === list.length, 'capability ids must be unique');
const ServiceEndpointSchema: z.ZodType<ServiceEndpoint> = named(
  'ServiceEndpoint',
  z
    .object({
      id: z.string().regex(/^[a-z0-9][a-z0-9-]{0,31}$/, 'must be a lowercase slug of at most 32 characters'),
      type: ServiceEndpointTypeSchema,
      url: Url,
    })
    .strict(),
);
const endpointList = () =>
  z
    .array(ServiceEndpointSchema)
    .max(10)
    .refine((list) => new Set(list.map((e) => e.id)).size === list.length, 'endpoint ids must be unique');
const MetadataKey = z
  .string()
  .regex(/^[A-Za-z][A-Za-z0-9_.-]{0,63}$/, 'must be a key such as "homepage" or "model.family"');
const tooManyKeys = (record: Record<string, unknown>) => Object.keys(record).length <= 20;
const Name = z.string().trim().min(1).max(100);
const KeyProofSchema: z.ZodType<KeyProof> = named(
  'KeyProof',
  z
    .object({
      publicKeyMultibase: PublicKeyMultibase,
      proof: z
        .string()
        .refine((t) => isBase58OfLength(t, 64), 'must be a base58 Ed25519 signature (64 bytes)')
        .describe(
          'base58 Ed25519 signature by the key over "agent-economy identity key proof\\ncontroller: <controller wallet>\\nkey: <publicKeyMultibase>"',
        ),
    })
    .strict(),
);

const CapabilitySchema: z.ZodType<Capability> = named(
  'Capability',
  z.object({
    id: z.string(),
    description: z.string().optional(),
    version: z.string().optional(),
    declaredAt: Timestamp,
    attested: z
      .boolean()
      .describe(
        'an active skill attestation from a DID of another controller wallet covers it (self-attestation does not)',
      ),
    attestations: count().describe('active skill attestations for it from DIDs of other controller wallets'),
  }),
);
const VerificationKeySchema: z.ZodType<VerificationKey> = named(
  'VerificationKey',
  z.object({
    id: z.string().describe('did:agent:…#key-<n>'),
    type: z.literal('Multikey'),
    publicKeyMultibase: z.string(),
    status: z.enum(['current', 'rotated']),
    createdAt: Timestamp,
    rotatedAt: Timestamp.nullable(),
  }),
);
const DidDocumentSchema: z.ZodType<DidDocument> = named(
  'DidDocument',
  z.object({
    '@context': z
      .array(z.string())
      .describe('"https://www.w3.org/ns/did/v1" then "https://w3id.org/security/multikey/v1"'),
    id: z.string(),
    controller: z.string().describe('the DID itself: the controller wallet acts through #controller'),
    verificationMethod: z
      .array(
        z.object({
          id: z.string(),
          type: z.literal('Multikey'),
          controller: z.string(),
          publicKeyMultibase: z.string(),
        }),
      )
      .describe(
        '#key-<n>: the current key (it signs the credentials the DID issues); #controller: the controller wallet’s Ed25519 key. ' +
          'The registry holds no key of any DID',
      ),
    authentication: z.array(z.string()).describe('#key-<n> and #controller'),
    assertionMethod: z.array(z.string()).describe('#key-<n>'),
    capabilityInvocation: z.array(z.string()).describe('#controller'),
    service: z.array(z.object({ id: z.string(), type: ServiceEndpointTypeSchema, serviceEndpoint: z.string() })),
  }),
);
const identityFields = {
  did: z.string(),
  type: IdentityTypeSchema,
  status: IdentityStatusSchema,
  name: z.string(),
  controller: SolanaAddress.describe('the wallet that controls the DID'),
  capabilities: z.array(CapabilitySchema),
  metadata: z.record(z.string()),
  serviceEndpoints: z.array(ServiceEndpointSchema),
  keys: z
    .array(VerificationKeySchema)
    .describe('public keys only, current first; no private key is ever held or returned'),
  version: z.number().int().min(1),
  createdAt: Timestamp,
  updatedAt: Timestamp,
};
const IdentitySummarySchema: z.ZodType<IdentitySummary> = named(
  'IdentitySummary',
  z.object({
    did: z.string(),
    type: IdentityTypeSchema,
    status: IdentityStatusSchema,
    name: z.string(),
    controller: SolanaAddress,
    capabilities: z.array(z.string()),
    attestedCapabilities: z
      .array(z.string())
      .describe('capabilities an active skill attestation from a DID of another controller wallet covers'),
    activeCredentials: count().describe(
      'active credentials it holds, self-attestations from its own controller’s DIDs included (see sameController)',
    ),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
);

const FindingsSchema = named(
  'Findings',
  z.object({ critical: count(), high: count(), medium: count(), low: count() }).strict(),
);
const claimsOptions = [
  z
    .object({
      kind: z.literal('skill_attestation'),
      skill: Slug.describe('a capability the subject declared'),
      level: z.enum(['basic', 'proficient', 'expert']),
      evidenceUrl: Url.optional(),
      note: z.string().trim().min(1).max(500).optional(),
    })
    .strict(),
  z
    .object({
      kind: z.literal('trade_certification'),
      trades: z.number().int().min(1).max(10_000_000),
      volumeUsd: UsdAmount,
      disputes: count(),
      periodStart: Timestamp,
      periodEnd: Timestamp,
      escrowIds: z.array(z.string().min(1).max(64)).max(100).optional(),
    })
    .strict(),
  z
    .object({
      kind: z.literal('audit_badge'),
      artifact: z.string().trim().min(1).max(200).describe('what was audited: a module id, a package, a repository'),
      artifactHash: z
        .string()
        .regex(/^[0-9a-f]{64}$/, 'must be a SHA-256 in lowercase hex')
        .optional(),
      result: z.enum(['passed', 'passed_with_findings']),
      findings: FindingsSchema,
      reportUrl: Url.optional(),
    })
    .strict(),
] as const;
const CredentialClaimsSchema: z.ZodType<CredentialClaims> = named(
  'CredentialClaims',
  z.discriminatedUnion('kind', [...claimsOptions]),
);
const DataIntegrityProofSchema: z.ZodType<DataIntegrityProof> = named(
  'DataIntegrityProof',
  z.object({
    type: z.literal('DataIntegrityProof'),
    cryptosuite: z.literal('eddsa-jcs-2022'),
    created: Timestamp,
    verificationMethod: z
      .string()
      .describe('the issuer DID’s own key that signed it, <did>#key-<n> (the registry never holds it)'),
    proofPurpose: z.literal('assertionMethod'),
    proofValue: z.string().describe('"z" + base58btc of the Ed25519 signature'),
  }),
);
const VerifiableCredentialSchema: z.ZodType<VerifiableCredential> = named(
  'VerifiableCredential',
  z.object({
    '@context': z.array(z.string()).describe('"https://www.w3.org/ns/credentials/v2"'),
    id: z.string().describe('urn:agent-economy:credential:<credentialId>'),
    type: z
      .array(z.string())
      .describe('"VerifiableCredential" and "SkillAttestation", "TradeCertification" or "AuditBadge"'),
    issuer: z.string(),
    validFrom: Timestamp,
    validUntil: Timestamp.optional(),
    credentialSubject: z.object({ id: z.string() }).catchall(z.unknown()).describe('the subject DID and the claims'),
    credentialStatus: z
      .object({ id: z.string(), type: z.literal('RegistryStatus'), statusPurpose: z.literal('revocation') })
      .describe(
        'id: a free public GET of the credential’s live status (GET /api/credentials/<subject>?credentialId=<id>)',
      ),
    proof: DataIntegrityProofSchema,
  }),
);
const CredentialRecordSchema: z.ZodType<CredentialRecord> = named(
  'CredentialRecord',
  z.object({
    credentialId: z.string(),
    kind: CredentialKindSchema,
    issuer: z.string(),
    subject: z.string(),
    status: CredentialStatusSchema,
    statusReason: z.string().nullable(),
    statusChangedAt: Timestamp.nullable(),
    issuedAt: Timestamp,
    validUntil: Timestamp.nullable(),
    claims: CredentialClaimsSchema,
    credential: VerifiableCredentialSchema,
    sameController: z
      .boolean()
      .describe(
        'issuer and subject DIDs share a controller wallet: self-attestation through a second DID, valid as a credential ' +
          'but never counted as third-party trust (attestations, vouchers, chains, scores)',
      ),
  }),
);
const PreparedCredentialSchema: z.ZodType<PreparedCredential> = named(
  'PreparedCredential',
  z.object({
    credentialId: z.string(),
    credential: z
      .object({
        '@context': z.array(z.string()),
        id: z.string(),
        type: z.array(z.string()),
        issuer: z.string(),
        validFrom: Timestamp,
        validUntil: Timestamp.optional(),
        credentialSubject: z.object({ id: z.string() }).catchall(z.unknown()),
        credentialStatus: z.object({
          id: z.string(),
          type: z.literal('RegistryStatus'),
          statusPurpose: z.literal('revocation'),
        }),
        proof: z.object({
          type: z.literal('DataIntegrityProof'),
          cryptosuite: z.literal('eddsa-jcs-2022'),
          created: Timestamp,
          verificationMethod: z.string(),
          proofPurpose: z.literal('assertionMethod'),
        }),
      })
      .describe('the credential as it will be issued; its proof lacks only proofValue'),
    verificationMethod: z.string().describe('the issuer DID’s current key, <did>#key-<n>, which must sign'),
    signingInput: z
      .string()
      .describe(
        'base58btc of the 64 bytes to sign with Ed25519 (eddsa-jcs-2022 hashData): SHA-256(JCS(proof options + @context)) ‖ SHA-256(JCS(credential without proof))',
      ),
    expiresAt: Timestamp.describe('send the signature with action "issue" before this time (10 minutes)'),
  }),
);
const KindCountsSchema: z.ZodType<KindCounts> = named(
  'KindCounts',
  z.object({
    skill_attestation: count(),
    trade_certification: count(),
    audit_badge: count(),
  }),
);
const VoucherSchema: z.ZodType<Voucher> = named(
  'Voucher',
  z.object({
    did: z.string(),
    name: z.string(),
    kinds: z.array(CredentialKindSchema),
    credentials: count().describe('active credentials this voucher issued to the DID'),
    anchor: z.boolean().describe('a trust anchor of this deployment'),
  }),
);
const IdentityDocumentSchema: z.ZodType<IdentityDocument> = named(
  'IdentityDocument',
  z.object({
    ...identityFields,
    didDocument: DidDocumentSchema,
    didDocumentMetadata: z.object({
      created: Timestamp,
      updated: Timestamp,
      versionId: z.string(),
      deactivated: z.boolean(),
    }),
    credentials: z.array(CredentialRecordSchema).describe('held credentials, newest first, at most 50'),
    trustChain: z
      .object({ vouchers: z.array(VoucherSchema), verified: z.boolean() })
      .describe(
        'who vouched directly (DIDs of another controller wallet only); verified as in GET /api/trust/chain/:did at depth 3',
      ),
  }),
);

const ListIdentitiesQuerySchema: z.ZodType<ListIdentitiesQuery, z.ZodTypeDef, ListIdentitiesQueryInput> = named(
  'ListIdentitiesQuery',
  z.object({
    type: IdentityTypeSchema.optional(),
    status: IdentityStatusSchema.optional(),
    capability: Slug.optional().describe('only identities declaring this capability'),
    controller: SolanaAddress.optional().describe('only identities this wallet controls'),
    ...PageQuery,
  }),
);
const ListCredentialsQuerySchema: z.ZodType<ListCredentialsQuery, z.ZodTypeDef, ListCredentialsQueryInput> = named(
  'ListCredentialsQuery',
  z.object({
    role: z
      .enum(['subject', 'issuer'])
      .default('subject')
      .describe('subject: credentials the DID holds; issuer: those it issued'),
    credentialId: CredentialId.optional().describe(
      'only this credential: its live revocation status, as the credential’s credentialStatus.id reads it',
    ),
    kind: CredentialKindSchema.optional(),
    status: CredentialStatusSchema.optional(),
    ...PageQuery,
  }),
);
const TrustChainQuerySchema: z.ZodType<TrustChainQuery, z.ZodTypeDef, TrustChainQueryInput> = named(
  'TrustChainQuery',
  z.object({
    maxDepth: z.coerce.number().int().min(1).max(5).default(3).describe('levels of issuers to follow, 1 to 5'),
    includeInactive: z
      .enum(['true', 'false'])
      .default('false')
      .describe('also follow suspended, revoked and expired credentials (they never count toward verified)'),
  }),
);

const CreateIdentityBody: z.ZodType<CreateIdentityRequest, z.ZodTypeDef, CreateIdentityRequestInput> = named(
  'CreateIdentityRequest',
  z
    .object({
      type: IdentityTypeSchema.default('agent'),
      name: Name,
      key: KeyProofSchema.optional().describe(
        'the DID’s verification key; the controller wallet’s own key when omitted',
      ),
      capabilities: capabilityList().default([]),
      metadata: z.record(MetadataKey, z.string().max(500)).refine(tooManyKeys, 'at most 20 metadata keys').default({}),
      serviceEndpoints: endpointList().default([]),
    })
    .strict(),
);
const UpdateIdentityBody: z.ZodType<UpdateIdentityRequest> = named(
  'UpdateIdentityRequest',
  z
    .object({
      did: AgentDid,
      expectedVersion: z
        .number()
        .int()
        .min(1)
        .optional()
        .describe('refuse with 409 version_conflict unless the identity is at this version'),
      name: Name.optional(),
      addCapabilities: capabilityList().optional().describe('added, or replaced when the id is already declared'),
      removeCapabilities: z.array(Slug).min(1).max(50).optional(),
      metadata: z
        .record(MetadataKey, z.string().max(500).nullable())
        .refine(tooManyKeys, 'at most 20 metadata keys')
        .optional()
        .describe('keys to set; null deletes a key'),
      serviceEndpoints: endpointList().optional().describe('replaces the list'),
      rotateKey: KeyProofSchema.optional().describe('the new current key; the old one is kept as rotated'),
      deactivate: z
        .literal(true)
        .optional()
        .describe('final: the DID resolves as deactivated and can no longer change'),
    })
    .strict()
    .refine(
      (b) =>
        [
          b.name,
          b.addCapabilities,
          b.removeCapabilities,
          b.metadata,
          b.serviceEndpoints,
          b.rotateKey,
          b.deactivate,
        ].some((v) => v !== undefined),
      'nothing to update: send name, addCapabilities, removeCapabilities, metadata, serviceEndpoints, rotateKey or deactivate',
    ),
);
const CredentialActionBody: z.ZodType<CredentialActionRequest> = named(
  'CredentialActionRequest',
  z.discriminatedUnion('action', [
    z
      .object({
        action: z.literal('issue'),
        credentialId: CredentialId.describe('the prepared credential'),
        proofValue: z
          .string()
          .regex(/^z[1-9A-HJ-NP-Za-km-z]{60,100}$/, 'must be "z" + base58btc of a 64-byte Ed25519 signature')
          .describe('"z" + base58btc of the issuer key’s Ed25519 signature of signingInput'),
      })
      .strict(),
    z
      .object({
        action: z.literal('prepare'),
        issuer: AgentDid.describe('the issuing DID; the caller must be its controller'),
        subject: AgentDid.describe('the DID receiving the credential'),
        claims: CredentialClaimsSchema,
        validUntil: Timestamp.optional().describe('expiry, in the future and at most 5 years away; none when omitted'),
      })
      .strict(),
    z
      .object({
        action: z.literal('setStatus'),
        credentialId: CredentialId,
        status: z.enum(['active', 'suspended', 'revoked']).describe('revoked is final'),
        reason: z.string().trim().min(1).max(300).optional(),
      })
      .strict(),
  ]),
);
const PresentedCredentialSchema: z.ZodType<PresentedCredential> = named(
  'PresentedCredential',
  z
    .object({
      id: z.string().min(1).max(200),
      type: z.array(z.string()).min(1).max(10),
      issuer: z.union([z.string().min(1).max(200), z.object({ id: z.string().min(1).max(200) }).passthrough()]),
      proof: z
        .object({ verificationMethod: z.string().min(1).max(300), proofValue: z.string().min(1).max(200) })
        .passthrough(),
    })
    .passthrough(),
);
const VerifyCredentialBody: z.ZodType<VerifyCredentialRequest> = named(
  'VerifyCredentialRequest',
  z.union([
    z.object({ credentialId: CredentialId }).strict(),
    z
      .object({ credential: PresentedCredentialSchema.describe('a full credential document, verified as received') })
      .strict(),
  ]),
);
const CredentialVerificationSchema: z.ZodType<CredentialVerification> = named(
  'CredentialVerification',
  z.object({
    valid: z.boolean().describe('every check passed'),
    credentialId: z.string().nullable(),
    kind: CredentialKindSchema.nullable(),
    issuer: z.string().nullable(),
    subject: z.string().nullable(),
    status: z
      .union([CredentialStatusSchema, z.literal('unknown')])
      .describe('unknown for a credential this registry did not issue'),
    checks: z.object({
      registered: z.boolean().describe('issued through this registry'),
      signature: z
        .boolean()
        .describe(
          'the eddsa-jcs-2022 proof verifies against the issuer’s key it names (#key-<n>: the current key, or one rotated out after the credential’s validFrom)',
        ),
      issuerActive: z.boolean(),
      subjectActive: z.boolean(),
      notExpired: z.boolean(),
      notSuspended: z.boolean(),
      notRevoked: z.boolean(),
    }),
    failures: z.array(
      z.enum([
        'not_registered',
        'signature_invalid',
        'issuer_unknown',
        'issuer_deactivated',
        'subject_deactivated',
        'expired',
        'suspended',
        'revoked',
      ]),
    ),
    verifiedAt: Timestamp,
  }),
);

const TrustChainSchema: z.ZodType<TrustChain> = named(
  'TrustChain',
  z.object({
    did: z.string(),
    maxDepth: z.number().int(),
    verified: z
      .boolean()
      .describe(
        'a path of active, unexpired credentials, each from a DID of another controller wallet than its subject’s, leads from a trust anchor to the DID',
      ),
    anchorsReached: z.array(z.string()),
    vouchers: z
      .array(VoucherSchema)
      .describe('issuers of the DID’s own active credentials (depth 1) controlled by another wallet'),
    endorsements: z.object({
      total: count().describe('active credentials the DID holds from DIDs of another controller wallet'),
      distinctIssuers: count(),
      byKind: KindCountsSchema,
      sameController: count().describe(
        'active credentials from DIDs of the DID’s own controller wallet: self-attestation, shown as links, never counted',
      ),
    }),
    nodes: z.array(
      z.object({
        did: z.string(),
        name: z.string(),
        type: IdentityTypeSchema,
        status: IdentityStatusSchema,
        depth: z.number().int().min(0).describe('0 for the DID itself'),
        anchor: z.boolean(),
      }),
    ),
    links: z.array(
      z.object({
        issuer: z.string(),
        subject: z.string(),
        credentialId: z.string(),
        kind: CredentialKindSchema,
        status: CredentialStatusSchema,
        issuedAt: Timestamp,
        depth: z.number().int().min(1),
        sameController: z
          .boolean()
          .describe('issuer and subject share a controller wallet: self-attestation, carrying no trust'),
      }),
    ),
    paths: z
      .array(z.array(z.string()))
      .describe('shortest path to each anchor reached, as DIDs from the DID to the anchor'),
    truncated: z.boolean().describe('true when maxDepth or the 200-node cap left issuers unexplored'),
    computedAt: Timestamp,
  }),
);

const factorFields = {
  score: z.number().min(0).max(100),
  weight: z
    .number()
    .min(0)
    .max(1)
    .describe('defaults 0.15, 0.30, 0.30, 0.25; a factor with source none gets 0 and the rest are rescaled'),
  contribution: z.number().describe('score × weight'),
  source: z.enum(['registry', 'reputation', 'none']),
};
const TradeEvidenceSchema: z.ZodType<TradeEvidence> = named(
  'TradeEvidence',
  z.object({
    source: z
      .enum(['reputation', 'certification', 'caller'])
      .describe(
        'reputation: reports the reputation service holds for the controller wallet; certification: the claims of the ' +
          'DID’s independent trade certifications; caller: the request’s tradeHistory',
      ),
    counted: z
      .boolean()
      .describe('true only for trades the reputation service verified (a trusted reporter or an on-chain transfer)'),
    completedTrades: count(),
    disputedTrades: count(),
    volumeUsd: UsdAmount,
    firstTradeAt: Timestamp.nullable(),
    note: z.string().describe('why these figures count or not'),
  }),
);
const TrustScoreSchema: z.ZodType<TrustScore> = named(
  'TrustScore',
  z.object({
    did: z.string(),
    score: z.number().min(0).max(100),
    band: z
      .enum(['untrusted', 'low', 'moderate', 'high', 'excellent'])
      .describe('below 20, 40, 60, 80; excellent at 80 or more'),
    factors: z.object({
      didAge: z.object({ ...factorFields, days: z.number().min(0) }).describe('score = 100 × (1 − e^(−days / 90))'),
      credentials: z
        .object({
          ...factorFields,
          active: count(),
          suspended: count(),
          revoked: count(),
          distinctIssuers: count(),
          byKind: KindCountsSchema,
        })
        .describe(
          'min(100, 15 per skill attestation + 25 per trade certification + 35 per audit badge, one per issuer and kind) − 20 per revoked',
        ),
      tradeHistory: z
        .object({
          ...factorFields,
          completedTrades: count().describe('verified trades completed (or auto-released)'),
          disputedTrades: count().describe('verified trades disputed or expired undelivered'),
          disputeRate: z.number().min(0).max(1),
          volumeUsd: UsdAmount,
          firstTradeAt: Timestamp.nullable().describe('the earliest verified trade'),
          evidence: z.array(TradeEvidenceSchema).describe('every body of trade figures seen, counted or not'),
        })
        .describe(
          '100 × (1 − disputeRate) × min(1, log10(1 + trades) / 2) over verified trades only: the reports the ' +
            'reputation service verified for the DID’s controller wallet (filed by a trusted service such as the escrow, ' +
            'or backed by an on-chain transfer between the two parties); source none (score 0) when that service does ' +
            'not answer. Trade certifications and the request’s tradeHistory are listed in evidence, never counted',
        ),
      reputation: z
        .object({ ...factorFields, reputationScore: z.number().nullable(), ratings: count() })
        .describe(
          'reputation score × min(1, ratings / 10), read from the reputation service for the DID’s controller wallet (source ' +
            'reputation; ratings = its verified trades); left out (source none) when the wallet has no verified trade there or the service does not answer',
        ),
    }),
    riskFlags: z.array(
      z.enum([
        'new_identity',
        'deactivated',
        'no_credentials',
        'revoked_credentials',
        'high_dispute_rate',
        'unverified_chain',
        'no_trade_history',
      ]),
    ),
    summary: z.string().describe('the score explained for a person'),
    generator: Generator,
    computedAt: Timestamp,
  }),
);
const TrustScoreBody: z.ZodType<TrustScoreRequest> = named(
  'TrustScoreRequest',
  z
    .object({
      did: AgentDid,
      tradeHistory: z
        .object({
          completedTrades: count().max(10_000_000),
          disputedTrades: count().max(10_000_000),
          volumeUsd: UsdAmount,
          firstTradeAt: Timestamp.optional(),
        })
        .strict()
        .optional()
        .describe(
          'the caller’s own account of the DID’s trades: echoed as unverified evidence (source caller), never counted',
        ),
    })
    .strict(),
);

const BatchResolveBody: z.ZodType<BatchResolveRequest> = named(
  'BatchResolveRequest',
  z
    .object({
      dids: z
        .array(AgentDid)
        .min(1)
        .max(MAX_BATCH_DIDS)
        .refine((list) => new Set(list).size === list.length, 'DIDs must be unique')
        .describe(`1 to ${MAX_BATCH_DIDS} DIDs`),
    })
    .strict(),
);
const BatchResolutionSchema: z.ZodType<BatchResolution> = named(
  'BatchResolution',
  z.object({
    results: z.array(
      z.object({
        did: z.string(),
        found: z.boolean(),
        identity: IdentityDocumentSchema.nullable().describe('the document GET /api/identity/:did answers'),
        error: z.literal('notFound').nullable(),
      }),
    ),
    found: count(),
    notFound: count(),
    resolvedAt: Timestamp,
  }),
);

const IdentityStatsSchema: z.ZodType<IdentityStats> = named(
  'IdentityStats',
  z.object({
    dids: z.object({
      total: count(),
      active: count(),
      deactivated: count(),
      byType: z.object({ agent: count(), service: count(), organization: count() }),
    }),
    credentials: z.object({
      issued: count(),
      active: count(),
      suspended: count(),
      revoked: count(),
      expired: count(),
      byKind: KindCountsSchema,
    }),
    verifications: z.object({ total: count(), valid: count(), invalid: count() }),
    resolutions: z.object({
      single: count().describe('GET /api/identity/:did calls'),
      batch: count().describe('POST /api/resolve/batch calls'),
      didsResolved: count(),
    }),
    keyRotations: count(),
    asOf: Timestamp,
  }),
);

// ---- examples ----

const exampleDid = 'did:agent:Po76gPZp5uNfnEiur8Z7DV';
const exampleIssuer = 'did:agent:5iLDnBzS4EVHCP4aCXdRg4';

const router = c.router({
  list: {
    method: 'GET',
    path: '/api/identities',
    query: ListIdentitiesQuerySchema,
    summary: 'Browse identities, filtered by type, status and capability',
    description:
      'Identities newest first, a page at a time, filtered by type (agent, service, organization), status (active, ' +
      'deactivated), a declared capability, or the controlling wallet. Design: each item is a summary; resolve one DID for ' +
      'the full document.',
    responses: { 200: page(IdentitySummarySchema), ...standardErrors, ...paymentErrors },
    metadata: {
      payment: fixed('0.002'),
      example: { query: { type: 'agent', status: 'active', capability: 'code-review', limit: 20 } },
    } satisfies RouteMeta,
  },
  get: {
    method: 'GET',
    path: '/api/identity/:did',
    pathParams: z.object({ did: AgentDid }),
    summary: 'Resolve a DID to the full identity document',
    description:
      'The identity document of a did:agent DID: the W3C DID document (Multikey verification methods, service endpoints) ' +
      'with its metadata, capabilities, metadata, public keys (current and rotated), held credentials with their status, ' +
      'and the direct trust chain. A deactivated DID still resolves, with didDocumentMetadata.deactivated true. Design: ' +
      'the did:agent method is ours; its id is base58btc of 16 random bytes and does not change when keys rotate. ' +
      'Errors: 404 did_not_found.',
    responses: { 200: IdentityDocumentSchema, 404: ErrorEnvelope, ...standardErrors, ...paymentErrors },
    metadata: { payment: fixed('0.001'), example: { params: { did: exampleDid } } } satisfies RouteMeta,
  },
  create: {
    method: 'POST',
    path: '/api/identity/create',
    body: CreateIdentityBody,
    summary: 'Create an identity with a keypair and capability declarations',
    description:
      'Registers a new did:agent DID controlled by the calling wallet (SIGN-IN-WITH-X), with capability declarations, ' +
      'metadata and service endpoints. The keypair is the agent’s: send the public key with a proof of possession in ' +
      '`key`, or omit it and the controller wallet’s own Ed25519 key (a Solana address is one) becomes the DID’s key. ' +
      'Design: the service never generates, holds or returns a private key. Errors: 422 key_proof_invalid when the ' +
      'proof does not verify; 422 identity_limit_reached when the wallet already controls 100 identities.',
    responses: { 201: IdentityDocumentSchema, 422: ErrorEnvelope, ...standardErrors, ...paymentErrors, ...authErrors },
    metadata: {
      payment: fixed('0.01'),
      auth: 'siwx',
      example: {
        body: {
          type: 'agent',
          name: 'Audit Scout',
          key: {
            publicKeyMultibase: 'z6MktwupdmLXVVqTzCw4i46r4uGyosGXRnR3XjN4Zq7oMMsw',
            proof: '4UsEGzKnJKfkJXqKFTkLhJ5qUmQh5UuyATAWhkyYrDuc9HE2bDHUirYJSYSCTSmefTBRbzJTNzqAo8Ficqf5WCLf',
          },
          capabilities: [
            { id: 'code-review', description: 'Reviews TypeScript and Rust for security issues', version: '1.0' },
            { id: 'solana-programs' },
          ],
          metadata: { homepage: 'https://example.com/audit-scout' },
          serviceEndpoints: [{ id: 'card', type: 'AgentCard', url: 'https://example.com/.well-known/agent-card.json' }],
        },
      },
    } satisfies RouteMeta,
  },
  update: {
    method: 'POST',
    path: '/api/identity/update',
    body: UpdateIdentityBody,
    summary: 'Add capabilities, change metadata, rotate keys',
    description:
      'Changes an identity: adds, replaces or removes capabilities, sets or deletes metadata keys, replaces service ' +
      'endpoints, renames, rotates the key (the old key stays listed as rotated) or deactivates the DID for good. Only ' +
      'the controller wallet may (SIGN-IN-WITH-X). Errors: 403 not_controller; 404 did_not_found; 409 did_deactivated; ' +
      '409 version_conflict when expectedVersion is stale; 422 key_proof_invalid; 422 key_reused when rotating to a key ' +
      'the DID used before; 422 capability_not_declared when removing an undeclared capability; 422 too_many_capabilities ' +
      '(over 50) or too_many_metadata_keys (over 20) after the change.',
    responses: {
      200: IdentityDocumentSchema,
      404: ErrorEnvelope,
      409: ErrorEnvelope,
      422: ErrorEnvelope,
      ...standardErrors,
      ...paymentErrors,
      ...authErrors,
    },
    metadata: {
      payment: fixed('0.005'),
      auth: 'siwx',
      example: {
        body: {
          did: exampleDid,
          expectedVersion: 3,
          addCapabilities: [{ id: 'move-audits', description: 'Audits Move smart contracts' }],
          metadata: { homepage: 'https://example.com/scout', pricing: null },
        },
      },
    } satisfies RouteMeta,
  },
  issueCredential: {
    method: 'POST',
    path: '/api/credentials/issue',
    body: CredentialActionBody,
    summary: 'Issue a verifiable credential to an agent',
    description:
      'Issues a W3C verifiable credential (Data Model 2.0) from the issuer DID to the subject DID (a skill attestation, a ' +
      'trade certification or an audit badge), signed with eddsa-jcs-2022 by the issuer DID’s own key: the registry never ' +
      'holds a DID’s private key, so it cannot sign for anyone. Two steps, both by the issuer DID’s controller ' +
      '(SIGN-IN-WITH-X): `action: "prepare"` (free) checks the request and answers the credential as it will be issued, ' +
      'the key that must sign (`verificationMethod`, the issuer’s current `#key-<n>`) and `signingInput`, the exact 64 ' +
      'bytes (base58btc) to sign with Ed25519; `action: "issue"` (paid) sends `proofValue` = "z" + base58btc of that ' +
      'signature within 10 minutes: the registry verifies it with the key and registers the credential, so any Data ' +
      'Integrity verifier checks it against the issuer’s DID document. `action: "setStatus"` lets the issuer suspend, ' +
      'reinstate or revoke (final) a credential it issued. Design: revocation status lives here; anyone reads it free ' +
      'with GET /api/credentials/:subject?credentialId=… (the credential’s credentialStatus.id). Errors: 403 ' +
      'not_issuer_controller; 404 did_not_found, credential_not_found (also an unknown or expired prepared credential); ' +
      '409 did_deactivated, credential_revoked, credential_expired, credential_exists (already issued), key_rotated (the ' +
      'issuer’s key changed since prepare); 422 proof_invalid (the signature does not verify with the issuer’s key), ' +
      'self_attestation (issuer = subject), capability_not_declared (a skill the subject has not declared), ' +
      'invalid_validity (validUntil past or over 5 years), invalid_period (periodEnd before periodStart).',
    responses: {
      200: z.union([CredentialRecordSchema, PreparedCredentialSchema]),
      404: ErrorEnvelope,
      409: ErrorEnvelope,
      422: ErrorEnvelope,
      ...standardErrors,
      ...paymentErrors,
      ...authErrors,
    },
    metadata: {
      payment: tiered([
        { id: 'prepare', usd: '0', description: 'build a credential for the issuer to sign' },
        { id: 'issue', usd: '0.01', description: 'issue a credential signed by the issuer' },
        { id: 'setStatus', usd: '0', description: 'suspend, reinstate or revoke a credential you issued' },
      ]),
      auth: 'siwx',
      example: {
        body: {
          action: 'prepare',
          issuer: exampleIssuer,
          subject: exampleDid,
          claims: {
            kind: 'skill_attestation',
            skill: 'code-review',
            level: 'expert',
            note: 'Reviewed 12 modules without a missed finding',
          },
          validUntil: '2027-05-01T00:00:00.000Z',
        },
      },
    } satisfies RouteMeta,
  },
  verifyCredential: {
    method: 'POST',
    path: '/api/credentials/verify',
    body: VerifyCredentialBody,
    summary: 'Check a credential’s authenticity and revocation status',
    description:
      'Verifies a credential by id, or a full credential document as presented to you: signature, issuer and subject ' +
      'still active, not expired, not suspended, not revoked. Answers 200 with valid false and the failed checks rather ' +
      'than an error. Design: a document not issued through this registry is not_registered. Errors: 404 ' +
      'credential_not_found for an unknown credentialId.',
    responses: { 200: CredentialVerificationSchema, 404: ErrorEnvelope, ...standardErrors, ...paymentErrors },
    metadata: {
      payment: fixed('0.002'),
      example: { body: { credentialId: 'cred_8fK2xQ7mLp3Vn9RtWb4Z' } },
    } satisfies RouteMeta,
  },
  listCredentials: {
    method: 'GET',
    path: '/api/credentials/:did',
    pathParams: z.object({ did: AgentDid }),
    query: ListCredentialsQuerySchema,
    summary: 'Credentials held by the agent',
    description:
      'Credentials the DID holds, newest first, a page at a time, with their status; role=issuer lists those it issued ' +
      'instead. Filter by kind, status, or one credentialId. Free and public: it is the revocation status a credential’s ' +
      'credentialStatus.id points to, which any verifier must be able to read. Errors: 404 did_not_found.',
    responses: { 200: page(CredentialRecordSchema), 404: ErrorEnvelope, ...standardErrors },
    metadata: {
      payment: free(),
      example: { params: { did: exampleDid }, query: { kind: 'skill_attestation', status: 'active', limit: 20 } },
    } satisfies RouteMeta,
  },
  trustChain: {
    method: 'GET',
    path: '/api/trust/chain/:did',
    pathParams: z.object({ did: AgentDid }),
    query: TrustChainQuerySchema,
    summary: 'Trace the trust chain',
    description:
      'Follows the DID’s credentials to their issuers, and theirs, up to maxDepth: who vouched for the agent, the ' +
      'credential issuers, endorsements by kind, the graph (nodes and links) and the shortest path to each trust anchor ' +
      'reached. Design: trust anchors are DIDs the deployment configures (for example known auditors); verified means ' +
      'an anchor is reached through active credentials only; a credential between two DIDs of the same controller wallet ' +
      '(self-attestation through a second DID) is shown as a link marked sameController but carries no trust: it makes ' +
      'no voucher, no endorsement and no path; cycles are followed once; at most 200 nodes. Errors: 404 ' +
      'did_not_found.',
    responses: { 200: TrustChainSchema, 404: ErrorEnvelope, ...standardErrors, ...paymentErrors },
    metadata: {
      payment: fixed('0.005'),
      example: { params: { did: exampleDid }, query: { maxDepth: 3 } },
    } satisfies RouteMeta,
  },
  trustScore: {
    method: 'POST',
    path: '/api/trust/score',
    body: TrustScoreBody,
    summary: 'AI composite trust score',
    description:
      'A 0-to-100 trust score composed of DID age, credentials, trade history and reputation, each factor with its ' +
      'inputs, score, weight and contribution, plus risk flags and an explanation written by the reasoning engine. ' +
      'Nothing the caller says raises a score. Trade history counts only trades on record: those the reputation service ' +
      'verified for the DID’s controller wallet (reported by a trusted service such as the escrow, or backed by an ' +
      'on-chain transfer between the parties); a `tradeHistory` in the request and the figures of trade certifications ' +
      'are shown in `factors.tradeHistory.evidence` with their source, as unverified, and count for nothing. ' +
      'Reputation is read from the same service for the controller wallet, and left out (its weight shared among the ' +
      'others) when the wallet has no verified trade there or that service does not answer. ' +
      'Credentials count only from issuers controlled by another wallet than the subject’s, and not from an issuer the ' +
      'subject’s controller vouched for in return (a ring of mutual vouching): one wallet cannot raise its own DIDs. A ' +
      'deactivated DID scores 0 with the flag deactivated. Errors: 404 did_not_found.',
    responses: { 200: TrustScoreSchema, 404: ErrorEnvelope, ...standardErrors, ...paymentErrors },
    metadata: {
      payment: fixed('0.02'),
      example: {
        body: {
          did: exampleDid,
          tradeHistory: {
            completedTrades: 37,
            disputedTrades: 1,
            volumeUsd: '1840.50',
            firstTradeAt: '2025-11-02T09:00:00.000Z',
          },
        },
      },
    } satisfies RouteMeta,
  },
  resolveBatch: {
    method: 'POST',
    path: '/api/resolve/batch',
    body: BatchResolveBody,
    summary: `Resolve several DIDs in one call (at most ${MAX_BATCH_DIDS})`,
    description:
      `Resolves 1 to ${MAX_BATCH_DIDS} distinct DIDs in one call, in the order sent; each result carries the same ` +
      'document GET /api/identity/:did answers, or found false with error notFound (an unknown DID is not an error of ' +
      'the call). Design: the batch limit is ours; priced by size.',
    responses: { 200: BatchResolutionSchema, ...standardErrors, ...paymentErrors },
    metadata: {
      payment: tiered([
        { id: 'small', usd: '0.003', description: '1 to 5 DIDs' },
        { id: 'large', usd: '0.01', description: `6 to ${MAX_BATCH_DIDS} DIDs` },
      ]),
      example: { body: { dids: [exampleDid, exampleIssuer, 'did:agent:2DgWvqbzXqt9TL8yfNxEHy'] } },
    } satisfies RouteMeta,
  },
  stats: {
    method: 'GET',
    path: '/api/stats',
    summary: 'Identity statistics',
    description:
      'Total DIDs by type and status, credentials issued by kind and status, verification counts (valid, invalid), ' +
      'resolution counts and key rotations. Free: aggregate service statistics that dashboards and monitors poll, as the ' +
      'escrow service’s statistics are.',
    responses: { 200: IdentityStatsSchema, ...standardErrors },
    metadata: { payment: free() } satisfies RouteMeta,
  },
});

export const identity = defineService({
  id: 'identity',
  title: 'Identity Service',
  description:
    'Decentralized identifiers (did:agent DIDs) for agents with Ed25519 keypairs, verifiable credentials (skill ' +
    'attestations, trade certifications, audit badges) with revocation status, capability attestations, cross-service ' +
    'resolution, trust-chain verification and a composite trust score.',
  router,
});
