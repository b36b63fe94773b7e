import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { defineService } from '../core/service';
import { named } from '../core/names';
import { ErrorEnvelope, paymentErrors, standardErrors } from '../core/errors';
import { fixed, free, type RouteMeta } from '../core/payment';
import { SolanaAddress, SolanaSignature, Timestamp } from '../core/chain';
import { Generator, PageQuery, page } from './shared';

const c = initContract();

// Verification: scans a knowledge module's content for quality, safety and plagiarism, and certifies the
// content that passes. The gateway searches the certificates; the escrow service reads scans in disputes.

export type ScannableContentFormat = 'markdown' | 'text' | 'json' | 'code';
export type ScanCheck = 'quality' | 'safety' | 'plagiarism';
export type ScanFindingSeverity = 'info' | 'low' | 'medium' | 'high' | 'critical';
export type ScanVerdict = 'pass' | 'warn' | 'fail';
export type VerificationCertificateStatus = 'valid' | 'expired' | 'revoked';

/** The content of a knowledge module, as sent to a scan or delivered through an escrow. */
export interface ScannableContentInput {
  title: string;
  format: ScannableContentFormat;
  /** Programming language when `format` is "code", e.g. "typescript". */
  language?: string;
  body: string;
}
export interface ScannableContent {
  title: string;
  format: ScannableContentFormat;
  language: string | null;
  body: string;
}
export interface ScanFinding {
  id: string;
  check: ScanCheck;
  severity: ScanFindingSeverity;
  /** Machine-readable rule, e.g. "secret_private_key", "prompt_injection", "near_duplicate". */
  code: string;
  message: string;
  /** 1-based line of the body the finding points at, or null when it concerns the whole content. */
  line: number | null;
  excerpt: string | null;
}
export interface ScanQualityCheck {
  score: number;
  passed: boolean;
  wordCount: number;
  sectionCount: number;
  codeBlockCount: number;
  averageSentenceWords: number;
  /** Flesch reading ease of the prose (higher reads easier), or null without prose. */
  readability: number | null;
  duplicateLineRatio: number;
}
export interface ScanSafetyCheck {
  score: number;
  passed: boolean;
  secrets: number;
  promptInjections: number;
  dangerousCommands: number;
  personalData: number;
}
export interface ScanPlagiarismMatch {
  scanId: string;
  certificateId: string | null;
  moduleId: string | null;
  title: string;
  similarity: number;
}
export interface ScanPlagiarismCheck {
  score: number;
  passed: boolean;
  /** Highest similarity (0 to 1, Jaccard over 5-word shingles) to any earlier scanned content. */
  maxSimilarity: number;
  comparedAgainst: number;
  matches: ScanPlagiarismMatch[];
}
export interface ScanCertification {
  issued: boolean;
  certificateId: string | null;
  /** Why a certificate was or was not issued. */
  reason: string;
}
export interface ScanResult {
  id: string;
  moduleId: string | null;
  title: string;
  format: ScannableContentFormat;
  /** SHA-256 of the UTF-8 body, lowercase hex: what the result and any certificate are bound to. */
  contentHash: string;
  sizeBytes: number;
  checks: ScanCheck[];
  quality: ScanQualityCheck | null;
  safety: ScanSafetyCheck | null;
  plagiarism: ScanPlagiarismCheck | null;
  findings: ScanFinding[];
  score: number;
  verdict: ScanVerdict;
  certification: ScanCertification;
  holder: string | null;
  generator: Generator;
  scannedAt: string;
}
export interface VerificationCertificateProof {
  type: 'Ed25519Signature';
  /** The issuer's public key (base58), the key that verifies `signature`. */
  verificationKey: string;
  /** The exact text signed: canonical JSON of id, scanId, contentHash, score, holder, issuedAt, expiresAt. */
  signedPayload: string;
  /** Ed25519 signature of `signedPayload`'s UTF-8 bytes, base58 (64 bytes). */
  signature: string;
}
export interface VerificationCertificate {
  id: string;
  scanId: string;
  moduleId: string | null;
  title: string;
  format: ScannableContentFormat;
  contentHash: string;
  score: number;
  checkScores: { quality: number; safety: number; plagiarism: number };
  holder: string | null;
  issuer: string;
  status: VerificationCertificateStatus;
  issuedAt: string;
  expiresAt: string;
  revokedAt: string | null;
  revocationReason: string | null;
  proof: VerificationCertificateProof;
}
export interface VerificationStats {
  scans: number;
  verdicts: { pass: number; warn: number; fail: number };
  passRate: number | null;
  averageScore: number | null;
  findingsBySeverity: { info: number; low: number; medium: number; high: number; critical: number };
  certificates: { issued: number; valid: number; expired: number; revoked: number };
  scansLast24h: number;
  asOf: string;
}

