import { ads, type MppSponsoredAccess } from '@agent-economy/contracts';
import { createServiceClient } from '@agent-economy/sdk';
import { sql, type Kysely, type Migration } from 'kysely';
import type { Logger } from 'pino';
import { signEd25519, type Wallet } from '../../solana/keys';
import type { SharedDb } from '../../db';
import { grouped } from '../../db/grouped';
import { answerWithin, inProcessRoutes } from '../../http/in-process';
import { SpanKind, inSpan } from '../../http/tracing';

type AdsClient = ReturnType<typeof createServiceClient<typeof ads.router>>;
type MatchRequest = Parameters<AdsClient['match']>[0]['body'];
type MatchAnswer = Awaited<ReturnType<AdsClient['match']>>;

// Sponsored access: after every settlement it records, the facilitator asks the ad network for a campaign matching
// the settled resource (bounded by a short time limit), adds the recommendation to its answer under
// extensions["sponsored-access"], and reports the sponsored settlement (POST /v1/events) without waiting. It also
// notices conversions: a payer who was recommended a resource and later pays for it. The ad network is optional:
// when it is down, slow or refuses, the payment settles exactly as it would without it (errors are logged, never
// raised). Every call is signed (SIGN-IN-WITH-X) with the fee payer's key: the ad network trusts only that wallet
// to report settlements. An ad network served by this very process is asked for its match directly (requestMatch).

export const SPONSORED_EXTENSION = 'sponsored-access';
/** The spec's limit: a recommendation not found within 2 s is given up. */
export const DEFAULT_MATCH_TIMEOUT_MS = 2_000;
/** Reports (events, conversions) run in the background: a longer limit. */
const REPORT_TIMEOUT_MS = 10_000;

