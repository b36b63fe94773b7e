import { createHash, createPublicKey, verify } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  base58Decode,
  base58Encode,
  identity as identityService,
  reputation as reputationService,
  usdToAtomic,
  type CredentialRecord,
  type PaymentMeta,
  type PrepareCredentialRequest,
  type PreparedCredential,
  type VerifiableCredential,
} from '@agent-economy/contracts';
import {
  AuthenticationError,
  BadRequestError,
  ConflictError,
  NotFoundError,
  PaymentRequiredError,
  PermissionDeniedError,
  UnprocessableEntityError,
  createClient,
  createServiceClient,
  walletFromSecretKey,
  type Signer,
} from '@agent-economy/sdk';
import { createIdentityApp, type IdentityOptions } from '../servers/src/services/identity';
import { createReputationApp } from '../servers/src/services/reputation';
import { didKeyOf, signDataIntegrity } from '../servers/src/services/identity/crypto';
import { identityStore } from '../servers/src/services/identity/store';
import { generateWallet, signEd25519, type Wallet } from '../servers/src/solana/keys';
import { startEconomy } from './support/economy';
import { startService, type RunningService } from './support/servers';

// ---- independent helpers (the test's own, so the service is checked against something it did not compute) ----

const ED25519_SPKI = Buffer.from('302a300506032b6570032100', 'hex');

/** Multikey of a raw Ed25519 public key, as the did:key spec writes it. */
const multikey = (publicKey: Uint8Array) => 'z' + base58Encode(new Uint8Array([0xed, 0x01, ...publicKey]));
const multikeyOfWallet = (wallet: { secretKey: Uint8Array }) => multikey(wallet.secretKey.slice(32));

