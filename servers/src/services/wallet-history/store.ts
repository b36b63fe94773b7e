import type { Kysely, Migration } from 'kysely';

// Quotes are kept so that a paid call within a quote's validity is charged the quoted tier, on every
// replica and across restarts. One row per wallet and `since` (the empty string for the whole history).

export const migrations: Record<string, Migration> = {
  '001_quotes': {
    async up(db) {
      await db.schema
        .createTable('wallet_history_quotes')
        .addColumn('wallet', 'text', (c) => c.notNull())
        .addColumn('since', 'text', (c) => c.notNull())
        .addColumn('estimated_count', 'integer', (c) => c.notNull())
        .addColumn('estimated_at', 'timestamptz', (c) => c.notNull())
        .addColumn('valid_until', 'timestamptz', (c) => c.notNull())
        .addPrimaryKeyConstraint('wallet_history_quotes_pk', ['wallet', 'since'])
        .execute();
    },
  },
};

interface QuoteRow {
  wallet: string;
  since: string;
  estimated_count: number;
  estimated_at: Date;
  valid_until: Date;
}

interface Tables {
  wallet_history_quotes: QuoteRow;
}

export interface StoredEstimate {
  wallet: string;
  since: string | undefined;
  estimatedCount: number;
  estimatedAt: Date;
  validUntil: Date;
}

const toEstimate = (row: QuoteRow): StoredEstimate => ({
  wallet: row.wallet,
  since: row.since === '' ? undefined : row.since,
  estimatedCount: Number(row.estimated_count),
  estimatedAt: new Date(row.estimated_at),
  validUntil: new Date(row.valid_until),
});

export function walletHistoryStore(database: Kysely<any>) {
  const db = database as Kysely<Tables>;
  return {
    /** The estimate for this wallet and `since` that is still valid at `now`, if any. */
    async validEstimate(wallet: string, since: string | undefined, now: Date): Promise<StoredEstimate | undefined> {
      const row = await db
        .selectFrom('wallet_history_quotes')
        .selectAll()
        .where('wallet', '=', wallet)
        .where('since', '=', since ?? '')
        .where('valid_until', '>', now)
        .executeTakeFirst();
      return row ? toEstimate(row) : undefined;
    },

    /** Keeps a new estimate, replacing the wallet's earlier one for the same `since`. */
    async saveEstimate(estimate: StoredEstimate): Promise<void> {
      const values = {
        estimated_count: estimate.estimatedCount,
        estimated_at: estimate.estimatedAt,
        valid_until: estimate.validUntil,
      };
      await db
        .insertInto('wallet_history_quotes')
        .values({ wallet: estimate.wallet, since: estimate.since ?? '', ...values })
        .onConflict((oc) => oc.columns(['wallet', 'since']).doUpdateSet(values))
        .execute();
    },
  };
}

export type WalletHistoryStore = ReturnType<typeof walletHistoryStore>;
