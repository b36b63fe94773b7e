import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { HttpError } from '../../runtime/errors';
import { SETTLEMENT_BUCKETS } from '../../runtime/metrics';
import type { SharedDb } from '../../db';

// The facilitator's own Prometheus metrics, served at its /metrics with the runtime's (runtime/metrics.ts
// says the conventions: integer atomic units of money, base units in names). Balances and open sessions are
// read when Prometheus scrapes, not on a timer, and kept a few seconds so a burst of scrapes asks once.

export type SettlementKind = 'x402' | 'charge';

/** What a settle call ended with, for the counters: settled (with its seller and amount), or why not. */
export type SettleOutcome =
  { settled: true; payTo: string; asset: string; amount: string } | { settled: false; reason: string };

export interface FacilitatorMetricsOptions {
  db: SharedDb;
  logger: Logger;
  /** The fee payer's balance in lamports, read from the chain. */
  feePayerLamports: () => Promise<bigint>;
  /** How long a scraped value is reused; default 10 s. */
  cacheMs?: number;
}

/** A value read at scrape time and reused for `ms`; a failed read leaves the gauge without a sample. */
function cached<T>(read: () => Promise<T>, ms: number): () => Promise<T> {
  let last: { at: number; value: Promise<T> } | undefined;
  return () => {
    if (!last || Date.now() - last.at > ms) {
      const value = read();
      last = { at: Date.now(), value };
      value.catch(() => {
        last = undefined;
      });
    }
    return last.value;
  };
}

export function facilitatorMetrics(options: FacilitatorMetricsOptions) {
  const registry = new Registry();
  const cacheMs = options.cacheMs ?? 10_000;
  const settlements = new Counter({
    name: 'facilitator_settlements_total',
    help: 'Settle calls by kind (x402 /settle, charge /mpp/settle), outcome (settled, failed, refused) and reason (x402 errorReason or error code; none when settled)',
    labelNames: ['kind', 'outcome', 'reason'],
    registers: [registry],
  });
  const revenue = new Counter({
    name: 'facilitator_revenue_atomic_total',
    help: 'Amount settled to each seller (payTo) in atomic units of the asset (integers; 1 USD = 1000000), by kind and asset',
    labelNames: ['kind', 'pay_to', 'asset'],
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'facilitator_settlement_duration_seconds',
    help: 'Time to answer a settle call (co-sign, simulate, send, confirm), by kind and outcome',
    labelNames: ['kind', 'outcome'],
    buckets: SETTLEMENT_BUCKETS,
    registers: [registry],
  });
  const balance = cached(options.feePayerLamports, cacheMs);
  new Gauge({
    name: 'facilitator_fee_payer_balance_lamports',
    help: "The fee payer's SOL balance in lamports (1 SOL = 1e9), read from the chain at scrape time (cached 10 s); absent while the chain does not answer",
    registers: [registry],
    async collect() {
      try {
        this.set(Number(await balance()));
      } catch (error) {
        this.reset();
        options.logger.debug({ err: error }, 'fee payer balance not read for /metrics');
      }
    },
  });
  const openSessions = cached(
    async () => {
      const row = await options.db
        .selectFrom('facilitator_sessions')
        .select((eb) => eb.fn.countAll<string>().as('count'))
        .where('state', '=', 'open')
        .executeTakeFirst();
      return Number(row?.count ?? 0);
    },
    Math.min(cacheMs, 5_000),
  );
  new Gauge({
    name: 'facilitator_payment_sessions_open',
    help: 'Payment sessions currently open (deposited, not yet closing or closed), read at scrape time',
    registers: [registry],
    async collect() {
      try {
        this.set(await openSessions());
      } catch (error) {
        this.reset();
        options.logger.debug({ err: error }, 'open sessions not counted for /metrics');
      }
    },
  });

  /** Times one settle call and counts its outcome: `outcome` reads the result, a thrown error is a refusal. */
  async function observe<T>(
    kind: SettlementKind,
    run: () => Promise<T>,
    outcome: (result: T) => SettleOutcome,
  ): Promise<T> {
    const stop = latency.startTimer({ kind });
    let result: T;
    try {
      result = await run();
    } catch (error) {
      const reason = error instanceof HttpError ? error.code : 'internal_error';
      settlements.inc({ kind, outcome: 'refused', reason });
      stop({ outcome: 'refused' });
      throw error;
    }
    const seen = outcome(result);
    if (seen.settled) {
      settlements.inc({ kind, outcome: 'settled', reason: 'none' });
      // A counter of integer atomic units: exact as a float64 up to 2^53 (metrics.ts).
      revenue.inc({ kind, pay_to: seen.payTo, asset: seen.asset }, Number(BigInt(seen.amount)));
    } else {
      settlements.inc({ kind, outcome: 'failed', reason: seen.reason });
    }
    stop({ outcome: seen.settled ? 'settled' : 'failed' });
    return result;
  }

  return { registry, observe };
}