/** A minimal RFC 8785 canonical form for the plain JSON the service emits (strings, integers, objects, arrays). */
function jcs(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(jcs).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${jcs((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/** eddsa-jcs-2022 verification with node:crypto alone, against a Multikey public key. */
function verifyWithNodeCrypto(credential: Record<string, unknown>, publicKeyMultibase: string): boolean {
  const { proof, ...document } = credential as { proof: Record<string, unknown>; '@context'?: unknown };
  const { proofValue, ...options } = proof;
  const sha = (text: string) => createHash('sha256').update(text).digest();
  const hashData = Buffer.concat([sha(jcs({ ...options, '@context': document['@context'] })), sha(jcs(document))]);
  const raw = base58Decode(publicKeyMultibase.slice(1))!;
  expect([raw[0], raw[1]]).toEqual([0xed, 0x01]);
  const key = createPublicKey({ key: Buffer.concat([ED25519_SPKI, raw.subarray(2)]), format: 'der', type: 'spki' });
  return verify(null, hashData, key, base58Decode((proofValue as string).slice(1))!);
}

/** A key of the agent's own and its proof of possession for `controller`, as the contract defines it. */
function keyProof(controller: string, key: Wallet = generateWallet()) {
  const publicKeyMultibase = multikeyOfWallet(key);
  const message = `agent-economy identity key proof\ncontroller: ${controller}\nkey: ${publicKeyMultibase}`;
  return { publicKeyMultibase, proof: base58Encode(signEd25519(key, new TextEncoder().encode(message))) };
}

const ZERO: PaymentMeta = { kind: 'fixed', usd: '0' };
const FREE: Record<string, PaymentMeta> = Object.fromEntries(
  [
    'list',
    'get',
    'create',
    'update',
    'issueCredential',
    'verifyCredential',
    'listCredentials',
    'trustChain',
    'trustScore',
    'resolveBatch',
  ].map((k) => [k, ZERO]),
);
const DAY = 86_400_000;

let service: RunningService;
const extra: RunningService[] = [];
type IdentityClient = ReturnType<typeof createServiceClient<typeof identityService.router>>;
let anon: IdentityClient;
const signers: Record<'alice' | 'bob' | 'carol' | 'dave' | 'lister' | 'mallory' | 'erin', Signer> = {} as never;
const by = (who: keyof typeof signers, on: RunningService = service): IdentityClient =>
  createServiceClient(identityService, on.url, { wallet: signers[who], maxRetries: 0, payments: false });

/**
 * Issues a credential as an issuer does: prepare it, sign its signingInput with the issuer DID's key (the controller
 * wallet's own key for a DID created without one), and send the signature.
 */
async function issued(
  who: keyof typeof signers,
  body: Omit<PrepareCredentialRequest, 'action'>,
  on: RunningService = service,
  key: Signer = signers[who],
): Promise<CredentialRecord> {
  const client = by(who, on);
  const prepared = (await client.issueCredential({ body: { action: 'prepare', ...body } })) as PreparedCredential;
  const signature = await key.signMessage(base58Decode(prepared.signingInput)!);
  return (await client.issueCredential({
    body: { action: 'issue', credentialId: prepared.credentialId, proofValue: 'z' + base58Encode(signature) },
  })) as CredentialRecord;
}

/** Another instance over the same database and wallet (a restart or a replica), with its own options. */
async function sibling(
  options: IdentityOptions,
  prices: Record<string, PaymentMeta> | null = FREE,
): Promise<RunningService> {
  const started = await startService((c) => createIdentityApp({ ...c, ...(prices ? { prices } : {}) }, options), {
    id: 'identity',
    database: service.database,
    wallet: service.context.wallet,
  });
  extra.push(started);
  return started;
}

const count = async (table: string): Promise<number> =>
  Number(
    (
      await service.database.db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

beforeAll(async () => {
  service = await startService((c) => createIdentityApp({ ...c, prices: FREE }, { trustAnchors: [] }), {
    id: 'identity',
  });
  anon = createServiceClient(identityService, service.url, { maxRetries: 0 });
  for (const name of Object.keys({
    alice: 0,
    bob: 0,
    carol: 0,
    dave: 0,
    lister: 0,
    mallory: 0,
    erin: 0,
  }) as (keyof typeof signers)[]) {
    signers[name] = await walletFromSecretKey(generateWallet().secretKey);
  }
});
afterAll(async () => {
  await Promise.all(extra.map((s) => s.close()));
  await service?.close();
});

// ---- known vectors ----

// ---- identities ----

describe('create', () => {
  it('registers a DID for the calling wallet with the agent’s own key, proven', async () => {
    const alice = signers.alice.address;
    const agentKey = generateWallet();
    const response = await by('alice').create.withResponse({
      body: {
        type: 'organization',
        name: 'Known Auditor',
        key: keyProof(alice, agentKey),
        capabilities: [
          { id: 'code-review', description: 'Reviews TypeScript', version: '1.0' },
          { id: 'security-audit' },
        ],
        metadata: { homepage: 'https://auditor.example' },
        serviceEndpoints: [
          { id: 'card', type: 'AgentCard', url: 'https://auditor.example/.well-known/agent-card.json' },
        ],
      },
    });
    expect(response.status).toBe(201);
    const doc = response.data;
    expect(doc.did).toMatch(/^did:agent:[1-9A-HJ-NP-Za-km-z]{16,24}$/);
    expect(base58Decode(doc.did.slice('did:agent:'.length))).toHaveLength(16);
    expect(doc).toMatchObject({
      type: 'organization',
      status: 'active',
      name: 'Known Auditor',
      controller: alice,
      version: 1,
      metadata: { homepage: 'https://auditor.example' },
    });
    expect(doc.keys).toEqual([
      {
        id: `${doc.did}#key-1`,
        type: 'Multikey',
        publicKeyMultibase: multikeyOfWallet(agentKey),
        status: 'current',
        createdAt: doc.createdAt,
        rotatedAt: null,
      },
    ]);
    expect(doc.capabilities.map((c) => [c.id, c.attested, c.attestations])).toEqual([
      ['code-review', false, 0],
      ['security-audit', false, 0],
    ]);
    const dd = doc.didDocument;
    expect(dd['@context']).toEqual(['https://www.w3.org/ns/did/v1', 'https://w3id.org/security/multikey/v1']);
    expect(dd.id).toBe(doc.did);
    expect(dd.verificationMethod.map((m) => [m.id, m.publicKeyMultibase])).toEqual([
      [`${doc.did}#key-1`, multikeyOfWallet(agentKey)],
      [`${doc.did}#controller`, multikey(base58Decode(alice)!)],
    ]);
    expect(dd.authentication).toEqual([`${doc.did}#key-1`, `${doc.did}#controller`]);
    expect(dd.assertionMethod).toEqual([`${doc.did}#key-1`]);
    expect(dd.capabilityInvocation).toEqual([`${doc.did}#controller`]);
    expect(dd.service).toEqual([
      {
        id: `${doc.did}#card`,
        type: 'AgentCard',
        serviceEndpoint: 'https://auditor.example/.well-known/agent-card.json',
      },
    ]);
    expect(doc.didDocumentMetadata).toEqual({
      created: doc.createdAt,
      updated: doc.createdAt,
      versionId: '1',
      deactivated: false,
    });
    expect(doc.credentials).toEqual([]);
    expect(doc.trustChain).toEqual({ vouchers: [], verified: false });
    // Resolving answers the same document.
    expect(await anon.get({ params: { did: doc.did } })).toEqual(doc);
  });

  it('uses the controller wallet’s own Ed25519 key when no key is sent', async () => {
    const doc = await by('bob').create({ body: { name: 'Wallet Keyed' } });
    expect(doc.type).toBe('agent');
    expect(doc.keys[0]!.publicKeyMultibase).toBe(multikey(base58Decode(signers.bob.address)!));
  });

  it('refuses a key proof made for another controller, or by another key, and stores nothing', async () => {
    const before = await count('identity_identities');
    const forBob = await by('alice')
      .create({ body: { name: 'Stolen Proof', key: keyProof(signers.bob.address) } })
      .catch((e) => e);
    expect(forBob).toBeInstanceOf(UnprocessableEntityError);
    expect(forBob.code).toBe('key_proof_invalid');
    const other = keyProof(signers.alice.address);
    const wrongKey = { publicKeyMultibase: multikeyOfWallet(generateWallet()), proof: other.proof };
    expect(
      (
        await by('alice')
          .create({ body: { name: 'Wrong Key', key: wrongKey } })
          .catch((e) => e)
      ).code,
    ).toBe('key_proof_invalid');
    expect(await count('identity_identities')).toBe(before);
  });

  it('needs SIGN-IN-WITH-X', async () => {
    const before = await count('identity_identities');
    const error = await anon.create({ body: { name: 'Nobody' } }).catch((e) => e);
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(error.code).toBe('siwx_invalid');
    expect(await count('identity_identities')).toBe(before);
  });

  it('names each invalid field with 400 and stores nothing', async () => {
    const before = await count('identity_identities');
    const cases: [Record<string, unknown>, string][] = [
      [{ name: '' }, 'body.name'],
      [{ name: 'x', type: 'robot' }, 'body.type'],
      [{ name: 'x', capabilities: [{ id: 'Not A Slug' }] }, 'body.capabilities.0.id'],
      [{ name: 'x', capabilities: [{ id: 'a' }, { id: 'a' }] }, 'body.capabilities'],
      [{ name: 'x', key: { publicKeyMultibase: 'z6MkNotAKey', proof: 'x' } }, 'body.key.publicKeyMultibase'],
      [{ name: 'x', metadata: { '1bad': 'v' } }, 'body.metadata.1bad'],
      [
        { name: 'x', serviceEndpoints: [{ id: 'card', type: 'AgentCard', url: 'ftp://example.com' }] },
        'body.serviceEndpoints.0.url',
      ],
      [{ name: 'x', surprise: true }, 'body.surprise'],
    ];
    for (const [body, field] of cases) {
      const error = await by('alice')
        .create({ body: body as never })
        .catch((e) => e);
      expect(error, field).toBeInstanceOf(BadRequestError);
      expect(
        error.details.fields.map((f: { field: string }) => f.field),
        field,
      ).toContain(field);
    }
    expect(await count('identity_identities')).toBe(before);
  });

  it('stops a wallet at 100 identities with 422 identity_limit_reached', async () => {
    const store = identityStore(service.database.db);
    const now = new Date();
    for (let i = 0; i < 100; i++) {
      await store.insertIdentity(
        {
          did: `did:agent:Limit${base58Encode(new Uint8Array([i + 1, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7]))}`,
          type: 'agent',
          status: 'active',
          name: `n${i}`,
          controller: signers.dave.address,
          capabilities: [],
          metadata: {},
          serviceEndpoints: [],
          version: 1,
          createdAt: now,
          updatedAt: now,
        },
        multikey(base58Decode(signers.dave.address)!),
      );
    }
    const error = await by('dave')
      .create({ body: { name: 'One Too Many' } })
      .catch((e) => e);
    expect(error).toBeInstanceOf(UnprocessableEntityError);
    expect(error.code).toBe('identity_limit_reached');
    expect(error.details.limit).toBe(100);
  });
});

describe('update', () => {
  let did: string;
  let firstKey: ReturnType<typeof keyProof>;
  beforeAll(async () => {
    firstKey = keyProof(signers.carol.address);
    did = (
      await by('carol').create({
        body: {
          name: 'Changer',
          key: firstKey,
          capabilities: [{ id: 'summarize' }],
          metadata: { a: '1', pricing: 'x' },
        },
      })
    ).did;
  });

  it('adds and replaces capabilities, sets and deletes metadata, renames; version +1', async () => {
    const doc = await by('carol').update({
      body: {
        did,
        expectedVersion: 1,
        name: 'Changer 2',
        addCapabilities: [{ id: 'summarize', version: '2.0' }, { id: 'translate' }],
        metadata: { pricing: null, b: '2' },
      },
    });
    expect(doc.version).toBe(2);
    expect(doc.name).toBe('Changer 2');
    expect(doc.capabilities.map((c) => [c.id, c.version])).toEqual([
      ['summarize', '2.0'],
      ['translate', undefined],
    ]);
    expect(doc.metadata).toEqual({ a: '1', b: '2' });
    expect(doc.didDocumentMetadata.versionId).toBe('2');
    const removed = await by('carol').update({ body: { did, removeCapabilities: ['translate'] } });
    expect(removed.capabilities.map((c) => c.id)).toEqual(['summarize']);
    expect(removed.version).toBe(3);
  });

  it('rotates the key: the old one stays listed as rotated; reusing it is refused', async () => {
    const next = keyProof(signers.carol.address);
    const doc = await by('carol').update({ body: { did, rotateKey: next } });
    expect(doc.keys.map((k) => [k.id, k.publicKeyMultibase, k.status])).toEqual([
      [`${did}#key-2`, next.publicKeyMultibase, 'current'],
      [`${did}#key-1`, firstKey.publicKeyMultibase, 'rotated'],
    ]);
    expect(doc.keys[1]!.rotatedAt).toBe(doc.updatedAt);
    expect(doc.didDocument.verificationMethod[0]).toEqual({
      id: `${did}#key-2`,
      type: 'Multikey',
      controller: did,
      publicKeyMultibase: next.publicKeyMultibase,
    });
    expect(doc.didDocument.assertionMethod[0]).toBe(`${did}#key-2`);
    const reuse = await by('carol')
      .update({ body: { did, rotateKey: firstKey } })
      .catch((e) => e);
    expect(reuse).toBeInstanceOf(UnprocessableEntityError);
    expect(reuse.code).toBe('key_reused');
    const badProof = await by('carol')
      .update({ body: { did, rotateKey: keyProof(signers.bob.address) } })
      .catch((e) => e);
    expect(badProof.code).toBe('key_proof_invalid');
  });

  it('refuses others, stale versions, undeclared removals and too many keys, changing nothing', async () => {
    const before = await anon.get({ params: { did } });
    const notMine = await by('bob')
      .update({ body: { did, name: 'Hijacked' } })
      .catch((e) => e);
    expect(notMine).toBeInstanceOf(PermissionDeniedError);
    expect(notMine.code).toBe('not_controller');
    const stale = await by('carol')
      .update({ body: { did, expectedVersion: 1, name: 'Late' } })
      .catch((e) => e);
    expect(stale).toBeInstanceOf(ConflictError);
    expect(stale.code).toBe('version_conflict');
    expect(
      (
        await by('carol')
          .update({ body: { did, removeCapabilities: ['juggling'] } })
          .catch((e) => e)
      ).code,
    ).toBe('capability_not_declared');
    const twenty = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, 'v']));
    expect(
      (
        await by('carol')
          .update({ body: { did, metadata: twenty } })
          .catch((e) => e)
      ).code,
    ).toBe('too_many_metadata_keys');
    const fifty = Array.from({ length: 50 }, (_, i) => ({ id: `cap-${i}` }));
    expect(
      (
        await by('carol')
          .update({ body: { did, addCapabilities: fifty } })
          .catch((e) => e)
      ).code,
    ).toBe('too_many_capabilities');
    expect((await anon.update({ body: { did, name: 'Anon' } }).catch((e) => e)).code).toBe('siwx_invalid');
    const empty = await by('carol')
      .update({ body: { did } as never })
      .catch((e) => e);
    expect(empty).toBeInstanceOf(BadRequestError);
    expect(
      (
        await by('carol')
          .update({ body: { did: 'did:agent:0OIl', name: 'x' } })
          .catch((e) => e)
      ).details.fields[0].field,
    ).toBe('body.did');
    expect(
      (
        await by('carol')
          .update({ body: { did: 'did:agent:1111111111111111111', name: 'x' } })
          .catch((e) => e)
      ).code,
    ).toBe('did_not_found');
    expect(await anon.get({ params: { did } })).toEqual(before);
  });

  it('deactivates for good: it still resolves, marked deactivated, and can no longer change', async () => {
    const doc = await by('carol').update({ body: { did, deactivate: true } });
    expect(doc.status).toBe('deactivated');
    expect(doc.didDocumentMetadata.deactivated).toBe(true);
    expect((await anon.get({ params: { did } })).status).toBe('deactivated');
    const again = await by('carol')
      .update({ body: { did, name: 'Back' } })
      .catch((e) => e);
    expect(again).toBeInstanceOf(ConflictError);
    expect(again.code).toBe('did_deactivated');
  });
});

// ---- credentials ----

describe('credentials', () => {
  let issuer: string; // alice's
  let subject: string; // bob's
  let credentialId: string;
  let credential: VerifiableCredential;
  let issuerKey: string;

  beforeAll(async () => {
    const a = await by('alice').create({ body: { name: 'Issuer A', type: 'organization' } });
    issuer = a.did;
    issuerKey = a.didDocument.verificationMethod.find((m) => m.id === `${a.did}#key-1`)!.publicKeyMultibase;
    expect(issuerKey).toBe(multikey(base58Decode(signers.alice.address)!));
    subject = (await by('bob').create({ body: { name: 'Subject B', capabilities: [{ id: 'code-review' }] } })).did;
  });

  it('issues a W3C VC 2.0 signed with eddsa-jcs-2022 that node:crypto verifies independently', async () => {
    const validUntil = new Date(Date.now() + 30 * DAY).toISOString();
    const record = await issued('alice', {
      issuer,
      subject,
      claims: { kind: 'skill_attestation', skill: 'code-review', level: 'expert', note: 'Twelve clean reviews' },
      validUntil,
    });
    credentialId = record.credentialId;
    credential = record.credential;
    expect(credentialId).toMatch(/^cred_[A-Za-z0-9]{16,40}$/);
    expect(record).toMatchObject({
      kind: 'skill_attestation',
      issuer,
      subject,
      status: 'active',
      statusReason: null,
      validUntil,
    });
    expect(credential).toMatchObject({
      '@context': ['https://www.w3.org/ns/credentials/v2'],
      id: `urn:agent-economy:credential:${credentialId}`,
      type: ['VerifiableCredential', 'SkillAttestation'],
      issuer,
      validFrom: record.issuedAt,
      validUntil,
      credentialSubject: { id: subject, skill: 'code-review', level: 'expert', note: 'Twelve clean reviews' },
      credentialStatus: { type: 'RegistryStatus', statusPurpose: 'revocation' },
      proof: {
        type: 'DataIntegrityProof',
        cryptosuite: 'eddsa-jcs-2022',
        verificationMethod: `${issuer}#key-1`,
        proofPurpose: 'assertionMethod',
      },
    });
    // Signed by the issuer DID's own key (here alice's wallet key), which only alice holds.
    expect(verifyWithNodeCrypto(credential as never, issuerKey)).toBe(true);
    // A changed claim no longer verifies, independently either.
    const forged = { ...credential, credentialSubject: { ...credential.credentialSubject, level: 'basic' } };
    expect(verifyWithNodeCrypto(forged as never, issuerKey)).toBe(false);

    // The subject's document now shows the attestation, and the capability as attested.
    const doc = await anon.get({ params: { did: subject } });
    expect(doc.credentials.map((c) => c.credentialId)).toEqual([credentialId]);
    expect(doc.capabilities[0]).toMatchObject({ id: 'code-review', attested: true, attestations: 1 });
    expect(doc.trustChain.vouchers).toEqual([
      { did: issuer, name: 'Issuer A', kinds: ['skill_attestation'], credentials: 1, anchor: false },
    ]);
  });

  it('verifies by id and as presented; tampering is detected', async () => {
    const byId = await anon.verifyCredential({ body: { credentialId } });
    expect(byId).toMatchObject({
      valid: true,
      credentialId,
      kind: 'skill_attestation',
      issuer,
      subject,
      status: 'active',
      failures: [],
    });
    expect(Object.values(byId.checks).every(Boolean)).toBe(true);
    expect((await anon.verifyCredential({ body: { credential: credential as never } })).valid).toBe(true);

    const tampered = { ...credential, credentialSubject: { ...credential.credentialSubject, level: 'basic' } };
    const result = await anon.verifyCredential({ body: { credential: tampered as never } });
    expect(result.valid).toBe(false);
    expect(result.checks.signature).toBe(false);
    expect(result.failures).toEqual(['signature_invalid']);
    const reissued = await anon.verifyCredential({ body: { credential: { ...credential, issuer: subject } as never } });
    expect(reissued.failures).toContain('signature_invalid');
    // Content too deeply nested to canonicalize is an invalid signature (or refused as input), never a crash.
    // (Sent by hand: a client cannot even serialize it.)
    const text = `${JSON.stringify({ credential }).slice(0, -2)},"deep":${'['.repeat(40_000)}${']'.repeat(40_000)}}}`;
    const response = await fetch(`${service.url}/api/credentials/verify`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: text,
    });
    expect([200, 400]).toContain(response.status);
    if (response.status === 200)
      expect(((await response.json()) as { failures: string[] }).failures).toEqual(['signature_invalid']);
  });

  it('suspends, reinstates and revokes (final); verify follows the status', async () => {
    const suspended = await by('alice').issueCredential({
      body: { action: 'setStatus', credentialId, status: 'suspended', reason: 'under review' },
    });
    expect(suspended).toMatchObject({ status: 'suspended', statusReason: 'under review' });
    const whileSuspended = await anon.verifyCredential({ body: { credentialId } });
    expect(whileSuspended).toMatchObject({ valid: false, status: 'suspended', failures: ['suspended'] });
    expect((await anon.get({ params: { did: subject } })).capabilities[0]!.attested).toBe(false);

    expect(
      (
        (await by('alice').issueCredential({
          body: { action: 'setStatus', credentialId, status: 'active' },
        })) as CredentialRecord
      ).status,
    ).toBe('active');
    expect((await anon.verifyCredential({ body: { credential: credential as never } })).valid).toBe(true);

    const notIssuer = await by('bob')
      .issueCredential({ body: { action: 'setStatus', credentialId, status: 'revoked' } })
      .catch((e) => e);
    expect(notIssuer).toBeInstanceOf(PermissionDeniedError);
    expect(notIssuer.code).toBe('not_issuer_controller');

    const revoked = (await by('alice').issueCredential({
      body: { action: 'setStatus', credentialId, status: 'revoked', reason: 'key compromise' },
    })) as CredentialRecord;
    expect(revoked.status).toBe('revoked');
    const afterRevocation = await anon.verifyCredential({ body: { credential: credential as never } });
    expect(afterRevocation).toMatchObject({ valid: false, status: 'revoked', failures: ['revoked'] });
    expect(afterRevocation.checks).toMatchObject({ signature: true, registered: true, notRevoked: false });
    const reinstate = await by('alice')
      .issueCredential({ body: { action: 'setStatus', credentialId, status: 'active' } })
      .catch((e) => e);
    expect(reinstate).toBeInstanceOf(ConflictError);
    expect(reinstate.code).toBe('credential_revoked');
  });

  it('refuses what the contract refuses, before anything is stored', async () => {
    const before = await count('identity_credentials');
    const issue = (who: keyof typeof signers, body: Record<string, unknown>) =>
      by(who)
        .issueCredential({
          body: {
            action: 'prepare',
            issuer,
            subject,
            claims: { kind: 'skill_attestation', skill: 'code-review', level: 'basic' },
            ...body,
          } as never,
        })
        .catch((e) => e);
    expect((await issue('bob', {})).code).toBe('not_issuer_controller');
    expect((await issue('alice', { subject: issuer })).code).toBe('self_attestation');
    expect(
      (await issue('alice', { claims: { kind: 'skill_attestation', skill: 'cooking', level: 'basic' } })).code,
    ).toBe('capability_not_declared');
    expect((await issue('alice', { validUntil: new Date(Date.now() - 1000).toISOString() })).code).toBe(
      'invalid_validity',
    );
    expect((await issue('alice', { validUntil: new Date(Date.now() + 6 * 366 * DAY).toISOString() })).code).toBe(
      'invalid_validity',
    );
    expect((await issue('alice', { validUntil: '2027-02-30T00:00:00.000Z' })).code).toBe('invalid_validity');
    const period = {
      kind: 'trade_certification',
      trades: 3,
      volumeUsd: '10',
      disputes: 0,
      periodStart: '2026-02-01T00:00:00.000Z',
      periodEnd: '2026-01-01T00:00:00.000Z',
    };
    expect((await issue('alice', { claims: period })).code).toBe('invalid_period');
    const unknown = await issue('alice', { subject: 'did:agent:1111111111111111111' });
    expect(unknown).toBeInstanceOf(NotFoundError);
    expect(unknown.code).toBe('did_not_found');
    expect(
      (
        await issue('alice', { claims: { kind: 'audit_badge', artifact: 'x', result: 'failed', findings: {} } })
      ).details.fields.map((f: { field: string }) => f.field),
    ).toEqual(expect.arrayContaining(['body.claims.result']));
    expect((await issue('alice', { validUntil: 'tomorrow' })).details.fields[0].field).toBe('body.validUntil');
    expect(
      (
        await anon
          .issueCredential({
            body: { action: 'setStatus', credentialId: 'cred_AAAAAAAAAAAAAAAAAAAA', status: 'revoked' },
          })
          .catch((e) => e)
      ).code,
    ).toBe('siwx_invalid');
    const missing = await by('alice')
      .issueCredential({ body: { action: 'setStatus', credentialId: 'cred_AAAAAAAAAAAAAAAAAAAA', status: 'revoked' } })
      .catch((e) => e);
    expect(missing.code).toBe('credential_not_found');
    expect(
      (await anon.verifyCredential({ body: { credentialId: 'cred_AAAAAAAAAAAAAAAAAAAA' } }).catch((e) => e)).code,
    ).toBe('credential_not_found');
    expect(await anon.verifyCredential({ body: {} as never }).catch((e) => e)).toBeInstanceOf(BadRequestError);
    expect(await count('identity_credentials')).toBe(before);
  });

  it('answers not_registered for a credential signed elsewhere, even with a good signature', async () => {
    const outsider = generateWallet();
    const outsiderDid = didKeyOf(outsider.secretKey.slice(32));
    const foreign = signDataIntegrity(
      {
        '@context': ['https://www.w3.org/ns/credentials/v2'],
        id: 'urn:uuid:1',
        type: ['VerifiableCredential'],
        issuer: outsiderDid,
        validFrom: '2026-01-01T00:00:00.000Z',
        credentialSubject: { id: subject },
      },
      {
        type: 'DataIntegrityProof',
        cryptosuite: 'eddsa-jcs-2022',
        created: '2026-01-01T00:00:00.000Z',
        verificationMethod: `${outsiderDid}#${outsiderDid.slice(8)}`,
        proofPurpose: 'assertionMethod',
      },
      outsider,
    );
    const result = await anon.verifyCredential({ body: { credential: foreign as never } });
    expect(result).toMatchObject({ valid: false, status: 'unknown', issuer: outsiderDid, subject, credentialId: null });
    expect(result.checks.signature).toBe(true);
    expect(result.failures).toEqual(['not_registered', 'issuer_unknown']);
    // A registered id cannot be borrowed by a document signed with another key.
    const borrowed = signDataIntegrity(
      { ...foreign, id: credential.id, proof: undefined } as never,
      {
        type: 'DataIntegrityProof',
        cryptosuite: 'eddsa-jcs-2022',
        created: '2026-01-01T00:00:00.000Z',
        verificationMethod: `${outsiderDid}#${outsiderDid.slice(8)}`,
        proofPurpose: 'assertionMethod',
      },
      outsider,
    );
    expect((await anon.verifyCredential({ body: { credential: borrowed as never } })).failures).toContain(
      'not_registered',
    );
  });

  it('expires when validUntil passes, and then cannot change status', async () => {
    const record = await issued('alice', {
      issuer,
      subject,
      claims: {
        kind: 'trade_certification',
        trades: 4,
        volumeUsd: '12.5',
        disputes: 0,
        periodStart: '2026-01-01T00:00:00.000Z',
        periodEnd: '2026-02-01T00:00:00.000Z',
      },
      validUntil: new Date(Date.now() + 3_600_000).toISOString(),
    });
    const later = await sibling({ trustAnchors: [], now: () => new Date(Date.now() + 2 * 3_600_000) });
    const laterAnon = createServiceClient(identityService, later.url, { maxRetries: 0 });
    const result = await laterAnon.verifyCredential({ body: { credentialId: record.credentialId } });
    expect(result).toMatchObject({ valid: false, status: 'expired', failures: ['expired'] });
    expect(result.checks).toMatchObject({ signature: true, notExpired: false });
    const change = await by('alice', later)
      .issueCredential({ body: { action: 'setStatus', credentialId: record.credentialId, status: 'suspended' } })
      .catch((e) => e);
    expect(change.code).toBe('credential_expired');
    expect(
      (await laterAnon.listCredentials({ params: { did: subject }, query: { status: 'expired' } })).items.map(
        (c) => c.credentialId,
      ),
    ).toEqual([record.credentialId]);
    // Now (the first instance's clock) it is still valid.
    expect((await anon.verifyCredential({ body: { credentialId: record.credentialId } })).valid).toBe(true);
  });

  it('fails verification once the issuer is deactivated', async () => {
    const temp = await by('lister').create({ body: { name: 'Temporary Issuer' } });
    const record = await issued('lister', {
      issuer: temp.did,
      subject,
      claims: {
        kind: 'audit_badge',
        artifact: 'pkg@1.0.0',
        result: 'passed',
        findings: { critical: 0, high: 0, medium: 1, low: 2 },
      },
    });
    expect((await anon.verifyCredential({ body: { credentialId: record.credentialId } })).valid).toBe(true);
    await by('lister').update({ body: { did: temp.did, deactivate: true } });
    const result = await anon.verifyCredential({ body: { credentialId: record.credentialId } });
    expect(result).toMatchObject({ valid: false, failures: ['issuer_deactivated'] });
    expect(result.checks.issuerActive).toBe(false);
    expect(
      (
        await issued('lister', {
          issuer: temp.did,
          subject,
          claims: {
            kind: 'audit_badge',
            artifact: 'x',
            result: 'passed',
            findings: { critical: 0, high: 0, medium: 0, low: 0 },
          },
        }).catch((e) => e)
      ).code,
    ).toBe('did_deactivated');
  });

  it('lists held and issued credentials with filters and pages', async () => {
    const all = await anon.listCredentials({ params: { did: subject }, query: { limit: 100 } });
    expect(all.items.length).toBe(3);
    expect(all.nextCursor).toBeNull();
    expect(all.items.map((c) => c.kind)).toEqual(['audit_badge', 'trade_certification', 'skill_attestation']);
    expect(
      (await anon.listCredentials({ params: { did: subject }, query: { status: 'revoked' } })).items.map(
        (c) => c.credentialId,
      ),
    ).toEqual([credentialId]);
    expect(
      (
        await anon.listCredentials({
          params: { did: subject },
          query: { kind: 'trade_certification', status: 'active' },
        })
      ).items,
    ).toHaveLength(1);
    expect((await anon.listCredentials({ params: { did: issuer } })).items).toEqual([]);
    expect(
      (await anon.listCredentials({ params: { did: issuer }, query: { role: 'issuer' } })).items.map((c) => c.subject),
    ).toEqual([subject, subject]);

    const first = await anon.listCredentials({ params: { did: subject }, query: { limit: 2 } });
    expect(first.items.map((c) => c.credentialId)).toEqual(all.items.slice(0, 2).map((c) => c.credentialId));
    const second = await anon.listCredentials({
      params: { did: subject },
      query: { limit: 2, cursor: first.nextCursor! },
    });
    expect(second.items.map((c) => c.credentialId)).toEqual([all.items[2]!.credentialId]);
    expect(second.nextCursor).toBeNull();

    expect(
      (await anon.listCredentials({ params: { did: subject }, query: { cursor: 'bm9wZQ' } }).catch((e) => e)).details
        .fields[0].field,
    ).toBe('query.cursor');
    expect(
      (await anon.listCredentials({ params: { did: subject }, query: { status: 'lost' as never } }).catch((e) => e))
        .details.fields[0].field,
    ).toBe('query.status');
    expect(
      (await anon.listCredentials({ params: { did: 'did:agent:1111111111111111111' } }).catch((e) => e)).code,
    ).toBe('did_not_found');
  });
});

// ---- trust ----

describe('trust chain and trust score', () => {
  let x: string; // the anchor (alice's)
  let y: string; // vouched for by x (bob's)
  let z: string; // vouched for by y (carol's)
  let xToY: string;
  let anchored: RunningService;
  let anchoredAnon: IdentityClient;

  beforeAll(async () => {
    x = (await by('alice').create({ body: { name: 'Anchor X', type: 'organization' } })).did;
    y = (await by('bob').create({ body: { name: 'Middle Y', capabilities: [{ id: 'code-review' }] } })).did;
    z = (await by('carol').create({ body: { name: 'Leaf Z', capabilities: [{ id: 'summarize' }] } })).did;
    xToY = (
      await issued('alice', {
        issuer: x,
        subject: y,
        claims: {
          kind: 'audit_badge',
          artifact: 'y-agent',
          result: 'passed',
          findings: { critical: 0, high: 0, medium: 0, low: 1 },
        },
      })
    ).credentialId;
    await issued('bob', {
      issuer: y,
      subject: z,
      claims: { kind: 'skill_attestation', skill: 'summarize', level: 'proficient' },
    });
    // A restart with X configured as a trust anchor: the same data, read from the database.
    anchored = await sibling({ trustAnchors: [x] });
    anchoredAnon = createServiceClient(identityService, anchored.url, { maxRetries: 0 });
  });

  it('follows a chain of three DIDs to the anchor', async () => {
    const chain = await anchoredAnon.trustChain({ params: { did: z } });
    expect(chain).toMatchObject({
      did: z,
      maxDepth: 3,
      verified: true,
      anchorsReached: [x],
      paths: [[z, y, x]],
      truncated: false,
    });
    expect(chain.nodes.map((n) => [n.did, n.depth, n.anchor, n.name])).toEqual([
      [z, 0, false, 'Leaf Z'],
      [y, 1, false, 'Middle Y'],
      [x, 2, true, 'Anchor X'],
    ]);
    expect(chain.links.map((l) => [l.issuer, l.subject, l.kind, l.status, l.depth])).toEqual([
      [y, z, 'skill_attestation', 'active', 1],
      [x, y, 'audit_badge', 'active', 2],
    ]);
    expect(chain.vouchers).toEqual([
      { did: y, name: 'Middle Y', kinds: ['skill_attestation'], credentials: 1, anchor: false },
    ]);
    expect(chain.endorsements).toEqual({
      total: 1,
      distinctIssuers: 1,
      byKind: { skill_attestation: 1, trade_certification: 0, audit_badge: 0 },
      sameController: 0,
    });
    expect(chain.links.every((l) => !l.sameController)).toBe(true);
    expect((await anchoredAnon.get({ params: { did: z } })).trustChain.verified).toBe(true);
    // The first instance has no anchors: the same graph, unverified.
    expect((await anon.trustChain({ params: { did: z } })).verified).toBe(false);
  });

  it('stops at maxDepth and says so', async () => {
    const chain = await anchoredAnon.trustChain({ params: { did: z }, query: { maxDepth: 1 } });
    expect(chain.nodes.map((n) => n.did)).toEqual([z, y]);
    expect(chain).toMatchObject({ verified: false, truncated: true, anchorsReached: [], paths: [] });
    expect(
      (await anchoredAnon.trustChain({ params: { did: z }, query: { maxDepth: 6 as never } }).catch((e) => e)).details
        .fields[0].field,
    ).toBe('query.maxDepth');
    expect(
      (await anchoredAnon.trustChain({ params: { did: 'did:agent:1111111111111111111' } }).catch((e) => e)).code,
    ).toBe('did_not_found');
  });

  it('follows a cycle once', async () => {
    // Z certifies Y's trades: Y → Z → Y is now a cycle.
    await issued('carol', {
      issuer: z,
      subject: y,
      claims: {
        kind: 'trade_certification',
        trades: 2,
        volumeUsd: '3',
        disputes: 0,
        periodStart: '2026-01-01T00:00:00.000Z',
        periodEnd: '2026-01-02T00:00:00.000Z',
      },
    });
    const chain = await anchoredAnon.trustChain({ params: { did: z }, query: { maxDepth: 5 } });
    expect(chain.nodes.map((n) => n.did)).toEqual([z, y, x]);
    expect(chain.links.map((l) => [l.issuer, l.subject, l.depth])).toEqual(
      expect.arrayContaining([
        [y, z, 1],
        [x, y, 2],
        [z, y, 2],
      ]),
    );
    expect(chain.links).toHaveLength(3);
    expect(chain.truncated).toBe(false);
    expect(chain.paths).toEqual([[z, y, x]]);
  });

  it('loses verification when a link is revoked; includeInactive shows it', async () => {
    await by('alice').issueCredential({ body: { action: 'setStatus', credentialId: xToY, status: 'revoked' } });
    const chain = await anchoredAnon.trustChain({ params: { did: z } });
    expect(chain.verified).toBe(false);
    expect(chain.nodes.map((n) => n.did)).toEqual([z, y]);
    const all = await anchoredAnon.trustChain({ params: { did: z }, query: { includeInactive: 'true' } });
    expect(all.nodes.map((n) => n.did)).toEqual([z, y, x]);
    expect(all.links.find((l) => l.credentialId === xToY)?.status).toBe('revoked');
    expect(all.verified).toBe(false);
  });

  it('scores trust from DID age, credentials, trade history and reputation, as the contract’s formulas say', async () => {
    const s = await by('bob').create({ body: { name: 'Scored S', capabilities: [{ id: 'code-review' }] } });
    const issueTo = (who: 'alice' | 'bob', issuerDid: string, claims: Record<string, unknown>) =>
      issued(who, { issuer: issuerDid, subject: s.did, claims: claims as never });
    const badge = {
      kind: 'audit_badge',
      artifact: 's',
      result: 'passed',
      findings: { critical: 0, high: 0, medium: 0, low: 0 },
    };
    const a1 = await issueTo('alice', x, badge);
    await issueTo('alice', x, badge); // the same issuer and kind counts once
    // (From alice's X: a certification by a DID of S's own controller, bob, would not count.)
    await issueTo('alice', x, {
      kind: 'trade_certification',
      trades: 20,
      volumeUsd: '500.25',
      disputes: 2,
      periodStart: '2026-01-01T00:00:00.000Z',
      periodEnd: '2026-03-01T00:00:00.000Z',
    });

    // Exactly 90 days after creation, with X as anchor; a reputation service that knows nothing of bob yet.
    const escrow = await walletFromSecretKey(generateWallet().secretKey);
    const reputation = await startService(
      (c) =>
        createReputationApp(
          { ...c, prices: { report: ZERO, get: ZERO, top: ZERO } },
          { trustedReporters: [escrow.address] },
        ),
      { id: 'reputation' },
    );
    extra.push(reputation);
    const clock = await sibling({
      trustAnchors: [x],
      reputationUrl: reputation.url,
      now: () => new Date(Date.parse(s.createdAt) + 90 * DAY),
    });
    const client = createServiceClient(identityService, clock.url, { maxRetries: 0 });
    const age = 100 * (1 - Math.exp(-1));
    const r2 = (v: number) => Math.round(v * 100) / 100;

    const fromRegistry = await client.trustScore({ body: { did: s.did } });
    expect(fromRegistry.factors.didAge).toMatchObject({ days: 90, score: r2(age), weight: 0.2, source: 'registry' });
    expect(fromRegistry.factors.credentials).toMatchObject({
      score: 60,
      weight: 0.4,
      active: 3,
      revoked: 0,
      distinctIssuers: 1,
      byKind: { skill_attestation: 0, trade_certification: 1, audit_badge: 2 },
    });
    // The certification's 20 trades are the issuer's word: listed as evidence, not counted. No verified trade yet.
    expect(fromRegistry.factors.tradeHistory).toEqual({
      score: 0,
      weight: 0.4,
      contribution: 0,
      source: 'reputation',
      completedTrades: 0,
      disputedTrades: 0,
      disputeRate: 0,
      volumeUsd: '0',
      firstTradeAt: null,
      evidence: [
        {
          source: 'certification',
          counted: false,
          completedTrades: 18,
          disputedTrades: 2,
          volumeUsd: '500.25',
          firstTradeAt: '2026-01-01T00:00:00.000Z',
          note: expect.stringContaining('not as trades'),
        },
      ],
    });
    expect(fromRegistry.factors.reputation).toMatchObject({
      score: 0,
      weight: 0,
      source: 'none',
      reputationScore: null,
    });
    expect(fromRegistry.score).toBe(r2(age * 0.2 + 60 * 0.4));
    expect(fromRegistry.band).toBe('low');
    expect(fromRegistry.riskFlags).toEqual(['no_trade_history']);
    expect(fromRegistry.generator).toEqual({ engine: 'builtin', model: 'builtin-rules-v1' });
    expect(fromRegistry.summary).toContain(`${fromRegistry.score} of 100`);

    // The escrow reports two settled trades of bob's, rated 5: reputation (250 + 100 + 100) / 7 = 64.29 on 2 verified
    // trades, so the factor is 64.29 × min(1, 2 / 10) = 12.858. It comes from the reputation service, never the caller;
    // so do the two trades the trade-history factor now counts.
    for (const n of [1, 2]) {
      await createServiceClient((await import('@agent-economy/contracts')).reputation, reputation.url, {
        wallet: escrow,
        payments: false,
        maxRetries: 0,
      }).report({
        body: {
          subject: signers.bob.address,
          subjectRole: 'seller',
          outcome: 'completed',
          rating: 5,
          escrowId: `esc_${'S'.repeat(15)}${n}`,
          ratedBy: signers.alice.address,
        },
      });
    }
    const supplied = await client.trustScore({
      body: {
        did: s.did,
        tradeHistory: {
          completedTrades: 37,
          disputedTrades: 1,
          volumeUsd: '1840.50',
          firstTradeAt: '2025-11-02T09:00:00.000Z',
        },
      },
    });
    const verifiedTrades = 100 * Math.min(1, Math.log10(3) / 2);
    expect(supplied.factors.tradeHistory).toMatchObject({
      source: 'reputation',
      weight: 0.3,
      completedTrades: 2,
      disputedTrades: 0,
      volumeUsd: '0',
      score: r2(verifiedTrades),
    });
    expect(supplied.factors.tradeHistory.evidence.map((e) => [e.source, e.counted, e.completedTrades])).toEqual([
      ['reputation', true, 2],
      ['certification', false, 18],
      ['caller', false, 37],
    ]);
    expect(supplied.factors.reputation).toMatchObject({
      source: 'reputation',
      weight: 0.25,
      score: 12.86,
      reputationScore: 64.29,
      ratings: 2,
      contribution: 3.21,
    });
    expect(supplied.score).toBe(r2(age * 0.15 + 60 * 0.3 + verifiedTrades * 0.3 + 64.29 * 0.2 * 0.25));
    expect(supplied.summary).toContain('38 trades the caller reported are not verified and do not count');
    expect(supplied.summary).not.toContain('2025-11-02');

    // A revoked credential costs 20 points; few ratings scale reputation down; a dispute rate the caller claims is not
    // flagged (nor counted).
    await by('alice').issueCredential({
      body: { action: 'setStatus', credentialId: a1.credentialId, status: 'revoked' },
    });
    const penalized = await client.trustScore({
      body: { did: s.did, tradeHistory: { completedTrades: 8, disputedTrades: 2, volumeUsd: '10' } },
    });
    expect(penalized.factors.credentials).toMatchObject({ score: 40, revoked: 1, active: 2 });
    expect(penalized.factors.reputation.score).toBe(12.86);
    expect(penalized.riskFlags).toEqual(['revoked_credentials']);
  });

  it('scores a new, unvouched or deactivated DID low and says why', async () => {
    const fresh = await by('lister').create({ body: { name: 'Fresh' } });
    const score = await anon.trustScore({ body: { did: fresh.did } });
    expect(score.factors.didAge.score).toBeLessThan(0.1);
    expect(score.band).toBe('untrusted');
    expect(score.riskFlags).toEqual(['new_identity', 'no_credentials', 'unverified_chain', 'no_trade_history']);
    await by('lister').update({ body: { did: fresh.did, deactivate: true } });
    const gone = await anon.trustScore({ body: { did: fresh.did } });
    expect(gone.score).toBe(0);
    expect(gone.riskFlags).toContain('deactivated');
    expect((await anon.trustScore({ body: { did: 'did:agent:1111111111111111111' } }).catch((e) => e)).code).toBe(
      'did_not_found',
    );
    // The reputation factor is never the caller's to give: a body that tries is refused.
    const bad = await anon
      .trustScore({ body: { did: fresh.did, reputation: { score: 100, ratings: 100 } } as never })
      .catch((e) => e);
    expect(bad).toBeInstanceOf(BadRequestError);
    expect(JSON.stringify(bad.details)).toContain('reputation');
  });
});

// ---- browsing, batches, stats ----

describe('browse and batch resolve', () => {
  const dids: string[] = [];
  beforeAll(async () => {
    const specs = [
      { name: 'L1', type: 'agent', capabilities: [{ id: 'x-cap' }] },
      { name: 'L2', type: 'service' },
      { name: 'L3', type: 'organization', capabilities: [{ id: 'x-cap' }] },
      { name: 'L4', type: 'agent' },
      { name: 'L5', type: 'agent', capabilities: [{ id: 'x-cap' }, { id: 'y-cap' }] },
    ] as const;
    for (const body of specs) dids.push((await by('lister').create({ body: body as never })).did);
    await by('lister').update({ body: { did: dids[3]!, deactivate: true } });
  });
  const controller = () => signers.lister.address;
  const mine = (items: { did: string }[]) => items.map((i) => i.did).filter((d) => dids.includes(d));

  it('filters by type, status, capability and controller, newest first', async () => {
    expect(mine((await anon.list({ query: { controller: controller(), type: 'agent', limit: 100 } })).items)).toEqual([
      dids[4],
      dids[3],
      dids[0],
    ]);
    expect(
      mine((await anon.list({ query: { controller: controller(), capability: 'x-cap', limit: 100 } })).items),
    ).toEqual([dids[4], dids[2], dids[0]]);
    expect(
      mine((await anon.list({ query: { controller: controller(), status: 'deactivated', limit: 100 } })).items),
    ).toEqual([dids[3]]);
    expect(
      mine(
        (await anon.list({ query: { controller: controller(), type: 'agent', status: 'active', capability: 'y-cap' } }))
          .items,
      ),
    ).toEqual([dids[4]]);
    const summary = (await anon.list({ query: { controller: controller(), capability: 'y-cap' } })).items[0]!;
    expect(summary).toMatchObject({
      did: dids[4],
      name: 'L5',
      type: 'agent',
      status: 'active',
      controller: controller(),
      capabilities: ['x-cap', 'y-cap'],
      attestedCapabilities: [],
      activeCredentials: 0,
    });
  });

  it('pages with limit and cursor, without gaps or repeats', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await anon.list({
        query: { controller: controller(), status: 'active', limit: 2, ...(cursor ? { cursor } : {}) },
      });
      seen.push(...page.items.map((i) => i.did));
      cursor = page.nextCursor ?? undefined;
      pages++;
    } while (cursor);
    const all = (await anon.list({ query: { controller: controller(), status: 'active', limit: 100 } })).items.map(
      (i) => i.did,
    );
    expect(seen).toEqual(all);
    expect(new Set(seen).size).toBe(seen.length);
    expect(pages).toBe(Math.ceil(all.length / 2));
    expect(mine(all.map((did) => ({ did })))).toEqual([dids[4], dids[2], dids[1], dids[0]]);
  });

  it('answers bad filters with 400 naming the field', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ type: 'robot' }, 'query.type'],
      [{ status: 'asleep' }, 'query.status'],
      [{ capability: 'Not Slug' }, 'query.capability'],
      [{ controller: 'not-a-wallet' }, 'query.controller'],
      [{ limit: 0 }, 'query.limit'],
      [{ limit: 101 }, 'query.limit'],
      [{ cursor: Buffer.from('c:5').toString('base64url') }, 'query.cursor'],
    ];
    for (const [query, field] of cases) {
      const error = await anon.list({ query: query as never }).catch((e) => e);
      expect(error, field).toBeInstanceOf(BadRequestError);
      expect(error.details.fields[0].field).toBe(field);
    }
  });

  it('resolves a batch in order, unknown DIDs as not found, and enforces its limits', async () => {
    const unknown = 'did:agent:1111111111111111111';
    const batch = await anon.resolveBatch({ body: { dids: [dids[2]!, unknown, dids[0]!] } });
    expect(batch.results.map((r) => [r.did, r.found, r.error])).toEqual([
      [dids[2], true, null],
      [unknown, false, 'notFound'],
      [dids[0], true, null],
    ]);
    expect(batch.results[0]!.identity).toEqual(await anon.get({ params: { did: dids[2]! } }));
    expect(batch).toMatchObject({ found: 2, notFound: 1 });
    const many = Array.from({ length: 26 }, (_, i) => `did:agent:${base58Encode(new Uint8Array(16).fill(i + 1))}`);
    expect((await anon.resolveBatch({ body: { dids: many } }).catch((e) => e)).details.fields[0].field).toBe(
      'body.dids',
    );
    expect((await anon.resolveBatch({ body: { dids: many.slice(0, 25) } })).notFound).toBe(25);
    expect(
      (await anon.resolveBatch({ body: { dids: [unknown, unknown] } }).catch((e) => e)).details.fields[0],
    ).toMatchObject({ field: 'body.dids', message: 'DIDs must be unique' });
    expect(await anon.resolveBatch({ body: { dids: [] } }).catch((e) => e)).toBeInstanceOf(BadRequestError);
  });
});

