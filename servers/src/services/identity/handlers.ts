import {
  base58Encode,
  identity as contract,
  type IdentityStats,
  type IssueCredentialRequest,
  type PrepareCredentialRequest,
  type SetCredentialStatusRequest,
} from '@agent-economy/contracts';
import type { Reasoner } from '../../ai';
import { callerOf, type RouterImplementation } from '../../runtime/app';
import { HttpError, conflict, notFound } from '../../runtime/errors';
import {
  DOCUMENT_CHAIN_DEPTH,
  KIND_ORDER,
  PREPARED_TTL_MS,
  checkIssue,
  completeCredential,
  credentialIdOf,
  credentialRecord,
  effectiveStatus,
  fromAnotherController,
  identityDocument,
  identitySummary,
  independentAttestation,
  issuerOf,
  newCredentialId,
  planCreate,
  planUpdate,
  prepareCredential,
  scoreTrust,
  subjectOf,
  traceTrustChain,
  trustSummaryTask,
  verifyCredential,
  withSummary,
  type ChainLoader,
  type ReputationRecord,
} from './domain';
import type { CredentialRow, IdentityRecord, IdentityStore } from './store';

export interface IdentityDeps {
  store: IdentityStore;
  /** The reputation service's record of a wallet (score, verified trades), read over HTTP; null without an answer. */
  reputation(wallet: string): Promise<ReputationRecord | null>;
  anchors: ReadonlySet<string>;
  reasoner: Reasoner;
  publicUrl: string;
  now: () => Date;
}

// Cursors are opaque to callers: base64url of "<list>:<seq>" (the position after the last item served).
export function encodeCursor(list: 'i' | 'c', seq: number): string {
  return Buffer.from(`${list}:${seq}`).toString('base64url');
}

export function decodeCursor(list: 'i' | 'c', cursor: string | undefined): number | undefined {
  if (cursor === undefined) return undefined;
  const match = /^([ic]):([1-9]\d{0,9})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match || match[1] !== list) {
    throw new HttpError(400, 'invalid_request', 'Invalid request: query.cursor is not a cursor from this list', {
      fields: [{ field: 'query.cursor', message: 'is not a nextCursor from this list' }],
    });
  }
  return Number(match[2]);
}

/** The checks shared by the preflight (before payment) and the handler (against the state it then writes over). */
export function identityChecks(deps: IdentityDeps) {
  const { store, now } = deps;

  async function identityOf(did: string, role = 'DID'): Promise<IdentityRecord> {
    const identity = await store.getIdentity(did);
    if (!identity) throw notFound('did_not_found', `No identity ${did}`, { did, role });
    return identity;
  }

  return {
    identityOf,

    async create(body: Parameters<typeof planCreate>[0], caller: string) {
      return planCreate(body, caller, await store.countControlled(caller), now());
    },

    async update(body: Parameters<typeof planUpdate>[1], caller: string) {
      const identity = await identityOf(body.did);
      return { identity, change: planUpdate(identity, body, caller, now()) };
    },

    async prepare(body: PrepareCredentialRequest, caller: string) {
      const issuer = await identityOf(body.issuer, 'issuer');
      const subject = await identityOf(body.subject, 'subject');
      checkIssue(body, issuer, subject, caller, now());
      return { issuer, subject };
    },

    /** A prepared credential with its issuer's verified signature, ready to register (every rule checked again). */
    async complete(body: IssueCredentialRequest, caller: string) {
      const prepared = await store.getPrepared(body.credentialId);
      if (!prepared || prepared.expiresAt.getTime() <= now().getTime()) {
        if (await store.getCredential(body.credentialId))
          throw conflict('credential_exists', `${body.credentialId} is already issued`, {
            credentialId: body.credentialId,
          });
        throw notFound(
          'credential_not_found',
          `No prepared credential ${body.credentialId} (prepare it again: a prepared credential waits 10 minutes)`,
          {
            credentialId: body.credentialId,
          },
        );
      }
      const request: PrepareCredentialRequest = {
        action: 'prepare',
        issuer: prepared.issuer,
        subject: prepared.subject,
        claims: prepared.claims,
        ...(prepared.validUntil ? { validUntil: prepared.validUntil.toISOString() } : {}),
      };
      const { issuer } = await this.prepare(request, caller);
      const credential = completeCredential(prepared.document, body.proofValue, issuer);
      return { prepared, credential };
    },

    /** Who may change the status (the issuer's controller) and to what: revoked and expired are final. */
    async setStatus(body: SetCredentialStatusRequest, caller: string): Promise<CredentialRow> {
      const credential = await store.getCredential(body.credentialId);
      if (!credential)
        throw notFound('credential_not_found', `No credential ${body.credentialId}`, {
          credentialId: body.credentialId,
        });
      const issuer = await identityOf(credential.issuer, 'issuer');
      if (issuer.controller !== caller) {
        throw new HttpError(
          403,
          'not_issuer_controller',
          `Only the controller wallet of the issuer ${issuer.did} may change this credential`,
          {
            issuer: issuer.did,
          },
        );
      }
      const status = effectiveStatus(credential, now());
      if (status === 'revoked')
        throw conflict('credential_revoked', `${credential.credentialId} is revoked; revocation is final`, {
          credentialId: credential.credentialId,
        });
      if (status === 'expired')
        throw conflict('credential_expired', `${credential.credentialId} has expired`, {
          credentialId: credential.credentialId,
        });
      // A deactivated issuer may still suspend or revoke what it issued, but not vouch again.
      if (body.status === 'active' && issuer.status === 'deactivated') {
        throw conflict('did_deactivated', `${issuer.did} is deactivated and cannot reinstate credentials`, {
          did: issuer.did,
        });
      }
      return credential;
    },

    async credentialById(credentialId: string): Promise<CredentialRow> {
      const credential = await store.getCredential(credentialId);
      if (!credential) throw notFound('credential_not_found', `No credential ${credentialId}`, { credentialId });
      return credential;
    },
  };
}

