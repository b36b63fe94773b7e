import { reputation } from '@agent-economy/contracts';
import { migrate } from '../../db';
import { createServiceApp, fromContext } from '../../runtime/app';
import type { ServiceContext } from '../../runtime/context';
import { solanaSource } from '../../upstream/solana';
import { historyPosition, rankingOffset, reportChecks, reputationHandlers, type ReportBody } from './handlers';
import { migrations, reputationStore } from './store';

export interface ReputationOptions {
  /**
   * Wallets of the services whose reports are verified and that may report for a party (`ratedBy`): the
   * escrow service and the gateway (`npm start` adds theirs when it runs them, and REPUTATION_TRUSTED_REPORTERS).
   * Default: none.
   */
  trustedReporters?: readonly string[];
  /** The clock scores are computed at (tests move it to watch weights decay). */
  now?: () => Date;
}

export async function createReputationApp(context: ServiceContext, options: ReputationOptions = {}) {
  await migrate(context.db, 'reputation', migrations);
  const deps = {
    store: reputationStore(context.db),
    chain: solanaSource(context),
    mint: context.paywall.asset,
    trustedReporters: new Set(options.trustedReporters ?? []),
    now: options.now ?? (() => new Date()),
  };
  const check = reportChecks(deps);
  return await createServiceApp({
    service: reputation,
    handlers: reputationHandlers(deps, check),
    ...fromContext(context),
    // Self-reports, duplicates, untrusted `ratedBy`, an unreachable chain and bad cursors fail before the 402.
    preflight: {
      report: async ({ body }, caller) => void (await check(body as ReportBody, caller!)),
      get: ({ query }) => void historyPosition(query.cursor),
      top: ({ query }) => void rankingOffset(query.cursor),
    },
  });
}
