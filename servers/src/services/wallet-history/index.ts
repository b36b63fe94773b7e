import { routeMeta, walletHistory } from '@agent-economy/contracts';
import { migrate } from '../../db';
import { createServiceApp, fromContext } from '../../runtime/app';
import type { ServiceContext } from '../../runtime/context';
import { HttpError } from '../../runtime/errors';
import type { ParsedRequest } from '../../runtime/validation';
import { solanaSource } from '../../upstream/solana';
import { QUOTE_VALIDITY_MS, parseSince, tierFor, tierPriceUsd } from './domain';
import { walletHistoryHandlers } from './handlers';
import { historyReader } from './history';
import { migrations, walletHistoryStore, type StoredEstimate } from './store';

/** The wallet protocol-history service: a wallet's transactions read from the chain, by protocol, priced by activity. */
export async function createWalletHistoryApp(context: ServiceContext) {
  await migrate(context.db, 'wallet-history', migrations);
  const chain = solanaSource(context);
  const reader = historyReader(chain);
  const store = walletHistoryStore(context.db);
  const payment = context.prices?.protocols ?? routeMeta(walletHistory.router.protocols).payment;

  /** The kept estimate while it is valid, else a fresh count of the wallet's signatures (kept for 10 minutes). */
  const estimate = async (wallet: string, since: string | undefined): Promise<StoredEstimate> => {
    const now = new Date();
    const kept = await store.validEstimate(wallet, since, now);
    if (kept) return kept;
    const { entries } = await reader.signatures(wallet, parseSince(since) as Date | undefined);
    const fresh = { wallet, since, estimatedCount: entries.length, estimatedAt: now, validUntil: new Date(now.getTime() + QUOTE_VALIDITY_MS) };
    await store.saveEstimate(fresh);
    return fresh;
  };

  // `since` must be a real instant (the schema checks its shape only): 400 before any chain read or payment.
  const realSince = ({ body }: ParsedRequest) => {
    const since = parseSince(body.since);
    if (since && 'error' in since) {
      const message = `body.since ${since.error}`;
      throw new HttpError(400, 'invalid_request', `Invalid request: ${message}`, { fields: [{ field: 'body.since', message: since.error }] });
    }
  };

  return await createServiceApp({
    service: walletHistory,
    handlers: walletHistoryHandlers({ reader, estimate, payment, tracker: chain.tracker, provider: chain.provider, db: context.db }),
    ...fromContext(context),
    preflight: { protocols: realSince, quote: realSince },
    // The tier comes from the same kept estimate /api/quote shows; counting a wallet nobody quoted reads the
    // chain here, before the 402, so a chain that does not answer is a 502 nobody pays for.
    pricing: {
      protocols: async ({ body }) => {
        const tier = tierFor((await estimate(body.wallet, body.since)).estimatedCount);
        // The USD form serves a deployment that reprices the route as an adaptive range.
        return { tier, usd: tierPriceUsd(payment, tier) };
      },
    },
  });
}