describe('prices', () => {
  let priced: RunningService;
  beforeAll(async () => {
    priced = await sibling({ trustAnchors: [] }, null);
  });
  const quoted = async (call: Promise<unknown>) => {
    const error = await call.catch((e) => e);
    expect(error).toBeInstanceOf(PaymentRequiredError);
    return (error as PaymentRequiredError).quote!.accepts[0]!.amount;
  };

  it('quotes the contract’s tiers and fixed prices; checks and free tiers come before any 402', async () => {
    const client = createServiceClient(identityService, priced.url, { maxRetries: 0 });
    const some = (n: number) =>
      Array.from({ length: n }, (_, i) => `did:agent:${base58Encode(new Uint8Array(16).fill(i + 1))}`);
    expect(await quoted(client.resolveBatch({ body: { dids: some(5) } }))).toBe('3000');
    expect(await quoted(client.resolveBatch({ body: { dids: some(6) } }))).toBe('10000');
    expect(await quoted(client.list({}))).toBe('2000');
    expect(await quoted(client.trustScore({ body: { did: (await anon.list({})).items[0]!.did } }))).toBe('20000');
    // An unknown DID is a 404 before any price is asked.
    expect((await client.get({ params: { did: 'did:agent:1111111111111111111' } }).catch((e) => e)).code).toBe(
      'did_not_found',
    );

    const a = by('alice', priced);
    const issuer = (await anon.list({ query: { controller: signers.alice.address, limit: 1 } })).items[0]!.did;
    const subject = (
      await anon.list({ query: { controller: signers.bob.address, capability: 'code-review', limit: 1 } })
    ).items[0]!.did;
    // Preparing is free; issuing the signed credential is the paid act.
    const prepared = (await a.issueCredential({
      body: {
        action: 'prepare',
        issuer,
        subject,
        claims: { kind: 'skill_attestation', skill: 'code-review', level: 'basic' },
      },
    })) as PreparedCredential;
    const proofValue = 'z' + base58Encode(await signers.alice.signMessage(base58Decode(prepared.signingInput)!));
    expect(
      await quoted(a.issueCredential({ body: { action: 'issue', credentialId: prepared.credentialId, proofValue } })),
    ).toBe('10000');
    expect(await quoted(a.create({ body: { name: 'Paid' } }))).toBe('10000');
    // A refused issue is refused before the 402 (nobody pays for it).
    expect(
      (
        await a
          .issueCredential({
            body: {
              action: 'prepare',
              issuer: subject,
              subject,
              claims: { kind: 'skill_attestation', skill: 'code-review', level: 'basic' },
            },
          })
          .catch((e) => e)
      ).code,
    ).toBe('not_issuer_controller');
    // So is a signature by another key than the issuer's.
    const forged = 'z' + base58Encode(await signers.bob.signMessage(base58Decode(prepared.signingInput)!));
    expect(
      (
        await a
          .issueCredential({ body: { action: 'issue', credentialId: prepared.credentialId, proofValue: forged } })
          .catch((e) => e)
      ).code,
    ).toBe('proof_invalid');
    // Changing a credential's status is free.
    const mineIssued = await anon.listCredentials({
      params: { did: issuer },
      query: { role: 'issuer', status: 'active', limit: 1 },
    });
    if (mineIssued.items[0]) {
      const changed = (await a.issueCredential({
        body: { action: 'setStatus', credentialId: mineIssued.items[0].credentialId, status: 'suspended' },
      })) as CredentialRecord;
      expect(changed.status).toBe('suspended');
    }
    // Statistics are free.
    expect((await client.stats()).dids.total).toBeGreaterThan(0);
  });
});

