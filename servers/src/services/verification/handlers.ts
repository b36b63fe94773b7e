import { randomBytes } from 'node:crypto';
import { base58Encode, verification, type VerificationCertificate } from '@agent-economy/contracts';
import { BUILTIN_GENERATOR } from '../../ai/reasoner';
import type { RouterImplementation } from '../../runtime/app';
import { HttpError, notFound, unprocessable } from '../../runtime/errors';
import { signEd25519, type Wallet } from '../../solana/keys';
import {
  canonicalPayload,
  certificateStatus,
  certificationDecision,
  jsonProblem,
  oneYearAfter,
  round,
  scanContent,
  sha256Hex,
} from './domain';
import type { StoredCertificate, StoredScan, VerificationStore } from './store';

export interface VerificationDeps {
  store: VerificationStore;
  /** The service's wallet: its key signs the certificates. */
  wallet: Wallet;
  /** A module's listing in the knowledge market (404 module_not_found, 502 market_unavailable), read over HTTP. */
  module(moduleId: string): Promise<{ contentHash: string; publishedAt: Date }>;
  now: () => Date;
}

/**
 * The module a scan names, confirmed by the knowledge market: its listed contentHash must be the scanned content's, so
 * a scan (and its certificate) binds content to a module only when it is that module's content. Runs before the paywall
 * too; the result is the module's publication time, which dates the work for the plagiarism check.
 */
export function moduleBinding(deps: Pick<VerificationDeps, 'module'>) {
  const bindings = new WeakMap<object, Promise<Date | null>>();
  async function bind(body: { moduleId?: string; content: { body: string } }): Promise<Date | null> {
    if (!body.moduleId) return null;
    const listed = await deps.module(body.moduleId);
    const hash = sha256Hex(body.content.body);
    if (listed.contentHash !== hash) {
      throw unprocessable(
        'content_mismatch',
        `The content is not module ${body.moduleId}'s: the market lists SHA-256 ${listed.contentHash}, the content has ${hash}`,
        {
          moduleId: body.moduleId,
          listedContentHash: listed.contentHash,
          contentHash: hash,
        },
      );
    }
    return listed.publishedAt;
  }
  return (request: { body: unknown }): Promise<Date | null> => {
    let bound = bindings.get(request);
    if (!bound) {
      bound = bind(request.body as { moduleId?: string; content: { body: string } });
      bindings.set(request, bound);
    }
    return bound;
  };
}

const newId = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;

/** NUL characters and lone surrogates: text the database cannot store, or that has no UTF-8 form to hash. */
const UNSTORABLE_TEXT = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const badField = (field: string, message: string) =>
  new HttpError(400, 'invalid_request', `Invalid request: ${field} ${message}`, { fields: [{ field, message }] });

/** A search text the database could not compare is a 400 naming the field. */
export function assertStorableQuery(q: string | undefined): void {
  if (q !== undefined && UNSTORABLE_TEXT.test(q))
    throw badField('query.q', 'must be Unicode text without NUL characters or lone surrogates');
}

/**
 * Content the scan can take: a storable title, a body with a UTF-8 form (its SHA-256 is what certificates bind),
 * and for "json" a body that parses (422 invalid_json_content). Runs before the paywall too.
 */
export function assertParsableContent(content: { title: string; format: string; body: string }): void {
  if (UNSTORABLE_TEXT.test(content.title))
    throw badField('body.content.title', 'must be Unicode text without NUL characters or lone surrogates');
  if (LONE_SURROGATE.test(content.body))
    throw badField('body.content.body', 'must be Unicode text: a lone surrogate has no UTF-8 form to hash');
  const problem = jsonProblem(content as { format: 'json'; body: string });
  if (problem)
    throw unprocessable(
      'invalid_json_content',
      `The content's format is "json" but its body does not parse: ${problem}`,
      { field: 'content.body', problem },
    );
}

/** The certificate registry's position a cursor names, or a 400 naming the field. */
export function certificatePosition(cursor: string | undefined): { issuedAt: Date; id: string } | undefined {
  if (cursor === undefined) return undefined;
  let value: { t?: unknown; id?: unknown } | undefined;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { t?: unknown; id?: unknown };
  } catch {
    value = undefined;
  }
  const issuedAt = typeof value?.t === 'string' ? new Date(value.t) : undefined;
  if (
    !issuedAt ||
    Number.isNaN(issuedAt.getTime()) ||
    typeof value?.id !== 'string' ||
    !/^cert_[0-9a-f]{24}$/.test(value.id)
  ) {
    throw badField('query.cursor', 'is not a cursor this route issued');
  }
  return { issuedAt, id: value.id };
}

function toScanResult(scan: StoredScan) {
  const { shingles: _, publishedAt: __, scannedAt, ...rest } = scan;
  return { ...rest, scannedAt: scannedAt.toISOString() };
}

