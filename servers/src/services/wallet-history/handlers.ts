import { walletHistory, type PaymentMeta } from '@agent-economy/contracts';
import type { Kysely } from 'kysely';
import type { RouterImplementation } from '../../runtime/app';
import { healthReply } from '../../runtime/health';
import type { VerifiedPayment } from '../../runtime/paywall';
import type { UpstreamTracker } from '../../upstream/tracker';
import { analyse, chargedTier, parseSince, tierFor, tierPriceUsd, tierTable } from './domain';
import type { HistoryReader } from './history';
import type { RequestEstimate } from './store';
import type { SharedDb } from '../../db';

export interface WalletHistoryDeps {
  reader: HistoryReader;
  /**
   * The wallet's estimate for this `since`: the kept one while valid, else a fresh one (kept). With `request` (the
   * request's parsed form), the one the paywall priced that request from.
   */
  estimate(wallet: string, since: string | undefined, request?: object): Promise<RequestEstimate>;
  /** The protocols route's price metadata in this deployment. */
  payment: PaymentMeta;
  tracker: UpstreamTracker;
  provider: string;
  db: SharedDb;
}

// Handlers only translate between the contract and the domain.
export function walletHistoryHandlers({
  reader,
  estimate,
  payment,
  tracker,
  provider,
  db,
}: WalletHistoryDeps): RouterImplementation<typeof walletHistory.router> {
  return {
    quote: async ({ body }) => {
      const kept = (await estimate(body.wallet, body.since)).estimate;
      const tier = tierFor(kept.estimatedCount);
      return {
        status: 200,
        body: {
          wallet: body.wallet,
          network: await reader.network(),
          estimatedTransactionCount: kept.estimatedCount,
          tier,
          priceUsd: tierPriceUsd(payment, tier),
          tiers: tierTable(payment),
          estimatedAt: kept.estimatedAt.toISOString(),
          validUntil: kept.validUntil.toISOString(),
          source: tracker.source([provider], kept.estimatedAt),
        },
      };
    },

    protocols: async ({ body, res }) => {
      // The same estimate the paywall priced this call from (kept for its validity).
      const { estimate: kept, signatures } = await estimate(body.wallet, body.since, res.locals.parsed as object);
      const paid = res.locals.payment as VerifiedPayment | undefined;
      const tier = chargedTier(payment, tierFor(kept.estimatedCount), paid ? BigInt(paid.amount) : undefined);
      const since = parseSince(body.since) as Date | undefined;
      const asOf = signatures?.readAt ?? new Date();
      const { entries, truncated } = signatures?.list ?? (await reader.signatures(body.wallet, since));
      const transactions = await reader.transactions(body.wallet, entries);
      return {
        status: 200,
        body: {
          wallet: body.wallet,
          network: await reader.network(),
          tier,
          chargedUsd: tierPriceUsd(payment, tier),
          ...analyse(transactions),
          truncated,
          source: tracker.source([provider], asOf),
        },
      };
    },

    // Answered by the runtime's one health body (runtime/health.ts), as /health is.
    health: async ({ res }) => healthReply(res),
  };
}
