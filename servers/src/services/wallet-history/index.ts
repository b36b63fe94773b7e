import { routeMeta, walletHistory } from '@agent-economy/contracts';
import { migrate } from '../../db';
import { createServiceApp, fromContext } from '../../runtime/app';
import type { ServiceContext } from '../../runtime/context';
import { HttpError } from '../../runtime/errors';
import { solanaSource } from '../../upstream/solana';
import { QUOTE_VALIDITY_MS, parseSince, tierFor, tierPriceUsd } from './domain';
import { walletHistoryHandlers } from './handlers';
import { historyReader } from './history';
import { migrations, walletHistoryStore, type RequestEstimate } from './store';

/**
 * The wallet protocol-history service: a wallet's transactions read from the chain, by protocol, priced by activity.
 */
export async function createWalletHistoryApp(context: ServiceContext) {
  await migrate(context.db, 'wallet-history', migrations);
  const chain = solanaSource(context);
  const store = walletHistoryStore(context.db);
  const reader = historyReader(chain, store, (error) =>
    context.logger.warn({ err: error }, 'wallet-history: analyses of finalized transactions not kept'),
  );
  const payment = context.prices?.protocols ?? routeMeta(walletHistory.router.protocols).payment;

  /** The kept estimate while it is valid, else a fresh count of the wallet's signatures (kept for 10 minutes). */
  const freshOrKept = async (wallet: string, since: string | undefined): Promise<RequestEstimate> => {
    const now = new Date();
    const kept = await store.validEstimate(wallet, since, now);
    if (kept) return { estimate: kept };
    const list = await reader.signatures(wallet, parseSince(since) as Date | undefined);
    const fresh = {
      wallet,
      since,
      estimatedCount: list.entries.length,
      estimatedAt: now,
      validUntil: new Date(now.getTime() + QUOTE_VALIDITY_MS),
    };
    await store.saveEstimate(fresh);
    return { estimate: fresh, signatures: { list, readAt: now } };
  };
  // The estimate the paywall priced a request from, by the request's parsed form (the object the price resolver
  // gets, res.locals.parsed for the handler): the handler charges that tier without asking the database again,
  // and answers from the signatures a fresh estimate read instead of reading them twice.
  const priced = new WeakMap<object, Promise<RequestEstimate>>();
  const estimate = (wallet: string, since: string | undefined, request?: object): Promise<RequestEstimate> => {
    if (!request) return freshOrKept(wallet, since);
    let made = priced.get(request);
    if (!made) {
      made = freshOrKept(wallet, since);
      priced.set(request, made);
    }
    return made;
  };

  // `since` must be a real instant (the schema checks its shape only): 400 before any chain read or payment.
  const realSince = ({ body }: { body: { since?: string } }) => {
    const since = parseSince(body.since);
    if (since && 'error' in since) {
      const message = `body.since ${since.error}`;
      throw new HttpError(400, 'invalid_request', `Invalid request: ${message}`, {
        fields: [{ field: 'body.since', message: since.error }],
      });
    }
  };

  return await createServiceApp({
    service: walletHistory,
    handlers: walletHistoryHandlers({
      reader,
      estimate,
      payment,
      tracker: chain.tracker,
      provider: chain.provider,
      db: context.db,
    }),
    ...fromContext(context),
    // /health and /api/health answer the one health body, with the chain as upstream.
    upstream: chain.tracker,
    preflight: { protocols: realSince, quote: realSince },
    // The tier comes from the same kept estimate /api/quote shows; counting a wallet nobody quoted reads the
    // chain here, before the 402, so a chain that does not answer is a 502 nobody pays for.
    pricing: {
      protocols: async (request) => {
        const { body } = request;
        const tier = tierFor((await estimate(body.wallet, body.since, request)).estimate.estimatedCount);
        // The USD form serves a deployment that reprices the route as an adaptive range.
        return { tier, usd: tierPriceUsd(payment, tier) };
      },
    },
  });
}