export function toCertificate(c: StoredCertificate, now: Date): VerificationCertificate {
  return {
    id: c.id,
    scanId: c.scanId,
    moduleId: c.moduleId,
    title: c.title,
    format: c.format,
    contentHash: c.contentHash,
    score: c.score,
    checkScores: c.checkScores,
    holder: c.holder,
    issuer: c.issuer,
    status: certificateStatus(c, now),
    issuedAt: c.issuedAt.toISOString(),
    expiresAt: c.expiresAt.toISOString(),
    revokedAt: c.revokedAt ? c.revokedAt.toISOString() : null,
    revocationReason: c.revocationReason,
    proof: {
      type: 'Ed25519Signature',
      verificationKey: c.issuer,
      signedPayload: c.signedPayload,
      signature: c.signature,
    },
  };
}

// Handlers only translate between the contract and the domain.
export function verificationHandlers(
  { store, wallet, now }: VerificationDeps,
  binding: ReturnType<typeof moduleBinding>,
): RouterImplementation<typeof verification.router> {
  return {
    scan: async ({ body, res }) => {
      assertParsableContent(body.content);
      const publishedAt = await binding(res.locals.parsed as { body: unknown });
      const scannedAt = now();
      const moduleId = body.moduleId ?? null;
      const holder = body.holder ?? null;
      const result = scanContent(
        { content: body.content, moduleId, holder, checks: body.checks, publishedAt },
        await store.earlierScans(),
        scannedAt,
      );
      const decision = certificationDecision(result.checks, result.verdict, body.certify, result.score);
      const scanId = newId('scn');
      let certificate: StoredCertificate | null = null;
      if (decision.issue) {
        const id = newId('cert');
        const issuedAt = scannedAt;
        const expiresAt = oneYearAfter(issuedAt);
        const signedPayload = canonicalPayload({
          id,
          scanId,
          contentHash: result.contentHash,
          score: result.score,
          holder,
          issuedAt: issuedAt.toISOString(),
          expiresAt: expiresAt.toISOString(),
        });
        certificate = {
          id,
          scanId,
          moduleId,
          title: body.content.title,
          format: body.content.format,
          contentHash: result.contentHash,
          score: result.score,
          checkScores: {
            quality: round(result.quality!.score),
            safety: round(result.safety!.score),
            plagiarism: round(result.plagiarism!.score),
          },
          holder,
          issuer: wallet.address,
          issuedAt,
          expiresAt,
          revokedAt: null,
          revocationReason: null,
          signedPayload,
          signature: base58Encode(signEd25519(wallet, new TextEncoder().encode(signedPayload))),
        };
      }
      const scan: StoredScan = {
        id: scanId,
        moduleId,
        title: body.content.title,
        format: body.content.format,
        contentHash: result.contentHash,
        sizeBytes: result.sizeBytes,
        checks: result.checks,
        quality: result.quality,
        safety: result.safety,
        plagiarism: result.plagiarism,
        findings: result.findings,
        score: result.score,
        verdict: result.verdict,
        certification: { issued: !!certificate, certificateId: certificate?.id ?? null, reason: decision.reason },
        holder,
        generator: BUILTIN_GENERATOR,
        shingles: result.shingles,
        scannedAt,
        publishedAt,
      };
      await store.save(scan, certificate);
      return { status: 201, body: toScanResult(scan) };
    },

    getScan: async ({ params }) => {
      const scan = await store.findScan(params.scanId);
      if (!scan) throw notFound('scan_not_found', `No scan "${params.scanId}"`);
      return { status: 200, body: toScanResult(scan) };
    },

    listCertificates: async ({ query }) => {
      assertStorableQuery(query.q);
      const at = now();
      const after = certificatePosition(query.cursor);
      const page = await store.certificates({
        ...(query.q ? { words: query.q.split(/\s+/).filter(Boolean) } : {}),
        ...(query.moduleId ? { moduleId: query.moduleId } : {}),
        ...(query.holder ? { holder: query.holder } : {}),
        ...(query.contentHash ? { contentHash: query.contentHash } : {}),
        ...(query.status ? { status: query.status } : {}),
        ...(query.minScore !== undefined ? { minScore: query.minScore } : {}),
        ...(after ? { after } : {}),
        now: at,
        limit: query.limit,
      });
      const last = page.items.at(-1);
      const nextCursor =
        page.more && last
          ? Buffer.from(JSON.stringify({ t: last.issuedAt.toISOString(), id: last.id })).toString('base64url')
          : null;
      return { status: 200, body: { items: page.items.map((c) => toCertificate(c, at)), nextCursor } };
    },

    getCertificate: async ({ params }) => {
      const certificate = await store.findCertificate(params.certificateId);
      if (!certificate) throw notFound('certificate_not_found', `No certificate "${params.certificateId}"`);
      return { status: 200, body: toCertificate(certificate, now()) };
    },

    stats: async () => {
      const at = now();
      const s = await store.stats(at);
      const severity = (name: string) => s.severities[name] ?? 0;
      return {
        status: 200,
        body: {
          scans: s.scans,
          verdicts: s.verdicts,
          passRate: s.scans ? round(s.verdicts.pass / s.scans, 4) : null,
          averageScore: s.average === null ? null : round(s.average),
          findingsBySeverity: {
            info: severity('info'),
            low: severity('low'),
            medium: severity('medium'),
            high: severity('high'),
            critical: severity('critical'),
          },
          certificates: s.certificates,
          scansLast24h: s.last24h,
          asOf: at.toISOString(),
        },
      };
    },
  };
}