// Handlers only translate between the contract and the domain.
export function identityHandlers(
  deps: IdentityDeps,
  checks: ReturnType<typeof identityChecks>,
): RouterImplementation<typeof contract.router> {
  const { store, now, anchors } = deps;
  const loader: ChainLoader = {
    held: (subjects) => store.credentialsHeldBy(subjects),
    identities: (dids) => store.getIdentities(dids),
  };

  /** Which of these credentials are third-party trust (issuer and subject of different controller wallets). */
  async function thirdPartyAmong(held: CredentialRow[], subjects: IdentityRecord[] = []) {
    const known = new Set(subjects.map((s) => s.did));
    const unknown = [...new Set(held.flatMap((c) => [c.issuer, c.subject]))].filter((d) => !known.has(d));
    const controllers = await store.controllersOf(unknown);
    for (const s of subjects) controllers.set(s.did, s.controller);
    return fromAnotherController((did) => controllers.get(did));
  }

  async function recordOf(row: CredentialRow, at: Date) {
    return credentialRecord(row, at, await thirdPartyAmong([row]));
  }

  async function documentOf(identity: IdentityRecord, at: Date) {
    const held = await store.credentialsHeldBy([identity.did]);
    const chain = await traceTrustChain(
      identity,
      { maxDepth: DOCUMENT_CHAIN_DEPTH, includeInactive: false, anchors, now: at },
      loader,
    );
    return identityDocument(identity, held, chain, at, await thirdPartyAmong(held, [identity]));
  }

  async function resolve(did: string, at: Date) {
    return documentOf(await checks.identityOf(did), at);
  }

  return {
    list: async ({ query }) => {
      const before = decodeCursor('i', query.cursor);
      const rows = await store.listIdentities(
        { type: query.type, status: query.status, capability: query.capability, controller: query.controller },
        query.limit,
        before,
      );
      const items = rows.slice(0, query.limit);
      const held = await store.credentialsHeldBy(items.map((i) => i.did));
      const thirdParty = await thirdPartyAmong(held, items);
      const at = now();
      return {
        status: 200,
        body: {
          items: items.map((identity) => identitySummary(identity, held, at, thirdParty)),
          nextCursor: rows.length > query.limit ? encodeCursor('i', items.at(-1)!.seq) : null,
        },
      };
    },

    get: async ({ params }) => {
      const document = await resolve(params.did, now());
      await store.bump({ resolutions_single: 1, dids_resolved: 1 });
      return { status: 200, body: document };
    },

    create: async ({ body, res }) => {
      const { identity, key } = await checks.create(body, callerOf(res));
      await store.insertIdentity(identity, key);
      return { status: 201, body: await resolve(identity.did, now()) };
    },

    update: async ({ body, res }) => {
      const { identity, change } = await checks.update(body, callerOf(res));
      await store.updateIdentity(identity.did, identity.version, change, now());
      return { status: 200, body: await resolve(identity.did, now()) };
    },

    issueCredential: async ({ body, res }) => {
      const caller = callerOf(res);
      const at = now();
      if (body.action === 'prepare') {
        const { issuer } = await checks.prepare(body, caller);
        const credentialId = newCredentialId();
        const statusUrl = `${deps.publicUrl}/api/credentials/${body.subject}?credentialId=${credentialId}`;
        const { credential, signingInput } = prepareCredential(
          {
            credentialId,
            issuer,
            subject: body.subject,
            claims: body.claims,
            ...(body.validUntil ? { validUntil: body.validUntil } : {}),
            statusUrl,
          },
          at,
        );
        const expiresAt = new Date(at.getTime() + PREPARED_TTL_MS);
        await store.insertPrepared({
          credentialId,
          issuer: body.issuer,
          subject: body.subject,
          claims: body.claims,
          validUntil: body.validUntil ? new Date(body.validUntil) : null,
          document: credential,
          preparedAt: at,
          expiresAt,
        });
        return {
          status: 200,
          body: {
            credentialId,
            credential,
            verificationMethod: credential.proof.verificationMethod,
            signingInput: base58Encode(signingInput),
            expiresAt: expiresAt.toISOString(),
          },
        };
      }
      if (body.action === 'issue') {
        const { prepared, credential } = await checks.complete(body, caller);
        const row = {
          credentialId: prepared.credentialId,
          kind: prepared.claims.kind,
          issuer: prepared.issuer,
          subject: prepared.subject,
          status: 'active' as const,
          statusReason: null,
          statusChangedAt: null,
          issuedAt: new Date(credential.validFrom),
          validUntil: prepared.validUntil,
          claims: prepared.claims,
          document: credential,
        };
        if (!(await store.issuePrepared(row)))
          throw conflict('credential_exists', `${row.credentialId} is already issued`, {
            credentialId: row.credentialId,
          });
        return { status: 200, body: await recordOf({ ...row, seq: 0 }, at) };
      }
      const credential = await checks.setStatus(body, caller);
      // Setting the status it already has changes nothing (and keeps the reason and time of the change).
      if (credential.status !== body.status) {
        const changed = await store.setCredentialStatus(credential.credentialId, body.status, body.reason ?? null, at);
        if (!changed)
          throw conflict(
            'credential_revoked',
            `${credential.credentialId} was revoked meanwhile; revocation is final`,
            { credentialId: credential.credentialId },
          );
      }
      return { status: 200, body: await recordOf((await store.getCredential(credential.credentialId))!, at) };
    },

    verifyCredential: async ({ body }) => {
      const at = now();
      let record: CredentialRow | undefined;
      let document: Record<string, unknown>;
      if ('credentialId' in body) {
        record = await checks.credentialById(body.credentialId);
        document = record.document as unknown as Record<string, unknown>;
      } else {
        document = body.credential as Record<string, unknown>;
        const id = credentialIdOf(body.credential);
        record = id ? await store.getCredential(id) : undefined;
      }
      const dids = [issuerOf(document), subjectOf(document), record?.issuer, record?.subject].filter(
        (d): d is string => !!d,
      );
      const identities = await store.getIdentities([...new Set(dids)]);
      const result = verifyCredential({ document, record, identities, now: at });
      await store.bump(result.valid ? { verifications_valid: 1 } : { verifications_invalid: 1 });
      return { status: 200, body: result };
    },

    listCredentials: async ({ params, query }) => {
      const before = decodeCursor('c', query.cursor);
      await checks.identityOf(params.did);
      const at = now();
      const rows = await store.listCredentials(
        {
          did: params.did,
          role: query.role,
          kind: query.kind,
          status: query.status,
          ...(query.credentialId ? { credentialId: query.credentialId } : {}),
        },
        at,
        query.limit,
        before,
      );
      const items = rows.slice(0, query.limit);
      const thirdParty = await thirdPartyAmong(items);
      return {
        status: 200,
        body: {
          items: items.map((c) => credentialRecord(c, at, thirdParty)),
          nextCursor: rows.length > query.limit ? encodeCursor('c', items.at(-1)!.seq) : null,
        },
      };
    },

    trustChain: async ({ params, query }) => {
      const root = await checks.identityOf(params.did);
      const chain = await traceTrustChain(
        root,
        { maxDepth: query.maxDepth, includeInactive: query.includeInactive === 'true', anchors, now: now() },
        loader,
      );
      return { status: 200, body: chain };
    },

    trustScore: async ({ body }) => {
      const at = now();
      const identity = await checks.identityOf(body.did);
      const held = await store.credentialsHeldBy([identity.did]);
      const chain = await traceTrustChain(
        identity,
        { maxDepth: DOCUMENT_CHAIN_DEPTH, includeInactive: false, anchors, now: at },
        loader,
      );
      // Who vouched: an issuer of the same controller, or one the subject's controller vouched for in return, is not
      // evidence.
      const [issuers, vouched, record] = await Promise.all([
        store.getIdentities([...new Set(held.map((c) => c.issuer))]),
        store.didsControlledBy(identity.controller).then((dids) => store.subjectsVouchedBy(dids)),
        deps.reputation(identity.controller),
      ]);
      const facts = scoreTrust(
        identity,
        held,
        chain.verified,
        body,
        at,
        independentAttestation(identity, issuers, vouched),
        record,
      );
      const { output, generator } = await deps.reasoner.run(trustSummaryTask({ name: identity.name, facts }));
      return { status: 200, body: withSummary(facts, output.summary, generator) };
    },

    resolveBatch: async ({ body }) => {
      const at = now();
      const identities = await store.getIdentities(body.dids);
      const results = [];
      for (const did of body.dids) {
        const identity = identities.get(did);
        results.push(
          identity
            ? { did, found: true, identity: await documentOf(identity, at), error: null }
            : { did, found: false, identity: null, error: 'notFound' as const },
        );
      }
      const found = results.filter((r) => r.found).length;
      await store.bump({ resolutions_batch: 1, dids_resolved: found });
      return { status: 200, body: { results, found, notFound: results.length - found, resolvedAt: at.toISOString() } };
    },

    stats: async () => {
      const at = now();
      const [identities, credentials, counters, keyRotations] = await Promise.all([
        store.identityCounts(),
        store.credentialCounts(at),
        store.counters(),
        store.rotationCount(),
      ]);
      const stats: IdentityStats = {
        dids: { total: 0, active: 0, deactivated: 0, byType: { agent: 0, service: 0, organization: 0 } },
        credentials: {
          issued: 0,
          active: 0,
          suspended: 0,
          revoked: 0,
          expired: 0,
          byKind: { skill_attestation: 0, trade_certification: 0, audit_badge: 0 },
        },
        verifications: {
          total: counters.verifications_valid + counters.verifications_invalid,
          valid: counters.verifications_valid,
          invalid: counters.verifications_invalid,
        },
        resolutions: {
          single: counters.resolutions_single,
          batch: counters.resolutions_batch,
          didsResolved: counters.dids_resolved,
        },
        keyRotations,
        asOf: at.toISOString(),
      };
      for (const { type, status, n } of identities) {
        stats.dids.total += n;
        stats.dids[status as 'active' | 'deactivated'] += n;
        stats.dids.byType[type as keyof IdentityStats['dids']['byType']] += n;
      }
      for (const { kind, status, n } of credentials) {
        stats.credentials.issued += n;
        stats.credentials[status] += n;
        if (KIND_ORDER.includes(kind as never))
          stats.credentials.byKind[kind as keyof IdentityStats['credentials']['byKind']] += n;
      }
      return { status: 200, body: stats };
    },
  };
}
