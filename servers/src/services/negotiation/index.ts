import { knowledgeMarket, negotiation, usdToAtomic } from '@agent-economy/contracts';
import { ApiError, createServiceClient } from '@agent-economy/sdk';
import { migrate } from '../../db';
import { createServiceApp, fromContext } from '../../runtime/app';
import type { ServiceContext } from '../../runtime/context';
import { HttpError, notFound } from '../../runtime/errors';
import type { ParsedRequest } from '../../runtime/validation';
import { counterOffer, type ModuleTerms } from './domain';
import { assertStorable, negotiationHandlers, negotiationLogic, type OpenBody } from './handlers';
import { migrations, negotiationStore } from './store';

export interface NegotiationOptions {
  /**
   * Base address of the knowledge market, whose modules are negotiated (a function when it is known only later, as
   * in tests). Default: the deployment's (KNOWLEDGE_MARKET_PUBLIC_URL, else its default port).
   */
  marketUrl?: string | (() => string);
  /**
   * Wallets that may open a negotiation for another buyer (`buyer` in the open body) and then act and pay for them: the
   * gateway (`npm start` adds its wallet when it runs it, and NEGOTIATION_BROKERS). Default: none.
   */
  brokers?: readonly string[];
  /**
   * Wallets besides a negotiation's buyer, seller and broker that may read its agreement: the knowledge market, which
   * prices purchases with it (`npm start` adds its wallet when it runs it, and NEGOTIATION_TRUSTED_READERS). Default:
   * none.
   */
  trustedReaders?: readonly string[];
  /** The clock (tests move it past expiries). */
  now?: () => Date;
}

/** How the service reads a module: over HTTP through the SDK, its errors translated to the open route's codes. */
function moduleReader(url: () => string) {
  return async (moduleId: string): Promise<ModuleTerms> => {
    const client = createServiceClient(knowledgeMarket, url(), { payments: false, maxRetries: 1, timeoutMs: 10_000 });
    try {
      const m = await client.get({ params: { moduleId } });
      return {
        id: m.id,
        title: m.title,
        seller: m.seller.wallet,
        price: usdToAtomic(m.priceUsd),
        mode: m.negotiation.mode,
        floor: m.negotiation.floorUsd === null ? null : usdToAtomic(m.negotiation.floorUsd),
      };
    } catch (error) {
      if (error instanceof ApiError && error.status === 404)
        throw notFound('module_not_found', `No module ${moduleId} in the knowledge market`, { moduleId });
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

export async function createNegotiationApp(context: ServiceContext, options: NegotiationOptions = {}) {
  await migrate(context.db, 'negotiation', migrations);
  const configured = options.marketUrl ?? (() => context.serviceUrl('knowledge-market'));
  const marketUrl = typeof configured === 'function' ? configured : () => configured;
  const deps = {
    store: negotiationStore(context.db),
    module: moduleReader(marketUrl),
    brokers: new Set(options.brokers ?? []),
    trustedReaders: new Set(options.trustedReaders ?? []),
    now: options.now ?? (() => new Date()),
  };
  const logic = negotiationLogic(deps);
  return await createServiceApp({
    service: negotiation,
    handlers: negotiationHandlers(deps, logic),
    ...fromContext(context),
    // Unknown modules, refused openings and illegal moves fail before the fee: the move is decided on the current state
    // without being written (the handler decides again, atomically).
    preflight: {
      open: async (request, caller) =>
        void (await logic.checkOpen(request.body as OpenBody, caller!, request as ParsedRequest)),
      counter: async ({ params, body }, caller) => {
        assertStorable('body.message', body.message);
        const { current, role } = await logic.load(params.negotiationId, caller!);
        counterOffer(current, role, usdToAtomic(body.offerUsd), body.message ?? null, deps.now());
      },
    },
  });
}
