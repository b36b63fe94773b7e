import { identity, reputation } from '@agent-economy/contracts';
import { createServiceClient, walletFromSecretKey } from '@agent-economy/sdk';
import { migrate } from '../../db';
import { createServiceApp, fromContext } from '../../runtime/app';
import type { ServiceContext } from '../../runtime/context';
import type { Logger } from 'pino';
import { decodeCursor, identityChecks, identityHandlers, type IdentityDeps } from './handlers';
import { identityStore, migrations } from './store';
import { tallyReports, type ReportFacts, type ReputationRecord } from './domain';

export interface IdentityOptions {
  /**
   * The deployment's trust anchors (e.g. known auditors): a trust chain is verified when it reaches one
   * through active credentials (`npm start` reads them from IDENTITY_TRUST_ANCHORS). Default: none.
   */
  trustAnchors?: readonly string[];
  /**
   * Base address of the reputation service, read for the reputation factor of trust scores (a function when it is known
   * only later, as in tests). Default: the deployment's (REPUTATION_PUBLIC_URL, else its default port).
   */
  reputationUrl?: string | (() => string);
  /** The service's clock (tests move it to watch credentials expire and identities age). */
  now?: () => Date;
}

/** Pages of verified reputation reports read per trust score (100 each): a wallet's newest 500 verified reports. */
const REPUTATION_PAGES = 5;

/**
 * How the service reads what the reputation service holds for a wallet: over HTTP through the SDK, paying its price
 * from the identity service's own wallet (at most 0.01 USD a page). The profile gives the reputation (none when the
 * wallet has no verified trade); its reports, tallied here, give the verified trades the trade-history factor counts,
 * because the profile's own trade figures include reports nobody verified. Null when the service does not answer or
 * cannot be paid.
 */
function reputationReader(url: () => string, context: ServiceContext, logger: Logger) {
  const signer = walletFromSecretKey(context.wallet.secretKey);
  return async (wallet: string): Promise<ReputationRecord | null> => {
    try {
      const client = createServiceClient(reputation, url(), {
        wallet: await signer,
        payments: { rpcUrl: context.rpcUrl, maxPerCallUsd: '0.01' },
        maxRetries: 0,
        timeoutMs: 10_000,
      });
      const read = (verified: 'true' | 'false', cursor?: string) =>
        client.get({ params: { agentId: wallet }, query: { limit: 100, verified, ...(cursor ? { cursor } : {}) } });
      // Verified reports paged on their own: strangers' reports, which anyone can file by the hundred, cannot push
      // the verified trades out of the pages read. The newest unverified ones are only shown, as evidence.
      const profile = await read('true');
      const reports: ReportFacts[] = [...profile.history.items];
      let cursor = profile.history.nextCursor ?? undefined;
      for (let page = 1; page < REPUTATION_PAGES && cursor; page++) {
        const next = await read('true', cursor);
        reports.push(...next.history.items);
        cursor = next.history.nextCursor ?? undefined;
      }
      reports.push(...(await read('false')).history.items);
      return {
        wallet,
        // A wallet without a verified trade has no reputation to weigh (its score is the prior): that factor is out.
        reputation: profile.verifiedTradeCount ? { score: profile.score, ratings: profile.verifiedTradeCount } : null,
        ...tallyReports(reports),
        truncated: !!cursor,
      };
    } catch (error) {
      logger.warn(
        { err: error, wallet },
        'identity: the reputation service did not answer; the reputation factor is left out and no trade counts',
      );
      return null;
    }
  };
}

export async function createIdentityApp(context: ServiceContext, options: IdentityOptions = {}) {
  await migrate(context.db, 'identity', migrations);
  const configured = options.reputationUrl ?? (() => context.serviceUrl('reputation'));
  const reputationUrl = typeof configured === 'function' ? configured : () => configured;
  const deps: IdentityDeps = {
    store: identityStore(context.db),
    reputation: reputationReader(reputationUrl, context, context.logger),
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
    // Issuing is the paid act; suspending, reinstating and revoking what you issued is free. Batches are priced by
    // size.
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
        if (body.action === 'prepare') await checks.prepare(body, caller!);
        else if (body.action === 'issue') await checks.complete(body, caller!);
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