describe('stats', () => {
  it('counts DIDs, credentials, verifications, resolutions and rotations', async () => {
    const fresh = await startService((c) => createIdentityApp({ ...c, prices: FREE }, { trustAnchors: [] }), {
      id: 'identity',
    });
    extra.push(fresh);
    const client = (who: keyof typeof signers) => by(who, fresh);
    const freshAnon = createServiceClient(identityService, fresh.url, { maxRetries: 0 });
    const a = await client('alice').create({ body: { name: 'A', type: 'service' } });
    const b = await client('bob').create({ body: { name: 'B', capabilities: [{ id: 'code-review' }] } });
    const c = await client('carol').create({ body: { name: 'C', type: 'organization' } });
    const skill = await issued(
      'alice',
      { issuer: a.did, subject: b.did, claims: { kind: 'skill_attestation', skill: 'code-review', level: 'basic' } },
      fresh,
    );
    await issued(
      'carol',
      {
        issuer: c.did,
        subject: b.did,
        claims: {
          kind: 'audit_badge',
          artifact: 'b',
          result: 'passed',
          findings: { critical: 0, high: 0, medium: 0, low: 0 },
        },
      },
      fresh,
    );
    await client('alice').issueCredential({
      body: { action: 'setStatus', credentialId: skill.credentialId, status: 'revoked' },
    });
    await freshAnon.verifyCredential({ body: { credentialId: skill.credentialId } });
    await freshAnon.verifyCredential({ body: { credential: skill.credential as never } });
    await client('carol').update({ body: { did: c.did, rotateKey: keyProof(signers.carol.address) } });
    await client('carol').update({ body: { did: c.did, deactivate: true } });
    await freshAnon.get({ params: { did: b.did } });
    await freshAnon.resolveBatch({ body: { dids: [a.did, b.did, 'did:agent:1111111111111111111'] } });
    const stats = await freshAnon.stats();
    expect(stats).toMatchObject({
      dids: { total: 3, active: 2, deactivated: 1, byType: { agent: 1, service: 1, organization: 1 } },
      credentials: {
        issued: 2,
        active: 1,
        suspended: 0,
        revoked: 1,
        expired: 0,
        byKind: { skill_attestation: 1, trade_certification: 0, audit_badge: 1 },
      },
      verifications: { total: 2, valid: 0, invalid: 2 },
      resolutions: { single: 1, batch: 1, didsResolved: 3 },
      keyRotations: 1,
    });
  });
});

