import { sql, type Kysely, type Migration } from 'kysely';
import { HISTORY_DAYS, type Observation, type PerformanceSample, type SlotFee } from './domain';
import type { SharedDb } from '../../db';

// What the service has read from the chain, kept for 7 days: a node remembers only 150 slots of fees
// and 720 minutes of samples, while congestion and the forecast compare against a week.

export const migrations: Record<string, Migration> = {
  '001_history': {
    async up(db) {
      // Global per-slot prioritization fees (µL/CU), one row per slot: the 7-day p95 reads them.
      await db.schema
        .createTable('gas_slot_fees')
        .addColumn('slot', 'int8', (c) => c.primaryKey())
        .addColumn('fee', 'int8', (c) => c.notNull())
        .addColumn('observed_at', 'timestamptz', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('gas_slot_fees_observed_at').on('gas_slot_fees').column('observed_at').execute();
      // 60-second performance samples, keyed by their last slot: the 7-day maximum of non-vote TPS reads them.
      await db.schema
        .createTable('gas_performance_samples')
        .addColumn('slot', 'int8', (c) => c.primaryKey())
        .addColumn('num_transactions', 'int8', (c) => c.notNull())
        .addColumn('num_non_vote_transactions', 'int8', (c) => c.notNull())
        .addColumn('num_slots', 'int8', (c) => c.notNull())
        .addColumn('sample_period_secs', 'int8', (c) => c.notNull())
        .addColumn('observed_at', 'timestamptz', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('gas_performance_samples_observed_at')
        .on('gas_performance_samples')
        .column('observed_at')
        .execute();
      // One reading of the network per request: the hour-of-day profile the forecast is made of.
      await db.schema
        .createTable('gas_observations')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('observed_at', 'timestamptz', (c) => c.notNull())
        .addColumn('slot', 'int8', (c) => c.notNull())
        .addColumn('median_fee', 'int8', (c) => c.notNull())
        .addColumn('congestion_score', 'double precision', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('gas_observations_observed_at')
        .on('gas_observations')
        .column('observed_at')
        .execute();
    },
  },
};

interface Tables {
  gas_slot_fees: { slot: bigint; fee: bigint; observed_at: Date };
  gas_performance_samples: {
    slot: bigint;
    num_transactions: bigint;
    num_non_vote_transactions: bigint;
    num_slots: bigint;
    sample_period_secs: bigint;
    observed_at: Date;
  };
  gas_observations: { id: string; observed_at: Date; slot: bigint; median_fee: bigint; congestion_score: number };
}

export interface GasStore {
  /** Records what was just read and forgets what is older than 7 days. */
  recordReadings(readings: {
    fees: readonly SlotFee[];
    samples: readonly PerformanceSample[];
    at: Date;
  }): Promise<void>;
  /** p95 (nearest rank) of the per-slot fees seen in the past 7 days; 0 when none. */
  feeP95Since(since: Date): Promise<number>;
  /** Highest per-sample non-vote TPS seen in the past 7 days; 0 when none. */
  maxNonVoteTpsSince(since: Date): Promise<number>;
  recordObservation(observation: Observation & { id: string; slot: number }): Promise<void>;
  observationsSince(since: Date): Promise<Observation[]>;
}

export const historyStart = (now: Date) => new Date(now.getTime() - HISTORY_DAYS * 24 * 3600_000);

export function gasStore(database: SharedDb): GasStore {
  const db = database as Kysely<Tables>;
  return {
    async recordReadings({ fees, samples, at }) {
      const cutoff = historyStart(at);
      await db.transaction().execute(async (trx) => {
        if (fees.length > 0) {
          await trx
            .insertInto('gas_slot_fees')
            .values(fees.map((f) => ({ slot: BigInt(f.slot), fee: BigInt(f.fee), observed_at: at })))
            // the newest slot may still gain transactions: keep its latest reading
            .onConflict((oc) =>
              oc.column('slot').doUpdateSet({
                fee: (eb) => eb.ref('excluded.fee'),
                observed_at: (eb) => eb.ref('excluded.observed_at'),
              }),
            )
            .execute();
        }
        if (samples.length > 0) {
          await trx
            .insertInto('gas_performance_samples')
            .values(
              samples.map((s) => ({
                slot: BigInt(s.slot),
                num_transactions: BigInt(s.numTransactions),
                num_non_vote_transactions: BigInt(s.numNonVoteTransactions),
                num_slots: BigInt(s.numSlots),
                sample_period_secs: BigInt(s.samplePeriodSecs),
                observed_at: at,
              })),
            )
            .onConflict((oc) =>
              oc.column('slot').doUpdateSet({
                num_transactions: (eb) => eb.ref('excluded.num_transactions'),
                num_non_vote_transactions: (eb) => eb.ref('excluded.num_non_vote_transactions'),
                num_slots: (eb) => eb.ref('excluded.num_slots'),
                sample_period_secs: (eb) => eb.ref('excluded.sample_period_secs'),
                observed_at: (eb) => eb.ref('excluded.observed_at'),
              }),
            )
            .execute();
        }
        await trx.deleteFrom('gas_slot_fees').where('observed_at', '<', cutoff).execute();
        await trx.deleteFrom('gas_performance_samples').where('observed_at', '<', cutoff).execute();
        await trx.deleteFrom('gas_observations').where('observed_at', '<', cutoff).execute();
      });
    },

    async feeP95Since(since) {
      // percentile_disc is the nearest-rank percentile: the first value whose cumulative share reaches 0.95
      const row = await db
        .selectFrom('gas_slot_fees')
        .select(sql<bigint | null>`percentile_disc(0.95) within group (order by fee)`.as('p95'))
        .where('observed_at', '>=', since)
        .executeTakeFirst();
      return row?.p95 == null ? 0 : Number(row.p95);
    },

    async maxNonVoteTpsSince(since) {
      const row = await db
        .selectFrom('gas_performance_samples')
        .select(sql<number | null>`max(num_non_vote_transactions::float8 / nullif(sample_period_secs, 0))`.as('max'))
        .where('observed_at', '>=', since)
        .executeTakeFirst();
      return row?.max == null ? 0 : Number(row.max);
    },

    async recordObservation(o) {
      await db
        .insertInto('gas_observations')
        .values({
          id: o.id,
          observed_at: o.observedAt,
          slot: BigInt(o.slot),
          median_fee: BigInt(o.medianFee),
          congestion_score: o.score,
        })
        .execute();
    },

    async observationsSince(since) {
      const rows = await db
        .selectFrom('gas_observations')
        .select(['observed_at', 'median_fee', 'congestion_score'])
        .where('observed_at', '>=', since)
        .orderBy('observed_at')
        .execute();
      return rows.map((r) => ({
        observedAt: new Date(r.observed_at),
        medianFee: Number(r.median_fee),
        score: Number(r.congestion_score),
      }));
    },
  };
}