export const sponsoredMigrations: Record<string, Migration> = {
  '001_sponsored': {
    async up(db) {
      // The recommendations delivered with settlements, so a later payment for the recommended resource by the same
      // payer is reported as a conversion (once: converted_tx).
      await db.schema
        .createTable('facilitator_sponsored')
        .addColumn('tx_hash', 'text', (c) => c.primaryKey())
        .addColumn('campaign_id', 'text', (c) => c.notNull())
        .addColumn('payer', 'text', (c) => c.notNull())
        .addColumn('rec_url', 'text', (c) => c.notNull())
        .addColumn('network', 'text', (c) => c.notNull())
        .addColumn('converted_tx', 'text')
        .addColumn('created_at', 'timestamptz', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('facilitator_sponsored_payer')
        .on('facilitator_sponsored')
        .columns(['payer', 'rec_url'])
        .execute();
    },
  },
};

interface SponsoredRow {
  tx_hash: string;
  campaign_id: string;
  payer: string;
  rec_url: string;
  network: string;
  converted_tx: string | null;
  created_at: Date;
}

export interface SponsoredOptions {
  /** The ad network's base address; undefined turns sponsored access off. */
  adsUrl: () => string | undefined;
  /** The fee payer: it signs the calls. */
  wallet: Wallet;
  network: string;
  db: SharedDb;
  logger: Logger;
  /** How long a settlement waits for a recommendation at most; default 2 s. */
  timeoutMs?: number;
  now: () => Date;
}

/** A settlement the facilitator recorded, as the ad network is told about it. */
export interface SettledPayment {
  transaction: string;
  network: string;
  payer: string;
  amount: string;
  resource: { url: string; description?: string | null | undefined } | null | undefined;
}

const isHttpUrl = (value: string) => /^https?:\/\/\S+$/.test(value) && value.length <= 2048;

export function sponsoredAccess(options: SponsoredOptions) {
  const db = options.db as Kysely<{ facilitator_sponsored: SponsoredRow }>;
  const { logger } = options;
  const timeoutMs = options.timeoutMs ?? DEFAULT_MATCH_TIMEOUT_MS;
  const signer = {
    address: options.wallet.address,
    signMessage: async (message: Uint8Array) => signEd25519(options.wallet, message),
  };
  // One client per ad network address, built once (the address is read per settlement: it may change); the match
  // passes its own shorter time limit per call.
  const clients = new Map<string, ReturnType<typeof createServiceClient<typeof ads.router>>>();
  const client = (url: string) => {
    let built = clients.get(url);
    if (!built) {
      built = createServiceClient(ads, url, {
        wallet: signer,
        payments: false,
        network: options.network,
        maxRetries: 0,
        timeoutMs: REPORT_TIMEOUT_MS,
      });
      clients.set(url, built);
    }
    return built;
  };
  /** Reports that must not hold the settlement up; kept so tests and shutdown can wait for them. */
  const inFlight = new Set<Promise<unknown>>();
  const background = (what: string, task: () => Promise<unknown>) => {
    const running = task()
      .catch((error: unknown) => logger.warn({ err: error }, `ad network: ${what} not reported`))
      .finally(() => inFlight.delete(running));
    inFlight.add(running);
  };

  /**
   * The recommendations each payment converts, found and claimed in one statement (usually matching nothing) for the
   * payments recorded together (grouped): a recommendation is claimed by one payment only, whichever replica records
   * it (of two in one batch, PostgreSQL updates the row once and returns the payment it took).
   */
  const claimConversions = grouped(async (payments: { tx: string; payer: string; url: string }[]) => {
    const values = sql.join(payments.map((p) => sql`(${p.tx}, ${p.payer}, ${p.url})`));
    const { rows } = await sql<{ tx_hash: string; campaign_id: string; conversion: string }>`
      update facilitator_sponsored as s set converted_tx = v.tx
      from (values ${values}) as v (tx, payer, url)
      where s.payer = v.payer and s.rec_url = v.url and s.converted_tx is null and s.tx_hash <> v.tx
      returning s.tx_hash, s.campaign_id, v.tx as conversion`.execute(db);
    // The same payment twice in a batch: its claims are answered to the first.
    const answered = new Set<string>();
    return payments.map((p) => {
      if (answered.has(p.tx)) return [];
      answered.add(p.tx);
      return rows.filter((row) => row.conversion === p.tx);
    });
  });

  /** Payments of a recommended resource by a payer it was recommended to: conversions, reported once each. */
  async function reportConversions(url: string, payment: SettledPayment, resourceUrl: string, at: Date) {
    const claimed = await claimConversions({ tx: payment.transaction, payer: payment.payer, url: resourceUrl });
    for (const original of claimed) {
      background('conversion', () =>
        client(url).conversions.create({
          body: {
            originalTxHash: original.tx_hash,
            conversionTxHash: payment.transaction,
            campaignId: original.campaign_id,
            payerWallet: payment.payer,
            convertedResourceUrl: resourceUrl,
            network: payment.network,
            timestamp: at.toISOString(),
          },
        }),
      );
    }
  }

  /**
   * The ad network's match for a settlement, within the time limit: called directly when this process serves the ad
   * network (npm start: http/in-process.ts, the fee payer's wallet standing for its signature), else over HTTP.
   */
  async function requestMatch(url: string, body: MatchRequest): Promise<MatchAnswer> {
    const local = inProcessRoutes.lookup(url)?.match;
    if (!local) return client(url).match({ body }, { timeoutMs });
    const answer = await answerWithin(
      inSpan('ads /v1/match', SpanKind.CLIENT, { 'network.transport': 'inproc' }, () =>
        local(body, options.wallet.address),
      ),
      timeoutMs,
      'the ad network’s /v1/match',
    );
    if (answer.status !== 200)
      throw new Error(`the ad network answered /v1/match with ${answer.status}: ${JSON.stringify(answer.body)}`);
    return answer.body as MatchAnswer;
  }

  return {
    /**
     * Called once a settlement is recorded: the recommendation to add to the answer, or undefined (no resource, no
     * match, the ad network down or slower than the time limit). Never throws.
     */
    async afterSettlement(payment: SettledPayment): Promise<MppSponsoredAccess | undefined> {
      const url = options.adsUrl();
      const resource = payment.resource;
      if (!url || !resource?.url || !isHttpUrl(resource.url)) return undefined;
      const at = options.now();
      try {
        const description = (resource.description ?? '').slice(0, 2000);
        // Independent of each other: the conversion lookup runs while the ad network matches.
        const [conversions, matching] = await Promise.allSettled([
          reportConversions(url, payment, resource.url, at),
          requestMatch(url, {
            resourceUrl: resource.url,
            resourceDescription: description,
            network: payment.network,
            payerWallet: payment.payer,
            settledAmount: payment.amount,
            txHash: payment.transaction,
          }),
        ]);
        if (conversions.status === 'rejected') throw conversions.reason;
        if (matching.status === 'rejected') throw matching.reason;
        const match = matching.value;
        if (!match.matched) return undefined;
        await db
          .insertInto('facilitator_sponsored')
          .values({
            tx_hash: payment.transaction,
            campaign_id: match.campaignId,
            payer: payment.payer,
            rec_url: match.recommendation.resourceUrl,
            network: payment.network,
            converted_tx: null,
            created_at: at,
          })
          .onConflict((oc) => oc.column('tx_hash').doNothing())
          .execute();
        background('settlement event', () =>
          client(url).events.create({
            body: {
              txHash: payment.transaction,
              network: payment.network,
              resource: { url: resource.url, description },
              payer: payment.payer,
              settledAmount: payment.amount,
              campaignId: match.campaignId,
              timestamp: at.toISOString(),
            },
          }),
        );
        return {
          delivered: true,
          campaignId: match.campaignId,
          recommendations: [match.recommendation],
          tracking: { impressionBeacon: match.impressionBeacon, conversionResource: match.conversionResource },
        };
      } catch (error) {
        logger.warn(
          { err: error, transaction: payment.transaction },
          'ad network: no recommendation for this settlement',
        );
        return undefined;
      }
    },

    /** Waits for the reports still under way. */
    async idle(): Promise<void> {
      while (inFlight.size) await Promise.allSettled([...inFlight]);
    },
  };
}

export type SponsoredAccess = ReturnType<typeof sponsoredAccess>;