describe('paid for real', () => {
  it('charges the buyer the contract price for creating an identity and resolving it, paid on the local ledger', async () => {
    const economy = await startEconomy();
    try {
      const live = await economy.startPaidService((c) => createIdentityApp(c, { trustAnchors: [] }), {
        id: 'identity',
      });
      const client = createClient({
        baseUrls: { identity: live.url },
        wallet: await walletFromSecretKey(economy.buyer.secretKey),
        payments: { rpcUrl: economy.rpcUrl },
        maxRetries: 0,
      });
      const seller = live.context.wallet.address;
      const [buyerBefore, sellerBefore] = [
        economy.ledger.tokenBalance(economy.buyer.address),
        economy.ledger.tokenBalance(seller),
      ];
      const doc = await client.identity.create({ body: { name: 'Paying Agent', capabilities: [{ id: 'trading' }] } });
      expect(doc.controller).toBe(economy.buyer.address);
      expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(buyerBefore - usdToAtomic('0.01'));
      expect(economy.ledger.tokenBalance(seller)).toBe(sellerBefore + usdToAtomic('0.01'));
      expect(await client.identity.get({ params: { did: doc.did } })).toMatchObject({
        did: doc.did,
        name: 'Paying Agent',
      });
      expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(buyerBefore - usdToAtomic('0.011'));
      expect(economy.ledger.tokenBalance(seller)).toBe(sellerBefore + usdToAtomic('0.011'));
      // A request bound to fail costs nothing: the DID does not exist.
      expect(
        (await client.identity.get({ params: { did: 'did:agent:1111111111111111111' } }).catch((e) => e)).code,
      ).toBe('did_not_found');
      expect(economy.ledger.tokenBalance(economy.buyer.address)).toBe(buyerBefore - usdToAtomic('0.011'));
    } finally {
      await economy.close();
    }
  });
});