const SCAN_ID = /^scn_[A-Za-z0-9]{16,40}$/;
const CERTIFICATE_ID = /^cert_[A-Za-z0-9]{16,40}$/;
/** A knowledge module id of the knowledge market (kept opaque here). */
const ModuleId = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/, 'must be a module id such as "mod_rag_basics"');
const ContentHash = z.string().regex(/^[0-9a-f]{64}$/, 'must be a SHA-256 hex digest (64 lowercase hex characters)');
const Score = z.number().min(0).max(100);
const FormatSchema = named('VerificationFormat', z.enum(['markdown', 'text', 'json', 'code']));
const CheckSchema = named('Check', z.enum(['quality', 'safety', 'plagiarism']));
const SeveritySchema = named('Severity', z.enum(['info', 'low', 'medium', 'high', 'critical']));
const VerdictSchema = named('Verdict', z.enum(['pass', 'warn', 'fail']));
const CertificateStatusSchema = named('VerificationCertificateStatus', z.enum(['valid', 'expired', 'revoked']));

/**
 * Knowledge content as a request carries it (a scan here, a delivery to the escrow service). Body up to 100,000
 * characters.
 */
export const ScannableContentInput: z.ZodType<ScannableContentInput> = named(
  'ScannableContentInput',
  z
    .object({
      title: z.string().trim().min(1).max(200),
      format: FormatSchema,
      language: z
        .string()
        .regex(/^[a-z][a-z0-9+#-]{0,31}$/, 'must be a lowercase language name such as "typescript"')
        .optional()
        .describe('programming language when format is "code"'),
      body: z.string().min(1).max(100_000).describe('the module content itself, at most 100,000 characters'),
    })
    .strict(),
);
export const ScannableContent: z.ZodType<ScannableContent> = named(
  'ScannableContent',
  z.object({
    title: z.string(),
    format: FormatSchema,
    language: z.string().nullable(),
    body: z.string(),
  }),
);

const ScanFindingSchema: z.ZodType<ScanFinding> = named(
  'ScanFinding',
  z.object({
    id: z.string(),
    check: CheckSchema,
    severity: SeveritySchema,
    code: z.string().describe('rule that fired, e.g. secret_private_key, prompt_injection, near_duplicate'),
    message: z.string(),
    line: z.number().int().min(1).nullable(),
    excerpt: z.string().nullable().describe('the offending text, secrets masked'),
  }),
);
const QualityCheckSchema: z.ZodType<ScanQualityCheck> = named(
  'ScanQualityCheck',
  z.object({
    score: Score,
    passed: z.boolean(),
    wordCount: z.number().int(),
    sectionCount: z.number().int().describe('headings (markdown) or top-level keys (json)'),
    codeBlockCount: z.number().int(),
    averageSentenceWords: z.number(),
    readability: z.number().nullable().describe('Flesch reading ease of the prose; null without prose'),
    duplicateLineRatio: z.number().min(0).max(1),
  }),
);
const SafetyCheckSchema: z.ZodType<ScanSafetyCheck> = named(
  'ScanSafetyCheck',
  z.object({
    score: Score,
    passed: z.boolean(),
    secrets: z.number().int().describe('private keys, API keys, seed phrases found'),
    promptInjections: z.number().int().describe('instructions aimed at the agent that reads the module'),
    dangerousCommands: z
      .number()
      .int()
      .describe('destructive shell commands, remote code piped into a shell, eval of fetched code'),
    personalData: z.number().int().describe('e-mail addresses, phone numbers'),
  }),
);
const PlagiarismCheckSchema: z.ZodType<ScanPlagiarismCheck> = named(
  'ScanPlagiarismCheck',
  z.object({
    score: Score,
    passed: z.boolean(),
    maxSimilarity: z
      .number()
      .min(0)
      .max(1)
      .describe('Jaccard similarity over 5-word shingles to the closest earlier scan'),
    comparedAgainst: z.number().int().describe('earlier scans compared'),
    matches: z.array(
      z.object({
        scanId: z.string(),
        certificateId: z.string().nullable(),
        moduleId: z.string().nullable(),
        title: z.string(),
        similarity: z.number().min(0).max(1),
      }),
    ),
  }),
);
const ScanResultSchema: z.ZodType<ScanResult> = named(
  'ScanResult',
  z.object({
    id: z.string().describe('scan id, scn_…'),
    moduleId: z.string().nullable(),
    title: z.string(),
    format: FormatSchema,
    contentHash: ContentHash.describe('SHA-256 of the UTF-8 body, lowercase hex'),
    sizeBytes: z.number().int(),
    checks: z.array(CheckSchema).describe('the checks that ran'),
    quality: QualityCheckSchema.nullable(),
    safety: SafetyCheckSchema.nullable(),
    plagiarism: PlagiarismCheckSchema.nullable(),
    findings: z.array(ScanFindingSchema),
    score: Score.describe('weighted score of the checks run: quality 40, safety 35, plagiarism 25'),
    verdict: VerdictSchema.describe(
      'pass: score >= 70 and no high or critical finding; warn: score >= 50 and no critical finding; fail otherwise',
    ),
    certification: z.object({
      issued: z.boolean(),
      certificateId: z.string().nullable(),
      reason: z.string(),
    }),
    holder: SolanaAddress.nullable().describe('the wallet the certificate names, as requested'),
    generator: Generator,
    scannedAt: Timestamp,
  }),
);
const CertificateSchema: z.ZodType<VerificationCertificate> = named(
  'VerificationCertificate',
  z.object({
    id: z.string().describe('certificate id, cert_…'),
    scanId: z.string(),
    moduleId: z.string().nullable(),
    title: z.string(),
    format: FormatSchema,
    contentHash: ContentHash,
    score: Score,
    checkScores: z.object({ quality: Score, safety: Score, plagiarism: Score }),
    holder: SolanaAddress.nullable(),
    issuer: SolanaAddress.describe('the verification service’s signing key'),
    status: CertificateStatusSchema,
    issuedAt: Timestamp,
    expiresAt: Timestamp.describe('one year after issue'),
    revokedAt: Timestamp.nullable(),
    revocationReason: z.string().nullable(),
    proof: z.object({
      type: z.literal('Ed25519Signature'),
      verificationKey: SolanaAddress,
      signedPayload: z
        .string()
        .describe('canonical JSON of id, scanId, contentHash, score, holder, issuedAt, expiresAt'),
      signature: SolanaSignature.describe('Ed25519 signature of signedPayload, base58 (64 bytes)'),
    }),
  }),
);
const count = z.number().int().min(0);
const StatsSchema: z.ZodType<VerificationStats> = named(
  'VerificationStats',
  z.object({
    scans: count,
    verdicts: z.object({ pass: count, warn: count, fail: count }),
    passRate: z.number().min(0).max(1).nullable(),
    averageScore: Score.nullable(),
    findingsBySeverity: z.object({ info: count, low: count, medium: count, high: count, critical: count }),
    certificates: z.object({ issued: count, valid: count, expired: count, revoked: count }),
    scansLast24h: count,
    asOf: Timestamp,
  }),
);

export interface VerificationScanBodyOut {
  content: ScannableContentInput;
  moduleId?: string;
  checks: ScanCheck[];
  certify: boolean;
  holder?: string;
}
export interface VerificationScanBodyIn {
  content: ScannableContentInput;
  moduleId?: string;
  checks?: ScanCheck[];
  certify?: boolean;
  holder?: string;
}
const ScanBody: z.ZodType<VerificationScanBodyOut, z.ZodTypeDef, VerificationScanBodyIn> = named(
  'VerificationScanBodyOut',
  z
    .object({
      content: ScannableContentInput,
      moduleId: ModuleId.optional().describe(
        'the knowledge-market module this content is, if any: the market must list it with this content’s SHA-256 (else 404 module_not_found or 422 content_mismatch)',
      ),
      checks: z
        .array(CheckSchema)
        .min(1)
        .max(3)
        .refine((list) => new Set(list).size === list.length, 'must not repeat a check')
        .default(['quality', 'safety', 'plagiarism'])
        .describe('checks to run; all three by default'),
      certify: z.boolean().default(true).describe('issue a certificate when the content passes all three checks'),
      holder: SolanaAddress.optional().describe('wallet to name on the certificate, usually the module’s seller'),
    })
    .strict(),
);

const EXAMPLE_BODY =
  '# Retrieval basics\n\nSplit documents into chunks of 300 to 500 tokens with some overlap, embed each chunk, ' +
  'and retrieve the closest chunks for every question.\n\n```ts\nconst chunks = split(text, { size: 400, overlap: 50 });\n```\n';

const router = c.router({
  scan: {
    method: 'POST',
    path: '/api/scan',
    body: ScanBody,
    summary: 'Scan a knowledge module for quality, safety and plagiarism',
    description:
      'Design: scans the content and stores the result under a scan id. Quality measures structure and prose (words, sections, ' +
      'code blocks, readability, repeated lines); safety looks for secrets, prompt injections, dangerous commands and personal ' +
      'data; plagiarism compares 5-word shingles with the earlier scans of other works first published no later than this ' +
      'one. A work is dated by first publication, not by scan order: the knowledge market’s publication time of its module, ' +
      'else its earliest scan (same content and holder), so an author scanning after a copier is not flagged for the copy. ' +
      'A `moduleId` is checked with the knowledge market before anything is charged: the module must exist and its listed ' +
      'contentHash must equal the scanned content’s SHA-256, so a scan and its certificate bind content to a module only ' +
      'when it is that module’s content. Each check scores 0 to 100; the overall score weighs ' +
      'quality 40, safety 35, plagiarism 25 (over the checks run). Verdict: pass at 70 or more with no high or critical finding, ' +
      'warn at 50 or more with no critical finding, fail otherwise. When all three checks ran, the verdict is pass and `certify` ' +
      'is true, a signed certificate is issued (GET /api/certificates/:certificateId). Errors: 404 module_not_found (the ' +
      'market lists no such module), 422 content_mismatch (details.listedContentHash and details.contentHash differ), 422 ' +
      'invalid_json_content when format is "json" and the body does not parse, 502 market_unavailable; none is charged.',
    responses: {
      201: ScanResultSchema,
      404: ErrorEnvelope,
      422: ErrorEnvelope,
      502: ErrorEnvelope,
      ...standardErrors,
      ...paymentErrors,
    },
    metadata: {
      payment: fixed('0.02'),
      example: {
        body: {
          content: { title: 'Retrieval basics', format: 'markdown', body: EXAMPLE_BODY },
          moduleId: 'mod_rag_basics',
          holder: 'C3nuLmBXJxkW4j8Ynx75KhSm5p5eDQ7jELM55oJteMfP',
        },
      },
    } satisfies RouteMeta,
  },
  getScan: {
    method: 'GET',
    path: '/api/scan/:scanId',
    pathParams: z.object({ scanId: z.string().regex(SCAN_ID, 'must be a scan id such as "scn_…"') }),
    summary: 'One scan result by id',
    description:
      'Design: the stored result of an earlier scan, findings included. Free: the scan was paid for when it ran, and its ' +
      'unguessable id is the capability to read it (the escrow service reads scans its parties cite in disputes). ' +
      'Errors: 404 scan_not_found.',
    responses: { 200: ScanResultSchema, 404: ErrorEnvelope, ...standardErrors },
    metadata: { payment: free(), example: { params: { scanId: 'scn_4kP9wQ2mZx7LbT3e' } } } satisfies RouteMeta,
  },
  listCertificates: {
    method: 'GET',
    path: '/api/certificates',
    query: z
      .object({
        q: z.string().trim().min(2).max(200).optional().describe('words to find in the title or module id'),
        moduleId: ModuleId.optional(),
        holder: SolanaAddress.optional(),
        contentHash: ContentHash.optional(),
        status: CertificateStatusSchema.optional().describe('all statuses when omitted'),
        minScore: z.coerce.number().min(0).max(100).optional().describe('only certificates scoring at least this'),
        ...PageQuery,
      })
      .strict(),
    summary: 'Search the certificates of modules that passed',
    description:
      'Design: the public certificate registry, newest first, filtered by text, module, holder, content hash, status and ' +
      'minimum score. Free: certificates exist to be found (the gateway’s search covers them).',
    responses: { 200: page(CertificateSchema), ...standardErrors },
    metadata: {
      payment: free(),
      example: { query: { q: 'retrieval', status: 'valid', minScore: 80, limit: 20 } },
    } satisfies RouteMeta,
  },
  getCertificate: {
    method: 'GET',
    path: '/api/certificates/:certificateId',
    pathParams: z.object({
      certificateId: z.string().regex(CERTIFICATE_ID, 'must be a certificate id such as "cert_…"'),
    }),
    summary: 'One certificate with its signed proof',
    description:
      'Design: a certificate with its status and Ed25519 proof: verify `proof.signature` over `proof.signedPayload` with ' +
      '`proof.verificationKey`, and compare `contentHash` with the SHA-256 of the content you hold. Free: verifying a ' +
      'certificate must cost nothing. Errors: 404 certificate_not_found.',
    responses: { 200: CertificateSchema, 404: ErrorEnvelope, ...standardErrors },
    metadata: { payment: free(), example: { params: { certificateId: 'cert_Q7mW2xLp9RtZ4kVb' } } } satisfies RouteMeta,
  },
  stats: {
    method: 'GET',
    path: '/api/stats',
    summary: 'Verification statistics',
    description:
      'Design: scans by verdict, pass rate, average score, findings by severity and certificates by status. Free: descriptive, ' +
      'read by the gateway’s ecosystem overview.',
    responses: { 200: StatsSchema, ...standardErrors },
    metadata: { payment: free() } satisfies RouteMeta,
  },
});

export const verification = defineService({
  id: 'verification',
  title: 'Verification Service',
  description:
    'Scans knowledge modules for quality, safety and plagiarism, scores them with findings, and issues signed certificates ' +
    'for modules that pass; the certificate registry is searchable.',
  router,
});
