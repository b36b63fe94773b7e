import { sql, type Kysely, type Migration, type QueryResult } from 'kysely';
import type { ScanResult, VerificationCertificate, VerificationCertificateStatus } from '@agent-economy/contracts';
import { camelCaseDb, json } from '../../db/camel-case';
import type { EarlierScan } from './domain';
import type { SharedDb } from '../../db';
import { recomputed } from '../../runtime/recomputed';

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
      await db.schema
        .createIndex('verification_scans_time_idx')
        .on('verification_scans')
        .column('scanned_at')
        .execute();
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
      await db.schema
        .createIndex('verification_certificates_order_idx')
        .on('verification_certificates')
        .columns(['issued_at', 'id'])
        .execute();
    },
  },
  // When the knowledge market first published the module a scan is bound to: plagiarism is judged by first publication.
  '002_scan_published_at': {
    async up(db) {
      await db.schema.alterTable('verification_scans').addColumn('published_at', 'timestamptz').execute();
    },
  },
};

// Scans and certificates as stored: the contract's, with time as Date (the handlers write ISO times back), plus what
// only storage keeps. A certificate's status is derived from its times, its proof from the issuer, payload and
// signature.

export interface StoredScan extends Omit<ScanResult, 'scannedAt'> {
  /** The content's shingles, for later plagiarism checks (the content itself is not kept). */
  shingles: string[];
  scannedAt: Date;
  /** The market's publication time of the module the scan is bound to (moduleId), else null. */
  publishedAt?: Date | null;
}

export interface StoredCertificate extends Omit<
  VerificationCertificate,
  'status' | 'proof' | 'issuedAt' | 'expiresAt' | 'revokedAt'
> {
  issuedAt: Date;
  expiresAt: Date;
  revokedAt: Date | null;
  signedPayload: string;
  signature: string;
}

// Rows are the entities themselves (camelCaseDb); their JSON columns are written with json().
interface Tables {
  verification_scans: Required<StoredScan>;
  verification_certificates: StoredCertificate;
}

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

export function verificationStore(database: SharedDb) {
  const severitiesOf = recomputed<QueryResult<{ severity: string; n: string }>>();
  const db = camelCaseDb<Tables>(database);
  return {
    /** Every earlier scan with what the plagiarism check compares (the newest first). */
    async earlierScans(): Promise<EarlierScan[]> {
      return db
        .selectFrom('verification_scans as s')
        .leftJoin('verification_certificates as c', 'c.scanId', 's.id')
        .select([
          's.id as scanId',
          'c.id as certificateId',
          's.moduleId',
          's.title',
          's.contentHash',
          's.holder',
          's.shingles',
          's.scannedAt',
          's.publishedAt',
        ])
        .orderBy('s.scannedAt', 'desc')
        .execute();
    },

    /** Stores a scan and, when one was issued, its certificate, together. */
    async save(scan: StoredScan, certificate: StoredCertificate | null): Promise<void> {
      await db.transaction().execute(async (tx) => {
        await tx
          .insertInto('verification_scans')
          .values({
            ...scan,
            checks: json(scan.checks),
            quality: json(scan.quality),
            safety: json(scan.safety),
            plagiarism: json(scan.plagiarism),
            findings: json(scan.findings),
            certification: json(scan.certification),
            generator: json(scan.generator),
            shingles: json(scan.shingles),
            publishedAt: scan.publishedAt ?? null,
          })
          .execute();
        if (certificate)
          await tx
            .insertInto('verification_certificates')
            .values({ ...certificate, checkScores: json(certificate.checkScores) })
            .execute();
      });
    },

    async findScan(id: string): Promise<StoredScan | undefined> {
      return db.selectFrom('verification_scans').selectAll().where('id', '=', id).executeTakeFirst();
    },

    async findCertificate(id: string): Promise<StoredCertificate | undefined> {
      return db.selectFrom('verification_certificates').selectAll().where('id', '=', id).executeTakeFirst();
    },

    /** One page of the registry, newest first, and whether more follow. */
    async certificates(filter: CertificateFilter): Promise<{ items: StoredCertificate[]; more: boolean }> {
      let q = db.selectFrom('verification_certificates').selectAll();
      for (const word of filter.words ?? []) {
        q = q.where((eb) =>
          eb.or([eb('title', 'ilike', likePattern(word)), eb('moduleId', 'ilike', likePattern(word))]),
        );
      }
      if (filter.moduleId) q = q.where('moduleId', '=', filter.moduleId);
      if (filter.holder) q = q.where('holder', '=', filter.holder);
      if (filter.contentHash) q = q.where('contentHash', '=', filter.contentHash);
      if (filter.minScore !== undefined) q = q.where('score', '>=', filter.minScore);
      if (filter.status === 'revoked') q = q.where('revokedAt', 'is not', null);
      if (filter.status === 'valid') q = q.where('revokedAt', 'is', null).where('expiresAt', '>', filter.now);
      if (filter.status === 'expired') q = q.where('revokedAt', 'is', null).where('expiresAt', '<=', filter.now);
      if (filter.after) {
        const { issuedAt, id } = filter.after;
        q = q.where((eb) =>
          eb.or([eb('issuedAt', '<', issuedAt), eb.and([eb('issuedAt', '=', issuedAt), eb('id', '<', id)])]),
        );
      }
      const rows = await q
        .orderBy('issuedAt', 'desc')
        .orderBy('id', 'desc')
        .limit(filter.limit + 1)
        .execute();
      return { items: rows.slice(0, filter.limit), more: rows.length > filter.limit };
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
      // Every finding of every scan unpacked: counted again only once a scan was added (scans are never changed).
      const severities = await severitiesOf(scans.scans, now, () =>
        sql<{ severity: string; n: string }>`
          select f->>'severity' as severity, count(*) as n
          from verification_scans, jsonb_array_elements(findings) as f
          group by 1`.execute(db),
      );
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
