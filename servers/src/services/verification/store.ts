import { sql, type Kysely, type Migration } from 'kysely';
import type {
  Generator,
  ScanCertification,
  ScanCheck,
  ScanFinding,
  ScanPlagiarismCheck,
  ScanQualityCheck,
  ScanSafetyCheck,
  ScanVerdict,
  ScannableContentFormat,
  VerificationCertificateStatus,
} from '@agent-economy/contracts';
import type { EarlierScan } from './domain';

export const migrations: Record<string, Migration> = {
  '001_scans_and_certificates': {
    async up(db) {
      // The content itself is not kept: its hash binds the result, its shingles serve later plagiarism checks.
      await db.schema
        .createTable('verification_scans')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('module_id', 'text')
        .addColumn('title', 'text', (c) => c.notNull())
        .addColumn('format', 'text', (c) => c.notNull())
        .addColumn('content_hash', 'text', (c) => c.notNull())
        .addColumn('size_bytes', 'integer', (c) => c.notNull())
        .addColumn('checks', 'jsonb', (c) => c.notNull())
        .addColumn('quality', 'jsonb')
        .addColumn('safety', 'jsonb')
        .addColumn('plagiarism', 'jsonb')
        .addColumn('findings', 'jsonb', (c) => c.notNull())
        .addColumn('score', 'double precision', (c) => c.notNull())
        .addColumn('verdict', 'text', (c) => c.notNull())
        .addColumn('certification', 'jsonb', (c) => c.notNull())
        .addColumn('holder', 'text')
        .addColumn('generator', 'jsonb', (c) => c.notNull())
        .addColumn('shingles', 'jsonb', (c) => c.notNull())
        .addColumn('scanned_at', 'timestamptz', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('verification_scans_time_idx').on('verification_scans').column('scanned_at').execute();
      await db.schema
        .createTable('verification_certificates')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('scan_id', 'text', (c) => c.notNull().unique().references('verification_scans.id'))
        .addColumn('module_id', 'text')
        .addColumn('title', 'text', (c) => c.notNull())
        .addColumn('format', 'text', (c) => c.notNull())
        .addColumn('content_hash', 'text', (c) => c.notNull())
        .addColumn('score', 'double precision', (c) => c.notNull())
        .addColumn('check_scores', 'jsonb', (c) => c.notNull())
        .addColumn('holder', 'text')
        .addColumn('issuer', 'text', (c) => c.notNull())
        .addColumn('issued_at', 'timestamptz', (c) => c.notNull())
        .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
        .addColumn('revoked_at', 'timestamptz')
        .addColumn('revocation_reason', 'text')
        .addColumn('signed_payload', 'text', (c) => c.notNull())
        .addColumn('signature', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('verification_certificates_order_idx').on('verification_certificates').columns(['issued_at', 'id']).execute();
    },
  },
  // When the knowledge market first published the module a scan is bound to: plagiarism is judged by first publication.
  '002_scan_published_at': {
    async up(db) {
      await db.schema.alterTable('verification_scans').addColumn('published_at', 'timestamptz').execute();
    },
  },
};

export interface StoredScan {
  id: string;
  moduleId: string | null;
  title: string;
  format: ScannableContentFormat;
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
  shingles: string[];
  scannedAt: Date;
  /** The market's publication time of the module the scan is bound to (moduleId), else null. */
  publishedAt?: Date | null;
}

export interface StoredCertificate {
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
  issuedAt: Date;
  expiresAt: Date;
  revokedAt: Date | null;
  revocationReason: string | null;
  signedPayload: string;
  signature: string;
}

interface ScanRow {
  id: string;
  module_id: string | null;
  title: string;
  format: ScannableContentFormat;
  content_hash: string;
  size_bytes: number;
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
  shingles: string[];
  scanned_at: Date;
  published_at: Date | null;
}

interface CertificateRow {
  id: string;
  scan_id: string;
  module_id: string | null;
  title: string;
  format: ScannableContentFormat;
  content_hash: string;
  score: number;
  check_scores: { quality: number; safety: number; plagiarism: number };
  holder: string | null;
  issuer: string;
  issued_at: Date;
  expires_at: Date;
  revoked_at: Date | null;
  revocation_reason: string | null;
  signed_payload: string;
  signature: string;
}

interface Tables {
  verification_scans: ScanRow;
  verification_certificates: CertificateRow;
}

const json = (value: unknown) => sql`${JSON.stringify(value)}::jsonb`;

const scanFromRow = (r: ScanRow): StoredScan => ({
  id: r.id,
  moduleId: r.module_id,
  title: r.title,
  format: r.format,
  contentHash: r.content_hash,
  sizeBytes: Number(r.size_bytes),
  checks: r.checks,
  quality: r.quality,
  safety: r.safety,
  plagiarism: r.plagiarism,
  findings: r.findings,
  score: Number(r.score),
  verdict: r.verdict,
  certification: r.certification,
  holder: r.holder,
  generator: r.generator,
  shingles: r.shingles,
  scannedAt: new Date(r.scanned_at),
});

const certificateFromRow = (r: CertificateRow): StoredCertificate => ({
  id: r.id,
  scanId: r.scan_id,
  moduleId: r.module_id,
  title: r.title,
  format: r.format,
  contentHash: r.content_hash,
  score: Number(r.score),
  checkScores: r.check_scores,
  holder: r.holder,
  issuer: r.issuer,
  issuedAt: new Date(r.issued_at),
  expiresAt: new Date(r.expires_at),
  revokedAt: r.revoked_at ? new Date(r.revoked_at) : null,
  revocationReason: r.revocation_reason,
  signedPayload: r.signed_payload,
  signature: r.signature,
});

export interface CertificateFilter {
  words?: string[];
  moduleId?: string;
  holder?: string;
  contentHash?: string;
  status?: VerificationCertificateStatus;
  minScore?: number;
  now: Date;
  after?: { issuedAt: Date; id: string };
  limit: number;
}

const likePattern = (word: string) => `%${word.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

export function verificationStore(database: Kysely<any>) {
  const db = database as Kysely<Tables>;
  return {
    /** Every earlier scan with what the plagiarism check compares (the newest first). */
    async earlierScans(): Promise<EarlierScan[]> {
      const rows = await db
        .selectFrom('verification_scans as s')
        .leftJoin('verification_certificates as c', 'c.scan_id', 's.id')
        .select(['s.id', 's.module_id', 's.title', 's.content_hash', 's.holder', 's.shingles', 's.scanned_at', 's.published_at', 'c.id as certificate_id'])
        .orderBy('s.scanned_at', 'desc')
        .execute();
      return rows.map((r) => ({
        scanId: r.id,
        certificateId: r.certificate_id ?? null,
        moduleId: r.module_id,
        title: r.title,
        contentHash: r.content_hash,
        holder: r.holder,
        shingles: r.shingles,
        scannedAt: new Date(r.scanned_at),
        publishedAt: r.published_at ? new Date(r.published_at) : null,
      }));
    },

    /** Stores a scan and, when one was issued, its certificate, together. */
    async save(scan: StoredScan, certificate: StoredCertificate | null): Promise<void> {
      await db.transaction().execute(async (tx) => {
        await tx
          .insertInto('verification_scans')
          .values({
            id: scan.id,
            module_id: scan.moduleId,
            title: scan.title,
            format: scan.format,
            content_hash: scan.contentHash,
            size_bytes: scan.sizeBytes,
            checks: json(scan.checks),
            quality: json(scan.quality),
            safety: json(scan.safety),
            plagiarism: json(scan.plagiarism),
            findings: json(scan.findings),
            score: scan.score,
            verdict: scan.verdict,
            certification: json(scan.certification),
            holder: scan.holder,
            generator: json(scan.generator),
            shingles: json(scan.shingles),
            scanned_at: scan.scannedAt,
            published_at: scan.publishedAt ?? null,
          } as any)
          .execute();
        if (certificate) {
          await tx
            .insertInto('verification_certificates')
            .values({
              id: certificate.id,
              scan_id: certificate.scanId,
              module_id: certificate.moduleId,
              title: certificate.title,
              format: certificate.format,
              content_hash: certificate.contentHash,
              score: certificate.score,
              check_scores: json(certificate.checkScores),
              holder: certificate.holder,
              issuer: certificate.issuer,
              issued_at: certificate.issuedAt,
              expires_at: certificate.expiresAt,
              revoked_at: certificate.revokedAt,
              revocation_reason: certificate.revocationReason,
              signed_payload: certificate.signedPayload,
              signature: certificate.signature,
            } as any)
            .execute();
        }
      });
    },

    async findScan(id: string): Promise<StoredScan | undefined> {
      const row = await db.selectFrom('verification_scans').selectAll().where('id', '=', id).executeTakeFirst();
      return row && scanFromRow(row);
    },

    async findCertificate(id: string): Promise<StoredCertificate | undefined> {
      const row = await db.selectFrom('verification_certificates').selectAll().where('id', '=', id).executeTakeFirst();
      return row && certificateFromRow(row);
    },

    /** One page of the registry, newest first, and whether more follow. */
    async certificates(filter: CertificateFilter): Promise<{ items: StoredCertificate[]; more: boolean }> {
      let q = db.selectFrom('verification_certificates').selectAll();
      for (const word of filter.words ?? []) {
        q = q.where((eb) => eb.or([eb('title', 'ilike', likePattern(word)), eb('module_id', 'ilike', likePattern(word))]));
      }
      if (filter.moduleId) q = q.where('module_id', '=', filter.moduleId);
      if (filter.holder) q = q.where('holder', '=', filter.holder);
      if (filter.contentHash) q = q.where('content_hash', '=', filter.contentHash);
      if (filter.minScore !== undefined) q = q.where('score', '>=', filter.minScore);
      if (filter.status === 'revoked') q = q.where('revoked_at', 'is not', null);
      if (filter.status === 'valid') q = q.where('revoked_at', 'is', null).where('expires_at', '>', filter.now);
      if (filter.status === 'expired') q = q.where('revoked_at', 'is', null).where('expires_at', '<=', filter.now);
      if (filter.after) {
        const { issuedAt, id } = filter.after;
        q = q.where((eb) => eb.or([eb('issued_at', '<', issuedAt), eb.and([eb('issued_at', '=', issuedAt), eb('id', '<', id)])]));
      }
      const rows = await q.orderBy('issued_at', 'desc').orderBy('id', 'desc').limit(filter.limit + 1).execute();
      return { items: rows.slice(0, filter.limit).map(certificateFromRow), more: rows.length > filter.limit };
    },

    async stats(now: Date) {
      const dayAgo = new Date(now.getTime() - 86_400_000);
      const scans = await db
        .selectFrom('verification_scans')
        .select((eb) => [
          eb.fn.countAll<string>().as('scans'),
          eb.fn.avg<string | number | null>('score').as('average'),
          sql<string>`count(*) filter (where verdict = 'pass')`.as('pass'),
          sql<string>`count(*) filter (where verdict = 'warn')`.as('warn'),
          sql<string>`count(*) filter (where verdict = 'fail')`.as('fail'),
          sql<string>`count(*) filter (where scanned_at > ${dayAgo})`.as('last24h'),
        ])
        .executeTakeFirstOrThrow();
      const severities = await sql<{ severity: string; n: string }>`
        select f->>'severity' as severity, count(*) as n
        from verification_scans, jsonb_array_elements(findings) as f
        group by 1`.execute(db);
      const certificates = await db
        .selectFrom('verification_certificates')
        .select([
          sql<string>`count(*)`.as('issued'),
          sql<string>`count(*) filter (where revoked_at is null and expires_at > ${now})`.as('valid'),
          sql<string>`count(*) filter (where revoked_at is null and expires_at <= ${now})`.as('expired'),
          sql<string>`count(*) filter (where revoked_at is not null)`.as('revoked'),
        ])
        .executeTakeFirstOrThrow();
      return {
        scans: Number(scans.scans),
        average: scans.average === null ? null : Number(scans.average),
        verdicts: { pass: Number(scans.pass), warn: Number(scans.warn), fail: Number(scans.fail) },
        last24h: Number(scans.last24h),
        severities: Object.fromEntries(severities.rows.map((r) => [r.severity, Number(r.n)])) as Record<string, number>,
        certificates: {
          issued: Number(certificates.issued),
          valid: Number(certificates.valid),
          expired: Number(certificates.expired),
          revoked: Number(certificates.revoked),
        },
      };
    },
  };
}

export type VerificationStore = ReturnType<typeof verificationStore>;
