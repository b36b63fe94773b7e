import { identity } from '@agent-economy/contracts';
import { migrate } from '../../db';
import { createServiceApp, fromContext } from '../../runtime/app';
import type { ServiceContext } from '../../runtime/context';
import { ed25519Multikey, registrarKey } from './crypto';
import { decodeCursor, identityChecks, identityHandlers, type IdentityDeps } from './handlers';
import { identityStore, migrations } from './store';

export interface IdentityOptions {
  /**
   * The deployment's trust anchors (e.g. known auditors): a trust chain is verified when it reaches one
   * through active credentials (`npm start` reads them from IDENTITY_TRUST_ANCHORS). Default: none.
   */
  trustAnchors?: readonly string[];
  /** The service's clock (tests move it to watch credentials expire and identities age). */
  now?: () => Date;
}

export async function createIdentityApp(context: ServiceContext, options: IdentityOptions = {}) {
  await migrate(context.db, 'identity', migrations);
  const registrar = registrarKey(context.wallet);
  const registrarPublicKey = registrar.secretKey.slice(32);
  const deps: IdentityDeps = {
    store: identityStore(context.db),
    registrar,
    registrarPublicKey,
    registrarMultikey: ed25519Multikey(registrarPublicKey),
    anchors: new Set(options.trustAnchors ?? []),
    reasoner: context.reasoner,
    publicUrl: context.publicUrl.replace(/\/+$/, ''),
    now: options.now ?? (() => new Date()),
  };
  const checks = identityChecks(deps);
  return await createServiceApp({
    service: identity,
    handlers: identityHandlers(deps, checks),
    ...fromContext(context),
    // Issuing is the paid act; suspending, reinstating and revoking what you issued is free. Batches are priced by size.
    pricing: {
      issueCredential: ({ body }) => ({ tier: body.action }),
      resolveBatch: ({ body }) => ({ tier: body.dids.length <= 5 ? 'small' : 'large' }),
    },
    // Everything that would fail (unknown DIDs, not the controller, domain rules, bad cursors) fails before the 402.
    preflight: {
      list: ({ query }) => void decodeCursor('i', query.cursor),
      get: async ({ params }) => void (await checks.identityOf(params.did)),
      create: async ({ body }, caller) => void (await checks.create(body, caller!)),
      update: async ({ body }, caller) => void (await checks.update(body, caller!)),
      issueCredential: async ({ body }, caller) => {
        if (body.action === 'issue') await checks.issue(body, caller!);
        else await checks.setStatus(body, caller!);
      },
      verifyCredential: async ({ body }) => {
        if ('credentialId' in body) await checks.credentialById(body.credentialId);
      },
      listCredentials: async ({ params, query }) => {
        decodeCursor('c', query.cursor);
        await checks.identityOf(params.did);
      },
      trustChain: async ({ params }) => void (await checks.identityOf(params.did)),
      trustScore: async ({ body }) => void (await checks.identityOf(body.did)),
    },
  });
}
