import type { Logger } from 'pino';
import { LEASE_MS, type EscrowEngine } from './engine';
import type { EscrowStore } from './store';

/**
 * Fires the escrows' timers without any request: review releases, timeout refunds and dispute auto-resolutions,
 * and finishes operations a crash abandoned. State lives in the database, so it survives restarts; each tick claims
 * due escrows with FOR UPDATE SKIP LOCKED and every operation is committed conditionally, so of several replicas on
 * one PostgreSQL exactly one fires each timer, once.
 */
export function escrowScheduler(deps: { store: EscrowStore; engine: EscrowEngine; now: () => Date; logger: Logger }) {
  let running: Promise<{ claimed: number; fired: number }> | undefined;

  async function run(): Promise<{ claimed: number; fired: number }> {
    const ids = await deps.store.claimDue(deps.now(), LEASE_MS);
    let fired = 0;
    for (const id of ids) {
      try {
        fired += await deps.engine.runDue(id);
      } catch (error) {
        // The escrow stays as it was; its timer comes due again once the claim's lease is over.
        deps.logger.warn(
          { escrowId: id, err: error instanceof Error ? error.message : error },
          'escrow timer could not fire',
        );
      }
    }
    await deps.engine.flushReports();
    return { claimed: ids.length, fired };
  }

  return {
    /** One pass (tests call it after moving their clock): how many escrows were claimed and how many timers fired. */
    tick(): Promise<{ claimed: number; fired: number }> {
      // One pass at a time per process; other processes are kept apart by the database.
      running ??= run().finally(() => (running = undefined));
      return running;
    },
    /** Ticks every `intervalMs` until the returned function is called; the timer never keeps the process alive. */
    start(intervalMs: number): () => void {
      const timer = setInterval(() => {
        this.tick().catch((error: unknown) => deps.logger.error({ err: error }, 'escrow scheduler tick failed'));
      }, intervalMs);
      timer.unref();
      return () => clearInterval(timer);
    },
  };
}

export type EscrowScheduler = ReturnType<typeof escrowScheduler>;
