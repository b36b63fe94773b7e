import { atomicToUsd, knowledgeMarket, negotiation } from '@agent-economy/contracts';
import { ApiError, createServiceClient, walletFromSecretKey, type Signer } from '@agent-economy/sdk';
import { migrate } from '../../db';
import { createServiceApp, fromContext } from '../../runtime/app';
import type { ServiceContext } from '../../runtime/context';
import { HttpError, conflict, notFound, unprocessable } from '../../runtime/errors';
import { TOKEN_2022_PROGRAM, TOKEN_PROGRAM, associatedTokenAddress } from '../../solana/programs';
import { solanaSource } from '../../upstream/solana';
import { checkPublish, marketHandlers, purchasePlanner, type MarketDeps, type PublishBody } from './handlers';
import { marketStore, migrations } from './store';

export interface KnowledgeMarketOptions {
  /**
   * Base address of the negotiation service, whose agreements price purchases (a function when it is known only
   * later, as in tests). Default: the deployment's (NEGOTIATION_PUBLIC_URL, else its default port).
   */
  negotiationUrl?: string | (() => string);
  /** The clock (tests move it past an agreement's validity). */
  now?: () => Date;
}

/**
 * How the market reads an agreement: over HTTP through the SDK, signed in (SIGN-IN-WITH-X) with the market's own
 * wallet, which the negotiation service trusts as a reader (NEGOTIATION_TRUSTED_READERS, or `npm start`); its errors
 * translated to the purchase route's codes.
 */
function agreementReader(url: () => string, context: ServiceContext) {
  let signer: Promise<Signer> | undefined;
  return async (negotiationId: string) => {
    try {
      signer ??= walletFromSecretKey(context.wallet.secretKey);
      const client = createServiceClient(negotiation, url(), {
        wallet: await signer,
        network: context.paywall.network,
        payments: false,
        maxRetries: 1,
        timeoutMs: 10_000,
      });
      return await client.agreement({ params: { negotiationId } });
    } catch (error) {
      if (error instanceof ApiError && error.status === 404)
        throw notFound('negotiation_not_found', `No negotiation ${negotiationId}`, { negotiationId });
      if (error instanceof ApiError && error.code === 'negotiation_not_accepted') {
        const state = (error.details as { state?: string } | undefined)?.state;
        throw conflict(
          'negotiation_not_accepted',
          `Negotiation ${negotiationId} is not accepted${state ? ` (it is ${state})` : ''}`,
          { negotiationId, state },
        );
      }
      const reason = error instanceof Error ? error.message : String(error);
      // A refusal of the market's own sign-in is the deployment's fault (the market's wallet is not a trusted reader),
      // not the buyer's: the same 502, saying so.
      const refused = error instanceof ApiError && (error.status === 401 || error.status === 403);
      throw new HttpError(
        502,
        'negotiation_unavailable',
        refused
          ? `The negotiation service refused the market's reading of the agreement (is the market's wallet among its trusted readers?): ${reason}`
          : `The negotiation service did not answer: ${reason}`,
        { negotiationId },
        { 'retry-after': '5' },
      );
    }
  };
}

export async function createKnowledgeMarketApp(context: ServiceContext, options: KnowledgeMarketOptions = {}) {
  await migrate(context.db, 'knowledge-market', migrations);
  const configured = options.negotiationUrl ?? (() => context.serviceUrl('negotiation'));
  const negotiationUrl = typeof configured === 'function' ? configured : () => configured;
  const chain = solanaSource(context);
  const mint = context.paywall.asset;
  const deps: MarketDeps = {
    store: marketStore(context.db),
    agreement: agreementReader(negotiationUrl, context),
    // x402 pays into the payee's associated token account of the stablecoin (under whichever token program owns it).
    async assertPayable(wallet) {
      const candidates = [TOKEN_PROGRAM, TOKEN_2022_PROGRAM].map((program) => ({
        program,
        ata: associatedTokenAddress(wallet, mint, program),
      }));
      const { value } = await chain.read((rpc) =>
        rpc.getMultipleAccounts(candidates.map((c) => c.ata) as never, { encoding: 'base64' }).send(),
      );
      if (!value.some((account, i) => account && account.owner === candidates[i]!.program)) {
        throw unprocessable(
          'no_token_account',
          `The wallet ${wallet} has no token account for the stablecoin ${mint}, so buyers could not pay it; open one first`,
          { wallet, mint },
        );
      }
    },
    now: options.now ?? (() => new Date()),
  };
  const planPurchase = purchasePlanner(deps);
  return await createServiceApp({
    service: knowledgeMarket,
    handlers: marketHandlers(deps, planPurchase),
    ...fromContext(context),
    // The chain is read when a seller publishes (their token account): health reports whether it answers.
    upstream: chain.tracker,
    // The module's own price (or the agreed one), paid straight to the seller's wallet: the market holds no funds.
    pricing: {
      purchase: async (request) => {
        const plan = await planPurchase(request);
        return { usd: atomicToUsd(plan.price), payTo: plan.module.seller };
      },
    },
    // Unknown modules and agreements, reused or expired agreements, duplicates and unpayable sellers fail before the
    // 402.
    preflight: {
      publish: ({ body }, caller) => checkPublish(deps, body as PublishBody, caller!),
      purchase: async (request) => void (await planPurchase(request)),
    },
  });
}
