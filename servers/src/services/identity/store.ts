import { sql, type Generated, type Kysely, type Migration, type Selectable } from 'kysely';
import { json } from '../../db/camel-case';
import type {
  CredentialClaims,
  CredentialKind,
  CredentialStatus,
  IdentityStatus,
  IdentityType,
  ServiceEndpoint,
  VerifiableCredential,
} from '@agent-economy/contracts';
import { conflict } from '../../runtime/errors';
import type { UnsignedCredential } from './domain';
import type { SharedDb } from '../../db';

export const migrations: Record<string, Migration> = {
  '001_identities_and_credentials': {
    async up(db) {
      await db.schema
        .createTable('identity_identities')
        .addColumn('did', 'text', (c) => c.primaryKey())
        .addColumn('seq', 'serial', (c) => c.notNull().unique())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('controller', 'text', (c) => c.notNull())
        .addColumn('capabilities', 'jsonb', (c) => c.notNull())
        .addColumn('metadata', 'jsonb', (c) => c.notNull())
        .addColumn('service_endpoints', 'jsonb', (c) => c.notNull())
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'timestamptz', (c) => c.notNull())
        .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('identity_identities_controller')
        .on('identity_identities')
        .column('controller')
        .execute();
      await db.schema
        .createTable('identity_keys')
        .addColumn('did', 'text', (c) => c.notNull().references('identity_identities.did'))
        .addColumn('n', 'integer', (c) => c.notNull())
        .addColumn('public_key_multibase', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('created_at', 'timestamptz', (c) => c.notNull())
        .addColumn('rotated_at', 'timestamptz')
        .addPrimaryKeyConstraint('identity_keys_pk', ['did', 'n'])
        .addUniqueConstraint('identity_keys_reuse', ['did', 'public_key_multibase'])
        .execute();
      await db.schema
        .createTable('identity_credentials')
        .addColumn('credential_id', 'text', (c) => c.primaryKey())
        .addColumn('seq', 'serial', (c) => c.notNull().unique())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('issuer', 'text', (c) => c.notNull().references('identity_identities.did'))
        .addColumn('subject', 'text', (c) => c.notNull().references('identity_identities.did'))
        // active, suspended or revoked; "expired" is derived from valid_until when read.
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('status_reason', 'text')
        .addColumn('status_changed_at', 'timestamptz')
        .addColumn('issued_at', 'timestamptz', (c) => c.notNull())
        .addColumn('valid_until', 'timestamptz')
        .addColumn('claims', 'jsonb', (c) => c.notNull())
        .addColumn('document', 'jsonb', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('identity_credentials_subject')
        .on('identity_credentials')
        .column('subject')
        .execute();
      await db.schema.createIndex('identity_credentials_issuer').on('identity_credentials').column('issuer').execute();
      await db.schema
        .createTable('identity_counters')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('value', 'int8', (c) => c.notNull())
        .execute();
    },
  },
  // Credentials are signed by their issuer's own key in two steps: a prepared credential waits here for the signature.
  '002_prepared_credentials': {
    async up(db) {
      await db.schema
        .createTable('identity_prepared_credentials')
        .addColumn('credential_id', 'text', (c) => c.primaryKey())
        .addColumn('issuer', 'text', (c) => c.notNull())
        .addColumn('subject', 'text', (c) => c.notNull())
        .addColumn('claims', 'jsonb', (c) => c.notNull())
        .addColumn('valid_until', 'timestamptz')
        .addColumn('document', 'jsonb', (c) => c.notNull())
        .addColumn('prepared_at', 'timestamptz', (c) => c.notNull())
        .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
        .execute();
    },
  },
};

/** A credential built for its issuer to sign (action prepare), until it is signed or expires. */
export interface PreparedRow {
  credentialId: string;
  issuer: string;
  subject: string;
  claims: CredentialClaims;
  validUntil: Date | null;
  document: UnsignedCredential;
  preparedAt: Date;
  expiresAt: Date;
}

export interface StoredCapability {
  id: string;
  description?: string;
  version?: string;
  declaredAt: string;
}

export interface KeyRecord {
  n: number;
  publicKeyMultibase: string;
  status: 'current' | 'rotated';
  createdAt: Date;
  rotatedAt: Date | null;
}

export interface IdentityRecord {
  did: string;
  seq: number;
  type: IdentityType;
  status: IdentityStatus;
  name: string;
  controller: string;
  capabilities: StoredCapability[];
  metadata: Record<string, string>;
  serviceEndpoints: ServiceEndpoint[];
  version: number;
  createdAt: Date;
  updatedAt: Date;
  /** Current first, then rotated keys newest first. */
  keys: KeyRecord[];
}

export type StoredCredentialStatus = 'active' | 'suspended' | 'revoked';

export interface CredentialRow {
  credentialId: string;
  seq: number;
  kind: CredentialKind;
  issuer: string;
  subject: string;
  status: StoredCredentialStatus;
  statusReason: string | null;
  statusChangedAt: Date | null;
  issuedAt: Date;
  validUntil: Date | null;
  claims: CredentialClaims;
  document: VerifiableCredential;
}

interface IdentityTable {
  did: string;
  seq: Generated<number>;
  type: string;
  status: string;
  name: string;
  controller: string;
  capabilities: unknown;
  metadata: unknown;
  service_endpoints: unknown;
  version: number;
  created_at: Date;
  updated_at: Date;
}
interface KeyTable {
  did: string;
  n: number;
  public_key_multibase: string;
  status: string;
  created_at: Date;
  rotated_at: Date | null;
}
interface CredentialTable {
  credential_id: string;
  seq: Generated<number>;
  kind: string;
  issuer: string;
  subject: string;
  status: string;
  status_reason: string | null;
  status_changed_at: Date | null;
  issued_at: Date;
  valid_until: Date | null;
  claims: unknown;
  document: unknown;
}
interface Tables {
  identity_identities: IdentityTable;
  identity_keys: KeyTable;
  identity_credentials: CredentialTable;
  identity_counters: { name: string; value: bigint };
  identity_prepared_credentials: {
    credential_id: string;
    issuer: string;
    subject: string;
    claims: CredentialClaims;
    valid_until: Date | null;
    document: UnsignedCredential;
    prepared_at: Date;
    expires_at: Date;
  };
}

export type CounterName =
  'verifications_valid' | 'verifications_invalid' | 'resolutions_single' | 'resolutions_batch' | 'dids_resolved';

function toKey(row: KeyTable): KeyRecord {
  return {
    n: row.n,
    publicKeyMultibase: row.public_key_multibase,
    status: row.status as KeyRecord['status'],
    createdAt: row.created_at,
    rotatedAt: row.rotated_at,
  };
}

function toIdentity(row: Selectable<IdentityTable>, keys: KeyRecord[]): IdentityRecord {
  return {
    did: row.did,
    seq: row.seq,
    type: row.type as IdentityType,
    status: row.status as IdentityStatus,
    name: row.name,
    controller: row.controller,
    capabilities: row.capabilities as StoredCapability[],
    metadata: row.metadata as Record<string, string>,
    serviceEndpoints: row.service_endpoints as ServiceEndpoint[],
    version: row.version,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    keys: [...keys].sort((a, b) => (a.status === b.status ? b.n - a.n : a.status === 'current' ? -1 : 1)),
  };
}

function toCredential(row: Selectable<CredentialTable>): CredentialRow {
  return {
    credentialId: row.credential_id,
    seq: row.seq,
    kind: row.kind as CredentialKind,
    issuer: row.issuer,
    subject: row.subject,
    status: row.status as StoredCredentialStatus,
    statusReason: row.status_reason,
    statusChangedAt: row.status_changed_at,
    issuedAt: row.issued_at,
    validUntil: row.valid_until,
    claims: row.claims as CredentialClaims,
    document: row.document as VerifiableCredential,
  };
}

export interface IdentityFilter {
  type?: IdentityType;
  status?: IdentityStatus;
  capability?: string;
  controller?: string;
}

export interface CredentialFilter {
  did: string;
  role: 'subject' | 'issuer';
  credentialId?: string;
  kind?: CredentialKind;
  status?: CredentialStatus;
}

/** What an update writes: the new identity fields, and optionally a key rotation. */
export interface IdentityChange {
  name: string;
  status: IdentityStatus;
  capabilities: StoredCapability[];
  metadata: Record<string, string>;
  serviceEndpoints: ServiceEndpoint[];
  rotateTo?: string;
}

export function identityStore(database: SharedDb) {
  const db = database as Kysely<Tables>;

  async function keysOf(dids: string[]): Promise<Map<string, KeyRecord[]>> {
    const byDid = new Map<string, KeyRecord[]>();
    if (!dids.length) return byDid;
    const rows = await db.selectFrom('identity_keys').selectAll().where('did', 'in', dids).execute();
    for (const row of rows) byDid.set(row.did, [...(byDid.get(row.did) ?? []), toKey(row)]);
    return byDid;
  }

  async function withKeys(rows: Selectable<IdentityTable>[]): Promise<IdentityRecord[]> {
    const keys = await keysOf(rows.map((r) => r.did));
    return rows.map((row) => toIdentity(row, keys.get(row.did) ?? []));
  }

  return {
    async countControlled(controller: string): Promise<number> {
      const { n } = await db
        .selectFrom('identity_identities')
        .select((eb) => eb.fn.countAll<bigint>().as('n'))
        .where('controller', '=', controller)
        .executeTakeFirstOrThrow();
      return Number(n);
    },

    async insertIdentity(identity: Omit<IdentityRecord, 'seq' | 'keys'>, key: string): Promise<void> {
      await db.transaction().execute(async (tx) => {
        await tx
          .insertInto('identity_identities')
          .values({
            did: identity.did,
            type: identity.type,
            status: identity.status,
            name: identity.name,
            controller: identity.controller,
            capabilities: json(identity.capabilities),
            metadata: json(identity.metadata),
            service_endpoints: json(identity.serviceEndpoints),
            version: identity.version,
            created_at: identity.createdAt,
            updated_at: identity.updatedAt,
          })
          .execute();
        await tx
          .insertInto('identity_keys')
          .values({
            did: identity.did,
            n: 1,
            public_key_multibase: key,
            status: 'current',
            created_at: identity.createdAt,
            rotated_at: null,
          })
          .execute();
      });
    },

    async getIdentity(did: string): Promise<IdentityRecord | undefined> {
      const row = await db.selectFrom('identity_identities').selectAll().where('did', '=', did).executeTakeFirst();
      return row ? (await withKeys([row]))[0] : undefined;
    },

    async getIdentities(dids: string[]): Promise<Map<string, IdentityRecord>> {
      if (!dids.length) return new Map();
      const rows = await db.selectFrom('identity_identities').selectAll().where('did', 'in', dids).execute();
      return new Map((await withKeys(rows)).map((i) => [i.did, i]));
    },

    /**
     * Writes an update if the identity is still at `version` (else 409 version_conflict: someone
     * changed it meanwhile), rotating the key when asked, all in one transaction.
     */
    async updateIdentity(did: string, version: number, change: IdentityChange, at: Date): Promise<void> {
      await db.transaction().execute(async (tx) => {
        const updated = await tx
          .updateTable('identity_identities')
          .set({
            name: change.name,
            status: change.status,
            capabilities: json(change.capabilities),
            metadata: json(change.metadata),
            service_endpoints: json(change.serviceEndpoints),
            version: version + 1,
            updated_at: at,
          })
          .where('did', '=', did)
          .where('version', '=', version)
          .executeTakeFirst();
        if (!updated.numUpdatedRows)
          throw conflict('version_conflict', `The identity ${did} changed meanwhile; resolve it and try again`);
        if (change.rotateTo) {
          const { last } = await tx
            .selectFrom('identity_keys')
            .select((eb) => eb.fn.max('n').as('last'))
            .where('did', '=', did)
            .executeTakeFirstOrThrow();
          await tx
            .updateTable('identity_keys')
            .set({ status: 'rotated', rotated_at: at })
            .where('did', '=', did)
            .where('status', '=', 'current')
            .execute();
          await tx
            .insertInto('identity_keys')
            .values({
              did,
              n: Number(last ?? 0) + 1,
              public_key_multibase: change.rotateTo,
              status: 'current',
              created_at: at,
              rotated_at: null,
            })
            .execute();
        }
      });
    },

    /**
     * Identities newest first after the cursor position (a seq), one more than `limit` to tell whether a page follows.
     */
    async listIdentities(filter: IdentityFilter, limit: number, before?: number): Promise<IdentityRecord[]> {
      let query = db.selectFrom('identity_identities').selectAll();
      if (filter.type) query = query.where('type', '=', filter.type);
      if (filter.status) query = query.where('status', '=', filter.status);
      if (filter.controller) query = query.where('controller', '=', filter.controller);
      if (filter.capability)
        query = query.where(sql<boolean>`capabilities @> ${JSON.stringify([{ id: filter.capability }])}::jsonb`);
      if (before !== undefined) query = query.where('seq', '<', before);
      const rows = await query
        .orderBy('seq', 'desc')
        .limit(limit + 1)
        .execute();
      return withKeys(rows);
    },

    async insertCredential(credential: Omit<CredentialRow, 'seq'>): Promise<void> {
      await db
        .insertInto('identity_credentials')
        .values({
          credential_id: credential.credentialId,
          kind: credential.kind,
          issuer: credential.issuer,
          subject: credential.subject,
          status: credential.status,
          status_reason: credential.statusReason,
          status_changed_at: credential.statusChangedAt,
          issued_at: credential.issuedAt,
          valid_until: credential.validUntil,
          claims: json(credential.claims),
          document: json(credential.document),
        })
        .execute();
    },

    async getCredential(credentialId: string): Promise<CredentialRow | undefined> {
      const row = await db
        .selectFrom('identity_credentials')
        .selectAll()
        .where('credential_id', '=', credentialId)
        .executeTakeFirst();
      return row && toCredential(row);
    },

    /** Sets a credential's status unless it was revoked meanwhile (revocation is final); false when it was. */
    async setCredentialStatus(
      credentialId: string,
      status: StoredCredentialStatus,
      reason: string | null,
      at: Date,
    ): Promise<boolean> {
      const updated = await db
        .updateTable('identity_credentials')
        .set({ status, status_reason: reason, status_changed_at: at })
        .where('credential_id', '=', credentialId)
        .where('status', '<>', 'revoked')
        .executeTakeFirst();
      return Number(updated.numUpdatedRows) > 0;
    },

    /** Credentials of a DID (held or issued), newest first, filtered, one more than `limit`. */
    async listCredentials(
      filter: CredentialFilter,
      now: Date,
      limit: number,
      before?: number,
    ): Promise<CredentialRow[]> {
      let query = db.selectFrom('identity_credentials').selectAll().where(filter.role, '=', filter.did);
      if (filter.kind) query = query.where('kind', '=', filter.kind);
      if (filter.credentialId) query = query.where('credential_id', '=', filter.credentialId);
      const status = filter.status;
      if (status === 'revoked') query = query.where('status', '=', 'revoked');
      // "expired" is derived: not revoked and past valid_until; active and suspended are so only while unexpired.
      if (status === 'expired') query = query.where('status', '<>', 'revoked').where('valid_until', '<=', now);
      if (status === 'active' || status === 'suspended') {
        query = query
          .where('status', '=', status)
          .where((eb) => eb.or([eb('valid_until', 'is', null), eb('valid_until', '>', now)]));
      }
      if (before !== undefined) query = query.where('seq', '<', before);
      const rows = await query
        .orderBy('seq', 'desc')
        .limit(limit + 1)
        .execute();
      return rows.map(toCredential);
    },

    /** Stores a credential prepared for its issuer to sign (expired ones are cleared on the way). */
    async insertPrepared(p: PreparedRow): Promise<void> {
      await db.deleteFrom('identity_prepared_credentials').where('expires_at', '<', p.preparedAt).execute();
      await db
        .insertInto('identity_prepared_credentials')
        .values({
          credential_id: p.credentialId,
          issuer: p.issuer,
          subject: p.subject,
          claims: json(p.claims),
          valid_until: p.validUntil,
          document: json(p.document),
          prepared_at: p.preparedAt,
          expires_at: p.expiresAt,
        })
        .execute();
    },

    async getPrepared(credentialId: string): Promise<PreparedRow | undefined> {
      const r = await db
        .selectFrom('identity_prepared_credentials')
        .selectAll()
        .where('credential_id', '=', credentialId)
        .executeTakeFirst();
      if (!r) return undefined;
      return {
        credentialId: r.credential_id,
        issuer: r.issuer,
        subject: r.subject,
        claims: r.claims,
        validUntil: r.valid_until ? new Date(r.valid_until) : null,
        document: r.document,
        preparedAt: new Date(r.prepared_at),
        expiresAt: new Date(r.expires_at),
      };
    },

    /**
     * Registers a signed prepared credential once: the prepared row is taken and the credential inserted together;
     * false
     * when another request took it first.
     */
    async issuePrepared(credential: Omit<CredentialRow, 'seq'>): Promise<boolean> {
      return db.transaction().execute(async (tx) => {
        const taken = await tx
          .deleteFrom('identity_prepared_credentials')
          .where('credential_id', '=', credential.credentialId)
          .executeTakeFirst();
        if (!Number(taken.numDeletedRows)) return false;
        await tx
          .insertInto('identity_credentials')
          .values({
            credential_id: credential.credentialId,
            kind: credential.kind,
            issuer: credential.issuer,
            subject: credential.subject,
            status: credential.status,
            status_reason: credential.statusReason,
            status_changed_at: credential.statusChangedAt,
            issued_at: credential.issuedAt,
            valid_until: credential.validUntil,
            claims: json(credential.claims),
            document: json(credential.document),
          })
          .execute();
        return true;
      });
    },

    /** The controller wallet of each of these DIDs that exists. */
    async controllersOf(dids: string[]): Promise<Map<string, string>> {
      if (!dids.length) return new Map();
      const rows = await db
        .selectFrom('identity_identities')
        .select(['did', 'controller'])
        .where('did', 'in', dids)
        .execute();
      return new Map(rows.map((r) => [r.did, r.controller]));
    },

    /** The DIDs a wallet controls. */
    async didsControlledBy(controller: string): Promise<string[]> {
      return (
        await db.selectFrom('identity_identities').select('did').where('controller', '=', controller).execute()
      ).map((r) => r.did);
    },

    /** The subjects of the credentials any of `issuers` issued (active or not). */
    async subjectsVouchedBy(issuers: string[]): Promise<Set<string>> {
      if (!issuers.length) return new Set();
      const rows = await db
        .selectFrom('identity_credentials')
        .select('subject')
        .where('issuer', 'in', issuers)
        .execute();
      return new Set(rows.map((r) => r.subject));
    },

    /** Every credential held by any of `subjects`, newest first (trust chains, scores, attestation counts). */
    async credentialsHeldBy(subjects: string[]): Promise<CredentialRow[]> {
      if (!subjects.length) return [];
      const rows = await db
        .selectFrom('identity_credentials')
        .selectAll()
        .where('subject', 'in', subjects)
        .orderBy('seq', 'desc')
        .execute();
      return rows.map(toCredential);
    },

    async bump(counts: Partial<Record<CounterName, number>>): Promise<void> {
      for (const [name, by] of Object.entries(counts)) {
        if (!by) continue;
        await db
          .insertInto('identity_counters')
          .values({ name, value: BigInt(by) })
          .onConflict((oc) =>
            oc.column('name').doUpdateSet({ value: sql<bigint>`identity_counters.value + excluded.value` }),
          )
          .execute();
      }
    },

    async counters(): Promise<Record<CounterName, number>> {
      const rows = await db.selectFrom('identity_counters').selectAll().execute();
      const out: Record<CounterName, number> = {
        verifications_valid: 0,
        verifications_invalid: 0,
        resolutions_single: 0,
        resolutions_batch: 0,
        dids_resolved: 0,
      };
      for (const row of rows) out[row.name as CounterName] = Number(row.value);
      return out;
    },

    async identityCounts(): Promise<{ type: string; status: string; n: number }[]> {
      const rows = await db
        .selectFrom('identity_identities')
        .select(['type', 'status', (eb) => eb.fn.countAll<bigint>().as('n')])
        .groupBy(['type', 'status'])
        .execute();
      return rows.map((r) => ({ type: r.type, status: r.status, n: Number(r.n) }));
    },

    async credentialCounts(now: Date): Promise<{ kind: string; status: CredentialStatus; n: number }[]> {
      const rows = await db
        .selectFrom('identity_credentials')
        .select([
          'kind',
          sql<string>`case when status = 'revoked' then 'revoked' when valid_until is not null and valid_until <= ${now} then 'expired' else status end`.as(
            'effective',
          ),
          (eb) => eb.fn.countAll<bigint>().as('n'),
        ])
        .groupBy(['kind', 'effective'])
        .execute();
      return rows.map((r) => ({ kind: r.kind, status: r.effective as CredentialStatus, n: Number(r.n) }));
    },

    async rotationCount(): Promise<number> {
      const { n } = await db
        .selectFrom('identity_keys')
        .select((eb) => eb.fn.countAll<bigint>().as('n'))
        .where('status', '=', 'rotated')
        .executeTakeFirstOrThrow();
      return Number(n);
    },
  };
}

export type IdentityStore = ReturnType<typeof identityStore>;