describe('integrity: trust is not self-made, and credentials are signed by their issuer', () => {
  let fresh: RunningService;
  const on = (who: keyof typeof signers) => by(who, fresh);
  const certification = {
    kind: 'trade_certification',
    trades: 1000,
    volumeUsd: '50000',
    disputes: 0,
    periodStart: '2026-01-01T00:00:00.000Z',
    periodEnd: '2026-02-01T00:00:00.000Z',
  } as const;
  beforeAll(async () => {
    fresh = await startService((c) => createIdentityApp({ ...c, prices: FREE }, { trustAnchors: [] }), {
      id: 'identity',
    });
    extra.push(fresh);
  });

  it('does not count a certification from a DID of the same controller (one wallet, 1,000 trades)', async () => {
    const a = await on('dave').create({ body: { name: 'Dave A' } });
    const b = await on('dave').create({ body: { name: 'Dave B' } });
    const before = await on('dave').trustScore({ body: { did: a.did } });
    const record = await issued('dave', { issuer: b.did, subject: a.did, claims: certification }, fresh);
    expect(record.status).toBe('active');
    const after = await on('dave').trustScore({ body: { did: a.did } });
    expect(after.factors.credentials).toMatchObject({ score: 0, active: 0, distinctIssuers: 0 });
    expect(after.factors.tradeHistory).toMatchObject({ completedTrades: 0, disputedTrades: 0, score: 0 });
    expect(after.score).toBe(before.score);
    expect(after.riskFlags).toContain('no_credentials');
  });

  it('does not count vouching returned in a ring, but counts an independent issuer', async () => {
    const m = await on('carol').create({ body: { name: 'Carol M', capabilities: [{ id: 'audit' }] } });
    const e = await on('lister').create({ body: { name: 'Lister E', capabilities: [{ id: 'audit' }] } });
    const x = await on('alice').create({ body: { name: 'Alice X' } });
    // Carol's M vouches for Lister's E, and E vouches back: E's vouching for M is not evidence.
    await issued(
      'carol',
      { issuer: m.did, subject: e.did, claims: { kind: 'skill_attestation', skill: 'audit', level: 'expert' } },
      fresh,
    );
    await issued('lister', { issuer: e.did, subject: m.did, claims: certification }, fresh);
    const ring = await on('carol').trustScore({ body: { did: m.did } });
    expect(ring.factors.credentials).toMatchObject({ score: 0, active: 0 });
    expect(ring.factors.tradeHistory).toMatchObject({ completedTrades: 0, evidence: [] });
    // Alice's X never received anything from Carol: its certification counts as a credential (25 points); its 1,000
    // trades are the issuer's word, shown as evidence, not counted (no reputation service answers here: source none).
    await issued('alice', { issuer: x.did, subject: m.did, claims: certification }, fresh);
    const independent = await on('carol').trustScore({ body: { did: m.did } });
    expect(independent.factors.credentials).toMatchObject({ score: 25, active: 1, distinctIssuers: 1 });
    expect(independent.factors.tradeHistory).toMatchObject({ completedTrades: 0, score: 0, source: 'none' });
    expect(independent.factors.tradeHistory.evidence.map((x) => [x.source, x.counted, x.completedTrades])).toEqual([
      ['certification', false, 1000],
    ]);
  });

  it('issues only with the issuer DID’s own key: the controller wallet or anyone else cannot sign for a DID with its own key', async () => {
    const agentKey = generateWallet();
    const keySigner = await walletFromSecretKey(agentKey.secretKey);
    const issuer = await on('bob').create({
      body: { name: 'Keyed Issuer', key: keyProof(signers.bob.address, agentKey) },
    });
    const subject = await on('alice').create({ body: { name: 'Keyed Subject', capabilities: [{ id: 'audit' }] } });
    const body = {
      issuer: issuer.did,
      subject: subject.did,
      claims: { kind: 'skill_attestation', skill: 'audit', level: 'basic' },
    } as const;
    const before = await count('identity_credentials');
    // Bob controls the DID but does not hold its key: his wallet's signature is refused, and nothing is registered.
    const refused = await issued('bob', body, fresh).catch((e) => e);
    expect(refused).toBeInstanceOf(UnprocessableEntityError);
    expect(refused).toMatchObject({ code: 'proof_invalid', details: { verificationMethod: `${issuer.did}#key-1` } });
    expect(await count('identity_credentials')).toBe(before);
    // With the DID's key it is issued, signed by that key, and verifies against it alone.
    const record = await issued('bob', body, fresh, keySigner);
    expect(record.credential.proof.verificationMethod).toBe(`${issuer.did}#key-1`);
    expect(verifyWithNodeCrypto(record.credential as never, multikeyOfWallet(agentKey))).toBe(true);
    expect((await on('bob').verifyCredential({ body: { credentialId: record.credentialId } })).valid).toBe(true);
    // A prepared credential is signed once; a second send is 409 credential_exists.
    const prepared = (await on('bob').issueCredential({ body: { action: 'prepare', ...body } })) as PreparedCredential;
    const proofValue = 'z' + base58Encode(await keySigner.signMessage(base58Decode(prepared.signingInput)!));
    await on('bob').issueCredential({ body: { action: 'issue', credentialId: prepared.credentialId, proofValue } });
    expect(
      (
        await on('bob')
          .issueCredential({ body: { action: 'issue', credentialId: prepared.credentialId, proofValue } })
          .catch((e) => e)
      ).code,
    ).toBe('credential_exists');
    // Another wallet may not send a signature for it either.
    const again = (await on('bob').issueCredential({ body: { action: 'prepare', ...body } })) as PreparedCredential;
    const sig = 'z' + base58Encode(await keySigner.signMessage(base58Decode(again.signingInput)!));
    expect(
      (
        await on('alice')
          .issueCredential({ body: { action: 'issue', credentialId: again.credentialId, proofValue: sig } })
          .catch((e) => e)
      ).code,
    ).toBe('not_issuer_controller');

    // After a key rotation: what the old key signed still verifies; a credential prepared for it must be prepared
    // again.
    const newKey = generateWallet();
    await on('bob').update({ body: { did: issuer.did, rotateKey: keyProof(signers.bob.address, newKey) } });
    const asPresented = await on('bob').verifyCredential({ body: { credential: record.credential as never } });
    expect(asPresented).toMatchObject({ valid: true, failures: [], checks: { signature: true, registered: true } });
    expect(await on('bob').verifyCredential({ body: { credentialId: record.credentialId } })).toMatchObject({
      valid: true,
      failures: [],
    });
    expect(
      (
        await on('bob')
          .issueCredential({ body: { action: 'issue', credentialId: again.credentialId, proofValue: sig } })
          .catch((e) => e)
      ).code,
    ).toBe('key_rotated');
  });

  it('serves a credential’s revocation status as a free public GET, where its credentialStatus.id points', async () => {
    const issuer = await on('alice').create({ body: { name: 'Status Issuer' } });
    const subject = await on('bob').create({ body: { name: 'Status Subject', capabilities: [{ id: 'audit' }] } });
    const record = await issued(
      'alice',
      {
        issuer: issuer.did,
        subject: subject.did,
        claims: { kind: 'skill_attestation', skill: 'audit', level: 'basic' },
      },
      fresh,
    );
    await on('alice').issueCredential({
      body: { action: 'setStatus', credentialId: record.credentialId, status: 'revoked', reason: 'withdrawn' },
    });
    const statusUrl = record.credential.credentialStatus.id;
    expect(statusUrl).toBe(`${fresh.url}/api/credentials/${subject.did}?credentialId=${record.credentialId}`);
    // Anyone, without signing in or paying: a plain GET.
    const response = await fetch(statusUrl);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { items: CredentialRecord[] };
    expect(body.items.map((c) => [c.credentialId, c.status, c.statusReason])).toEqual([
      [record.credentialId, 'revoked', 'withdrawn'],
    ]);
    expect(identityService.router.listCredentials.metadata.payment).toEqual({ kind: 'free' });
  });
});

