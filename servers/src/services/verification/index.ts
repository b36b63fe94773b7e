import { knowledgeMarket, verification } from '@agent-economy/contracts';
import { ApiError, createServiceClient } from '@agent-economy/sdk';
import { migrate } from '../../db';
import { createServiceApp, fromContext } from '../../runtime/app';
import type { ServiceContext } from '../../runtime/context';
import { HttpError, notFound } from '../../runtime/errors';
import {
  assertParsableContent,
  assertStorableQuery,
  certificatePosition,
  moduleBinding,
  verificationHandlers,
  type VerificationDeps,
} from './handlers';
import { migrations, verificationStore } from './store';

export interface VerificationOptions {
  /**
   * Base address of the knowledge market, asked for a named module's content hash and publication time (a function when
   * it is known only later, as in tests). Default: the deployment's (KNOWLEDGE_MARKET_PUBLIC_URL, else its default
   * port).
   */
  marketUrl?: string | (() => string);
  /** The clock certificates are issued and judged by (tests move it to watch a certificate expire). */
  now?: () => Date;
}

/**
 * How the service reads a module's listing: over HTTP through the SDK, its errors translated to the scan route's codes.
 */
function moduleReader(url: () => string): VerificationDeps['module'] {
  return async (moduleId) => {
    const client = createServiceClient(knowledgeMarket, url(), { payments: false, maxRetries: 1, timeoutMs: 10_000 });
    try {
      const m = await client.get({ params: { moduleId } });
      return { contentHash: m.contentHash, publishedAt: new Date(m.publishedAt) };
    } catch (error) {
      // The market refuses ids that are not its own (400) or unknown (404): either way there is no such module.
      if (error instanceof ApiError && (error.status === 404 || error.status === 400)) {
        throw notFound('module_not_found', `No module ${moduleId} in the knowledge market`, { moduleId });
      }
      const reason = error instanceof Error ? error.message : String(error);
      throw new HttpError(
        502,
        'market_unavailable',
        `The knowledge market did not answer: ${reason}`,
        { moduleId },
        { 'retry-after': '5' },
      );
    }
  };
}

export async function createVerificationApp(context: ServiceContext, options: VerificationOptions = {}) {
  await migrate(context.db, 'verification', migrations);
  const configured = options.marketUrl ?? (() => context.serviceUrl('knowledge-market'));
  const marketUrl = typeof configured === 'function' ? configured : () => configured;
  const deps: VerificationDeps = {
    store: verificationStore(context.db),
    wallet: context.wallet,
    module: moduleReader(marketUrl),
    now: options.now ?? (() => new Date()),
  };
  const binding = moduleBinding(deps);
  return await createServiceApp({
    service: verification,
    handlers: verificationHandlers(deps, binding),
    ...fromContext(context),
    // A body may hold 100,000 characters of up to 4 UTF-8 bytes each, plus JSON escaping.
    bodyLimit: '1mb',
    // Content that cannot be scanned (a "json" body that does not parse, unstorable text) and a module the market does
    // not
    // list with this content are refused before the 402.
    preflight: {
      scan: async (request) => {
        assertParsableContent(request.body.content);
        await binding(request);
      },
      listCertificates: ({ query }) => {
        assertStorableQuery(query.q);
        certificatePosition(query.cursor);
      },
    },
  });
}
