import { facilitator } from '@agent-economy/contracts';
import { createServiceClient } from '@agent-economy/sdk';
import type { Logger } from 'pino';
import type { MarketplaceStore } from './store';

// The facilitator's settlement records, copied incrementally: GET /discovery/settlements after the stored cursor,
// page by page, each page stored with the cursor past it in one transaction. Replicas may sync at once: rows are
// keyed by transaction and the cursor only moves forward, so nothing counts twice and nothing is skipped.

const PAGE = 500;
/** Pages read per sync at most; the rest waits for the next request. */
const MAX_PAGES = 40;

export function settlementSync(options: {
  store: MarketplaceStore;
  facilitatorUrl: () => string;
  now: () => Date;
  logger: Logger;
}) {
  let running: Promise<void> | undefined;

  async function run(): Promise<void> {
    const source = options.facilitatorUrl().replace(/\/+$/, '');
    const client = createServiceClient(facilitator, source, { payments: false, maxRetries: 1, timeoutMs: 10_000 });
    let { cursor } = await options.store.position(source);
    for (let page = 0; page < MAX_PAGES; page++) {
      const result = await client.settlements({
        query: { ...(cursor > 0n ? { after: cursor.toString() } : {}), limit: PAGE },
      });
      const next = result.nextCursor ? BigInt(result.nextCursor) : cursor;
      await options.store.apply(source, result.settlements, next, options.now());
      cursor = next;
      if (result.settlements.length < PAGE) return;
    }
  }

  return {
    /**
     * Brings the copy up to date; concurrent callers share one run. When the facilitator does not answer, the copy
     * stays as it was (its synced_at says since when) and the error is logged, not thrown: readers get the last
     * figures.
     */
    async sync(): Promise<void> {
      running ??= run()
        .catch((error: unknown) =>
          options.logger.warn({ err: error }, 'marketplace: settlement sync failed; serving the last copy'),
        )
        .finally(() => {
          running = undefined;
        });
      await running;
    },
  };
}
