import { sql, type Kysely, type Migration } from 'kysely';
import type { DemandZone, PricedEndpoint } from '@agent-economy/contracts';
import { ENDPOINTS, type Sale } from './surge';
import type { SharedDb } from '../../db';

export const migrations: Record<string, Migration> = {
  '001_quotes': {
    async up(db) {
      // Every price a 402 quoted, per endpoint: a payment of that amount is accepted until the quote expires, so a
      // surge between the quote and the payment never refuses a buyer who pays what was asked. One row per
      // (endpoint, amount): quoting the same price again only extends its expiry.
      await db.schema
        .createTable('pricing_quotes')
        .addColumn('endpoint', 'text', (c) => c.notNull())
        .addColumn('amount', 'int8', (c) => c.notNull())
        .addColumn('multiplier', 'integer', (c) => c.notNull())
        .addColumn('zone', 'text', (c) => c.notNull())
        .addColumn('quoted_at', 'timestamptz', (c) => c.notNull())
        .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
        .addPrimaryKeyConstraint('pricing_quotes_pk', ['endpoint', 'amount'])
        .execute();
    },
  },
};

export interface StoredQuote {
  amount: bigint;
  hundredths: number;
  zone: DemandZone;
  expiresAt: Date;
}

/** The endpoint a settled payment's resource URL names (matched on the path, as Express routes it), or null. */
export function endpointOfResource(resource: string): PricedEndpoint | null {
  let path: string;
  try {
    path = new URL(resource).pathname;
  } catch {
    return null;
  }
  const tail = path.toLowerCase().replace(/\/+$/, '').split('/').slice(-2);
  if (tail[0] !== 'api') return null;
  return (ENDPOINTS as readonly string[]).includes(tail[1]!) ? (tail[1] as PricedEndpoint) : null;
}

export function pricingStore(db: SharedDb, payTo: string) {
  return {
    /** Records a quote (or extends the expiry of the same price quoted before). */
    async recordQuote(endpoint: PricedEndpoint, quote: StoredQuote, now: Date): Promise<void> {
      await db
        .insertInto('pricing_quotes')
        .values({
          endpoint,
          amount: quote.amount,
          multiplier: quote.hundredths,
          zone: quote.zone,
          quoted_at: now,
          expires_at: quote.expiresAt,
        })
        .onConflict((oc) =>
          oc.columns(['endpoint', 'amount']).doUpdateSet({
            quoted_at: now,
            expires_at: sql`greatest(pricing_quotes.expires_at, excluded.expires_at)`,
          }),
        )
        .execute();
    },

    /** The quote of this endpoint at this amount, expired or not (null when never quoted). */
    async quote(endpoint: PricedEndpoint, amount: bigint): Promise<StoredQuote | null> {
      const row = await db
        .selectFrom('pricing_quotes')
        .selectAll()
        .where('endpoint', '=', endpoint)
        .where('amount', '=', amount as never)
        .executeTakeFirst();
      if (!row) return null;
      return {
        amount: BigInt(String(row.amount)),
        hundredths: Number(row.multiplier),
        zone: row.zone as DemandZone,
        expiresAt: new Date(row.expires_at),
      };
    },

    /**
     * This service's settled paid calls since `from` (the paywall records each in runtime_payments): demand and
     * revenue both come from real settlements, shared by every replica on the database.
     */
    async sales(from: Date, to: Date): Promise<Sale[]> {
      const rows = await db
        .selectFrom('runtime_payments')
        .select(['resource', 'amount', 'settled_at'])
        .where('pay_to', '=', payTo)
        .where('status', '=', 'settled')
        .where('settled_at', '>=', from)
        .where('settled_at', '<=', to)
        .execute();
      const sales: Sale[] = [];
      for (const row of rows) {
        const endpoint = endpointOfResource(String(row.resource));
        if (endpoint)
          sales.push({ endpoint, amount: BigInt(String(row.amount)), at: new Date(row.settled_at as string) });
      }
      return sales;
    },
  };
}

export type PricingStore = ReturnType<typeof pricingStore>;