describe('integrity: a stranger cannot make up trades or vouch for itself through a second DID', () => {
  let scored: RunningService;
  let reputationUrl: string;
  let escrow: Signer;
  const on = (who: keyof typeof signers, at: RunningService = scored) => by(who, at);
  const r2 = (v: number) => Math.round(v * 100) / 100;
  const invented = {
    completedTrades: 5000,
    disputedTrades: 0,
    volumeUsd: '1000000',
    firstTradeAt: '2020-01-01T00:00:00.000Z',
  };

  beforeAll(async () => {
    escrow = await walletFromSecretKey(generateWallet().secretKey);
    const reputation = await startService(
      (c) =>
        createReputationApp(
          { ...c, prices: { report: ZERO, get: ZERO, top: ZERO } },
          { trustedReporters: [escrow.address] },
        ),
      { id: 'reputation' },
    );
    extra.push(reputation);
    reputationUrl = reputation.url;
    scored = await startService((c) => createIdentityApp({ ...c, prices: FREE }, { trustAnchors: [], reputationUrl }), {
      id: 'identity',
    });
    extra.push(scored);
  });

  const report = (reporter: Signer, body: Parameters<ReturnType<typeof reputationClient>['report']>[0]['body']) =>
    reputationClient(reporter).report({ body });
  const reputationClient = (wallet: Signer) =>
    createServiceClient(reputationService, reputationUrl, { wallet, payments: false, maxRetries: 0 });

  it('shows a caller’s trade history as unverified and never lets it raise the score', async () => {
    const m = await on('mallory').create({ body: { name: 'Mallory M' } });
    const honest = await on('mallory').trustScore({ body: { did: m.did } });
    // The controller itself, and a stranger scoring someone else's DID, both claim 5,000 flawless trades.
    for (const who of ['mallory', 'lister'] as const) {
      const claimed = await on(who).trustScore({ body: { did: m.did, tradeHistory: invented } });
      expect(claimed.score).toBe(honest.score);
      expect(claimed.factors.tradeHistory).toMatchObject({
        score: 0,
        contribution: 0,
        source: 'reputation',
        completedTrades: 0,
        disputedTrades: 0,
        volumeUsd: '0',
        firstTradeAt: null,
      });
      expect(claimed.factors.tradeHistory.evidence).toEqual([
        {
          source: 'caller',
          counted: false,
          completedTrades: 5000,
          disputedTrades: 0,
          volumeUsd: '1000000',
          firstTradeAt: '2020-01-01T00:00:00.000Z',
          note: expect.stringContaining('not verified'),
        },
      ]);
      expect(claimed.riskFlags).toContain('no_trade_history');
      expect(claimed.summary).toContain('5000 trades the caller reported are not verified and do not count');
      expect(claimed.summary).not.toContain('trading since 2020');
    }
  });

  it('counts a trade certification from another wallet as a credential, not as 1,000 trades', async () => {
    const m = await on('mallory').create({ body: { name: 'Mallory Certified' } });
    // A second wallet (free to make) certifies 1,000 trades: it is an independent issuer, so the credential counts as
    // one (25 points), but its figures are the issuer's word, not records of trades.
    const accomplice = await on('erin').create({ body: { name: 'Erin Certifier' } });
    await issued(
      'erin',
      {
        issuer: accomplice.did,
        subject: m.did,
        claims: {
          kind: 'trade_certification',
          trades: 1000,
          volumeUsd: '50000',
          disputes: 0,
          periodStart: '2026-01-01T00:00:00.000Z',
          periodEnd: '2026-02-01T00:00:00.000Z',
        },
      },
      scored,
    );
    const score = await on('lister').trustScore({ body: { did: m.did } });
    expect(score.factors.credentials).toMatchObject({ score: 25, active: 1, distinctIssuers: 1 });
    expect(score.factors.tradeHistory).toMatchObject({ score: 0, completedTrades: 0, disputedTrades: 0 });
    expect(score.factors.tradeHistory.evidence).toEqual([
      {
        source: 'certification',
        counted: false,
        completedTrades: 1000,
        disputedTrades: 0,
        volumeUsd: '50000',
        firstTradeAt: '2026-01-01T00:00:00.000Z',
        note: expect.stringContaining('1 trade certification'),
      },
    ]);
    expect(score.riskFlags).toContain('no_trade_history');
  });

  it('counts the trades the reputation service verified for the controller wallet, and no unverified report', async () => {
    const e = await on('erin').create({ body: { name: 'Erin Trader' } });
    const seller = signers.erin.address;
    const buyer = signers.alice.address;
    // The escrow service (a trusted reporter) reports three settled escrows of erin's: two completed, one lost dispute.
    const settled = [
      { outcome: 'completed', amount: usdToAtomic('2.5') },
      { outcome: 'completed', amount: usdToAtomic('2.5') },
      { outcome: 'dispute_lost', amount: null },
    ] as const;
    for (const [i, t] of settled.entries()) {
      await report(escrow, {
        subject: seller,
        subjectRole: 'seller',
        outcome: t.outcome,
        ...(t.amount ? { amount: t.amount.toString() } : {}),
        escrowId: `esc_${'E'.repeat(15)}${i}`,
        ratedBy: buyer,
      });
    }
    // Naming a real escrow in an unverified report neither adds a trade nor lends the verified one its amount.
    const piggyback = await report(signers.mallory, {
      subject: seller,
      subjectRole: 'seller',
      outcome: 'completed',
      amount: usdToAtomic('1000000').toString(),
      escrowId: `esc_${'E'.repeat(15)}2`,
    });
    expect(piggyback.verified).toBe(false);
    // Mallory, who never traded with erin, files three glowing reports: kept by the reputation service, unverified.
    for (let i = 0; i < 3; i++) {
      const filed = await report(signers.mallory, {
        subject: seller,
        subjectRole: 'seller',
        outcome: 'completed',
        rating: 5,
        amount: usdToAtomic('100').toString(),
      });
      expect(filed.verified).toBe(false);
    }
    const score = await on('lister').trustScore({ body: { did: e.did, tradeHistory: invented } });
    const trades = score.factors.tradeHistory;
    expect(trades).toMatchObject({
      source: 'reputation',
      completedTrades: 2,
      disputedTrades: 1,
      disputeRate: 0.3333,
      volumeUsd: '5',
      score: r2(100 * (2 / 3) * Math.min(1, Math.log10(4) / 2)),
    });
    expect(Date.parse(trades.firstTradeAt!)).toBeLessThanOrEqual(Date.now());
    expect(trades.evidence.map((x) => [x.source, x.counted, x.completedTrades, x.disputedTrades, x.volumeUsd])).toEqual(
      [
        ['reputation', true, 2, 1, '5'],
        ['reputation', false, 3, 0, '300'],
        ['caller', false, 5000, 0, '1000000'],
      ],
    );
    expect(score.riskFlags).toContain('high_dispute_rate');
    expect(score.riskFlags).not.toContain('no_trade_history');
    expect(score.factors.reputation).toMatchObject({ source: 'reputation', ratings: 3 });
  });

  it('does not show an attestation from a DID of the same wallet as attested, vouched or verified anywhere', async () => {
    const a = await on('mallory').create({ body: { name: 'Mallory A', capabilities: [{ id: 'audit' }] } });
    const b = await on('mallory').create({ body: { name: 'Mallory B', type: 'organization' } });
    const selfAttestation = await issued(
      'mallory',
      { issuer: b.did, subject: a.did, claims: { kind: 'skill_attestation', skill: 'audit', level: 'expert' } },
      scored,
    );
    // Even with B configured as a trust anchor, its vouching for a DID of its own wallet is no third-party trust.
    const anchored = await startService(
      (c) => createIdentityApp({ ...c, prices: FREE }, { trustAnchors: [b.did], reputationUrl }),
      { id: 'identity', database: scored.database, wallet: scored.context.wallet },
    );
    extra.push(anchored);
    const view = createServiceClient(identityService, anchored.url, { maxRetries: 0 });

    const doc = await view.get({ params: { did: a.did } });
    expect(doc.capabilities.map((c) => [c.id, c.attested, c.attestations])).toEqual([['audit', false, 0]]);
    expect(doc.trustChain).toEqual({ vouchers: [], verified: false });
    // The credential itself is real, signed and listed, marked as self-attestation: its weight as third-party trust
    // is gone.
    expect(selfAttestation.sameController).toBe(true);
    expect(doc.credentials.map((c) => [c.credentialId, c.sameController])).toEqual([
      [selfAttestation.credentialId, true],
    ]);
    const held = await view.listCredentials({ params: { did: a.did } });
    expect(held.items.map((c) => [c.credentialId, c.sameController])).toEqual([[selfAttestation.credentialId, true]]);
    expect((await view.verifyCredential({ body: { credentialId: selfAttestation.credentialId } })).valid).toBe(true);
    const batch = await view.resolveBatch({ body: { dids: [a.did] } });
    expect(batch.results[0]!.identity!.capabilities[0]!.attested).toBe(false);
    const listed = await view.list({ query: { controller: signers.mallory.address, capability: 'audit' } });
    expect(listed.items.find((i) => i.did === a.did)?.attestedCapabilities).toEqual([]);

    const chain = await view.trustChain({ params: { did: a.did } });
    expect(chain).toMatchObject({ verified: false, anchorsReached: [], paths: [], vouchers: [] });
    expect(chain.endorsements).toEqual({
      total: 0,
      distinctIssuers: 0,
      byKind: { skill_attestation: 0, trade_certification: 0, audit_badge: 0 },
      sameController: 1,
    });
    expect(chain.links.map((l) => [l.issuer, l.subject, l.sameController])).toEqual([[b.did, a.did, true]]);
    const score = await view.trustScore({ body: { did: a.did } });
    expect(score.factors.credentials).toMatchObject({ active: 0, score: 0 });
    expect(score.riskFlags).toContain('unverified_chain');

    // An attestation from another wallet's DID is third-party trust, and shows as such.
    const c = await on('erin').create({ body: { name: 'Erin C' } });
    const independent = await issued(
      'erin',
      { issuer: c.did, subject: a.did, claims: { kind: 'skill_attestation', skill: 'audit', level: 'basic' } },
      scored,
    );
    expect(independent.sameController).toBe(false);
    const after = await view.get({ params: { did: a.did } });
    expect(after.capabilities.map((x) => [x.id, x.attested, x.attestations])).toEqual([['audit', true, 1]]);
    expect(after.trustChain.vouchers.map((v) => v.did)).toEqual([c.did]);
    const chainAfter = await view.trustChain({ params: { did: a.did } });
    expect(chainAfter.endorsements).toMatchObject({ total: 1, distinctIssuers: 1, sameController: 1 });
    expect(chainAfter.links.map((l) => [l.issuer, l.sameController])).toEqual(
      expect.arrayContaining([
        [b.did, true],
        [c.did, false],
      ]),
    );
  });
});
