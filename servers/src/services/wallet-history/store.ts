import { sql, type Kysely, type Migration } from 'kysely';
import type { SharedDb } from '../../db';
import type { WalletTransaction } from './domain';
import type { SignatureList } from './history';

// Quotes are kept so that a paid call within a quote's validity is charged the quoted tier, on every
// replica and across restarts. One row per wallet and `since` (the empty string for the whole history).
// The analyses of finalized transactions are kept too (a finalized transaction never changes): a replica
// or a restarted process reads from here what another already read from the chain.

/** Kept analyses unread from the chain for this long are dropped (read again from the chain when asked). */
const ANALYSES_KEPT_DAYS = 30;
/** Rows a statement reads or writes at most. */
const ROWS_A_STATEMENT = 1000;

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
  '002_transactions': {
    async up(db) {
      // analysis: the WalletTransaction as JSON text (bigints as strings), null for one that cannot be analysed.
      await db.schema
        .createTable('wallet_history_transactions')
        .addColumn('wallet', 'text', (c) => c.notNull())
        .addColumn('signature', 'text', (c) => c.notNull())
        .addColumn('analysis', 'text')
        .addColumn('kept_at', 'timestamptz', (c) => c.notNull())
        .addPrimaryKeyConstraint('wallet_history_transactions_pk', ['wallet', 'signature'])
        .execute();
      await db.schema
        .createIndex('wallet_history_transactions_kept_at')
        .on('wallet_history_transactions')
        .column('kept_at')
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

interface TransactionRow {
  wallet: string;
  signature: string;
  analysis: string | null;
  kept_at: Date;
}

interface Tables {
  wallet_history_quotes: QuoteRow;
  wallet_history_transactions: TransactionRow;
}

interface StoredAnalysis extends Omit<WalletTransaction, 'feePaid' | 'lamportChange' | 'tokenChanges'> {
  feePaid: string;
  lamportChange: string;
  tokenChanges: { mint: string; decimals: number; change: string }[];
}

const analysisText = (t: WalletTransaction | null): string | null =>
  t === null
    ? null
    : JSON.stringify({
        ...t,
        feePaid: t.feePaid.toString(),
        lamportChange: t.lamportChange.toString(),
        tokenChanges: t.tokenChanges.map((c) => ({ ...c, change: c.change.toString() })),
      } satisfies StoredAnalysis);

function analysisOf(text: string | null): WalletTransaction | null {
  if (text === null) return null;
  const stored = JSON.parse(text) as StoredAnalysis;
  return {
    ...stored,
    feePaid: BigInt(stored.feePaid),
    lamportChange: BigInt(stored.lamportChange),
    tokenChanges: stored.tokenChanges.map((c) => ({ ...c, change: BigInt(c.change) })),
  };
}

const chunks = <T>(list: readonly T[]): T[][] => {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += ROWS_A_STATEMENT) out.push(list.slice(i, i + ROWS_A_STATEMENT));
  return out;
};

export interface StoredEstimate {
  wallet: string;
  since: string | undefined;
  estimatedCount: number;
  estimatedAt: Date;
  validUntil: Date;
}

/** An estimate, with the signature list it was counted from when it was made for this request. */
export interface RequestEstimate {
  estimate: StoredEstimate;
  /** Read while this request was served (a fresh estimate): the handler answers from it, not a second read. */
  signatures?: { list: SignatureList; readAt: Date };
}

const toEstimate = (row: QuoteRow): StoredEstimate => ({
  wallet: row.wallet,
  since: row.since === '' ? undefined : row.since,
  estimatedCount: Number(row.estimated_count),
  estimatedAt: new Date(row.estimated_at),
  validUntil: new Date(row.valid_until),
});

export function walletHistoryStore(database: SharedDb, now: () => Date = () => new Date()) {
  const db = database as Kysely<Tables>;
  let prunedAt = 0;
  return {
    /** The kept analyses of these finalized transactions of the wallet, by signature (those kept only). */
    async keptAnalyses(wallet: string, signatures: readonly string[]): Promise<Map<string, WalletTransaction | null>> {
      const kept = new Map<string, WalletTransaction | null>();
      for (const part of chunks(signatures)) {
        // One array parameter, not one a signature: a thousand placeholders cost more to build and parse than the read.
        const rows = await db
          .selectFrom('wallet_history_transactions')
          .select(['signature', 'analysis'])
          .where('wallet', '=', wallet)
          .where('signature', '=', sql<string>`any(${part}::text[])`)
          .execute();
        for (const row of rows) kept.set(row.signature, analysisOf(row.analysis));
      }
      return kept;
    },

    /** Keeps the analyses of finalized transactions of the wallet (one already kept stays: it cannot differ). */
    async keepAnalyses(
      wallet: string,
      analyses: readonly { signature: string; analysis: WalletTransaction | null }[],
    ): Promise<void> {
      const at = now();
      for (const part of chunks(analyses)) {
        // Two array parameters unnested into rows, for the same reason as above.
        const signatures = part.map((a) => a.signature);
        const texts = part.map((a) => analysisText(a.analysis));
        await db
          .insertInto('wallet_history_transactions')
          .columns(['wallet', 'signature', 'analysis', 'kept_at'])
          .expression(
            sql`select ${wallet}::text, s, a, ${at}::timestamptz from unnest(${signatures}::text[], ${texts}::text[]) as u(s, a)`,
          )
          .onConflict((oc) => oc.columns(['wallet', 'signature']).doNothing())
          .execute();
      }
      // At most hourly: analyses kept long ago go, so wallets nobody asks about again do not fill the database.
      if (at.getTime() - prunedAt > 3_600_000) {
        prunedAt = at.getTime();
        await db
          .deleteFrom('wallet_history_transactions')
          .where('kept_at', '<', new Date(at.getTime() - ANALYSES_KEPT_DAYS * 86_400_000))
          .execute();
      }
    },

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
